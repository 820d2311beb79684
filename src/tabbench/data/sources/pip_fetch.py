"""Download one named file of ``name==version`` through pip's own index machinery, building nothing.

Run by :mod:`tabbench.data.sources.pip_download` as a script, in a process of its own, for a
recipe whose file is an sdist. ``pip download`` cannot be used for one: it prepares an sdist's
metadata before it saves the file, which runs the sdist's build backend (its ``setup.py``) and,
with build isolation, first installs setuptools and wheel from the index, unpinned and unhashed.
This script asks pip's package finder which files the configured indexes and find-links list
(pip's configuration as ``pip download`` reads it: pip.conf, ``PIP_*`` variables and the
options given here), takes the one named ``FILE`` and streams it to ``DEST`` through pip's
HTTP client (its proxy, certificates, index credentials, retries and timeout). Nothing is built,
installed or imported from the file; the caller checks its sha256 before reading it.

pip has no public Python API, so this uses ``pip._internal``: the download command's option
parser, its HTTP client and its package finder (``create_command``, ``get_default_session``,
``_build_package_finder``, ``find_all_candidates``). A pip without them ends in one line that
says so and how to do without it (copy the file into the cache).

It imports nothing of tabbench (it runs by path, with whatever ``sys.path`` the interpreter
has). Usage::

    python pip_fetch.py NAME VERSION FILE DEST LOG [pip download options...]

Exit status 0: ``DEST`` holds the file. 1: one ``ERROR: ...`` line on stderr; pip's debug log
(where an unreachable index shows) is in ``LOG``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def _find_and_download(name: str, version: str, file: str, dest: Path,
                       pip_args: list[str]) -> str | None:
    """Write ``file`` to ``dest``; None when done, else the reason it could not be."""
    try:
        # lazy: pip's private API, which may be absent (the reason returned then)
        from pip._internal.commands import create_command
    except ImportError as e:
        return (f"this pip has no pip._internal.commands ({e}): copy {file} into the cache "
                "folder to use it without downloading")
    command = create_command("download")
    options, _ = command.parse_args(["--no-cache-dir", *pip_args])
    try:
        with command.main_context():
            http = command.get_default_session(options)
            finder = command._build_package_finder(options, http,
                                                   ignore_requires_python=True)
            candidates = finder.find_all_candidates(name)
            links = [c.link for c in candidates if c.link.filename == file]
            if not links:
                seen = sorted({c.link.filename for c in candidates
                               if str(c.version) == version})
                return (f"no file {file} for {name}=={version} on the configured index or "
                        f"find-links (found {seen or 'none of that version'})")
            response = http.get(links[0].url_without_fragment, stream=True,
                                   headers={"Accept-Encoding": "identity"})
            response.raise_for_status()
            with dest.open("wb") as fh:
                for block in response.iter_content(1 << 20):
                    fh.write(block)
    except AttributeError as e:  # a pip whose internals moved
        return (f"this pip's internals differ from what source pypi uses ({e}): copy {file} "
                "into the cache folder to use it without downloading")
    return None


def main(argv: list[str]) -> int:
    name, version, file, dest, log, *pip_args = argv
    handler = logging.FileHandler(log)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    pip_logger = logging.getLogger("pip")
    pip_logger.addHandler(handler)
    pip_logger.setLevel(logging.DEBUG)
    try:
        reason = _find_and_download(name, version, file, Path(dest), pip_args)
    except Exception as e:  # a network error, an HTTP status: one line, the rest in the log
        pip_logger.debug("download failed", exc_info=True)
        reason = f"{type(e).__name__}: {e}"
    if reason is None:
        return 0
    print(f"ERROR: {' '.join(reason.split())}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
