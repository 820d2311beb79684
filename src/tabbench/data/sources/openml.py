"""Source ``openml``: ``openml.datasets.get_dataset(id)`` with the manifest's id and target.

Offline first: openml-python keeps each dataset under
``<cache>/<reversed server host>/datasets/<id>/`` (``description.xml`` plus ``dataset_<id>.pq``
or ``dataset.arff``); when those files are there it loads without touching the network, so a
pre-populated ``openml_cache_dir`` works on a machine without internet.

Fail fast without a network: openml-python issues its requests without a timeout and retries
with growing sleeps, so an unreachable server could stall a job for minutes. Here openml's own
retries are turned off and each request phase runs in a worker thread with a deadline:

1. the dataset description (a small XML): at most ``openml_retries`` attempts, all within
   ``openml_timeout`` seconds in total — quick failures (DNS, connection refused, an HTTP 5xx
   server error) are retried after a short pause, a silent server is given up on when the
   deadline passes, and OpenML's own answer about the dataset (unknown, deactivated) is final;
2. the data file: bounded by ``openml_download_timeout`` (large files legitimately take time);
   when the description came from the cache but the data file did not, the server is first
   probed (TCP connect within ``openml_timeout``) so that an absent network still fails fast.

A worker stuck on a silent socket is a daemon thread; the CLI process exits without waiting.

Learned once: with ``SourceOptions.openml_state_dir`` (the workflow sets it), whether the server
is reachable at all is probed once per machine and run and shared by the fetch jobs
(:mod:`tabbench.data.sources.reachability`); when it is not, every dataset outside the cache is
reported unavailable at once, without a request.

Only the expected ways of "OpenML does not have it for us" become :class:`SourceUnavailable`
(no id, network refused / silent / timed out, OpenML's own error answer such as an unknown or
deactivated dataset or an HTTP 5xx, a download with a bad checksum); unreadable data is a
:class:`DataError`. Anything else (e.g. an ``AttributeError`` after an openml-python upgrade
renamed what this module uses) is a bug and propagates: the fetch job fails loudly rather than
marking the dataset unavailable.

openml-python's cache writes are not atomic, and two manifest rows can share an OpenML id
(credit-g/statlog, cmc/contraceptive_method_choice), so parallel fetch jobs take a per-id file
lock in the cache folder before touching that id's files.
"""

from __future__ import annotations

import contextlib
import fcntl
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow

from tabbench.data.errors import DataError, SourceUnavailable
from tabbench.data.manifest import OpenMLRef, openml_ref
from tabbench.data.raw import RawData, make_raw
from tabbench.data.sources import reachability
from tabbench.data.sources.openml_config import openml_configured
from tabbench.data.sources.options import SourceOptions
from tabbench.data.sources.reachability import Deadline as _Deadline
from tabbench.data.sources.reachability import call_with_deadline as _call_with_deadline


@contextlib.contextmanager
def _id_lock(cache_dir: Path | None, dataset_id: int) -> Iterator[None]:
    """Exclusive lock on one dataset id across processes sharing the cache folder."""
    if cache_dir is None:
        yield
        return
    path = Path(cache_dir) / f".tabbench-lock-{dataset_id}"
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def dataset_cache_dir(openml_module: Any, dataset_id: int) -> Path:
    """openml-python's cache folder of one dataset for the configured server."""
    return Path(openml_module.config.get_cache_directory()) / "datasets" / str(dataset_id)


def is_cached(openml_module: Any, dataset_id: int) -> bool:
    """True when description and data file are cached, i.e. loading needs no network."""
    return is_cached_in(dataset_cache_dir(openml_module, dataset_id), dataset_id)


def is_cached_in(folder: str | Path, dataset_id: int) -> bool:
    """:func:`is_cached` for openml-python's cache folder of one dataset (no openml import)."""
    d = Path(folder)
    has_data = (d / f"dataset_{dataset_id}.pq").is_file() or (d / "dataset.arff").is_file()
    return (d / "description.xml").is_file() and has_data


def _is_network_error(e: BaseException) -> bool:
    """The request did not get through: refused, reset, DNS failure, timeout... (not: a file
    system error of the cache, which is an OSError too but no reason to fall back)."""
    # lazy: openml's dependency, not tabbench's: present because openml is
    import requests
    import urllib3

    return isinstance(
        e,
        (
            requests.exceptions.RequestException,
            urllib3.exceptions.HTTPError,
            ConnectionError,
            TimeoutError,
            socket.gaierror,
            socket.herror,
        ),
    )


def _is_openml_answer(e: BaseException) -> bool:
    """openml-python's errors about the request (OpenML's error answer: unknown, deactivated
    or private dataset, not authorised, HTTP 5xx; a download whose checksum does not match)."""
    # lazy: openml takes ~1 s to import, which the other sources' jobs need not pay
    from openml.exceptions import PyOpenMLError

    return isinstance(e, PyOpenMLError)


def _is_unreadable_data(e: BaseException) -> bool:
    """A downloaded or cached data file that cannot be parsed (arff or parquet)."""
    # lazy: openml's dependency, not tabbench's: present because openml is
    import arff

    return isinstance(e, (ValueError, EOFError, arff.ArffException, pyarrow.ArrowException))


def _is_server_failure(e: BaseException) -> bool:
    """An HTTP 5xx from OpenML (openml-python's ``OpenMLServerError`` proper): often transient,
    so it is retried like a network error. Its subclass ``OpenMLServerException`` is OpenML's
    answer about the request (unknown or deactivated dataset...): retrying cannot help."""
    # lazy: openml takes ~1 s to import, which the other sources' jobs need not pay
    from openml.exceptions import OpenMLServerError, OpenMLServerException

    return isinstance(e, OpenMLServerError) and not isinstance(e, OpenMLServerException)


def _probe(server: str, timeout: float) -> None:
    """Fail fast unless a connection to the OpenML server opens within ``timeout``."""
    ok, why, _ = reachability.probe(server, timeout)
    if not ok:
        raise SourceUnavailable(
            f"OpenML server {server} unreachable within {timeout:g} s ({why}; network "
            "absent?) and the data file is not in openml_cache_dir",
            network=True,
        )


def _get_description(openml: Any, ref: OpenMLRef, options: SourceOptions) -> Any:
    def get() -> Any:
        return openml.datasets.get_dataset(
            ref.dataset_id,
            download_data=False,
            download_qualities=False,
            download_features_meta_data=False,
        )

    if (dataset_cache_dir(openml, ref.dataset_id) / "description.xml").is_file():
        return get()  # local file: no network, no deadline needed
    server = openml.config.server
    start = time.monotonic()
    errors: list[str] = []
    server_failures = 0
    for attempt in range(1, max(1, options.openml_retries) + 1):
        left = options.openml_timeout - (time.monotonic() - start)
        if left <= 0:
            break
        try:
            return _call_with_deadline(get, left)
        except _Deadline:
            raise SourceUnavailable(
                f"OpenML server {server} did not answer within {options.openml_timeout:g} s "
                f"(network absent?); pre-populate openml_cache_dir or use another source",
                network=True,
            ) from None
        except Exception as e:
            if not (_is_network_error(e) or _is_openml_answer(e)):
                raise  # a bug (ours or an incompatible openml-python): fail loudly
            if not (_is_network_error(e) or _is_server_failure(e)):
                raise SourceUnavailable(
                    f"OpenML refused dataset {ref.dataset_id}: {type(e).__name__}: {e}"
                ) from e
            errors.append(f"{type(e).__name__}: {e}")
            server_failures += _is_server_failure(e)
        if attempt == max(1, options.openml_retries):
            break
        pause = min(0.5 * attempt, options.openml_timeout - (time.monotonic() - start))
        if pause > 0:
            time.sleep(pause)
    last = " ".join(errors[-1].split()) if errors else "no attempt left"  # one line
    tried = f"{len(errors)} attempt(s) in {time.monotonic() - start:.1f} s"
    if errors and server_failures == len(errors):
        raise SourceUnavailable(f"OpenML server {server} failed ({tried}): {last[:300]}")
    raise SourceUnavailable(
        f"cannot reach OpenML server {server} ({tried}; network absent?): {last[:300]}",
        network=True,
    )


def load(name: str, options: SourceOptions) -> RawData:
    """Load ``name`` from OpenML (or openml-python's cache) by the manifest's id and target."""
    ref = openml_ref(name, options.demo_dir)
    if ref is None:
        raise SourceUnavailable("no OpenML id in the manifest")
    return load_id(name, ref, options)


def _unreachable_and_not_cached(ref: OpenMLRef, options: SourceOptions) -> None:
    """With a shared reachability state (:mod:`~tabbench.data.sources.reachability`): if this
    machine cannot reach OpenML and the dataset is not cached, say so now, without importing
    openml-python or sending a request."""
    if options.openml_state_dir is None:
        return
    state = reachability.shared_state(
        options.openml_state_dir,
        options.openml_server,
        options.openml_cache_dir,
        options.openml_timeout,
    )
    if state.reachable:
        return
    folder = Path(state.cache_dir or ".") / "datasets" / str(ref.dataset_id)
    if state.cache_dir is not None and is_cached_in(folder, ref.dataset_id):
        return  # loads from the cache without the network
    raise SourceUnavailable(
        f"{state.describe()}; dataset {ref.dataset_id} is not in openml_cache_dir",
        network=True,
    )


def load_id(name: str, ref: OpenMLRef, options: SourceOptions) -> RawData:
    """Load OpenML dataset ``ref`` as ``name``."""
    _unreachable_and_not_cached(ref, options)
    with (
        openml_configured(options.openml_cache_dir, options.openml_server) as openml,
        _id_lock(options.openml_cache_dir, ref.dataset_id),
    ):
        cached = is_cached(openml, ref.dataset_id)
        description_cached = (
            dataset_cache_dir(openml, ref.dataset_id) / "description.xml"
        ).is_file()
        ds = _get_description(openml, ref, options)
        if description_cached and not cached:
            _probe(openml.config.server, options.openml_timeout)

        def get_data() -> Any:
            return ds.get_data(target=None, dataset_format="dataframe")

        try:
            if cached:
                X, _, categorical, names = get_data()
            else:
                X, _, categorical, names = _call_with_deadline(
                    get_data, options.openml_download_timeout
                )
        except _Deadline:
            raise SourceUnavailable(
                f"OpenML data of dataset {ref.dataset_id} not downloaded within "
                f"{options.openml_download_timeout:g} s",
                network=True,
            ) from None
        except Exception as e:
            if _is_network_error(e) or _is_openml_answer(e):
                raise SourceUnavailable(
                    f"cannot download OpenML dataset {ref.dataset_id}: {type(e).__name__}: {e}",
                    network=_is_network_error(e),
                ) from e
            if _is_unreadable_data(e):
                raise DataError(
                    f"{name}: cannot load OpenML dataset {ref.dataset_id}: "
                    f"{type(e).__name__}: {e}"
                ) from e
            raise  # a bug (ours or an incompatible openml-python): fail loudly
        target = ref.target or ds.default_target_attribute
        if not target or "," in str(target):
            raise DataError(
                f"{name}: OpenML dataset {ref.dataset_id} has no single default target "
                f"({target!r}) and the manifest names none"
            )
        names = [str(n) for n in names]
        if target not in names:
            raise DataError(
                f"{name}: OpenML dataset {ref.dataset_id} has no column {target!r} "
                f"(columns: {names[:8]}{'…' if len(names) > 8 else ''})"
            )
        X = X.copy()
        X.columns = names
        y = X.pop(target)
        cat_flags = dict(zip(names, categorical, strict=True))
        num_cols, cat_cols = [], []
        for c in X.columns:
            dt = X[c].dtype
            numeric = hasattr(dt, "kind") and dt.kind in "iuf" and not cat_flags.get(c, False)
            (num_cols if numeric else cat_cols).append(c)
        origin = {
            "source": "openml",
            "openml_id": ref.dataset_id,
            "openml_name": ds.name,
            "openml_version": ds.version,
            "target": target,
            "from_cache": cached,
            "cache_dir": str(dataset_cache_dir(openml, ref.dataset_id)),
        }
        return make_raw(X[num_cols], X[cat_cols], y, name, origin)
