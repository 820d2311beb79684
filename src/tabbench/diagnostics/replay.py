"""Replay the selected models: retrain each selected (config, epoch) of one split and keep its
validation and test logits (``tabbench replay``).

Why: the per-epoch records hold metrics, never predictions, so reliability diagrams or other
post-hoc calibrators of the *chosen* models need their logits back. Training is deterministic
given the config's params and its training seed (:func:`tabbench.study.train_job.train_seed`), so
the
logits can be recomputed instead of being stored for every epoch of every config.

What is replayed: the selection of :func:`tabbench.summary.select.select_table` recomputed from the
runs
file itself (so the replay always matches the records it checks against), i.e. one (config,
epoch) per (regime, stopping metric). Work is shared: one training per distinct config, up to
the last epoch any stopping metric chose for it, keeping the logits of every needed epoch:

* a :class:`~tabbench.models.base.ReplayableTrainer` (``logits_at``: XGBoost, LightGBM) trains
  up to the last needed round and predicts at each needed round;
* any other trainer is driven through its :class:`~tabbench.models.base.Trainer` chunks, which
  are dropped except at the needed epochs, and closed after the last needed one. Chunk length is
  a pure speed knob of the trainers (never changes the logits), so it is set to one epoch where
  the trainer exposes it (``chunk_epochs``): no epoch is trained past the last needed one.
  A network job trained on the stacked path (its provenance says ``training: stacked``;
  docs/design.md §15) is replayed through that path, each config as a group of one member: a
  member's records do not depend on its group, so this reproduces them.

``ctx.n_epochs`` is the number of epochs the config was *recorded* with (not the config file's
current value): RealMLP's schedules depend on the planned length, and the records are the truth
about how the study trained.

Self-check: for every selection, the validation logloss of the replayed logits must equal the
recorded ``val_logloss`` of that (config, epoch) within ``rtol`` (relative; 1e-5 on the CPU),
and likewise the test logloss; otherwise :class:`ReplayMismatchError` names both numbers and
nothing is written. A trainer that is not deterministic (or a changed config, data or library)
is caught here instead of silently feeding wrong logits into the diagnostics.

Cost: the sidecar records the replay's wall and CPU time, the study's training time of the
split (the sum over configs of the last ``fit_seconds``) and a machine-independent estimate,
the recorded ``fit_seconds`` up to the replayed epochs, as fractions of the study's training
(``fraction_measured``: replay wall time / study training; ``fraction_recorded``: recorded
time of the replayed epochs / study training, i.e. the same machine and load as the study).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from tabbench.core.io import atomic_path, write_json_atomic
from tabbench.core.layout import parse_runs_file, replay_sidecar
from tabbench.core.provenance import read_runs_provenance
from tabbench.data.dataset import load_split_data
from tabbench.diagnostics.paths import logits_key, replay_key
from tabbench.metrics import logloss
from tabbench.models.base import (
    EpochChunk,
    ReplayableTrainer,
    SplitData,
    StackingTrainer,
    TrainContext,
)
from tabbench.models.registry import get_trainer, is_network
from tabbench.models.stacked.plan import STACKED
from tabbench.settings.table import default
from tabbench.study.specs import Hardware, JobFiles
from tabbench.study.train_job import train_seed
from tabbench.summary.select import DEFAULT_EPOCH_TIES, read_records, select_table

#: default relative tolerance of the self-check (CPU training is bit-for-bit deterministic; the
#: slack covers float32 logits vs the recorder's float64 sums)
RTOL = float(default("replay_rtol"))


class ReplayMismatchError(RuntimeError):
    """A replayed selection does not reproduce its recorded validation (or test) logloss."""


@dataclass(frozen=True)
class Selection:
    """One selected (config, epoch) of one (regime, stopping metric), with the recorded loglosses
    the replay must reproduce."""

    regime: str
    stopping: str
    config: int
    epoch: int
    val_logloss: float
    test_logloss: float

    @property
    def key(self) -> str:
        return replay_key(self.regime, self.stopping)


@dataclass
class ReplayResult:
    """The arrays of the ``.npz`` and the JSON sidecar of one replayed split."""

    arrays: dict[str, np.ndarray]
    sidecar: dict[str, Any]


@dataclass(frozen=True)
class ReplaySpec:
    """How a split is replayed: with the study's ``seed``, trainer options (the model's
    run-wide options, as training had them) and tie rule (config ``epoch_ties``, which the
    selections replayed must share with the study's selected files), checked to ``rtol``."""

    seed: int
    trainer_options: Mapping[str, Any] = field(default_factory=dict)
    rtol: float = RTOL
    epoch_ties: str = DEFAULT_EPOCH_TIES


def selections_from_records(records: pd.DataFrame, epoch_ties: str = DEFAULT_EPOCH_TIES
                            ) -> list[Selection]:
    """The selection of :func:`tabbench.summary.select.select_table` for the records of one split
    (with the study's tie rule: config ``epoch_ties``; the ``best`` stopping rule, which the
    diagnostics replay), with the recorded val/test logloss of each chosen (config, epoch)."""
    splits = records["split"].unique()
    if len(splits) != 1:
        raise ValueError(f"records of one split expected, got splits {sorted(splits)}")
    chosen = select_table(records, epoch_ties=epoch_ties, patience=[])
    if chosen.empty:
        return []
    index = records.set_index(["config", "epoch"])
    out = []
    for row in chosen.itertuples(index=False):
        at = index.loc[(int(row.config), int(row.epoch))]
        out.append(Selection(str(row.regime), str(row.stopping), int(row.config), int(row.epoch),
                             float(at["val_logloss"]), float(at["test_logloss"])))
    return out


def replay_plan(selections: Iterable[Selection]) -> dict[int, list[int]]:
    """config -> the sorted distinct epochs the selections need from it (one training each)."""
    plan: dict[int, set[int]] = {}
    for s in selections:
        plan.setdefault(s.config, set()).add(s.epoch)
    return {c: sorted(e) for c, e in sorted(plan.items())}


def _one_epoch_chunks(trainer: Any) -> None:
    """Make a trainer yield after every epoch where it exposes its chunk length (module
    docstring), so that the replay stops right after the last needed epoch."""
    if hasattr(trainer, "chunk_epochs"):
        trainer.chunk_epochs = 1


def collect_epochs(chunks: Iterator[EpochChunk], epochs: Iterable[int]
                   ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """epoch -> (val logits, test logits) (float32 copies) for the wanted ``epochs`` of a
    trainer's chunk iterator, which is closed right after the chunk holding the last of them."""
    want = set(int(e) for e in epochs)
    last = max(want)
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    reached = 0
    try:
        for chunk in chunks:
            n = chunk.val_logits.shape[0]
            for i in range(n):
                e = chunk.first_epoch + i
                if e in want:
                    out[e] = (np.array(chunk.val_logits[i], dtype=np.float32),
                              np.array(chunk.test_logits[i], dtype=np.float32))
            reached = chunk.first_epoch + n - 1
            if reached >= last:
                break
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    missing = sorted(want - set(out))
    if missing:
        raise RuntimeError(f"the trainer stopped at epoch {reached}; epochs {missing} missing")
    return out


def member_chunks(trainer: StackingTrainer, params: Mapping[str, Any], data: SplitData,
                  ctx: TrainContext) -> Iterator[EpochChunk]:
    """One config trained through the stacked path, as a group of one member (the records of a
    stacked job do not depend on the group, so this reproduces them): its chunks."""
    groups = trainer.train_members([params], data, [ctx])
    try:
        for group in groups:
            if 0 in group.failures:
                raise group.failures[0]
            if group.members[0] is not None:
                yield group.members[0]
    finally:
        close = getattr(groups, "close", None)
        if close is not None:
            close()


def train_snapshots(trainer: Any, params: Mapping[str, Any], data: SplitData, ctx: TrainContext,
                    epochs: Iterable[int], stacked: bool = False
                    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Logits of one config at ``epochs``: the trainer's ``logits_at`` if it has one
    (:class:`~tabbench.models.base.ReplayableTrainer`), else its chunks (module docstring);
    ``stacked``: the job trained on the stacked path (docs/design.md §15), replayed through it."""
    epochs = sorted(set(int(e) for e in epochs))
    if isinstance(trainer, ReplayableTrainer):
        got = trainer.logits_at(params, data, ctx, epochs)
        return {e: (np.asarray(got[e][0], dtype=np.float32), np.asarray(got[e][1], np.float32))
                for e in epochs}
    _one_epoch_chunks(trainer)
    if stacked:
        if not isinstance(trainer, StackingTrainer):
            raise TypeError(f"the records were trained stacked, but {type(trainer).__name__} "
                            "cannot train stacked (no train_members)")
        return collect_epochs(member_chunks(trainer, params, data, ctx), epochs)
    return collect_epochs(trainer.train(params, data, ctx), epochs)


def _rel_diff(a: float, b: float) -> float:
    if a == b:
        return 0.0
    if not (np.isfinite(a) and np.isfinite(b)):
        return float("inf")
    return abs(a - b) / max(abs(b), np.finfo(np.float64).tiny)


def replay_split(
    records: pd.DataFrame,
    data: SplitData,
    spec: ReplaySpec,
    *,
    device: str = "cpu",
    threads: int = 1,
    stacked: bool = False,
    trainer_factory: Callable[..., Any] | None = None,
    progress: TextIO | None = None,
) -> ReplayResult:
    """Replay every selection of one split's ``records`` (at least the columns of
    :data:`tabbench.summary.select.READ_COLUMNS`) on ``data`` as ``spec`` says, on ``device`` with
    ``threads``; ``stacked``: the job trained on the stacked path. Check and return the logits.

    ``trainer_factory`` (``(model, **trainer_options)`` -> trainer) is an injection point for
    tests; by default :func:`tabbench.models.registry.get_trainer`.
    Raises :class:`ReplayMismatchError` when a replayed logloss differs from the record.
    """
    if trainer_factory is None:
        trainer_factory = get_trainer
    stream = progress if progress is not None else sys.stderr
    t_start = time.perf_counter()
    model = str(records["model"].iloc[0])
    dataset = str(records["dataset"].iloc[0])
    split = int(records["split"].iloc[0])
    options = dict(spec.trainer_options)
    seed, rtol, epoch_ties = spec.seed, spec.rtol, spec.epoch_ties
    selections = selections_from_records(records, epoch_ties)
    plan = replay_plan(selections)
    per_config = records.groupby("config", sort=True)
    n_epochs = per_config["epoch"].max()
    last_fit = per_config["fit_seconds"].max()
    params = per_config["params"].first()
    fit_at = records.set_index(["config", "epoch"])["fit_seconds"]

    snaps: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    configs: dict[str, dict[str, Any]] = {}
    trainer_seconds = 0.0
    for c, epochs in plan.items():
        ctx = TrainContext(seed=train_seed(seed, dataset, split, model, c),
                           n_epochs=int(n_epochs[c]), threads=int(threads), device=device)
        t0 = time.perf_counter()
        got = train_snapshots(trainer_factory(model, **options), json.loads(str(params[c])),
                              data, ctx, epochs, stacked=stacked)
        dt = time.perf_counter() - t0
        trainer_seconds += dt
        snaps.update({(c, e): v for e, v in got.items()})
        configs[str(c)] = {"epochs": epochs, "n_epochs_recorded": int(n_epochs[c]),
                           "seconds": dt,
                           "recorded_fit_seconds": float(fit_at[(c, max(epochs))])}
        print(f"[{model}/{dataset}/split{split}] config {c}: epochs {epochs} of "
              f"{int(n_epochs[c])} replayed in {dt:.1f}s", file=stream, flush=True)

    arrays: dict[str, np.ndarray] = {"y_val": np.asarray(data.y_val, dtype=np.int64),
                                     "y_test": np.asarray(data.y_test, dtype=np.int64)}
    entries: dict[str, dict[str, Any]] = {}
    bad = []
    for s in selections:
        val, test = snaps[(s.config, s.epoch)]
        got_val = logloss(val, data.y_val) if np.isfinite(val).all() else float("nan")
        got_test = logloss(test, data.y_test) if np.isfinite(test).all() else float("nan")
        entries[s.key] = {"regime": s.regime, "stopping": s.stopping, "config": s.config,
                          "epoch": s.epoch, "val_logloss_recorded": s.val_logloss,
                          "val_logloss_replayed": got_val, "test_logloss_recorded": s.test_logloss,
                          "test_logloss_replayed": got_test}
        for part, got, want in (("validation", got_val, s.val_logloss),
                                ("test", got_test, s.test_logloss)):
            if _rel_diff(got, want) > rtol:
                bad.append(f"{s.key} (config {s.config}, epoch {s.epoch}): replayed {part} "
                           f"logloss {got!r} != recorded {want!r} (relative difference "
                           f"{_rel_diff(got, want):.3g} > rtol {rtol:g})")
        arrays[logits_key("val", s.regime, s.stopping)] = val
        arrays[logits_key("test", s.regime, s.stopping)] = test
    if bad:
        raise ReplayMismatchError(
            f"replay of {model}/{dataset}/split{split} does not reproduce the records (is the "
            "trainer deterministic? same config, data, device and library versions?):\n  "
            + "\n  ".join(bad))

    study = float(last_fit.sum())
    replayed_fit = float(sum(v["recorded_fit_seconds"] for v in configs.values()))
    wall = time.perf_counter() - t_start
    sidecar = {
        "model": model, "dataset": dataset, "split": split, "seed": int(seed),
        "device": device, "threads": int(threads), "trainer_options": options,
        "rtol": float(rtol), "n_val": int(len(data.y_val)), "n_test": int(len(data.y_test)),
        "n_classes": int(data.n_classes), "selections": entries, "configs": configs,
        "epoch_ties": epoch_ties,
        "cost": {
            "replay_seconds": wall,
            "replay_train_seconds": trainer_seconds,
            "study_train_seconds": study,
            "study_configs": int(len(last_fit)),
            "recorded_fit_seconds_replayed": replayed_fit,
            "fraction_measured": wall / study if study > 0 else float("nan"),
            "fraction_recorded": replayed_fit / study if study > 0 else float("nan"),
        },
    }
    return ReplayResult(arrays, sidecar)


def write_replay(result: ReplayResult, out_npz: str | Path) -> None:
    """Write the ``.npz`` then its JSON sidecar, each atomically. An old sidecar is removed
    first and the new one written last, so a crash in between leaves an ``.npz`` without a
    sidecar, which readers treat as incomplete (never a sidecar describing other arrays)."""
    out_npz = Path(out_npz)
    replay_sidecar(out_npz).unlink(missing_ok=True)
    with atomic_path(out_npz) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **result.arrays)  # a file object: numpy appends no ".npz" to the name
    write_json_atomic(result.sidecar, replay_sidecar(out_npz))


def read_replay(npz: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and the sidecar of a replay file."""
    with np.load(npz) as f:
        arrays = {k: f[k] for k in f.files}
    sidecar = json.loads(replay_sidecar(npz).read_text())
    return arrays, sidecar


def run_replay_job(
    runs_path: str | Path,
    files: JobFiles,
    spec: ReplaySpec,
    hardware: Hardware | None = None,
    *,
    trainer_factory: Callable[..., Any] | None = None,
    progress: TextIO | None = None,
) -> ReplayResult:
    """Replay one runs file (what ``tabbench replay`` and the rule ``replay_split`` run): read
    the records, load the split's data (``files``: the processed dataset, its splits and the
    ``.npz`` to write), claim the device as training does (neural networks only), replay,
    check, write ``files.out`` and its sidecar."""
    hardware = hardware or Hardware()
    stream = progress if progress is not None else sys.stderr
    t_start, cpu_start = time.perf_counter(), time.process_time()
    records = read_records(runs_path).to_pandas()
    if records.empty:  # every config failed: nothing selected, nothing to replay
        return _write_empty(runs_path, files, spec.seed, stream)
    model = str(records["model"].iloc[0])
    split = int(records["split"].iloc[0])
    trained = read_runs_provenance(runs_path) or {}
    with hardware.acquire(is_network(model)) as dev:
        for key, now in (("device", dev), ("threads", int(hardware.threads))):
            if key in trained and str(trained[key]) != str(now):
                print(f"warning: {runs_path} was trained with {key}={trained[key]}, replaying "
                      f"with {key}={now}: the self-check may fail", file=stream, flush=True)
        data = load_split_data(files.processed, files.splits, split)
        result = replay_split(records, data, spec, device=dev, threads=int(hardware.threads),
                              stacked=trained.get("training") == STACKED,
                              trainer_factory=trainer_factory, progress=stream)
    result.sidecar["trained_with"] = {k: trained.get(k) for k in ("device", "threads", "commit",
                                                                  "training", "members")}
    cost = result.sidecar["cost"]
    # the whole job (records, data, training, check), not only replay_split's part
    cost["replay_seconds"] = time.perf_counter() - t_start
    # CPU time of this process: what the replay cost on a machine shared with other jobs,
    # where its wall time is inflated (GPU work is not in it)
    cost["replay_cpu_seconds"] = time.process_time() - cpu_start
    study = cost["study_train_seconds"]
    cost["fraction_measured"] = cost["replay_seconds"] / study if study > 0 else float("nan")
    write_replay(result, files.out)
    print(f"replayed {len(result.sidecar['selections'])} selections of "
          f"{len(result.sidecar['configs'])} configs in {cost['replay_seconds']:.1f}s "
          f"({100 * cost['fraction_measured']:.1f}% of the study's training of this split) "
          f"-> {files.out}", file=stream, flush=True)
    return result


def _write_empty(runs_path: str | Path, files: JobFiles, seed: int, stream: TextIO
                 ) -> ReplayResult:
    """The replay of a runs file without records (every config failed): the labels and no
    selection, so that a study's replay target does not fail on such a split. Model, dataset
    and split come from the file's path (:func:`tabbench.core.layout.parse_runs_file`)."""
    runs_path = Path(runs_path)
    where = parse_runs_file(runs_path)
    if where is None:
        raise ValueError(f"{runs_path}: no records, and no .../<model>/<dataset>/split<i>.parquet"
                         " path to tell the split from")
    model, dataset, split = where
    data = load_split_data(files.processed, files.splits, split)
    arrays = {"y_val": np.asarray(data.y_val, dtype=np.int64),
              "y_test": np.asarray(data.y_test, dtype=np.int64)}
    sidecar = {"model": model, "dataset": dataset, "split": split, "seed": int(seed),
               "n_val": len(data.y_val), "n_test": len(data.y_test),
               "n_classes": int(data.n_classes), "selections": {}, "configs": {},
               "cost": {"replay_seconds": 0.0, "replay_train_seconds": 0.0,
                        "study_train_seconds": 0.0, "study_configs": 0,
                        "recorded_fit_seconds_replayed": 0.0,
                        "fraction_measured": float("nan"), "fraction_recorded": float("nan")}}
    result = ReplayResult(arrays, sidecar)
    write_replay(result, files.out)
    print(f"{runs_path} holds no records (every config failed): wrote the labels only -> "
          f"{files.out}", file=stream, flush=True)
    return result
