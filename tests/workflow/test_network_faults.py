"""Network faults end to end: the data stage with ``sources=[openml,bundled]``
while OpenML is unreachable, failing or silent. Each dataset ends with a clear message naming
what OpenML did, falls back to the bundled copy, uses openml-python's cache when it holds the
dataset, and never waits longer than the configured ``openml_timeout`` (retries bounded).
Unreachable (connection refused) is learned once for the run, said at the start and summed up
at the end.

No request leaves the machine: openml-python's server is set to 127.0.0.1 through its own
config file (``$XDG_CONFIG_HOME/openml/config``), as a user would set a mirror.

Timing bounds are generous (a loaded 2-core machine spends seconds importing openml-python in a
fetch job); what they must catch is a wait on the silent server, which stays silent far longer
than any bound here.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from fixtures import data_fixtures as fx
from workspace import Workspace

DATASETS = ("kc1", "pc1", "car", "cmc", "segment")  # OpenML ids 1067, 1068, 40975, 23, 40984
TIMEOUT = 2  # config openml_timeout (seconds) for these runs
RETRIES = 2  # config openml_retries
SLACK = 25  # seconds a fetch may take beyond it (importing openml-python on a loaded machine)
SILENCE = 120  # seconds the double stays silent: a fetch that does not give up shows up




class _OpenMLDouble(http.server.BaseHTTPRequestHandler):
    """kc1: OpenML's answer "unknown dataset" (final); pc1: HTTP 500 (transient: retried);
    car: the connection is dropped without an answer (network error: retried); anything else:
    no answer at all (a black-holed connection)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        if "/data/40975" in self.path:
            self.close_connection = True
            return
        if "/data/1067" in self.path:
            code, body = (
                412,
                (
                    '<?xml version="1.0" encoding="UTF-8"?>\n'
                    '<oml:error xmlns:oml="http://openml.org/openml"><oml:code>111</oml:code>'
                    "<oml:message>Unknown dataset</oml:message></oml:error>"
                ),
            )
        elif "/data/1068" in self.path:
            code, body = 500, "Internal Server Error"
        else:
            self.server.stop.wait(SILENCE)  # type: ignore[attr-defined]
            return
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def failing_openml() -> Iterator[tuple[str, list[str]]]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OpenMLDouble)
    srv.daemon_threads = True
    srv.requests = []  # type: ignore[attr-defined]
    srv.stop = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/api/v1/xml", srv.requests  # type: ignore[attr-defined]
    srv.stop.set()  # type: ignore[attr-defined]
    srv.shutdown()
    srv.server_close()


def _run(tmp_path: Path, server: str, cached: dict[int, pd.DataFrame]):
    ws = Workspace(tmp_path / "wf", demo=DATASETS)
    xdg = tmp_path / "xdg"
    (xdg / "openml").mkdir(parents=True)
    (xdg / "openml" / "config").write_text(f"server = {server}\n")
    ws.env["XDG_CONFIG_HOME"] = str(xdg)
    cache = tmp_path / "openml_cache"
    for dataset_id, df in cached.items():
        fx.make_openml_cache(cache, dataset_id, df, target="class", server=server)
    start = time.monotonic()
    res = ws.snakemake(
        "data/datasets.csv",
        "--cores",
        "2",
        "--config",
        "preset=smoke",
        "suite=[" + ",".join(DATASETS) + "]",
        "sources=[openml,bundled]",
        f"openml_cache_dir={cache}",
        f"openml_timeout={TIMEOUT}",
        f"openml_retries={RETRIES}",
    )
    elapsed = time.monotonic() - start
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    data = ws.root / "data"
    summary = pd.read_csv(data / "datasets.csv").set_index("dataset")
    fetched = {d: json.loads((data / "raw" / f"{d}.json").read_text()) for d in DATASETS}
    return summary, fetched, elapsed, res.stderr


def _openml_attempt(meta: dict) -> dict:
    (attempt,) = [a for a in meta["attempts"] if a["source"] == "openml"]
    return attempt


def _check_cached(summary, fetched, cached):
    """segment is in openml-python's cache: OpenML is its source although the server fails."""
    assert summary.loc["segment", "source"] == "openml"
    assert fetched["segment"]["origin"]["from_cache"] is True
    assert summary.loc["segment", "rows_raw"] == len(cached)


def test_openml_unreachable_is_learned_once_said_and_summed_up(tmp_path):
    """A server that refuses connections: probed once at the start of the run (and said so in
    the terminal), then every uncached dataset goes to the bundled copy at once, without a
    request; the cached one still comes from OpenML's cache; the last line sums it up."""
    cached = fx.synthetic_frame(1100, n_classes=2, seed=3)
    summary, fetched, elapsed, terminal = _run(tmp_path, fx.CLOSED_SERVER, {40984: cached})
    _check_cached(summary, fetched, cached)
    for d in ("kc1", "pc1", "car", "cmc"):
        assert summary.loc[d, "source"] == "bundled" and summary.loc[d, "status"] == "kept"
        attempt = _openml_attempt(fetched[d])
        assert not attempt["ok"] and attempt["network"]
        assert f"OpenML server {fx.CLOSED_SERVER} unreachable from" in attempt["reason"]
        assert "ConnectionRefusedError" in attempt["reason"]
        assert "checked once at" in attempt["reason"]
        assert "not in openml_cache_dir" in attempt["reason"]
        assert attempt["seconds"] < TIMEOUT + SLACK
        assert f"{d}: from bundled" in fetched[d]["message"]
    # learned once: one state file, from the probe at the start of the run
    states = list((tmp_path / "wf" / "data" / "logs" / "openml").glob("*.json"))
    assert len(states) == 1 and not json.loads(states[0].read_text())["reachable"]
    # said at the start, summed up at the end
    lines = terminal.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if "WARNING: OpenML server" in line)
    assert "unreachable" in lines[start] and "preset=demo" in lines[start + 1]
    assert start < next(i for i, line in enumerate(lines) if "rule fetch_dataset" in line)
    last = next(line for line in reversed(lines) if line.startswith("tabbench data:"))
    assert "5 datasets: 5 kept, 0 dropped by filtering, 0 unavailable" in last
    assert "openml unreachable for 4 of them: 4 from bundled instead, 0 unavailable" in last
    assert "preset=demo" in last and "talent_dir=" in last
    print(f"data stage with OpenML refusing connections: {elapsed:.1f} s")


def test_openml_failures_fall_back_within_the_timeout(tmp_path, failing_openml):
    """Every way OpenML can fail, in one run; the cached dataset is still read from OpenML's
    cache."""
    server, requests = failing_openml
    cached = fx.synthetic_frame(1100, n_classes=2, seed=3)
    summary, fetched, elapsed, _ = _run(tmp_path, server, {40984: cached})
    _check_cached(summary, fetched, cached)
    failed = [d for d in DATASETS if d != "segment"]
    assert all(summary.loc[d, "source"] == "bundled" for d in failed)
    assert not any("/data/40984" in r for r in requests)  # the cache needs no request
    reasons = {d: _openml_attempt(fetched[d])["reason"] for d in failed}
    seconds = {d: _openml_attempt(fetched[d])["seconds"] for d in failed}
    # OpenML's own answer about a dataset is final: asked once
    assert "OpenML refused dataset 1067" in reasons["kc1"] and "Unknown dataset" in reasons["kc1"]
    assert sum("/data/1067" in r for r in requests) == 1
    # a server error is retried, openml_retries times in all
    assert f"OpenML server {server} failed ({RETRIES} attempt(s)" in reasons["pc1"]
    assert "Status code: 500" in reasons["pc1"]
    assert sum("/data/1068" in r for r in requests) == RETRIES
    # a dropped connection is a network error: retried, then "cannot reach"
    assert f"cannot reach OpenML server {server} ({RETRIES} attempt(s)" in reasons["car"]
    assert sum("/data/40975" in r for r in requests) == RETRIES
    # a silent server: given up on at the deadline
    assert f"did not answer within {TIMEOUT} s" in reasons["cmc"], reasons["cmc"]
    assert seconds["cmc"] >= TIMEOUT
    # bounded: the deadline plus the cost of importing openml-python in a busy job
    assert all(s < TIMEOUT + SLACK for s in seconds.values()), seconds
    print(f"data stage with OpenML failing: {elapsed:.1f} s")


@pytest.mark.slow
def test_paper_preset_data_stage_offline(tmp_path):
    """The paper preset's data stage (200 datasets, ~400 jobs) with OpenML refusing
    connections ends in minutes (about an hour if every fetch job found out on its own), keeps
    the bundled datasets, lists the rest in unavailable.csv and ends with the summary line. The
    bound is half that hour, not the target: the point is the order of magnitude on whatever
    machine runs it; the time is printed."""
    from tabbench.data.manifest import demo_manifest, suite_names

    ws = Workspace(tmp_path / "wf", demo=None)
    xdg = tmp_path / "xdg"
    (xdg / "openml").mkdir(parents=True)
    (xdg / "openml" / "config").write_text(f"server = {fx.CLOSED_SERVER}\n")
    ws.env["XDG_CONFIG_HOME"] = str(xdg)
    start = time.monotonic()
    res = ws.snakemake("--cores", "2", "data", timeout=3600)
    elapsed = time.monotonic() - start
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    data = ws.root / "data"
    suite = suite_names("ye2024", data / "demo")
    bundled = set(demo_manifest(data / "demo").index) & set(suite)
    summary = pd.read_csv(data / "datasets.csv").set_index("dataset")
    unavailable = pd.read_csv(data / "unavailable.csv")
    assert len(summary) == len(suite) == 200
    assert set(summary.index[summary["status"] != "unavailable"]) == bundled
    assert set(unavailable["dataset"]) == set(suite) - bundled
    last = [line for line in res.stderr.splitlines() if line.startswith("tabbench data:")][-1]
    assert f"{len(suite) - len(bundled)} unavailable" in last and "preset=demo" in last
    print(f"paper preset data stage, OpenML refusing: {elapsed:.0f} s "
          f"(load {os.getloadavg()[0]:.1f}); {last}")  # fmt: skip
    assert elapsed < 1800
