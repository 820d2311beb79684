"""The refinement losses of :mod:`tabbench.stopping`, evaluated again and again on new scores
of one task (:class:`Scorer`, :func:`refinement_loss`), and the kinds accepted
(:func:`stopping_kinds`).

Speed (profiled; ``docs/usage.md`` has the numbers): ``ts_ref``/``ts_ref_brier`` fit one
temperature per call with the solver of :mod:`tabbench.metrics.ts_solver` run for a single
problem in Python floats, warm-started from the previous call's temperature, on float32
scores (binary: the margin alone) with reused buffers, then score in one pass; ``ts_ref_cv5``
uses :func:`tabbench.metrics.stopping_metrics_batched` with one epoch (5x faster than the
float64 single-epoch definition); ``ir_ref`` the single-epoch definition (the faster one for
one epoch).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tabbench._scores import (
    ScoreType,
    binary_margin,
    check_score_type,
    scores_to_logits,
    to_numpy,
)
from tabbench.metrics import ir_ref, stopping_metrics_batched
from tabbench.metrics._checks import as_labels
from tabbench.metrics.registry import get_stopping_metric, stopping_metric_ids
from tabbench.metrics.ts_kernel import (
    Workspace,
    binary_derivative_sums,
    full_data_evaluator,
    prepare,
    sample_stats,
)
from tabbench.metrics.ts_smoothing import (
    binary_smoothed_miss,
    nll_from_miss,
    smoothed_brier,
    smoothed_nll,
)
from tabbench.metrics.ts_solver import solve_log_beta_scalar

#: The refinement losses with a fast path here (paper, Sections 3-4; :mod:`tabbench.metrics`);
#: every registered stopping metric is accepted as a kind as well (:func:`stopping_kinds`).
REFINEMENT_KINDS: tuple[str, ...] = ("ts_ref", "ts_ref_brier", "ts_ref_cv5", "ir_ref")



def stopping_kinds() -> tuple[str, ...]:
    """Every accepted ``kind``: the refinement kinds, then the other registered stopping
    metrics in registry order (reading the registry imports no numerical kernel).

    Returns
    -------
    tuple of str
        The kinds :func:`refinement_loss` and the adapters accept.

    Examples
    --------
    >>> from tabbench.stopping import stopping_kinds
    >>> stopping_kinds()[:4]  # the refinement kinds come first
    ('ts_ref', 'ts_ref_brier', 'ts_ref_cv5', 'ir_ref')
    >>> "logloss" in stopping_kinds()  # plain validation log loss, for comparisons
    True
    """

    return REFINEMENT_KINDS + tuple(m for m in stopping_metric_ids() if m not in REFINEMENT_KINDS)


def check_kind(kind: str) -> str:
    """``kind`` if it is a refinement kind or a registered stopping metric, else ValueError.

    Parameters
    ----------
    kind : str
        The name to check.

    Returns
    -------
    str
        ``kind``.

    Raises
    ------
    ValueError
        Naming the allowed kinds, when ``kind`` is none of :func:`stopping_kinds`.

    Examples
    --------
    >>> from tabbench.stopping import check_kind
    >>> check_kind("ts_ref")
    'ts_ref'
    >>> check_kind("ts-ref")
    Traceback (most recent call last):
    ...
    ValueError: unknown kind 'ts-ref'; allowed: ts_ref, ts_ref_brier, ts_ref_cv5, ir_ref, ...
    """
    if kind in REFINEMENT_KINDS:
        return kind
    allowed = stopping_kinds()
    if kind not in allowed:
        raise ValueError(f"unknown kind {kind!r}; allowed: {', '.join(allowed)}")
    return kind


def _registered(kind: str, z: np.ndarray, y: np.ndarray) -> float:
    """A registered stopping metric of one epoch: its float64 reference if it has one, else
    its batched form on one float32 epoch (:class:`tabbench.metrics.StoppingMetric`)."""

    metric = get_stopping_metric(kind)
    if metric.reference is not None:
        return float(metric.reference(np.asarray(z, dtype=np.float64), y))
    z32 = np.ascontiguousarray(z, dtype=np.float32)[None]
    return float(np.asarray(metric.batched(z32, y.astype(np.int64)))[0])


class Scorer:
    """One refinement loss, evaluated again and again on new scores of the same task.

    Keeps float32 work buffers, the last labels and the last fitted log-temperature between
    calls: the next epoch's optimum is close, so the Newton solver starts there (fewer passes
    over the data; the optimum itself does not depend on the start, to ~1e-7 in log β).
    Binary problems are scored from the margin alone (one float32 array, no (N, 2) logits).
    """

    def __init__(self, kind: str, scores: ScoreType) -> None:
        self.kind = check_kind(kind)
        check_score_type(scores)
        self.scores = scores
        self._reset_caches()

    def _reset_caches(self) -> None:
        self._ws: Workspace | None = None
        self._log_beta: float | None = None
        self._y_raw: np.ndarray | None = None  # last labels as given, their codes, ±1 signs
        self._y: np.ndarray | None = None
        self._sign: np.ndarray | None = None

    def __getstate__(self) -> dict:  # buffers, labels, warm start are caches: not pickled
        return {"kind": self.kind, "scores": self.scores}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset_caches()

    def _labels(self, y_true: Any, n: int, k: int, binary_1d: bool) -> np.ndarray:
        """Class codes; the boosting libraries pass the same labels every round (checked by
        one comparison instead of re-validating them)."""
        y = to_numpy(y_true)
        if (self._y_raw is not None and self._y_raw.shape == y.shape
                and self._y.size == n and int(self._y.max(initial=0)) < k
                and np.array_equal(self._y_raw, y)):
            return self._y
        try:
            labels = as_labels(y, n, k)
        except ValueError as err:
            if binary_1d:
                raise ValueError(
                    f"{err}. (N,) scores mean a binary problem (labels 0/1); "
                    "pass (N, K) scores for K classes"
                ) from None
            raise
        self._y_raw, self._y, self._sign = np.array(y, copy=True), labels, None
        return labels

    def __call__(self, y_true: Any, y_score: Any, strict: bool = True) -> float:
        """The loss; non-finite scores raise ValueError (``strict``) or give NaN."""
        s = to_numpy(y_score)
        if not np.isfinite(s).all():
            if strict:
                raise ValueError("scores contain NaN or inf")
            return math.nan
        binary = s.ndim == 1 or (s.ndim == 2 and s.shape[1] == 2)
        if binary and self.kind in ("ts_ref", "ts_ref_brier"):
            m = binary_margin(s, self.scores)
            y = self._labels(y_true, m.shape[0], 2, s.ndim == 1)
            return self._ts_binary(m, y)
        z = scores_to_logits(s, self.scores)
        y = self._labels(y_true, z.shape[0], z.shape[1], s.ndim == 1)
        if self.kind in ("ts_ref", "ts_ref_brier"):
            return self._ts(z, y)
        if self.kind == "ts_ref_cv5":
            b0 = None if self._log_beta is None else math.exp(self._log_beta)
            out = stopping_metrics_batched(z[None], y, beta0=b0)
            if np.isfinite(out["beta"][0]):
                self._log_beta = math.log(out["beta"][0])
            return float(out["ts_ref_cv5"][0])
        if self.kind == "ir_ref":
            return ir_ref(z, y)
        return _registered(self.kind, z, y)

    def _fit(self, sums: Callable[[float], tuple[float, float]]) -> float:
        b = solve_log_beta_scalar(sums, 0.0 if self._log_beta is None else self._log_beta)
        self._log_beta = b
        return b

    def _ts_binary(self, m: np.ndarray, y: np.ndarray) -> float:
        """TS fit on the signed float32 margins, then the smoothed loss through the binary
        kernel (:func:`tabbench.metrics.ts_smoothing.binary_smoothed_miss`): the log loss, or
        the Brier score 2(1 − q_y)² (K = 2: the other class holds exactly 1 − q_y)."""
        if self._sign is None or self._sign.dtype != m.dtype:
            self._sign = np.where(y == 1, 1, -1).astype(m.dtype)
        signed = (m * self._sign).astype(np.float32, copy=False)[None]
        n = signed.shape[1]
        ws = self._ws = self._ws or Workspace()
        beta_buf = np.empty(1)

        def sums(beta: float) -> tuple[float, float]:
            beta_buf[0] = beta
            g, h = binary_derivative_sums(signed, beta_buf, ws)
            return float(g[0]) / n, float(h[0]) / n

        miss = binary_smoothed_miss(signed[0], math.exp(self._fit(sums)), n)  # 1 − q_y
        if self.kind == "ts_ref_brier":
            return float(2.0 * np.dot(miss, miss) / n)
        return float(nll_from_miss(miss).mean())

    def _ts(self, z: np.ndarray, y: np.ndarray) -> float:
        """TS fit + smoothed loss of one epoch of (N, K) logits: what
        ``stopping_metrics_batched`` does for these two metrics, without the others (float32
        scores are not copied to float64)."""
        ws = self._ws = self._ws or Workspace()
        prep = prepare(z[None], y)
        evaluate = full_data_evaluator(prep, ws)
        first = np.zeros(1, dtype=np.intp)

        def sums(beta: float) -> tuple[float, float]:
            g, h = evaluate(np.full(1, beta), first)
            return float(g[0]), float(h[0])

        stats = sample_stats(prep, np.full(1, math.exp(self._fit(sums))), ws, derivs=False)
        n, k = prep.n_samples, prep.n_classes
        if self.kind == "ts_ref":
            return float(smoothed_nll(stats, k, n).mean(dtype=np.float64))
        return float(smoothed_brier(stats, k, n).mean(dtype=np.float64))


def refinement_loss(
    y_true: Any, y_score: Any, kind: str = "ts_ref", *, scores: ScoreType = "logits"
) -> float:
    """Refinement loss of one set of scores (lower is better).

    Equals ``tabbench.metrics.<kind>(logits, y_true)`` (a registered metric's ``reference``).
    Numpy arrays, lists and tensors (PyTorch, on any device) are accepted.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class codes 0..K−1 (ints, or floats holding ints).
    y_score : array-like of shape (n_samples, n_classes) or (n_samples,)
        With ``scores="logits"``, logits (N, K) or binary margins (N,) = z₁ − z₀ (a
        ``decision_function``); with ``scores="proba"``, probabilities (N, K) or (N,) =
        P(class 1) (a ``predict_proba``; they are turned into logits by a log, which
        temperature scaling cannot tell from the model's own logits — see
        :func:`tabbench.calibration.proba_to_logits` for p = 0 and p = 1).
    kind : str, default "ts_ref"
        One of :func:`stopping_kinds` (a refinement kind, or any registered stopping metric).
    scores : {"logits", "proba"}, default "logits"
        What ``y_score`` holds; explicit because 0.3 is a fine logit and a fine probability.

    Returns
    -------
    float
        The loss.

    Raises
    ------
    ValueError
        On non-finite scores, labels out of range, or an unknown ``kind``.

    Examples
    --------
    Over-confident logits: their log loss is high, their refinement (the log loss left after
    the best temperature) is not.

    >>> import numpy as np
    >>> from tabbench.stopping import refinement_loss
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, size=400)
    >>> logits = 5.0 * (np.eye(2)[y] + rng.normal(size=(400, 2)))
    >>> round(refinement_loss(y, logits, kind="logloss"), 3)
    0.897
    >>> round(refinement_loss(y, logits), 3)
    0.445
    >>> round(refinement_loss(y, np.exp(logits[:, 1]) / np.exp(logits).sum(1),
    ...                       scores="proba"), 3)  # P(class 1): the same loss
    0.445
    """
    return Scorer(kind, scores)(y_true, y_score)
