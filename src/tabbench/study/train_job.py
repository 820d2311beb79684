"""One training job: every config of one (model, dataset, split), every epoch recorded.

``run_train_job`` trains configs ``0..n_configs`` (0 = default, the rest random draws of the
search space) one after the other. Each finished config is persisted at once as a part file
(``<out>.part/config<c>.parquet``, or ``config<c>.failure.json`` if it failed), so a killed job
resumes at the first config without one. At the end the parts are concatenated into ``out_path``
and the failures into the sidecar ``<out>.failures.json`` (always written, possibly ``[]``), both
atomically, and the part folder is removed (so a forced rerun of a finished job starts afresh).

A part file is reused only if it matches what the rerun would train
(:class:`tabbench.study.parts.PartFolder`). A failing config (an exception in the trainer, a
non-finite loss in the first epoch, out of memory) is recorded with its error and the job goes
on; errors of the recorder itself (the metrics) are bugs and stop the job.

Stopping: under :func:`tabbench.study.signals.stop_on_signals` (what ``tabbench train`` runs
in), SIGINT and SIGTERM raise :class:`~tabbench.study.signals.TrainInterrupted` within a
boosting round or a mini-batch. Finished configs are already on disk as part files; the config
in progress is lost (its partial write, if any, is removed by :func:`tabbench.core.io.atomic_path`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TextIO

import pandas as pd

from tabbench.core.io import write_json_atomic, write_parquet_atomic
from tabbench.core.layout import failures_path
from tabbench.core.provenance import environment, to_parquet_metadata
from tabbench.data.dataset import SplitData, load_split_data
from tabbench.models.base import EpochChunk, StackingTrainer, TrainContext
from tabbench.models.recorder import (
    EpochRecorder,
    Labels,
    RunKey,
    check_records,
    empty_records,
    params_json,
)
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
from tabbench.search import sample_config, stable_seed
from tabbench.study import restop_store
from tabbench.study.parts import PartFolder, Plan, failure_record, job_identity
from tabbench.study.progress import Progress
from tabbench.study.specs import Hardware, JobFiles, Keeping, TrainTarget


def train_seed(seed: int, dataset: str, split: int, model: str, config_id: int) -> int:
    """The training seed of one config (init, shuffling, subsampling): from its identity only."""
    return stable_seed(int(seed), str(dataset), int(split), str(model), int(config_id), "train")


def config_plan(target: TrainTarget) -> dict[int, tuple[dict[str, Any], int]]:
    """config -> (params, epochs) of a train job: the default (config 0) and ``n_configs``
    random configs of its model. What the job trains and what its keeping is planned for
    (``benchmarks/restop_cost.py --plan`` sizes a study from it without training)."""
    t = target
    return {c: (sample_config(t.model, c, seed=t.seed, dataset=t.dataset, split=t.split),
                n_epochs_for(t.model, c, t.epochs))
            for c in range(int(t.n_configs) + 1)}


def run_train_job(
    target: TrainTarget,
    files: JobFiles,
    hardware: Hardware | None = None,
    keeping: Keeping | None = None,
    *,
    progress: TextIO | None = None,
    metrics: Any = None,
    trainer_factory: Callable[..., Any] | None = None,
) -> pd.DataFrame:
    """Train ``target`` on its split; write its records and failures to ``files.out``.

    Returns the records written. A trainer option the model does not take is an error before
    anything runs. ``metrics`` and ``trainer_factory`` (``(name, **trainer_options)`` ->
    trainer) are injection points for tests; by default :mod:`tabbench.metrics` and
    :func:`tabbench.models.registry.get_trainer`.

    Device: a model that is not a network (XGBoost) always trains on the CPU. A network gets
    ``hardware.device`` through :meth:`~tabbench.study.specs.Hardware.acquire`, held for the
    whole loop over configs: plain ``cuda`` claims a free GPU slot with a file lock, so
    concurrent jobs on one machine never share a GPU beyond ``gpu.jobs_per_device``; without
    CUDA the job falls back to the CPU with a warning if allowed, else fails with a clear error
    before training anything.

    Training path (:mod:`tabbench.models.stacked.plan`): ``target.members`` for a network whose
    trainer can stack (:class:`tabbench.models.base.StackingTrainer`); stacked groups fit
    ``hardware.memory_gb`` of estimated device memory and are written config by config when the
    group finishes, so a kill loses at most the group in progress. The path is in the part
    folder's identity and the provenance.

    Re-stopping (:mod:`tabbench.study.restop_store`): with ``keeping.for_restop`` the job keeps
    what adding a
    stopping metric later needs (each config's model for boosted trees, else every epoch's
    validation logits), at most ``keeping.restop_max_mb``; its size is estimated and logged
    before anything trains. It never changes a record. With ``keeping.retry_failed`` a config
    whose failure is in the part folder (a resumed job, or a finished one reopened by
    :mod:`tabbench.study.retry`) is trained again instead of being kept as failed.
    """
    hardware = hardware or Hardware()
    keeping = keeping or Keeping()
    stream = sys.stderr if progress is None else progress
    make_trainer = trainer_factory or get_trainer
    model, options = target.model, dict(target.trainer_options)
    # checked here, before anything runs; in the identity only when not at the default, so
    # that parts trained at the default stay valid whichever options exist
    changed = non_default_options(model, options)
    shown = "".join(f" {k}={v}" for k, v in resolve_trainer_options(model, options).items())
    members = parse_members(target.members)
    if hardware.memory_gb is None or not float(hardware.memory_gb) > 0:
        raise ValueError("memory_gb (config network_memory_gb) must be > 0, got "
                         f"{hardware.memory_gb!r}")
    plan = config_plan(target)
    with hardware.acquire(is_network(model)) as dev:  # a device problem fails before any I/O
        # a trainer is built here only where the stacked path would be taken
        wants_stacking = is_network(model) and training_path(dev, members, True) == STACKED
        trainer = make_trainer(model, **options) if wants_stacking else None
        can_stack = isinstance(trainer, StackingTrainer)
        path = training_path(dev, members, can_stack)
        if members not in (None, 1) and not is_network(model):
            raise ValueError(f"model {model!r} trains one config at a time: members "
                             f"(network_members) must be 1 or auto, got {members}")
        limit = max_members(dev, members, len(plan))
        folder = PartFolder(files.out)
        folder.prepare(job_identity(model, target.dataset, target.split, target.seed, changed,
                                    path))
        data = load_split_data(files.processed, files.splits, target.split)
        env = environment(device=dev, threads=int(hardware.threads))
        if is_network(model):
            env["training"] = path
            if path == STACKED:
                env["members"] = int(limit)
        folder.provenance = to_parquet_metadata(env)
        prog = Progress(stream, target.tag, sum(n for _, n in plan.values()))
        stacking = f" training={path} members<={limit}" if path == STACKED else ""
        if members not in (None, 1) and not can_stack:
            stacking = f" (members={members} ignored: this trainer cannot stack configs)"
        prog.line(f"{len(plan)} configs, n_train={len(data.y_train)} n_val={len(data.y_val)} "
                  f"n_test={len(data.y_test)} classes={data.n_classes} "
                  f"threads={hardware.threads} device={dev}{shown}{stacking}")
        # a trainer to ask what it keeps (its kind, its models' size bound) only when keeping
        probe = (trainer or make_trainer(model, **options)) if keeping.for_restop else None
        keep = restop_store.plan_keep(keeping.for_restop, keeping.restop_max_mb, probe, plan, data,
                              folder.path)
        prog.line(keep.line())
        folder.keep = keep
        job = _Job(target, data, plan, folder, prog, replace(hardware, device=dev),
                   lambda: make_trainer(model, **options), metrics)
        pending = job.pending(keeping.retry_failed)
        if path == STACKED:
            keys = {c: (trainer.stack_key(plan[c][0]), plan[c][1]) for c in pending}
            sizes = {c: int(trainer.member_bytes(plan[c][0], data)) for c in pending}
            groups = plan_groups(pending, keys, sizes, limit,
                                 float(hardware.memory_gb) * 2**30)
            for g, group in enumerate(groups):
                job.train_group(group, f"group {g + 1}/{len(groups)}")
        else:
            for c in pending:
                job.train_config(c)
    return job.finish()


class _Job:
    """One job's training loop state: trains a config (sequential path) or a group of configs
    (stacked path) and writes each config's part file as soon as it is finished."""

    def __init__(self, target: TrainTarget, data: SplitData, plan: Plan, folder: PartFolder,
                 prog: Progress, hardware: Hardware, new_trainer: Callable[[], Any],
                 metrics: Any) -> None:
        self.target, self.data, self.plan, self.folder = target, data, plan, folder
        self.prog, self.hardware = prog, hardware
        self.new_trainer, self.metrics = new_trainer, metrics

    @property
    def keep(self) -> restop_store.KeepPlan:
        return self.folder.keep

    def position(self, c: int) -> str:
        return f"config {c} ({c + 1}/{len(self.plan)})"

    def pending(self, retry_failed: bool) -> list[int]:
        """The configs without a matching part file (or with a failure, ``retry_failed``)."""
        pending = []
        for c, (params, n_ep) in self.plan.items():
            done = self.folder.done(c, params, n_ep)
            if isinstance(done, dict) and retry_failed:
                self.folder.forget_failure(c)
                self.prog.line(f"{self.position(c)} failed before ({done['error_type']}): "
                               "trained again (retry_failed)")
                pending.append(c)
            elif done is not None:
                self.prog.skip(n_ep)
                self.prog.line(f"{self.position(c)} already done (part file), not retrained")
            else:
                pending.append(c)
        return pending

    def recorder(self, c: int) -> EpochRecorder:
        params, n_ep = self.plan[c]
        t = self.target
        return EpochRecorder(RunKey(t.model, t.dataset, t.split, c), params,
                             Labels.of(self.data), n_ep, self.metrics)

    def context(self, c: int) -> TrainContext:
        t = self.target
        return TrainContext(seed=train_seed(t.seed, t.dataset, t.split, t.model, c),
                            n_epochs=self.plan[c][1], threads=int(self.hardware.threads),
                            device=self.hardware.device)

    def train_config(self, c: int) -> None:
        params, n_ep = self.plan[c]
        pos = self.position(c)
        self.prog.line(f"{pos} training {n_ep} epochs, params {params_json(params)}")
        recorder = self.recorder(c)
        keeper = restop_store.ConfigKeeper(self.keep)
        trainer = self.new_trainer()
        chunks = trainer.train(params, self.data, self.context(c))
        failure = None
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except Exception as err:  # a failing config is recorded, the job goes on
                failure = self.failure(c, recorder, err)
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
        keepers = {c: restop_store.ConfigKeeper(self.keep) for c in group}
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
        return failure_record(c, params, n_ep, recorder.next_epoch - 1, err)

    def finish_config(self, c: int, recorder: EpochRecorder, failure: dict[str, Any] | None,
                      keeper: restop_store.ConfigKeeper, trainer: Any) -> None:
        """Write config ``c``'s part file: its records (after what it keeps for re-stopping),
        or its failure with the traceback in the job's log."""
        n_ep = self.plan[c][1]
        if failure is not None:
            self.prog.skip(n_ep - (recorder.next_epoch - 1))
            self.prog.line(f"{self.position(c)} FAILED: {failure['error_type']}: "
                           f"{failure['message']}")
            self.prog.write(failure["traceback"])
            self.folder.write_failure(c, failure)
            _free_gpu(self.hardware.device)
            return
        frame = recorder.frame()  # a trainer that stopped early fails here, before keeping
        if self.keep.keeps:
            self.keep_config(c, keeper, trainer)
        self.folder.write_records(c, frame)

    def keep_config(self, c: int, keeper: restop_store.ConfigKeeper, trainer: Any) -> None:
        """Write what config ``c`` keeps for re-stopping. Keeping never costs a record: on an
        error, or once the kept models outgrow the cap, the job keeps nothing from then on
        (noted in the part folder, so a resume does not start again)."""
        params, n_ep = self.plan[c]
        parts = self.folder.path
        reason = None
        try:
            restop_store.write_part(parts, c, params_json(params), n_ep, keeper.arrays(trainer))
        except Exception as err:  # a record must not be lost to what is only kept
            reason = f"keeping config {c} failed: {type(err).__name__}: {err}"
        else:
            total = restop_store.stored_parts_bytes(parts)
            if total > self.keep.cap_bytes:
                cap = restop_store.megabytes(self.keep.cap_bytes)
                reason = (f"what it keeps reached {restop_store.megabytes(total)} at config "
                          f"{c}, over the cap of {cap} (restop_max_mb)")
        if reason is not None:
            restop_store.give_up(parts, reason)
            self.folder.keep = restop_store.KeepPlan(None, cap_bytes=self.keep.cap_bytes,
                                             reason=reason)
            self.prog.line(self.keep.line())

    def finish(self) -> pd.DataFrame:
        """Concatenate the part files into the runs file and the failures into its sidecar
        (both atomic, after what re-stopping needs), then remove the part folder."""
        frames, failures = [], []
        for c, (params, n_ep) in self.plan.items():
            done = self.folder.done(c, params, n_ep)
            if done is None:
                raise RuntimeError(f"config {c} has no part file after training")
            (frames if isinstance(done, pd.DataFrame) else failures).append(done)
        records = pd.concat(frames, ignore_index=True) if frames else empty_records()
        check_records(records, {int(f["config"].iloc[0]): len(f) for f in frames})
        job_prov = self.folder.job_provenance(self.plan)
        recorded = {int(f["config"].iloc[0]): (params_json(self.plan[int(f["config"].iloc[0])][0]),
                                               len(f)) for f in frames}
        out, t = self.folder.out, self.target
        identity = {"model": t.model, "dataset": t.dataset, "split": int(t.split)}
        # what re-stopping needs, before the runs file (the train rule's output) is written
        self.prog.line(restop_store.finish(out, self.folder.path, self.keep, recorded,
                                           self.data.y_val, identity))
        write_json_atomic(failures, failures_path(out))
        write_parquet_atomic(records, out, job_prov)
        self.folder.remove()
        self.prog.line(f"done: {len(frames)} configs recorded, {len(failures)} failed -> {out}")
        return records


def _free_gpu(device: str) -> None:
    if device.startswith("cuda"):
        import torch  # lazy: torch takes 1 to 3 s to import, which a CPU job need not pay

        torch.cuda.empty_cache()
