"""Is the OpenML server reachable from this machine? Asked once, shared by the fetch jobs.

Why: without a network, each of the suite's ~200 fetch jobs would find out on its own (import
openml-python, a few quick attempts with pauses, up to ``openml_timeout`` on a black-holed
network), and nothing but per-dataset logs said so. Here the question is asked once per machine
and run: :func:`shared_state` keeps the answer in a small JSON file per host in a state folder
(the workflow uses ``<data_dir>/logs/openml/``), written under a file lock, so concurrent fetch
jobs wait for the first probe instead of each probing. The workflow's ``onstart`` handler
probes before any job starts (and says so in the terminal); a fetch job that finds no fresh
answer probes itself. A fetch job that learns "unreachable" skips OpenML for every dataset that
is not in openml-python's cache, without even importing openml-python (the state file records
the cache folder of the server).

The probe is a TCP connection to the server (or to the HTTP(S) proxy the environment names for
it), bounded by a deadline that also covers a hanging DNS lookup. A server that accepts the
connection counts as reachable, even if it then misbehaves: such failures stay per dataset
(retried, bounded by ``openml_timeout``; :mod:`tabbench.data.sources.openml`).

An answer is trusted for ``max_age`` seconds and only on the host that probed it (on a cluster
the login node and the compute nodes may see different networks), and only for the same
server and cache options.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from tabbench.core.io import write_json_atomic
from tabbench.data.sources.openml_config import resolve_server

T = TypeVar("T")

#: seconds an answer is trusted; the workflow re-probes at the start of every run anyway
MAX_AGE_S = 600.0


class Deadline(Exception):
    """A call did not return within its deadline."""


def call_with_deadline(fn: Callable[[], T], seconds: float) -> T:
    """Run ``fn`` in a daemon thread; raise :class:`Deadline` if it has not returned in time.

    A thread stuck on a silent socket (or a DNS lookup, which has no timeout of its own) is a
    daemon: the CLI process exits without waiting for it."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=work, name="openml-fetch", daemon=True)
    t.start()
    t.join(max(seconds, 0.0))
    if t.is_alive():
        raise Deadline()
    if "error" in box:
        raise box["error"]
    return box["value"]


@dataclass(frozen=True)
class Reachability:
    """One probe's answer. ``reason`` is empty when reachable. ``cache_dir`` is openml-python's
    cache folder for ``server`` (where a dataset cached for offline use would be); ``options``
    are the fetch options the answer was probed for (``openml_server``, ``openml_cache_dir``)."""

    reachable: bool
    server: str
    reason: str
    host: str
    checked_at: float
    seconds: float
    cache_dir: str | None
    options: dict[str, str | None]

    def describe(self) -> str:
        """One line: the server, the verdict and (if unreachable) why."""
        when = time.strftime("%H:%M:%S", time.localtime(self.checked_at))
        if self.reachable:
            return f"OpenML server {self.server} reachable (checked at {when} on {self.host})"
        return (
            f"OpenML server {self.server} unreachable from {self.host} ({self.reason}; checked "
            f"once at {when})"
        )


def _target(server: str) -> tuple[str, int, str]:
    """(host, port, what) that a request to ``server`` connects to: the server itself, or the
    proxy that the environment (``https_proxy``, ``no_proxy``...) names for it."""
    # lazy: openml's dependency, not tabbench's: present because openml is
    import requests.utils

    proxies = requests.utils.get_environ_proxies(server)
    scheme = urlparse(server).scheme or "https"
    proxy = proxies.get(scheme) or proxies.get("all")
    url = urlparse(proxy if proxy else server)
    if proxy and not url.hostname:  # "proxy:3128" without a scheme
        url = urlparse(f"http://{proxy}")
    default_port = 443 if url.scheme == "https" else 80
    what = f"proxy {url.hostname}:{url.port or default_port}" if proxy else "server"
    return url.hostname or "", url.port or default_port, what


def probe(server: str, timeout: float) -> tuple[bool, str, float]:
    """(reachable, reason, seconds): can a TCP connection to ``server`` (or its proxy) open
    within ``timeout`` seconds?"""
    start = time.monotonic()
    host, port, what = _target(server)

    def connect() -> None:
        socket.create_connection((host, port), timeout=timeout).close()

    try:
        call_with_deadline(connect, timeout)
    except Deadline:
        reason = f"no answer from the {what} within {timeout:g} s"
    except OSError as e:
        reason = f"{what} {host}:{port}: {type(e).__name__}: {e}"
    else:
        return True, "", time.monotonic() - start
    return False, reason, time.monotonic() - start


def hostname() -> str:
    return socket.gethostname() or "localhost"


def state_path(state_dir: str | os.PathLike[str], host: str | None = None) -> Path:
    """The state file of ``host`` (default: this machine) in ``state_dir``."""
    return Path(state_dir) / f"{host or hostname()}.json"


def _options_key(server_option: str | None, cache_option: str | os.PathLike[str] | None):
    return {
        "openml_server": server_option,
        "openml_cache_dir": None if cache_option is None else str(Path(cache_option).resolve()),
    }


def read_state(
    state_dir: str | os.PathLike[str],
    server_option: str | None,
    cache_option: str | os.PathLike[str] | None,
    max_age: float = MAX_AGE_S,
) -> Reachability | None:
    """This host's answer in ``state_dir`` if it is fresh and was probed for the same options."""
    path = state_path(state_dir)
    try:
        state = Reachability(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    fresh = 0 <= time.time() - state.checked_at <= max_age
    same = state.host == hostname() and state.options == _options_key(server_option, cache_option)
    return state if fresh and same else None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def probe_and_store(
    state_dir: str | os.PathLike[str] | None,
    server_option: str | None,
    cache_option: str | os.PathLike[str] | None,
    timeout: float,
) -> Reachability:
    """Probe now; write the answer to this host's state file (if ``state_dir``)."""
    server, cache_dir = resolve_server(server_option, cache_option)
    ok, reason, seconds = probe(server, timeout)
    state = Reachability(
        reachable=ok,
        server=server,
        reason=reason,
        host=hostname(),
        checked_at=time.time(),
        seconds=round(seconds, 3),
        cache_dir=cache_dir,
        options=_options_key(server_option, cache_option),
    )
    if state_dir is not None:

        write_json_atomic(asdict(state), state_path(state_dir))
    return state


def shared_state(
    state_dir: str | os.PathLike[str],
    server_option: str | None,
    cache_option: str | os.PathLike[str] | None,
    timeout: float,
    max_age: float = MAX_AGE_S,
) -> Reachability:
    """This host's fresh answer from ``state_dir``, or a new probe stored there. Under a lock:
    jobs that start together wait for one probe instead of probing in parallel."""
    state = read_state(state_dir, server_option, cache_option, max_age)
    if state is not None:
        return state
    with _locked(state_path(state_dir)):
        state = read_state(state_dir, server_option, cache_option, max_age)
        if state is None:
            state = probe_and_store(state_dir, server_option, cache_option, timeout)
    return state
