"""The registry of stopping metrics: the one place that says which stopping metrics exist.

Every stopping metric is a :class:`StoppingMetric` declared as an entry point of the group
``tabbench.stopping_metrics`` — tabbench's own (:mod:`tabbench.metrics.builtin`, declared in its
``pyproject.toml``) and any installed package's, e.g.

```toml
[project.entry-points."tabbench.stopping_metrics"]
my_ref = "my_package:MY_REF"      # MY_REF = StoppingMetric("my_ref", "My-Ref.", my_batched)
```

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
from tabbench.metrics._checks import check_batched, check_single

#: the entry-point group of stopping metrics
GROUP = "tabbench.stopping_metrics"

#: suffix of the method name that reports a metric's test values after temperature scaling
TS_SUFFIX = "+TS"

BatchedFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
ReferenceFn = Callable[[np.ndarray, np.ndarray], float]


@dataclass(frozen=True)
class StoppingMetric:
    """One stopping metric: "lower is better" on the validation set, evaluated at every epoch.

    Parameters
    ----------
    id : str
        The column suffix (``val_<id>``) and the ``stopping`` value of selected rows; a
        lower-case identifier.
    label : str
        Its name in figures and tables (methods are ``"<label>+TS"``, and ``"<label>"`` if
        ``raw_method``).
    batched : callable
        ``batched(logits, y)``: float32 logits (E, N, K) (binary problems as K = 2) and int64
        labels (N,) -> E values, lower is better; it sees only epochs whose logits are all
        finite.
    reference : callable or None, default None
        ``reference(logits, y)``: the single-epoch float64 definition (N, K) -> float, the
        oracle the tests hold ``batched`` to.
    description : str, default ""
        One line for figure captions.
    raw_method : bool, default False
        Also report the raw test metric of this stopping (the paper's "Logloss" next to
        "Logloss+TS").
    test_counterpart : str or None, default None
        The recorded test metric (the suffix of a ``test_*`` column, e.g. ``"logloss_ts"``)
        that estimates the same quantity out of sample, for the winner's-curse diagnostic
        (optimism = test − validation at the chosen epoch); None = no such column, no
        optimism.
    counterpart_is_exact : bool, default True
        False when that column is only the closest recorded one (e.g. isotonic refinement
        against the test log loss after TS).

    Examples
    --------
    A metric a package would register under ``tabbench.stopping_metrics``: the top-2 error.

    >>> import numpy as np
    >>> from tabbench.metrics import StoppingMetric
    >>> def top2_error(logits, y):  # (E, N, K), (N,) -> (E,)
    ...     top2 = np.argsort(logits, axis=-1)[..., -2:]
    ...     return 1.0 - (top2 == y[None, :, None]).any(axis=-1).mean(axis=-1)
    >>> metric = StoppingMetric("top2_error", "Top-2 error", top2_error)
    >>> metric.method_name(ts=True)
    'Top-2 error+TS'
    >>> metric.batched(np.array([[[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]]]), np.array([1, 0]))
    array([0.5])
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
        """Name of the method "stop on this metric, report the test metric (after TS)".

        Parameters
        ----------
        ts : bool
            After temperature scaling (``"<label>+TS"``) or raw (``"<label>"``).

        Returns
        -------
        str
            The method's name in tables and figures.
        """
        return f"{self.label}{TS_SUFFIX}" if ts else self.label


class Lazy:
    """A function given as ``"module:name"`` and imported on its first call, so that a
    registration does not import its implementation (the registry is read when the workflow
    parses and when the CLI starts).

    Parameters
    ----------
    target : str
        ``"module:name"`` of the function.

    Examples
    --------
    >>> from tabbench.metrics import Lazy
    >>> hypot = Lazy("math:hypot")  # nothing imported yet
    >>> hypot(3.0, 4.0)
    5.0
    """

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
    the kernel once for all of them; called on its own, this runs the whole kernel.

    Parameters
    ----------
    key : str
        The kernel's output (a built-in metric's id, or ``"beta"``).

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.metrics import get_stopping_metric
    >>> batched = get_stopping_metric("ts_ref").batched
    >>> batched
    FusedOutput(key='ts_ref')
    >>> from tabbench.metrics.examples import four_samples
    >>> logits, y = four_samples()
    >>> batched(logits[None].astype(np.float32), y).round(4)  # one epoch, float32
    array([0.3948])
    """

    key: str

    def __call__(self, logits: np.ndarray, y: np.ndarray) -> np.ndarray:
        # lazy: the kernels (with scikit-learn, ~3 s) load on the first computation
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
    """id -> :class:`StoppingMetric` of every registered stopping metric (module doc: order).

    Returns
    -------
    Mapping of str to StoppingMetric
        Read-only, in registry order.

    Examples
    --------
    >>> from tabbench.metrics import get_stopping_metrics
    >>> {m.id: m.label for m in get_stopping_metrics().values()}  # the built-ins
    {'logloss': 'Logloss', 'brier': 'Brier', 'error': 'Accuracy', 'auroc': 'AUROC',
     'ts_ref': 'TS-Ref.', 'ts_ref_brier': 'Brier-Ref.', 'ts_ref_cv5': 'TS-Ref.-5CV',
     'ir_ref': 'IR-Ref.'}
    """
    return _registry()


def stopping_metric_ids() -> tuple[str, ...]:
    """The registered ids in registry order: the ``val_<id>`` columns of every runs file.

    Returns
    -------
    tuple of str
        The ids.

    Examples
    --------
    >>> from tabbench.metrics import stopping_metric_ids
    >>> stopping_metric_ids()  # the built-ins
    ('logloss', 'brier', 'error', 'auroc', 'ts_ref', 'ts_ref_brier', 'ts_ref_cv5', 'ir_ref')
    """
    return tuple(_registry())


def get_stopping_metric(metric_id: str) -> StoppingMetric:
    """The registered stopping metric ``metric_id``; a clear error if there is none.

    Parameters
    ----------
    metric_id : str
        A registered id.

    Returns
    -------
    StoppingMetric
        Its registration.

    Raises
    ------
    ValueError
        Naming the registered ids, when ``metric_id`` is none of them.

    Examples
    --------
    >>> from tabbench.metrics import get_stopping_metric
    >>> get_stopping_metric("ts_ref").label
    'TS-Ref.'
    """
    try:
        return _registry()[metric_id]
    except KeyError:
        raise ValueError(
            f"unknown stopping metric {metric_id!r}; registered: {list(_registry())}"
        ) from None


def reload_registry() -> None:
    """Forget the loaded registry (the next use reads the entry points again), e.g. after
    installing a package that registers a metric into the running interpreter.

    Examples
    --------
    >>> from tabbench.metrics.registry import reload_registry, stopping_metric_ids
    >>> before = stopping_metric_ids()
    >>> reload_registry()
    >>> stopping_metric_ids() == before  # nothing was installed in between
    True
    """
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

    Parameters
    ----------
    logits_ENK : array-like of shape (n_epochs, n_samples, n_classes)
        The validation logits of every epoch.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.
    beta0 : float, array-like of shape (n_epochs,) or None, default None
        The fused kernel's warm start of the TS fit.
    only : collection of str or None, default None
        The metric ids to compute (the re-stop's missing columns,
        :mod:`tabbench.study.restop`); the fused kernel, and so ``beta``, runs only when a
        built-in is among them.

    Returns
    -------
    dict of str to ndarray of shape (n_epochs,)
        Every (requested) metric id, and ``beta``.

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.metrics import stopping_metrics_batched
    >>> from tabbench.metrics.examples import noisy_logits
    >>> z, y = noisy_logits(200, 2, scale=1.0)
    >>> out = stopping_metrics_batched(np.stack([z, 4 * z]), y)  # two epochs
    >>> sorted(out)
    ['auroc', 'beta', 'brier', 'error', 'ir_ref', 'logloss', 'ts_ref', 'ts_ref_brier',
     'ts_ref_cv5']
    >>> {m: out[m].round(3).tolist() for m in ("logloss", "ts_ref", "beta")}
    {'logloss': [0.476, 0.826], 'ts_ref': [0.475, 0.475], 'beta': [1.061, 0.265]}
    """
    # lazy: the kernels (with scikit-learn, ~3 s) load on the first computation
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
    """The single-epoch reference value of every registered metric that has one (float64).
    Single-class ``y`` gives ``auroc`` = NaN.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    dict of str to float
        Metric id -> value.

    Raises
    ------
    ValueError
        On NaN or infinite logits (:func:`stopping_metrics_batched` gives NaN instead).

    Examples
    --------
    >>> from tabbench.metrics import stopping_metrics
    >>> from tabbench.metrics.examples import noisy_logits
    >>> z, y = noisy_logits(200, 2, scale=4.0)
    >>> {m: round(v, 3) for m, v in stopping_metrics(z, y).items()}
    {'logloss': 0.826, 'brier': 0.383, 'error': 0.22, 'auroc': 0.157, 'ts_ref': 0.475,
     'ts_ref_brier': 0.316, 'ts_ref_cv5': 0.489, 'ir_ref': 0.433}
    """
    z, labels = check_single(logits, y)
    return {
        m: float(metric.reference(z, labels))
        for m, metric in _registry().items()
        if metric.reference is not None
    }
