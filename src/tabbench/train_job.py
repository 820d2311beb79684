"""One training job: every config of one (model, dataset, split), every epoch recorded.

``run_train_job`` trains configs ``0..n_configs`` (0 = default, the rest random draws of the
search space) one after the other. Each finished config is persisted at once as a part file
(``<out>.part/config<c>.parquet``, or ``config<c>.failure.json`` if it failed), so a killed job
resumes at the first config without one. At the end the parts are concatenated into ``out_path``
and the failures into the sidecar ``<out>.failures.json`` (always written, possibly ``[]``), both
atomically, and the part folder is removed (so a forced rerun of a finished job starts afresh).

A part file is reused only if it matches what the rerun would train: the job's identity
(model, dataset, split, seed and any non-default trainer option, e.g. the MLP's one-hot cap,
in ``job.json``) and, per config, the same params and number of epochs. A failing config (an
exception in the trainer, a non-finite loss in the first epoch, out of memory) is recorded with
its error and the job goes on; errors of the recorder itself (the metrics) are bugs and stop the
job.

Stopping: under :func:`stop_on_signals` (what ``tabbench train`` runs in), SIGINT (Ctrl-C) and
SIGTERM (e.g. ``scancel`` or a SLURM time limit) raise
:class:`TrainInterrupted` at the next Python instruction - within a boosting round or a
mini-batch, i.e. at once on the time scale of a job. Finished configs are already on disk as
part files; the config in progress is lost (its partial write, if any, is removed by
:func:`tabbench.io.atomic_path`). A second signal kills the job at once. A signal the job was
started with ignored stays ignored, as it does in Snakemake (see :func:`stop_on_signals`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from tabbench import kept
from tabbench.data.dataset import load_split_data
from tabbench.gpu import acquire_device
from tabbench.io import write_json_atomic, write_parquet_atomic
from tabbench.layout import (  # noqa: F401 - failures_path, part_dir re-exported (callers, tests)
    PART_IDENTITY,
    failures_path,
    part_configs,
    part_dir,
    part_failure,
    part_records,
)
from tabbench.models.base import EpochChunk, StackingTrainer, TrainContext
from tabbench.models.recorder import EpochRecorder, check_records, empty_records, params_json
from tabbench.models.registry import (
    get_trainer,
    is_network,
    n_epochs_for,
    non_default_options,
    resolve_trainer_options,
)
from tabbench.models.stacked.plan import (
    STACKED,
    max_members,
    parse_members,
    plan_groups,
    training_path,
)
from tabbench.provenance import (
    environment,
    gather,
    read_runs_provenance,
    to_parquet_metadata,
)
from tabbench.search import sample_config, stable_seed
from tabbench.settings.table import default


class TrainInterrupted(BaseException):
    """A training job was asked to stop by a signal. A BaseException, like KeyboardInterrupt, so
    that a trainer's ``except Exception`` does not record it as a failed config."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {self.signal_name}")

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name


@contextlib.contextmanager
def stop_on_signals(
    signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM),
) -> Iterator[None]:
    """Turn ``signals`` into :class:`TrainInterrupted` inside the block (main thread only).
    After the first one the default actions are back, so a second signal ends the process at
    once, whatever it is doing.

    A signal that is ignored when the block starts stays ignored (the Unix convention, which
    Python and so Snakemake follow): a non-interactive shell starts ``cmd &`` with SIGINT
    ignored, and a Snakemake started so does not stop on SIGINT. Its jobs inherit the ignore;
    if they stopped on the same SIGINT, Snakemake would see a failed job, retry it or go on
    with the next ones, and a Ctrl-C would restart work instead of stopping it (issue 22)."""

    def stop(signum: int, frame: Any) -> None:
        for s in caught:
            signal.signal(s, signal.SIG_DFL)
        raise TrainInterrupted(signum)

    caught = [s for s in signals if signal.getsignal(s) != signal.SIG_IGN]
    previous = {s: signal.signal(s, stop) for s in caught}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def finished_configs(out_path: str | os.PathLike[str]) -> list[int]:
    """Configs of a job whose part file (records or failure) is on disk, i.e. kept for a
    resume."""
    return part_configs(part_dir(out_path))


def train_seed(seed: int, dataset: str, split: int, model: str, config_id: int) -> int:
    """The training seed of one config (init, shuffling, subsampling): from its identity only."""
    return stable_seed(int(seed), str(dataset), int(split), str(model), int(config_id), "train")


class _Progress:
    """One line per chunk: config i/n, epoch, elapsed and ETA (from this process's pace)."""

    def __init__(self, stream: TextIO, tag: str, epochs_todo: int) -> None:
        self.stream, self.tag, self.todo = stream, tag, epochs_todo
        self.t0 = time.perf_counter()
        self.done = 0

    def line(self, msg: str) -> None:
        print(f"[{self.tag}] {msg}", file=self.stream, flush=True)

    def epochs(self, n: int, msg: str) -> None:
        self.done += n
        elapsed = time.perf_counter() - self.t0
        left = max(0, self.todo - self.done)
        eta = elapsed / self.done * left if self.done else float("nan")
        self.line(f"{msg} elapsed {_hms(elapsed)} eta {_hms(eta)}")

    def skip(self, n: int) -> None:
        self.todo -= n


def _hms(s: float) -> str:
    if s != s:
        return "?"
    if s < 60:
        return f"{s:.1f}s"
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def config_plan(model: str, dataset: str, split: int, n_configs: int,
                epochs: Mapping[str, int], seed: int) -> dict[int, tuple[dict[str, Any], int]]:
    """config -> (params, epochs) of a train job: the default (config 0) and ``n_configs``
    random configs of ``model``. What the job trains and what its keeping is planned for
    (``benchmarks/restop_cost.py --plan`` sizes a study from it without training)."""
    return {c: (sample_config(model, c, seed=seed, dataset=dataset, split=split),
                n_epochs_for(model, c, epochs))
            for c in range(int(n_configs) + 1)}


def run_train_job(
    model: str,
    dataset: str,
    split: int,
    processed_path: str | os.PathLike[str],
    splits_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    n_configs: int,
    epochs: Mapping[str, int],
    seed: int,
    threads: int = 1,
    device: str = "cpu",
    allow_cpu_fallback: bool = default("allow_cpu_fallback"),
    gpu_lock_dir: str | os.PathLike[str] | None = None,
    gpu_claim_timeout: float = default("gpu_claim_timeout"),
    gpu_jobs_per_device: int = default("gpu_jobs_per_device"),
    trainer_options: Mapping[str, Any] | None = None,
    members: int | str | None = None,
    memory_gb: float = default("network_memory_gb"),
    keep_for_restop: bool = default("keep_for_restop"),
    restop_max_mb: float = default("restop_max_mb"),
    retry_failed: bool = default("retry_failed"),
    progress: TextIO | None = None,
    metrics: Any = None,
    trainer_factory: Any = None,
) -> pd.DataFrame:
    """Train configs ``0..n_configs`` of ``model`` on one split; write records + failures.

    Returns the records written to ``out_path``. ``trainer_options`` are the model's run-wide
    options (:class:`tabbench.models.registry.TrainerOption`, e.g. ``{"max_one_hot_levels":
    None}`` for the MLP); one the model does not take is an error before anything runs.
    ``metrics`` and ``trainer_factory`` (``(name, **trainer_options)`` -> trainer) are injection
    points for tests; by default :mod:`tabbench.metrics` and
    :func:`tabbench.models.registry.get_trainer`.

    Device: a model that is not a network (XGBoost) always trains on the CPU. A network gets
    ``device`` through :func:`tabbench.gpu.acquire_device`, held for the whole loop over
    configs: plain ``cuda`` claims a free GPU slot with a file lock in ``gpu_lock_dir`` (waiting
    up to ``gpu_claim_timeout`` seconds; ``gpu_jobs_per_device`` slots per GPU), so concurrent
    jobs on one machine never share a GPU beyond that;
    without CUDA the job falls back to the CPU with a warning if ``allow_cpu_fallback``, else
    fails with a clear error before training anything.

    Training path (:mod:`tabbench.models.stacked.plan`): ``members`` (config
    ``network_members``; None/``"auto"`` = the device's default, 1 = one config at a time, K =
    stacked groups of at most K configs within ``memory_gb`` of estimated device memory) for a
    network whose trainer can stack (:class:`tabbench.models.base.StackingTrainer`). Stacked
    groups are written config by config when the group finishes, so a kill loses at most the
    group in progress. The path is in the part folder's identity and the provenance.

    Re-stopping (:mod:`tabbench.kept`): with ``keep_for_restop`` the job keeps what adding a
    stopping metric later needs (each config's model for boosted trees, else every epoch's
    validation logits), at most ``restop_max_mb`` (config keys of the same names); its size is
    estimated and logged before anything trains. It never changes a record.

    ``retry_failed`` (config ``retry_failed``): a config whose failure is in the part folder
    (a resumed job, or a finished one reopened by :mod:`tabbench.retry`) is trained again
    instead of being kept as failed.
    """
    stream = sys.stderr if progress is None else progress
    out_path = Path(out_path)
    parts = part_dir(out_path)
    make_trainer = trainer_factory or get_trainer
    options = dict(trainer_options or {})
    # checked here, before anything runs; in the identity only when not at the default, so parts
    # trained before an option existed (i.e. at its default) stay valid
    changed = non_default_options(model, options)
    shown = "".join(f" {k}={v}" for k, v in resolve_trainer_options(model, options).items())
    members = parse_members(members)
    if memory_gb is None or not float(memory_gb) > 0:
        raise ValueError(f"memory_gb (config network_memory_gb) must be > 0, got {memory_gb!r}")
    plan = config_plan(model, dataset, split, n_configs, epochs, seed)
    ids = list(plan)
    with contextlib.ExitStack() as stack:
        # first, so that a device problem fails the job before anything is read or written
        if is_network(model):
            dev = stack.enter_context(
                acquire_device(device, allow_cpu_fallback, gpu_lock_dir, gpu_claim_timeout,
                               gpu_jobs_per_device)
            )
        else:
            dev = "cpu"
        # a trainer is built here only where the stacked path would be taken
        wants_stacking = is_network(model) and training_path(dev, members, True) == STACKED
        trainer = make_trainer(model, **options) if wants_stacking else None
        can_stack = isinstance(trainer, StackingTrainer)
        path = training_path(dev, members, can_stack)
        if members not in (None, 1) and not is_network(model):
            raise ValueError(f"model {model!r} trains one config at a time: members "
                             f"(network_members) must be 1 or auto, got {members}")
        limit = max_members(dev, members, len(ids))
        _prepare_parts(parts, job_identity(model, dataset, split, seed, changed, path))
        data = load_split_data(processed_path, splits_path, split)
        env = environment(device=dev, threads=int(threads))
        if is_network(model):
            env["training"] = path
            if path == STACKED:
                env["members"] = int(limit)
        prov = to_parquet_metadata(env)
        prog = _Progress(stream, f"{model}/{dataset}/split{split}",
                         sum(n for _, n in plan.values()))
        stacking = f" training={path} members<={limit}" if path == STACKED else ""
        if members not in (None, 1) and not can_stack:
            stacking = f" (members={members} ignored: this trainer cannot stack configs)"
        prog.line(f"{len(ids)} configs, n_train={len(data.y_train)} n_val={len(data.y_val)} "
                  f"n_test={len(data.y_test)} classes={data.n_classes} threads={threads} "
                  f"device={dev}{shown}{stacking}")
        # a trainer to ask what it keeps (its kind, its models' size bound) only when keeping
        probe = (trainer or make_trainer(model, **options)) if keep_for_restop else None
        keep = kept.plan_keep(keep_for_restop, restop_max_mb, probe, plan, data, parts)
        prog.line(keep.line())
        job = _Job(model, dataset, split, seed, data, plan, parts, prov, prog, stream, dev,
                   int(threads), metrics, lambda: make_trainer(model, **options), len(ids), keep)
        pending = []
        for c in ids:
            done = _load_done(parts, c, *plan[c])
            if isinstance(done, dict) and retry_failed:
                part_failure(parts, c).unlink(missing_ok=True)
                prog.line(f"{job.position(c)} failed before ({done['error_type']}): trained "
                          "again (retry_failed)")
                pending.append(c)
            elif done is not None:
                prog.skip(plan[c][1])
                prog.line(f"{job.position(c)} already done (part file), not retrained")
            else:
                pending.append(c)
        if path == STACKED:
            keys = {c: (trainer.stack_key(plan[c][0]), plan[c][1]) for c in pending}
            sizes = {c: int(trainer.member_bytes(plan[c][0], data)) for c in pending}
            groups = plan_groups(pending, keys, sizes, limit, float(memory_gb) * 2**30)
            for g, group in enumerate(groups):
                job.train_group(group, f"group {g + 1}/{len(groups)}")
        else:
            for c in pending:
                job.train_config(c)
    return _finish(out_path, parts, plan, prog, prov, job.keep, data.y_val,
                   {"model": model, "dataset": dataset, "split": int(split)})


class _Job:
    """One job's training loop state: trains a config (sequential path) or a group of configs
    (stacked path) and writes each config's part file as soon as it is finished."""

    def __init__(self, model, dataset, split, seed, data, plan, parts, prov, prog, stream,
                 device, threads, metrics, new_trainer, n_ids, keep: kept.KeepPlan) -> None:
        self.model, self.dataset, self.split, self.seed = model, dataset, split, seed
        self.data, self.plan, self.parts, self.prov = data, plan, parts, prov
        self.prog, self.stream, self.device, self.threads = prog, stream, device, threads
        self.metrics, self.new_trainer, self.n_ids = metrics, new_trainer, n_ids
        self.keep = keep

    def position(self, c: int) -> str:
        return f"config {c} ({c + 1}/{self.n_ids})"

    def recorder(self, c: int) -> EpochRecorder:
        params, n_ep = self.plan[c]
        d = self.data
        return EpochRecorder(
            model=self.model, dataset=self.dataset, split=self.split, config=c, params=params,
            y_val=d.y_val, y_test=d.y_test, n_train=len(d.y_train), n_classes=d.n_classes,
            n_epochs=n_ep, metrics=self.metrics,
        )

    def context(self, c: int) -> TrainContext:
        return TrainContext(seed=train_seed(self.seed, self.dataset, self.split, self.model, c),
                            n_epochs=self.plan[c][1], threads=self.threads, device=self.device)

    def train_config(self, c: int) -> None:
        params, n_ep = self.plan[c]
        pos = self.position(c)
        self.prog.line(f"{pos} training {n_ep} epochs, params {params_json(params)}")
        recorder = self.recorder(c)
        keeper = kept.ConfigKeeper(self.keep)
        trainer = self.new_trainer()
        chunks = trainer.train(params, self.data, self.context(c))
        failure = None
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except Exception as err:  # a failing config is recorded, the job goes on
                failure = _failure(c, params, n_ep, recorder.next_epoch - 1, err)
                break
            recorder.add(chunk)  # metric errors are bugs: not caught
            keeper.add(chunk.val_logits)
            last = chunk.first_epoch + len(chunk.fit_seconds) - 1
            self.prog.epochs(len(chunk.fit_seconds), f"{pos} epoch {last}/{n_ep}")
        self.finish_config(c, recorder, failure, keeper, trainer)

    def train_group(self, group: list[int], label: str) -> None:
        """The configs ``group`` as members of one stacked model; each member's failure is its
        own (recorded, the others go on); an error of the whole group fails every member not
        failed yet."""
        n_ep = self.plan[group[0]][1]
        names = ",".join(map(str, group))
        self.prog.line(f"configs {names} ({label}, {len(group)} members) training {n_ep} "
                       "epochs, params " + "; ".join(params_json(self.plan[c][0]) for c in group))
        recorders = {c: self.recorder(c) for c in group}
        keepers = {c: kept.ConfigKeeper(self.keep) for c in group}
        failures: dict[int, dict[str, Any]] = {}
        try:
            chunks = self.new_trainer().train_members(
                [self.plan[c][0] for c in group], self.data, [self.context(c) for c in group])
        except Exception as err:
            chunks, whole = iter(()), err
        else:
            whole = None
        while whole is None:
            try:
                gc = next(chunks)
            except StopIteration:
                break
            except Exception as err:  # e.g. out of memory: the group's unfinished members fail
                whole = err
                break
            last = done = 0
            for i, c in enumerate(group):
                if c in failures:
                    continue
                if i in gc.failures:
                    failures[c] = self.failure(c, recorders[c], gc.failures[i])
                    continue
                chunk: EpochChunk | None = gc.members[i]
                if chunk is not None:
                    recorders[c].add(chunk)  # metric errors are bugs: not caught
                    keepers[c].add(chunk.val_logits)
                    done += len(chunk.fit_seconds)
                    last = chunk.first_epoch + len(chunk.fit_seconds) - 1
            if last:
                self.prog.epochs(done, f"configs {names} ({label}, {len(group)} members) "
                                       f"epoch {last}/{n_ep}")
        if whole is not None:
            for c in group:
                if c not in failures:
                    failures[c] = self.failure(c, recorders[c], whole)
        for c in group:
            self.finish_config(c, recorders[c], failures.get(c), keepers[c], None)

    def failure(self, c: int, recorder: EpochRecorder, err: BaseException) -> dict[str, Any]:
        params, n_ep = self.plan[c]
        return _failure(c, params, n_ep, recorder.next_epoch - 1, err)

    def finish_config(self, c: int, recorder: EpochRecorder, failure: dict[str, Any] | None,
                      keeper: kept.ConfigKeeper, trainer: Any) -> None:
        """Write config ``c``'s part file: its records (after what it keeps for re-stopping),
        or its failure with the traceback in the job's log."""
        n_ep = self.plan[c][1]
        if failure is not None:
            self.prog.skip(n_ep - (recorder.next_epoch - 1))
            self.prog.line(f"{self.position(c)} FAILED: {failure['error_type']}: "
                           f"{failure['message']}")
            self.stream.write(failure["traceback"])
            write_json_atomic(failure, part_failure(self.parts, c))
            _free_gpu(self.device)
            return
        frame = recorder.frame()  # a trainer that stopped early fails here, before keeping
        if self.keep.keeps:
            self.keep_config(c, keeper, trainer)
        write_parquet_atomic(frame, part_records(self.parts, c), self.prov)

    def keep_config(self, c: int, keeper: kept.ConfigKeeper, trainer: Any) -> None:
        """Write what config ``c`` keeps for re-stopping. Keeping never costs a record: on an
        error, or once the kept models outgrow the cap, the job keeps nothing from then on
        (noted in the part folder, so a resume does not start again)."""
        params, n_ep = self.plan[c]
        reason = None
        try:
            kept.write_part(self.parts, c, params_json(params), n_ep, keeper.arrays(trainer))
        except Exception as err:  # a record must not be lost to what is only kept
            reason = f"keeping config {c} failed: {type(err).__name__}: {err}"
        else:
            total = kept.kept_parts_bytes(self.parts)
            if total > self.keep.cap_bytes:
                reason = (f"what it keeps reached {kept.megabytes(total)} at config {c}, over "
                          f"the cap of {kept.megabytes(self.keep.cap_bytes)} (restop_max_mb)")
        if reason is not None:
            kept.give_up(self.parts, reason)
            self.keep = kept.KeepPlan(None, cap_bytes=self.keep.cap_bytes, reason=reason)
            self.prog.line(self.keep.line())


def job_identity(model: str, dataset: str, split: int | str, seed: int,
                 changed_options: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A part folder's identity (its ``job.json``): the job's model, dataset, split and seed,
    its non-default trainer options and its training path; absent when at the default or
    sequential, so part folders from before either existed stay valid. Also what
    :mod:`tabbench.retry` writes when it reopens a finished job."""
    identity = {"model": model, "dataset": dataset, "split": int(split), "seed": int(seed)}
    if changed_options:
        identity["trainer_options"] = dict(changed_options)
    if path == STACKED:
        identity["training"] = path
    return identity


def _prepare_parts(parts: Path, identity: dict[str, Any]) -> None:
    """Create the part folder; discard it if it belongs to another job identity; drop temp files
    of a killed atomic write."""
    job = parts / PART_IDENTITY
    if job.exists():
        try:
            same = json.loads(job.read_text()) == identity
        except ValueError:
            same = False
        if not same:
            shutil.rmtree(parts)
    parts.mkdir(parents=True, exist_ok=True)
    for tmp in parts.glob(".*.tmp"):
        tmp.unlink(missing_ok=True)
    if not job.exists():
        write_json_atomic(identity, job)


def _load_done(parts: Path, c: int, params: Mapping[str, Any], n_ep: int) -> Any:
    """The finished part of config ``c`` (records or failure) if it matches; else None."""
    ok_file, bad_file = part_records(parts, c), part_failure(parts, c)
    if ok_file.exists():
        try:
            df = pd.read_parquet(ok_file)
            check_records(df, {c: n_ep})
            if (df["params"] == params_json(params)).all():
                return df
        except Exception:  # unreadable or stale: retrain
            pass
        ok_file.unlink()
    if bad_file.exists():
        try:
            fail = json.loads(bad_file.read_text())
            if fail["params"] == dict(params) and fail["n_epochs"] == n_ep:
                return fail
        except (ValueError, KeyError):
            pass
        bad_file.unlink()
    return None


def _failure(c: int, params: Mapping[str, Any], n_ep: int, done: int, err: BaseException):
    return {
        "config": c,
        "params": dict(params),
        "n_epochs": n_ep,
        "epochs_done": done,
        "error_type": type(err).__name__,
        "message": str(err),
        "traceback": "".join(traceback.format_exception(err)),
    }


def _free_gpu(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def _job_provenance(parts: Path, plan: Mapping[int, Any], current: dict[str, str]):
    """The runs file's provenance: the one all part files share, or, for a job resumed under
    another environment, every key's values (lists where they differ, named in ``mixed``)."""
    provs = []
    for c in plan:
        part = part_records(parts, c)
        if part.exists():
            provs.append(read_runs_provenance(part))
    known = [p for p in provs if p is not None]
    if not known or all(p == known[0] for p in provs):
        return current if not known else to_parquet_metadata(known[0])
    summary = gather(provs)
    return to_parquet_metadata({**summary["versions"], "mixed": summary["mixed"]})


def _finish(out_path: Path, parts: Path, plan: Mapping[int, Any], prog: _Progress,
            prov: dict[str, str], keep: kept.KeepPlan, y_val: Any, identity: dict[str, Any]):
    frames, failures = [], []
    for c, (params, n_ep) in plan.items():
        done = _load_done(parts, c, params, n_ep)
        if done is None:
            raise RuntimeError(f"config {c} has no part file after training")
        (frames if isinstance(done, pd.DataFrame) else failures).append(done)
    records = pd.concat(frames, ignore_index=True) if frames else empty_records()
    check_records(records, {int(f["config"].iloc[0]): len(f) for f in frames})
    job_prov = _job_provenance(parts, plan, prov)
    recorded = {int(f["config"].iloc[0]): (params_json(plan[int(f["config"].iloc[0])][0]),
                                           len(f)) for f in frames}
    # what re-stopping needs, before the runs file (the train rule's output) is written
    prog.line(kept.finish(out_path, parts, keep, recorded, y_val, identity))
    write_json_atomic(failures, failures_path(out_path))
    write_parquet_atomic(records, out_path, job_prov)
    shutil.rmtree(parts)
    prog.line(f"done: {len(frames)} configs recorded, {len(failures)} failed -> {out_path}")
    return records
