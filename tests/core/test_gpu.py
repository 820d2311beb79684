"""GPU slot claiming and device resolution, simulated without a GPU (n_devices passed in)."""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pytest

from tabbench.core.gpu import (
    GpuUnavailableError,
    acquire_device,
    claim_gpu,
    resolve_device,
    visible_devices,
)

CTX = mp.get_context("fork")  # fcntl locks are POSIX-only anyway; fork keeps workers cheap


@pytest.fixture(autouse=True)
def _no_scheduler_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's shell or a CI runner inside SLURM must not change what these tests see.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)


def _hold(lock_dir: str, n: int, results, all_claimed, release, slots: int = 1) -> None:
    with claim_gpu(n_devices=n, lock_dir=lock_dir, timeout=0, slots_per_device=slots) as dev:
        results.put(dev)
        all_claimed.wait(10)
        release.wait(10)


def _hold_forever(lock_dir: str, n: int, claimed) -> None:
    with claim_gpu(n_devices=n, lock_dir=lock_dir, timeout=0) as dev:
        claimed.put(dev)
        time.sleep(60)


def test_concurrent_processes_get_distinct_gpus(tmp_path: Path) -> None:
    n = 4
    results, release = CTX.Queue(), CTX.Event()
    all_claimed = CTX.Event()
    procs = [
        CTX.Process(target=_hold, args=(str(tmp_path), n, results, all_claimed, release))
        for _ in range(n)
    ]
    for p in procs:
        p.start()
    try:
        devices = [results.get(timeout=20) for _ in range(n)]
        assert sorted(devices) == [f"cuda:{i}" for i in range(n)]
        # A fifth job finds every slot taken and, with timeout 0, says so at once.
        with pytest.raises(GpuUnavailableError, match="4 GPU slots"):
            with claim_gpu(n_devices=n, lock_dir=tmp_path, timeout=0):
                pass
    finally:
        all_claimed.set()
        release.set()
        for p in procs:
            p.join(10)
    assert all(p.exitcode == 0 for p in procs)
    # All released: the next claim gets the first device again.
    with claim_gpu(n_devices=n, lock_dir=tmp_path, timeout=0) as dev:
        assert dev == "cuda:0"


def test_several_jobs_per_gpu_share_it_after_every_gpu_has_one(tmp_path: Path) -> None:
    """gpu_jobs_per_device = 2 on 2 GPUs: four jobs hold a slot at once, two per GPU; the
    first two claims go to different GPUs (slot-major order); a fifth finds none free."""
    with claim_gpu(n_devices=2, lock_dir=tmp_path, timeout=0, slots_per_device=2) as a:
        with claim_gpu(n_devices=2, lock_dir=tmp_path, timeout=0, slots_per_device=2) as b:
            assert {a, b} == {"cuda:0", "cuda:1"}
    results, release, all_claimed = CTX.Queue(), CTX.Event(), CTX.Event()
    procs = [CTX.Process(target=_hold, args=(str(tmp_path), 2, results, all_claimed, release, 2))
             for _ in range(4)]
    for p in procs:
        p.start()
    try:
        devices = sorted(results.get(timeout=20) for _ in range(4))
        assert devices == ["cuda:0", "cuda:0", "cuda:1", "cuda:1"]
        with pytest.raises(GpuUnavailableError, match=r"4 GPU slots \(2 GPUs x 2 jobs each\)"):
            with claim_gpu(n_devices=2, lock_dir=tmp_path, timeout=0, slots_per_device=2):
                pass
        # a job that allows one job per GPU still contends for slot 0 only: all taken
        with pytest.raises(GpuUnavailableError):
            with claim_gpu(n_devices=2, lock_dir=tmp_path, timeout=0):
                pass
    finally:
        all_claimed.set()
        release.set()
        for p in procs:
            p.join(10)
    assert sorted(f.name for f in tmp_path.glob("*.lock")) == [
        "gpu-0.lock", "gpu-0.slot1.lock", "gpu-1.lock", "gpu-1.slot1.lock"]
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="gpu_jobs_per_device"):
            with acquire_device("cpu", False, tmp_path, 0, slots_per_device=bad):
                pass


def test_killed_holder_frees_its_slot(tmp_path: Path) -> None:
    claimed = CTX.Queue()
    p = CTX.Process(target=_hold_forever, args=(str(tmp_path), 1, claimed))
    p.start()
    try:
        assert claimed.get(timeout=20) == "cuda:0"
        with pytest.raises(GpuUnavailableError):
            with claim_gpu(n_devices=1, lock_dir=tmp_path, timeout=0):
                pass
        os.kill(p.pid, signal.SIGKILL)
        p.join(10)
        assert p.exitcode == -signal.SIGKILL
        with claim_gpu(n_devices=1, lock_dir=tmp_path, timeout=0) as dev:
            assert dev == "cuda:0"
    finally:
        if p.is_alive():
            p.kill()
            p.join(5)


def test_nested_claims_in_one_process_get_different_devices(tmp_path: Path) -> None:
    with claim_gpu(n_devices=2, lock_dir=tmp_path, timeout=0) as a:
        with claim_gpu(n_devices=2, lock_dir=tmp_path, timeout=0) as b:
            assert {a, b} == {"cuda:0", "cuda:1"}


def test_slot_is_released_when_the_block_raises(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        with claim_gpu(n_devices=1, lock_dir=tmp_path, timeout=0):
            raise KeyError("boom")
    with claim_gpu(n_devices=1, lock_dir=tmp_path, timeout=0) as dev:
        assert dev == "cuda:0"


def test_waits_for_a_slot_until_it_is_freed(tmp_path: Path) -> None:
    results, release, all_claimed = CTX.Queue(), CTX.Event(), CTX.Event()
    all_claimed.set()
    p = CTX.Process(target=_hold, args=(str(tmp_path), 1, results, all_claimed, release))
    p.start()
    try:
        assert results.get(timeout=20) == "cuda:0"
        # Release from a timer in this process while claim_gpu polls; the claim must come
        # after the release (an order of events, not a duration: nothing here depends on speed)
        import threading

        released_at: list[float] = []

        def free() -> None:
            released_at.append(time.monotonic())
            release.set()

        threading.Timer(0.5, free).start()
        with claim_gpu(n_devices=1, lock_dir=tmp_path, timeout=60, poll_interval=0.05) as dev:
            claimed_at = time.monotonic()
        assert dev == "cuda:0"
        assert released_at and claimed_at >= released_at[0]
    finally:
        release.set()
        p.join(10)


def test_timeout_error_names_the_remedy(tmp_path: Path) -> None:
    """It waits its timeout, and gives up then: a short timeout ends before a 6 times longer
    one (a ratio measured here, whatever the machine's load), and each waits at least its own."""
    waited = {}
    with claim_gpu(n_devices=1, lock_dir=tmp_path, timeout=0):
        for timeout in (0.3, 1.8):
            t0 = time.monotonic()
            with pytest.raises(GpuUnavailableError, match=r"--resources gpu="):
                with claim_gpu(n_devices=1, lock_dir=tmp_path, timeout=timeout,
                               poll_interval=0.05):
                    pass
            waited[timeout] = time.monotonic() - t0
    assert waited[0.3] >= 0.3 and waited[1.8] >= 1.8
    assert waited[0.3] < waited[1.8]


def test_no_device_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(GpuUnavailableError, match="no CUDA device"):
        with claim_gpu(n_devices=0, lock_dir=tmp_path, timeout=0):
            pass


def test_creates_missing_lock_dir(tmp_path: Path) -> None:
    lock_dir = tmp_path / "a" / "b"
    with claim_gpu(n_devices=1, lock_dir=lock_dir, timeout=0) as dev:
        assert dev == "cuda:0"
        assert (lock_dir / "gpu-0.lock").exists()


# --- CUDA_VISIBLE_DEVICES set by a scheduler or the user -------------------------------------


def test_single_visible_device_is_used_without_locking(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with claim_gpu(lock_dir=tmp_path / "locks", timeout=0) as a:
        with claim_gpu(lock_dir=tmp_path / "locks", timeout=0) as b:
            assert a == b == "cuda:0"
    assert not (tmp_path / "locks").exists()


def test_inside_slurm_job_first_visible_device_without_locking(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    with claim_gpu(lock_dir=tmp_path / "locks", timeout=0) as dev:
        assert dev == "cuda:0"
    assert not (tmp_path / "locks").exists()


def test_several_visible_devices_are_locked_by_physical_id(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    with claim_gpu(lock_dir=tmp_path, timeout=0) as a:
        with claim_gpu(lock_dir=tmp_path, timeout=0) as b:
            assert (a, b) == ("cuda:0", "cuda:1")
            assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu-2.lock", "gpu-5.lock"]
            with pytest.raises(GpuUnavailableError):
                with claim_gpu(lock_dir=tmp_path, timeout=0):
                    pass


@pytest.mark.parametrize("value", ["", "-1"])
def test_hidden_gpus_are_an_error(value, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert visible_devices() == []
    with pytest.raises(GpuUnavailableError, match="hides every GPU"):
        with claim_gpu(lock_dir=tmp_path, timeout=0):
            pass


# --- resolve_device --------------------------------------------------------------------------


def test_cpu_is_always_cpu() -> None:
    assert resolve_device("cpu", allow_cpu_fallback=False, cuda_available=lambda: True) == "cpu"


def test_cuda_when_available() -> None:
    assert resolve_device("cuda", allow_cpu_fallback=False, cuda_available=lambda: True) == "cuda"


def test_pinned_cuda_index_is_kept() -> None:
    dev = resolve_device("CUDA:2", allow_cpu_fallback=False, cuda_available=lambda: True)
    assert dev == "cuda:2"


def test_cpu_fallback_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="tabbench.core.gpu"):
        dev = resolve_device("cuda", allow_cpu_fallback=True, cuda_available=lambda: False)
    assert dev == "cpu"
    assert any(
        r.levelno == logging.WARNING and "falling back to CPU" in r.getMessage()
        for r in caplog.records
    )


def test_missing_cuda_without_fallback_is_a_clear_error() -> None:
    with pytest.raises(GpuUnavailableError, match="allow_cpu_fallback"):
        resolve_device("cuda", allow_cpu_fallback=False, cuda_available=lambda: False)


@pytest.mark.parametrize("bad", ["tpu", "cuda:x", "gpu"])
def test_unknown_device_is_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match=repr(bad)):
        resolve_device(bad, allow_cpu_fallback=True, cuda_available=lambda: True)


def test_real_torch_on_this_machine_is_consistent() -> None:
    """Default availability check uses torch; on a CPU-only build it must fall back or fail."""
    import torch  # a dependency of tabbench: an import failure must fail, not skip

    if torch.cuda.is_available():
        assert resolve_device("cuda", allow_cpu_fallback=False) == "cuda"
    else:
        assert resolve_device("cuda", allow_cpu_fallback=True) == "cpu"
        with pytest.raises(GpuUnavailableError):
            resolve_device("cuda", allow_cpu_fallback=False)


def test_acquire_device_cpu_and_fallback(tmp_path: Path) -> None:
    with acquire_device("cpu", allow_cpu_fallback=False, lock_dir=tmp_path, timeout=0) as dev:
        assert dev == "cpu"
    import torch

    if not torch.cuda.is_available():
        with acquire_device("cuda", allow_cpu_fallback=True, lock_dir=tmp_path,
                            timeout=0) as dev:
            assert dev == "cpu"
