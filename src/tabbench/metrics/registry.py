"""The registry of stopping metrics: the one place that says which stopping metrics exist.

Every stopping metric is a :class:`StoppingMetric` declared as an entry point of the group
``tabbench.stopping_metrics`` — tabbench's own (:mod:`tabbench.metrics.builtin`, declared in its
``pyproject.toml``) and any installed package's, e.g.::

    [project.entry-points."tabbench.stopping_metrics"]
    my_ref = "my_package:MY_REF"      # MY_REF = StoppingMetric("my_ref", "My-Ref.", my_batched)

Everything downstream follows from the registry: the recorder writes ``val_<id>`` for every
entry (:func:`stopping_metrics_batched`), selection selects on each, aggregation reports the
methods ``"<label>+TS"`` (and ``"<label>"`` raw where ``raw_method``), the figures and report
captions list them. Order: the built-ins in the order tabbench declares them (which is the
column order of the runs files), then third-party entries by (distribution, id).

The registry is loaded once per process (entry points are read and imported on first use);
loading it imports no heavy module: the built-ins refer to their implementations lazily.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from tabbench.core.plugins import check_id, load_registrations

#: the entry-point group of stopping metrics
GROUP = "tabbench.stopping_metrics"

#: suffix of the method name that reports a metric's test values after temperature scaling
TS_SUFFIX = "+TS"

BatchedFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
ReferenceFn = Callable[[np.ndarray, np.ndarray], float]


@dataclass(frozen=True)
class StoppingMetric:
    """One stopping metric: "lower is better" on the validation set, evaluated at every epoch.

    ``id``: the column suffix (``val_<id>``) and the ``stopping`` value of selected rows; a
    lower-case identifier. ``label``: its name in figures and tables (methods are
    ``"<label>+TS"``, and ``"<label>"`` if ``raw_method``). ``batched(logits, y)``: float32
    logits (E, N, K) (binary problems as K = 2) and int64 labels (N,) -> E values, lower is
    better; it sees only epochs whose logits are all finite. ``reference(logits, y)``: optional
    single-epoch float64 definition (N, K) -> float, the oracle the tests hold ``batched`` to.
    ``description``: one line for figure captions. ``raw_method``: also report the raw test
    metric of this stopping (the paper's "Logloss" next to "Logloss+TS").
    ``test_counterpart``: the recorded test metric (the suffix of a ``test_*`` column, e.g.
    ``"logloss_ts"``) that estimates the same quantity out of sample, for the winner's-curse
    diagnostic (optimism = test − validation at the chosen epoch); None = no such column, no
    optimism. ``counterpart_is_exact``: False when that column is only the closest recorded
    one (e.g. isotonic refinement against the test log loss after TS).
    """

    id: str
    label: str
    batched: BatchedFn
    reference: ReferenceFn | None = None
    description: str = ""
    raw_method: bool = False
    test_counterpart: str | None = None
    counterpart_is_exact: bool = True

    def __post_init__(self) -> None:
        check_id(self.id, "a stopping metric's id")
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValueError(f"stopping metric {self.id!r}: label must be a non-empty string")
        if self.label.endswith(TS_SUFFIX):
            raise ValueError(
                f"stopping metric {self.id!r}: label {self.label!r} must not end in "
                f"{TS_SUFFIX!r} (the TS method's name adds it)"
            )
        if not callable(self.batched):
            raise ValueError(f"stopping metric {self.id!r}: batched must be callable")
        if self.reference is not None and not callable(self.reference):
            raise ValueError(f"stopping metric {self.id!r}: reference must be callable or None")

    def method_name(self, ts: bool) -> str:
        """Name of the method "stop on this metric, report the test metric (after TS)"."""
        return f"{self.label}{TS_SUFFIX}" if ts else self.label


class Lazy:
    """A function given as ``"module:name"`` and imported on its first call, so that a
    registration does not import its implementation (the registry is read when the workflow
    parses and when the CLI starts)."""

    def __init__(self, target: str) -> None:
        if ":" not in target:
            raise ValueError(f"expected 'module:function', got {target!r}")
        self.target = target
        self._fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:
            module, _, name = self.target.partition(":")
            self._fn = getattr(importlib.import_module(module), name)
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"


@dataclass(frozen=True)
class FusedOutput:
    """``batched`` of a built-in metric: output ``key`` of the fused kernel
    :func:`tabbench.metrics.batched.fused_stopping_metrics`, which computes every built-in
    metric and the TS fit in one pass over the logits. :func:`stopping_metrics_batched` calls
    the kernel once for all of them; called on its own, this runs the whole kernel."""

    key: str

    def __call__(self, logits: np.ndarray, y: np.ndarray) -> np.ndarray:
        # numpy kernels load on the first computation: reading the registry stays light
        from tabbench.metrics.batched import fused_stopping_metrics

        return fused_stopping_metrics(logits, y)[self.key]


def _label_conflict(metric: StoppingMetric, loaded: Mapping[str, StoppingMetric]) -> str | None:
    for other in loaded.values():
        if other.label == metric.label:
            return f"label {metric.label!r} is already the label of stopping metric {other.id!r}"
    return None


@functools.cache
def _registry() -> Mapping[str, StoppingMetric]:
    loaded = load_registrations(GROUP, StoppingMetric, lambda m: m.id, conflict=_label_conflict)
    return MappingProxyType(loaded)


def get_stopping_metrics() -> Mapping[str, StoppingMetric]:
    """id -> :class:`StoppingMetric` of every registered stopping metric (module doc: order)."""
    return _registry()


def stopping_metric_ids() -> tuple[str, ...]:
    """The registered ids in registry order: the ``val_<id>`` columns of every runs file."""
    return tuple(_registry())


def get_stopping_metric(metric_id: str) -> StoppingMetric:
    """The registered stopping metric ``metric_id``; a clear error if there is none."""
    try:
        return _registry()[metric_id]
    except KeyError:
        raise ValueError(
            f"unknown stopping metric {metric_id!r}; registered: {list(_registry())}"
        ) from None


def reload_registry() -> None:
    """Forget the loaded registry (the next use reads the entry points again)."""
    _registry.cache_clear()


def stopping_metrics_batched(
    logits_ENK: np.ndarray, y: np.ndarray, beta0: np.ndarray | float | None = None,
    only: Collection[str] | None = None,
) -> dict[str, np.ndarray]:
    """Every registered stopping metric for each of E epochs, plus ``beta`` (E,), the TS fit on
    these logits that the recorder also needs for the test metrics after TS.

    The built-ins come from one call of the fused kernel (``beta0``: its warm start, e.g. the
    previous chunk's last β); every other metric from its own ``batched`` on float32 logits.
    Non-finite epochs give NaN for the built-ins; other metrics must be given finite epochs
    (the recorder only passes those). A third-party ``batched`` that returns anything but E
    values is an error naming the metric.

    ``only``: the metric ids to compute (the re-stop's missing columns,
    :mod:`tabbench.study.restop`);
    the fused kernel, and so ``beta``, only when a built-in is among them.
    """
    # numpy kernels load on the first computation: reading the registry stays light
    from tabbench.metrics._checks import check_batched

    # numpy kernels load on the first computation: reading the registry stays light
    from tabbench.metrics.batched import fused_stopping_metrics

    registry = _registry()
    if only is not None:
        unknown = sorted(set(only) - set(registry))
        if unknown:
            raise ValueError(f"unknown stopping metrics {unknown}; registered: {list(registry)}")
        registry = {m: registry[m] for m in registry if m in set(only)}
    fused_needed = only is None or any(isinstance(m.batched, FusedOutput)
                                       for m in registry.values())
    z = np.asarray(logits_ENK)
    if fused_needed:
        fused = fused_stopping_metrics(logits_ENK, y, beta0)  # validates shapes and labels
    else:
        check_batched(z, y)
        fused = {}
    n_epochs = z.shape[0]
    if n_epochs == 0:
        return {m: np.empty(0) for m in (*registry, *(("beta",) if fused_needed else ()))}
    labels: np.ndarray | None = None
    out: dict[str, np.ndarray] = {}
    z32: np.ndarray | None = None
    for metric_id, metric in registry.items():
        if isinstance(metric.batched, FusedOutput):
            out[metric_id] = fused[metric.batched.key]
            continue
        if z32 is None:
            z32 = np.ascontiguousarray(z, dtype=np.float32)
            labels = np.asarray(y).astype(np.int64)
        values = np.asarray(metric.batched(z32, labels), dtype=np.float64)
        if values.shape != (n_epochs,):
            raise ValueError(
                f"stopping metric {metric_id!r}: batched returned shape {values.shape} for "
                f"{n_epochs} epochs, expected ({n_epochs},)"
            )
        out[metric_id] = values
    if fused_needed:
        out["beta"] = fused["beta"]
    return out


def stopping_metrics(logits: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """The single-epoch reference value of every registered metric that has one (logits
    (N, K), float64). Raises ValueError on NaN/inf logits (:func:`stopping_metrics_batched`
    gives NaN instead). Single-class ``y`` gives ``auroc`` = NaN."""
    # numpy kernels load on the first computation: reading the registry stays light
    from tabbench.metrics._checks import check_single

    z, labels = check_single(logits, y)
    return {
        m: float(metric.reference(z, labels))
        for m, metric in _registry().items()
        if metric.reference is not None
    }
