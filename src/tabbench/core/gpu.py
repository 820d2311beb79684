"""Choosing the device a training job runs on, and sharing a machine's GPUs between jobs.

Why this exists: Snakemake counts a `gpu` resource (`--resources gpu=4` caps how many jobs that
declare `gpu=1` run at once) but, when it runs jobs locally, it does not tell a job *which* GPU
to use (docs/design.md §9). Without coordination every job would pick `cuda:0`. So each NN job
claims a
free device itself: one lock file per device in a shared lock directory, taken with an exclusive,
non-blocking `fcntl.flock`. The kernel drops a flock when its file descriptor is closed, including
when the process dies (SIGKILL, OOM kill), so a crashed job can never leave a GPU "taken".

Under a cluster scheduler the job is already confined to its own GPU(s): SLURM with `--gpus=1`
sets CUDA_VISIBLE_DEVICES (often to "0" in every job, when cgroups hide the other devices), so
locking by visible index would make unrelated jobs on one node falsely contend. There we skip
locking and use the first visible device.

Limits: flock is per machine; keep the lock directory on a local file system (the default, under
the system temp dir), not NFS.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_LOCK_DIR = Path(tempfile.gettempdir()) / "tabbench-gpu-locks"


class GpuUnavailableError(RuntimeError):
    """No usable GPU: CUDA absent, no device visible, or every slot stayed busy until timeout."""


def _cuda_available() -> bool:
    import torch  # lazy: torch costs 1 to 3 s to import, and CPU jobs use this module too

    return bool(torch.cuda.is_available())


def _cuda_device_count() -> int:
    import torch  # lazy: torch costs 1 to 3 s to import, and CPU jobs use this module too

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def visible_devices() -> list[str] | None:
    """Entries of CUDA_VISIBLE_DEVICES (ids or UUIDs), or None when the variable is unset.

    CUDA stops at the first invalid entry; "-1" is the conventional "hide all GPUs".
    """
    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return None
    out = []
    for entry in (e.strip() for e in raw.split(",")):
        if not entry or entry.startswith("-"):
            break
        out.append(entry)
    return out


def resolve_device(
    requested: str,
    allow_cpu_fallback: bool,
    cuda_available: Callable[[], bool] = _cuda_available,
) -> str:
    """Map the config's `device` ("cpu", "cuda" or a pinned "cuda:<i>") to what this job uses.

    Returns "cpu", "cuda" (any free GPU: claim one with `claim_gpu`) or "cuda:<i>" (pinned by the
    user, used as is). With CUDA requested but not usable, fall back to "cpu" with a logged
    warning when the config allows it (so a demo still runs on a laptop), else raise: silently
    training the study's ~2,900 jobs on CPU when the user asked for GPUs would cost days.
    """
    normalized = requested.strip().lower()
    if normalized == "cpu":
        return "cpu"
    if not re.fullmatch(r"cuda(:\d+)?", normalized):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:<index>', got {requested!r}")
    if cuda_available():
        return normalized
    if allow_cpu_fallback:
        log.warning(
            "device %r requested but CUDA is not available (no GPU or a CPU-only torch build); "
            "falling back to CPU because allow_cpu_fallback is true",
            requested,
        )
        return "cpu"
    raise GpuUnavailableError(
        f"device {requested!r} requested but CUDA is not available (no GPU or a CPU-only torch "
        "build). Set `device: cpu`, or `allow_cpu_fallback: true` to run on CPU anyway."
    )


def _lock_name(key: str, slot: int = 0) -> str:
    # Device keys are indices or UUIDs like "GPU-1a2b..."/"MIG-..."; keep file names tame.
    # Slot 0 keeps the name of the one-job-per-GPU days, so old and new jobs agree on it.
    suffix = "" if slot == 0 else f".slot{slot}"
    return "gpu-" + re.sub(r"[^A-Za-z0-9_.-]", "_", key) + suffix + ".lock"


def check_slots(slots_per_device: object) -> int:
    """``gpu_jobs_per_device``: an integer >= 1 (ValueError otherwise)."""
    if isinstance(slots_per_device, bool) or not isinstance(slots_per_device, int) or (
            slots_per_device < 1):
        raise ValueError(f"gpu_jobs_per_device must be an integer >= 1, got "
                         f"{slots_per_device!r}")
    return slots_per_device


def _try_lock(path: Path) -> int | None:
    """Open `path` and take an exclusive non-blocking flock; the fd on success, else None."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        # Another user's lock file: flock works on a read-only descriptor too.
        fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    try:  # who holds it, for humans looking at the lock dir; best effort
        os.ftruncate(fd, 0)
        os.write(fd, f"{socket.gethostname()} pid {os.getpid()}\n".encode())
    except OSError:
        pass
    return fd


def _ensure_lock_dir(lock_dir: Path) -> None:
    if lock_dir.is_dir():
        return
    lock_dir.mkdir(parents=True, exist_ok=True)
    try:  # shared by all users of the machine, like /tmp itself
        lock_dir.chmod(0o1777)
    except OSError:
        pass


@contextmanager
def claim_gpu(
    n_devices: int | None = None,
    lock_dir: str | os.PathLike[str] | None = None,
    *,
    timeout: float,
    poll_interval: float = 0.5,
    slots_per_device: int = 1,
) -> Iterator[str]:
    """Hold one GPU slot for the duration of the `with` block; yields a torch device like
    "cuda:2".

    ``slots_per_device`` (config ``gpu_jobs_per_device``): how many jobs may hold one GPU at
    once. A small tabular network leaves most of a GPU idle (its steps are bound by kernel
    launches), so several jobs per GPU run side by side at little cost each. Slots are tried
    slot-major (slot 0 of every device, then slot 1, ...), so jobs spread over the GPUs before
    they share one.

    - CUDA_VISIBLE_DEVICES set inside a SLURM job, or naming exactly one device: the scheduler
      (or the user) already chose; yield "cuda:0" without locking.
    - Otherwise lock one of the candidate devices: the entries of CUDA_VISIBLE_DEVICES if set
      (locks keyed by their physical id, so differently-masked jobs still agree), else indices
      0..n_devices-1 (`n_devices` defaults to torch's device count; tests pass it to simulate
      a multi-GPU machine).
    - All busy: poll every `poll_interval` s until `timeout` s, then raise GpuUnavailableError.
      With Snakemake's `--resources gpu=N` equal to the number of GPUs this never waits.
    """
    slots = check_slots(slots_per_device)
    visible = visible_devices()
    if visible is not None:
        if not visible:
            raise GpuUnavailableError(
                f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} hides every GPU"
            )
        if len(visible) == 1 or "SLURM_JOB_ID" in os.environ:
            yield "cuda:0"
            return
        keys = visible
    else:
        n = _cuda_device_count() if n_devices is None else n_devices
        if n < 1:
            raise GpuUnavailableError("no CUDA device found to claim")
        keys = [str(i) for i in range(n)]

    directory = Path(lock_dir) if lock_dir is not None else DEFAULT_LOCK_DIR
    _ensure_lock_dir(directory)
    deadline = time.monotonic() + timeout
    waiting_logged = False
    candidates = [(slot, index, key) for slot in range(slots) for index, key in enumerate(keys)]
    while True:
        for slot, index, key in candidates:
            lock = directory / _lock_name(key, slot)
            fd = _try_lock(lock)
            if fd is None:
                continue
            log.info("claimed GPU %s slot %d as cuda:%d (lock %s)", key, slot, index, lock)
            try:
                yield f"cuda:{index}"
            finally:
                os.close(fd)  # closing the descriptor releases the flock
            return
        if time.monotonic() >= deadline:
            raise GpuUnavailableError(
                f"all {len(candidates)} GPU slots ({len(keys)} GPUs x {slots} jobs each) in "
                f"{directory} stayed busy for {timeout:.0f} s. Run Snakemake with "
                "`--resources gpu=<GPUs x gpu_jobs_per_device>` so it never starts more GPU "
                "jobs than there are slots, or check for stale processes holding the locks."
            )
        if not waiting_logged:
            log.info("all %d GPU slots busy; waiting up to %.0f s", len(candidates), timeout)
            waiting_logged = True
        time.sleep(min(poll_interval, max(0.0, deadline - time.monotonic())))


@contextmanager
def acquire_device(
    requested: str,
    allow_cpu_fallback: bool,
    lock_dir: str | os.PathLike[str] | None,
    timeout: float,
    slots_per_device: int = 1,
) -> Iterator[str]:
    """What a training job calls: "cpu", a pinned "cuda:<i>", or a claimed "cuda:<i>" (one of
    ``slots_per_device`` slots of that GPU) held until the block exits. ``timeout``: seconds to
    wait for a free slot (config ``gpu_claim_timeout``, whose default is the settings table's)."""
    check_slots(slots_per_device)
    device = resolve_device(requested, allow_cpu_fallback)
    if device != "cuda":
        yield device
        return
    with claim_gpu(lock_dir=lock_dir, timeout=timeout,
                   slots_per_device=slots_per_device) as device:
        yield device
