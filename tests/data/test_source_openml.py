"""Source ``openml``: for real against a pre-populated openml-python 0.15 cache (no network:
the server is pointed at 127.0.0.1), and the fast failure when the network is absent."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import openml
import pytest

from tabbench.data.errors import DataError, SourceUnavailable
from tabbench.data.filtering import FilterParams, filter_dataset
from tabbench.data.manifest import OpenMLRef, ye2024_manifest
from tabbench.data.sources import SourceOptions, fetch
from tabbench.data.sources import openml as oml_source
from tabbench.data.sources.openml_config import openml_configured


def options(fx, cache, **kw):
    return SourceOptions(openml_cache_dir=cache, openml_server=fx.CLOSED_SERVER, **kw)


def test_cache_layout_matches_openml(fx, tmp_path):
    with openml_configured(tmp_path, fx.CLOSED_SERVER) as om:
        expected = oml_source.dataset_cache_dir(om, 1462)
    assert fx.openml_dataset_dir(tmp_path, fx.CLOSED_SERVER, 1462) == expected.resolve()
    assert fx.openml_dataset_dir(tmp_path, "https://www.openml.org/api/v1/xml", 7) == (
        tmp_path / "org" / "openml" / "www" / "datasets" / "7"
    )


@pytest.mark.parametrize("fmt", ["parquet", "arff"])
def test_loads_offline_from_cache_by_manifest_id_and_target(fx, tmp_path, fmt):
    row = ye2024_manifest().loc["banknote_authentication"]
    assert (int(row["openml_id"]), row["target"]) == (1462, "Class")
    df = fx.synthetic_frame(
        1200, n_num=3, n_cat=2, num_missing=0.02, cat_missing=0.1, target="Class"
    )
    fx.make_openml_cache(tmp_path, 1462, df, target="Class", fmt=fmt)
    # a cached dataset is read without a connection (openml-python retries a failed one with
    # back-off, so a try would also be slow): any attempt fails the test
    attempts = []

    def no_network(sock, address):
        attempts.append(address)
        raise OSError(f"the test allows no connection (to {address})")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", no_network)
        raw = oml_source.load("banknote_authentication", options(fx, tmp_path))
    assert attempts == []
    assert raw.origin["from_cache"] and raw.origin["openml_id"] == 1462
    assert raw.num_columns == ["x0", "x1", "x2"] and raw.cat_columns == ["c0", "c1"]
    assert raw.labels.tolist() == df["Class"].tolist()
    np.testing.assert_allclose(raw.features["x1"].to_numpy(), df["x1"].to_numpy())
    assert raw.features["c0"].isna().sum() == df["c0"].isna().sum() > 0
    out = filter_dataset(raw, FilterParams(), "banknote_authentication")
    assert out.kept and out.report["rows_final"] == int(
        df[["x0", "x1", "x2"]].notna().all(axis=1).sum()
    )


def test_default_target_used_when_manifest_has_none(fx, tmp_path):
    row = ye2024_manifest().loc["Shipping"]
    assert int(row["openml_id"]) == 45074 and not isinstance(row["target"], str)
    df = fx.synthetic_frame(300, target="Reached.on.Time_Y.N")
    fx.make_openml_cache(tmp_path, 45074, df, target="Reached.on.Time_Y.N")
    raw = oml_source.load("Shipping", options(fx, tmp_path))
    assert raw.origin["target"] == "Reached.on.Time_Y.N"
    assert "Reached.on.Time_Y.N" not in raw.features.columns


def test_unknown_target_is_a_clear_error(fx, tmp_path):
    fx.make_openml_cache(tmp_path, 5, fx.synthetic_frame(50), target="class")
    with pytest.raises(DataError, match="no column 'nope'"):
        oml_source.load_id("d", OpenMLRef(5, "nope"), options(fx, tmp_path))


def test_datasets_without_id_are_reported_not_crashed(tmp_path):
    m = ye2024_manifest()
    no_id = m[m["openml_id"].isna()]["name"].tolist()
    assert len(no_id) == 26
    for name in no_id[:3]:
        with pytest.raises(SourceUnavailable, match="no OpenML id"):
            oml_source.load(name, SourceOptions(openml_cache_dir=tmp_path))


def test_network_absent_fails_fast_with_clear_message(fx, tmp_path):
    # nothing cached, server refuses connections: the default 10 s budget, < 15 s in all
    start = time.monotonic()
    result = fetch("banknote_authentication", ["openml"], options(fx, tmp_path))
    elapsed = time.monotonic() - start
    assert elapsed < 15
    assert result.raw is None
    msg = result.message()
    assert "banknote_authentication" in msg and "openml" in msg
    assert "cannot reach OpenML server http://127.0.0.1:9" in msg


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections and never answers (a black-holed network)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conns.append(srv.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}/api/v1/xml"
    stop.set()
    t.join()
    for c in conns:
        c.close()
    srv.close()


def test_silent_server_gives_up_at_the_deadline(tmp_path, silent_server):
    opts = SourceOptions(openml_cache_dir=tmp_path, openml_server=silent_server, openml_timeout=1.5)
    start = time.monotonic()
    with pytest.raises(SourceUnavailable, match="did not answer within 1.5 s"):
        oml_source.load_id("d", OpenMLRef(1462, "Class"), opts)
    assert time.monotonic() - start < 3


def test_openml_config_restored(fx, tmp_path):
    before = (
        openml.config.server,
        openml.config.get_cache_directory(),
        openml.config.connection_n_retries,
    )
    fx.make_openml_cache(tmp_path, 5, fx.synthetic_frame(50), target="class")
    oml_source.load_id("d", OpenMLRef(5, None), options(fx, tmp_path))
    after = (
        openml.config.server,
        openml.config.get_cache_directory(),
        openml.config.connection_n_retries,
    )
    assert before == after


def test_cached_description_without_data_fails_fast_offline(fx, tmp_path):
    d = fx.make_openml_cache(tmp_path, 1462, fx.synthetic_frame(50), target="class")
    (d / "dataset_1462.pq").unlink()
    start = time.monotonic()
    with pytest.raises(SourceUnavailable, match="unreachable within 10 s"):
        oml_source.load_id("d", OpenMLRef(1462, "class"), options(fx, tmp_path))
    assert time.monotonic() - start < 15


def test_an_openml_python_incompatibility_fails_loudly(fx, tmp_path, monkeypatch):
    """E.g. a private attribute renamed by an openml-python upgrade: an AttributeError inside
    the source must fail the fetch, not mark the dataset unavailable (nor fall back)."""

    def renamed(*args, **kwargs):
        raise AttributeError("module 'openml.config' has no attribute '_root_cache_directory'")

    monkeypatch.setattr(openml.datasets, "get_dataset", renamed)
    with pytest.raises(AttributeError, match="_root_cache_directory"):
        fetch("banknote_authentication", ["openml", "bundled"], options(fx, tmp_path))


def test_openml_answer_and_network_errors_are_the_expected_ones(fx, tmp_path, monkeypatch):
    """Only "OpenML does not have it for us" falls back: OpenML's own error answer (e.g. an
    unknown dataset, HTTP 412/404) and network failures."""
    from openml.exceptions import OpenMLServerException

    def unknown(*args, **kwargs):
        raise OpenMLServerException("Unknown dataset", code=111)

    monkeypatch.setattr(openml.datasets, "get_dataset", unknown)
    (attempt,) = fetch("banknote_authentication", ["openml"], options(fx, tmp_path)).attempts
    assert "OpenML refused dataset 1462" in attempt["reason"] and not attempt["network"]

    def refused(*args, **kwargs):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(openml.datasets, "get_dataset", refused)
    (attempt,) = fetch("banknote_authentication", ["openml"], options(fx, tmp_path)).attempts
    assert "cannot reach OpenML server" in attempt["reason"] and attempt["network"]


def test_a_cache_file_system_error_is_not_taken_for_a_network_error(fx, tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path))

    monkeypatch.setattr(openml.datasets, "get_dataset", denied)
    with pytest.raises(PermissionError):
        fetch("banknote_authentication", ["openml", "bundled"], options(fx, tmp_path))
