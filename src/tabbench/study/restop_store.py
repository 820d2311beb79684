"""What a train job keeps so that a stopping metric registered after training can be added to
its runs file without retraining it (``tabbench restop``, :mod:`tabbench.study.restop`;
docs/design.md §16).

A new stopping metric needs every epoch's validation logits of every config. Per config a job
keeps one of:

* **the trained model**, for a :class:`~tabbench.models.base.ModelKeepingTrainer` (boosted
  trees: XGBoost, LightGBM): its rounds' validation logits come back from it in one prediction
  pass, bit for bit those training recorded;
* **every epoch's validation logits**, for any other trainer (the networks, a plugin model),
  as float32 when the job's logits fit ``restop_max_mb`` — exactly the recorder's inputs — else
  as float16 (half the disk; the re-stopped values then differ from what training would have
  recorded: logloss, Brier and the TS metrics by <= 1.3e-4 relative, AUROC, ``ir_ref`` and the
  error rate by up to ~1e-2, measured in docs/performance.md; :data:`FLOAT16_RTOL` is the
  re-stop's self-check tolerance), else nothing.

A job keeps all its configs or none (a runs file gains a column whole): its size is estimated
before anything trains, from n_val, classes, epochs and configs (exact for logits, a bound for
trees: :meth:`~tabbench.models.base.ModelKeepingTrainer.kept_model_bound`), and logged; the
trees' actual size is checked against the cap as configs finish. What the job does not keep,
and why, is written down, so that ``tabbench restop`` can say which jobs would need retraining.
Keeping never costs a record: an error while keeping is logged and the job keeps nothing.

Files (names: :mod:`tabbench.core.layout`): a finished config's ``config<c>.kept.npz`` in the part
folder, written before its records (so a resumed job knows which finished configs kept
theirs), and ``kept.json`` there once the job gave keeping up; at the end of the job
``split<i>.restop.npz`` (a zip of ``config<c>.logits.npy`` or ``config<c>.model.npy`` arrays and
``y_val.npy``) and its sidecar ``split<i>.restop.json`` (what was kept per config, or why
nothing), next to the runs file and written before it, the sidecar last. Neither is an output
of the train rule (a finished folder whose jobs kept nothing must not look incomplete).
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tabbench.core.io import atomic_path, write_json_atomic
from tabbench.core.layout import PART_NOT_KEPT, part_kept, restop_artefact, restop_sidecar
from tabbench.models.base import ModelKeepingTrainer, SplitData
from tabbench.settings.table import default

#: the format of ``split<i>.restop.json``
FORMAT = 1
#: default per-job cap (config ``restop_max_mb``)
DEFAULT_MAX_MB = float(default("restop_max_mb"))
MODEL, LOGITS = "model", "logits"
#: the re-stop's self-check tolerance (relative, on every epoch's validation logloss) for
#: logits kept as float16; docs/performance.md has the measured differences (<= 1.3e-4)
FLOAT16_RTOL = 2e-3
#: the same for what is kept exactly (a model, float32 logits): the recorded logloss and the
#: re-stop's are float64 sums of the same float32 logits in different orders
EXACT_RTOL = 1e-6

MB = 2**20
#: a kept file's bytes besides its array, per config (zip and .npy headers, the config's params
#: as text): part of every estimate, so that what is kept never outgrows what was planned
FILE_OVERHEAD = 4096


def megabytes(n_bytes: float) -> str:
    """A size for the logs: MB, or KB below one MB."""
    return f"{n_bytes / MB:.1f} MB" if n_bytes >= MB else f"{n_bytes / 1024:.0f} KB"


@dataclass(frozen=True)
class KeepPlan:
    """What a job keeps (decided before it trains, :func:`plan_keep`): ``kind`` is
    :data:`MODEL`, :data:`LOGITS` or None (nothing, for ``reason``); ``dtype`` the logits'
    float type; ``estimate_bytes`` the job's size (a bound for models); ``enabled`` False when
    keeping is off (config ``keep_for_restop``: then not even a sidecar is written)."""

    kind: str | None
    dtype: str | None = None
    estimate_bytes: int = 0
    cap_bytes: int = 0
    reason: str | None = None
    enabled: bool = True

    @property
    def keeps(self) -> bool:
        return self.kind is not None

    def line(self) -> str:
        """The train log's line, before the job trains."""
        cap = f"cap {megabytes(self.cap_bytes)} (restop_max_mb)"
        if self.kind == MODEL:
            return (f"restop: keeping each config's model, at most "
                    f"~{megabytes(self.estimate_bytes)} (a bound; {cap})")
        if self.kind == LOGITS:
            return (f"restop: keeping every epoch's validation logits as {self.dtype}, "
                    f"{megabytes(self.estimate_bytes)} ({cap})")
        return f"restop: keeping nothing: {self.reason}"


def plan_keep(enabled: bool, max_mb: float, trainer: Any,
              plan: Mapping[int, tuple[Mapping[str, Any], int]], data: SplitData,
              parts: Path | None = None) -> KeepPlan:
    """What a job of configs ``plan`` (config -> (params, epochs)) keeps: the trainer's models
    if it is a :class:`~tabbench.models.base.ModelKeepingTrainer`, else its validation logits
    as float32 if they fit ``max_mb``, else float16 if they fit, else nothing. ``parts``: the
    job's part folder, whose :data:`~tabbench.core.layout.PART_NOT_KEPT` note (a resumed job that
    gave keeping up) is honoured."""
    cap = int(float(max_mb) * MB)
    if not enabled:
        return KeepPlan(None, cap_bytes=cap, reason="keep_for_restop is false", enabled=False)
    note = None if parts is None else _not_kept_note(parts)
    if note is not None:
        return KeepPlan(None, cap_bytes=cap, reason=note)
    n_val, n_classes = len(data.y_val), int(data.n_classes)
    labels = n_val * 8 + FILE_OVERHEAD * len(plan)
    if isinstance(trainer, ModelKeepingTrainer):
        bound = sum(int(trainer.kept_model_bound(params, data, n_ep))
                    for params, n_ep in plan.values())
        return KeepPlan(MODEL, estimate_bytes=bound + labels, cap_bytes=cap)
    values = sum(n_ep for _, n_ep in plan.values()) * n_val * n_classes
    for dtype in ("float32", "float16"):
        size = values * np.dtype(dtype).itemsize + labels
        if size <= cap:
            return KeepPlan(LOGITS, dtype, size, cap)
    return KeepPlan(None, estimate_bytes=size, cap_bytes=cap,
                    reason=f"its validation logits would take {megabytes(size)} even as "
                           f"float16, over the cap of {megabytes(cap)} (restop_max_mb)")


def _not_kept_note(parts: Path) -> str | None:
    note = Path(parts) / PART_NOT_KEPT
    try:
        return str(json.loads(note.read_text())["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def give_up(parts: Path, reason: str) -> None:
    """The job keeps nothing from now on (e.g. its models outgrew the cap): remove what its
    finished configs kept and note why in the part folder (a resume honours it)."""
    for f in Path(parts).glob("config*.kept.npz"):
        f.unlink(missing_ok=True)
    write_json_atomic({"reason": reason}, Path(parts) / PART_NOT_KEPT)


class ConfigKeeper:
    """What one config keeps while it trains: its validation logits chunk by chunk (kind
    :data:`LOGITS`), or its trainer's model once trained (:data:`MODEL`)."""

    def __init__(self, plan: KeepPlan) -> None:
        self.plan = plan
        self._chunks: list[np.ndarray] = []

    def add(self, val_logits: np.ndarray) -> None:
        """One chunk's validation logits (E, N, K) as the trainer yielded them."""
        if self.plan.kind == LOGITS:
            self._chunks.append(np.asarray(val_logits).astype(self.plan.dtype, copy=True))

    def arrays(self, trainer: Any) -> dict[str, np.ndarray]:
        """The config's kept arrays: ``{"logits": (E, N, K)}`` or ``{"model": uint8 bytes}``."""
        if self.plan.kind == MODEL:
            return {MODEL: np.frombuffer(trainer.kept_model(), dtype=np.uint8)}
        return {LOGITS: np.concatenate(self._chunks) if self._chunks else np.empty((0, 0, 0))}


def _config_meta(params_json: str, n_epochs: int, kind: str, dtype: str | None) -> dict:
    return {"params": params_json, "n_epochs": int(n_epochs), "kind": kind, "dtype": dtype}


def write_part(parts: Path, config: int, params_json: str, n_epochs: int,
               arrays: Mapping[str, np.ndarray]) -> int:
    """Write a finished config's ``config<c>.kept.npz`` atomically; returns its size."""
    (kind, value), = arrays.items()
    dtype = str(value.dtype) if kind == LOGITS else None
    meta = json.dumps(_config_meta(params_json, n_epochs, kind, dtype))
    target = part_kept(parts, config)
    with atomic_path(target) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **{kind: value, "meta": np.array(meta)})
    return target.stat().st_size


def stored_parts_bytes(parts: Path) -> int:
    """What the finished configs of a job in progress keep, in bytes."""
    return sum(f.stat().st_size for f in Path(parts).glob("config*.kept.npz"))


def _part_meta(path: Path) -> dict | None:
    try:
        with np.load(path) as f:
            return json.loads(str(f["meta"]))
    except Exception:  # unreadable or not ours: as if absent
        return None


def finish(runs_path: Path, parts: Path, plan: KeepPlan, recorded: Mapping[int, tuple[str, int]],
           y_val: np.ndarray, identity: Mapping[str, Any]) -> str:
    """At the end of a job, before its runs file: gather the kept part files of the
    ``recorded`` configs (config -> (params JSON, epochs)) into ``split<i>.restop.npz`` and its
    sidecar, or write a sidecar saying why nothing is kept (nothing at all when keeping is off).
    Returns the train log's line."""
    artefact, sidecar = restop_artefact(runs_path), restop_sidecar(runs_path)
    sidecar.unlink(missing_ok=True)  # first: a crash below leaves no sidecar of other arrays
    head = {"format": FORMAT, **identity, "n_val": int(len(y_val)),
            "cap_mb": plan.cap_bytes / MB, "estimate_mb": plan.estimate_bytes / MB}
    if not plan.keeps:
        artefact.unlink(missing_ok=True)
        if not plan.enabled:
            return plan.line()
        write_json_atomic({**head, "kept": False, "reason": plan.reason}, sidecar)
        return plan.line()
    configs, missing = {}, []
    for c, (params_json, n_ep) in sorted(recorded.items()):
        meta = _part_meta(part_kept(parts, c))
        if meta is None or meta["params"] != params_json or meta["n_epochs"] != int(n_ep):
            missing.append(c)
        else:
            configs[c] = meta
    total = stored_parts_bytes(parts)
    reason = None
    if missing:
        reason = (f"configs {missing} were finished without keeping what re-stopping needs (a "
                  "job resumed from a run with keeping off, or keeping failed: see the log)")
    elif total > plan.cap_bytes:
        reason = f"it keeps {megabytes(total)}, over the cap of {megabytes(plan.cap_bytes)}"
    if reason is not None:
        artefact.unlink(missing_ok=True)
        write_json_atomic({**head, "kept": False, "reason": reason}, sidecar)
        return f"restop: keeping nothing: {reason}"
    with atomic_path(artefact) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as out:
        with out.open("y_val.npy", "w") as fh:
            np.lib.format.write_array(fh, np.asarray(y_val, dtype=np.int64))
        for c, meta in configs.items():
            with zipfile.ZipFile(part_kept(parts, c)) as part, \
                    part.open(f"{meta['kind']}.npy") as src, \
                    out.open(f"config{c}.{meta['kind']}.npy", "w") as dst:
                _copy(src, dst)
    size = artefact.stat().st_size
    write_json_atomic({**head, "kept": True, "reason": None, "bytes": size,
                       "configs": {str(c): m for c, m in configs.items()}}, sidecar)
    kinds = sorted({m["kind"] if m["dtype"] is None else f"{m['kind']} {m['dtype']}"
                    for m in configs.values()})
    return f"restop: kept {megabytes(size)} ({', '.join(kinds)}) -> {artefact}"


def _copy(src: Any, dst: Any, block: int = 16 * MB) -> None:
    while chunk := src.read(block):
        dst.write(chunk)


# --- reading --------------------------------------------------------------------------------


@dataclass
class RestopStore:
    """What a runs file's job kept (:func:`read_restop_store`): the sidecar's fields; the arrays are
    read config by config (:meth:`config_array`)."""

    runs_path: Path
    sidecar: dict[str, Any]
    configs: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def kept(self) -> bool:
        return bool(self.sidecar.get("kept"))

    @property
    def reason(self) -> str | None:
        return self.sidecar.get("reason")

    def y_val(self) -> np.ndarray:
        with np.load(restop_artefact(self.runs_path)) as f:
            return f["y_val"]

    def config_array(self, config: int) -> tuple[str, np.ndarray]:
        """(kind, array) of one config: its (E, N, K) logits or its model's bytes."""
        kind = self.configs[config]["kind"]
        with np.load(restop_artefact(self.runs_path)) as f:
            return kind, f[f"config{config}.{kind}"]


def read_restop_store(runs_path: str | os.PathLike[str]) -> RestopStore | None:
    """What the job of ``runs_path`` kept, or None when it wrote no sidecar (keeping off, or
    trained by a tabbench without re-stopping). A sidecar whose arrays are missing reads as kept
    nothing."""
    runs_path = Path(runs_path)
    try:
        sidecar = json.loads(restop_sidecar(runs_path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:  # damaged: as if nothing was kept, saying why
        sidecar = {"kept": False, "reason": f"{restop_sidecar(runs_path).name} is unreadable "
                                            f"({type(err).__name__}: {err})"}
    if not isinstance(sidecar, dict):
        sidecar = {"kept": False, "reason": f"{restop_sidecar(runs_path).name} is not ours"}
    configs = {int(c): m for c, m in (sidecar.get("configs") or {}).items()}
    if sidecar.get("kept") and not restop_artefact(runs_path).is_file():
        sidecar = {**sidecar, "kept": False,
                   "reason": f"{restop_artefact(runs_path).name} is missing"}
    return RestopStore(runs_path, sidecar, configs)


def reopen(runs_path: Path, parts: Path, configs: Mapping[int, tuple[str, int]]) -> None:
    """Write back into a part folder what a finished job kept for ``configs`` (config ->
    (params JSON, epochs)), as it was before the job finished: a job reopened to retrain its
    failed configs (:mod:`tabbench.study.retry`) then still keeps every config whole."""
    kept = read_restop_store(runs_path)
    if kept is None or not kept.kept:
        if kept is not None and kept.reason:
            give_up(parts, kept.reason)
        return
    for c, (params_json, n_ep) in configs.items():
        meta = kept.configs.get(c)
        if meta is None or meta["params"] != params_json or meta["n_epochs"] != int(n_ep):
            continue
        kind, value = kept.config_array(c)
        write_part(parts, c, params_json, n_ep, {kind: value})


def iter_stored_logits(kept: RestopStore, config: int, chunk: int
                       ) -> Iterator[tuple[int, np.ndarray]]:
    """(first epoch, float32 (E, N, K)) chunks of a config's kept logits."""
    _, logits = kept.config_array(config)
    for first in range(0, logits.shape[0], chunk):
        yield first + 1, np.ascontiguousarray(logits[first:first + chunk], dtype=np.float32)
