"""openml-python's configuration, pointed at our cache folder and server for one block of code.

Its own module because two modules need it and one of them must not need the other: the OpenML
source (:mod:`tabbench.data.sources.openml`) loads datasets under it, and the reachability
probe (:mod:`tabbench.data.sources.reachability`, which the source uses) asks it which server
and cache folder a fetch would use. openml-python itself is imported only when a configuration
is entered, so importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def openml_configured(cache_dir: Path | None, server: str | None) -> Iterator[Any]:
    """openml-python pointed at ``cache_dir`` (and ``server``), with its own retries off; its
    previous configuration is restored on exit."""
    # lazy: openml takes ~1 s to import, which the other sources' jobs need not pay
    import openml

    cfg = openml.config
    saved = (cfg._root_cache_directory, cfg.server, cfg.connection_n_retries, cfg.retry_policy)
    try:
        if cache_dir is not None:
            Path(cache_dir).mkdir(parents=True, exist_ok=True)
            cfg.set_root_cache_directory(Path(cache_dir).resolve())
        if server is not None:
            cfg.server = server
        cfg.connection_n_retries = 1  # our own bounded loop decides about retries
        yield openml
    finally:
        (cfg._root_cache_directory, cfg.server, cfg.connection_n_retries, cfg.retry_policy) = saved


def resolve_server(
    server_option: str | None, cache_option: str | os.PathLike[str] | None
) -> tuple[str, str]:
    """(server URL, openml-python's cache folder for it) under these options: what a fetch
    with them would use (openml-python's own config file included)."""
    cache_dir = None if cache_option is None else Path(cache_option)
    with openml_configured(cache_dir, server_option) as om:
        return om.config.server, str(Path(om.config.get_cache_directory()))
