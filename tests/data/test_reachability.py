"""Whether OpenML is reachable is learned once and shared by the fetch jobs: the
probe, the per-host state file, the lock that makes concurrent jobs wait for one probe, and the
OpenML source skipping the network (and openml-python) for uncached datasets when offline."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tabbench.data.manifest import OpenMLRef
from tabbench.data.sources import SourceOptions, fetch, reachability
from tabbench.data.sources import openml as oml_source

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def listening():
    """A server that accepts TCP connections (and never answers)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    yield f"http://127.0.0.1:{srv.getsockname()[1]}/api/v1/xml"
    srv.close()


def test_probe_refused_and_accepted(fx, listening):
    ok, why, seconds = reachability.probe(fx.CLOSED_SERVER, timeout=60)
    assert not ok and "ConnectionRefusedError" in why and "127.0.0.1:9" in why
    assert seconds < 60  # refused: the answer, not the deadline
    ok, why, _ = reachability.probe(listening, timeout=5)
    assert ok and why == ""


def test_probe_goes_to_the_proxy_the_environment_names(fx, monkeypatch, listening):
    """Behind an HTTP(S) proxy the server's own host may not resolve: requests go through the
    proxy, so the proxy is what must be reachable."""
    monkeypatch.setenv("https_proxy", listening.removesuffix("/api/v1/xml"))
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    ok, _, _ = reachability.probe("https://no-such-host.invalid/api/v1/xml", timeout=5)
    assert ok
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    ok, why, _ = reachability.probe("https://no-such-host.invalid/api/v1/xml", timeout=5)
    assert not ok and why.startswith("proxy 127.0.0.1:9")


def _count_probes(monkeypatch, pause=0.0):
    calls = []
    real = reachability.probe

    def counting(server, timeout):
        calls.append(server)
        time.sleep(pause)
        return real(server, timeout)

    monkeypatch.setattr(reachability, "probe", counting)
    return calls


def test_shared_state_probes_once_and_is_reused(fx, tmp_path, monkeypatch):
    calls = _count_probes(monkeypatch)
    args = (tmp_path / "state", fx.CLOSED_SERVER, tmp_path / "cache", 5)
    first = reachability.shared_state(*args)
    again = reachability.shared_state(*args)
    assert not first.reachable and again == first and len(calls) == 1
    saved = json.loads(reachability.state_path(tmp_path / "state").read_text())
    assert saved["server"] == fx.CLOSED_SERVER and saved["host"] == socket.gethostname()
    assert "unreachable" in first.describe() and "ConnectionRefusedError" in first.describe()
    # other options, a stale answer: probed again
    reachability.shared_state(tmp_path / "state", fx.CLOSED_SERVER, tmp_path / "other", 5)
    assert len(calls) == 2
    reachability.shared_state(*args, max_age=0.0)
    assert len(calls) == 3


def test_another_hosts_answer_is_not_trusted(fx, tmp_path, monkeypatch):
    calls = _count_probes(monkeypatch)
    args = (tmp_path / "state", fx.CLOSED_SERVER, tmp_path / "cache", 5)
    reachability.shared_state(*args)
    monkeypatch.setattr(reachability, "hostname", lambda: "compute-node-7")
    assert reachability.read_state(*args[:3]) is None  # the login node's answer
    reachability.shared_state(*args)
    assert len(calls) == 2
    assert (tmp_path / "state" / "compute-node-7.json").is_file()


def test_concurrent_jobs_wait_for_one_probe(fx, tmp_path, monkeypatch):
    calls = _count_probes(monkeypatch, pause=0.5)
    args = (tmp_path / "state", fx.CLOSED_SERVER, tmp_path / "cache", 5)
    answers = []
    threads = [
        threading.Thread(target=lambda: answers.append(reachability.shared_state(*args)))
        for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(answers) == 6 and all(a == answers[0] for a in answers)


def test_offline_skips_uncached_datasets_without_openml_python(fx, tmp_path):
    """After one probe said "unreachable", a fetch of an uncached dataset is reported
    unavailable at once: no request, no retries and not even an import of openml-python (the
    cost that, multiplied by 200 jobs, made an offline data stage take an hour)."""
    state, cache = tmp_path / "state", tmp_path / "cache"
    reachability.probe_and_store(state, fx.CLOSED_SERVER, cache, 5)
    code = f"""
import sys
from pathlib import Path
from tabbench.data.sources import SourceOptions, fetch
opts = SourceOptions(openml_cache_dir=Path({str(cache)!r}), openml_server={fx.CLOSED_SERVER!r},
                     openml_state_dir=Path({str(state)!r}))
r = fetch("banknote_authentication", ["openml"], opts)
print(r.attempts[0]["reason"])
print(r.attempts[0]["network"])
print("openml" in sys.modules)
"""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    reason, network, imported = out.stdout.strip().splitlines()
    assert reason.startswith(f"OpenML server {fx.CLOSED_SERVER} unreachable from")
    assert "dataset 1462 is not in openml_cache_dir" in reason
    assert network == "True" and imported == "False"


def test_offline_still_loads_cached_datasets(fx, tmp_path):
    state, cache = tmp_path / "state", tmp_path / "cache"
    df = fx.synthetic_frame(300, target="Class")
    fx.make_openml_cache(cache, 1462, df, target="Class")
    opts = SourceOptions(openml_cache_dir=cache, openml_server=fx.CLOSED_SERVER,
                         openml_state_dir=state)  # fmt: skip
    raw = oml_source.load_id("banknote_authentication", OpenMLRef(1462, "Class"), opts)
    assert raw.origin["from_cache"] and raw.n_rows == 300
    assert not reachability.read_state(state, fx.CLOSED_SERVER, cache).reachable
    # and another uncached one is unavailable, flagged as a network problem
    (attempt,) = fetch("kc1", ["openml"], opts).attempts
    assert attempt["network"] and "is not in openml_cache_dir" in attempt["reason"]


def test_reachable_server_keeps_the_per_dataset_path(fx, tmp_path, listening):
    """A server that accepts connections is "reachable": what it then does (here: nothing)
    is handled per dataset, bounded by openml_timeout, as without a shared state."""
    opts = SourceOptions(openml_cache_dir=tmp_path / "cache", openml_server=listening,
                         openml_state_dir=tmp_path / "state", openml_timeout=1.0)  # fmt: skip
    (attempt,) = fetch("banknote_authentication", ["openml"], opts).attempts
    assert "did not answer within 1 s" in attempt["reason"] and attempt["network"]
    assert reachability.read_state(tmp_path / "state", listening, tmp_path / "cache").reachable
