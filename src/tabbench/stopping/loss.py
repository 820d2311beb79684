"""The refinement losses of :mod:`tabbench.stopping`, evaluated again and again on new scores
of one task (:class:`Scorer`, :func:`refinement_loss`), and the kinds accepted
(:func:`stopping_kinds`).

Speed (``docs/usage.md`` has the numbers): ``ts_ref``/``ts_ref_brier`` are scored by
:mod:`tabbench.stopping.ts_rounds` (one temperature fit per call, warm-started from the same
set's previous one, the loss taken from the last derivative pass; binary problems from the
margin alone); ``ts_ref_cv5`` uses :func:`tabbench.metrics.stopping_metrics_batched` with one
epoch (faster than the float64 single-epoch definition); ``ir_ref`` the single-epoch definition
(the faster one for one epoch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tabbench._scores import (
    ScoreType,
    check_score_type,
    scores_to_logits,
    to_numpy,
)
from tabbench.metrics import ir_ref, stopping_metrics_batched
from tabbench.metrics._checks import as_labels
from tabbench.metrics.registry import get_stopping_metric, stopping_metric_ids
from tabbench.stopping.ts_rounds import BinaryRounds, MulticlassRounds

#: The refinement losses with a fast path here (paper, Sections 3-4; :mod:`tabbench.metrics`);
#: every registered stopping metric is accepted as a kind as well (:func:`stopping_kinds`).
REFINEMENT_KINDS: tuple[str, ...] = ("ts_ref", "ts_ref_brier", "ts_ref_cv5", "ir_ref")

#: How many evaluation sets a :class:`Scorer` keeps state for (labels, warm start, buffers).
MAX_EVAL_SETS = 4


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


def _extremes(s: np.ndarray) -> tuple[float, float]:
    """(min, max) of numeric scores: non-finite iff a score is NaN or ±inf (NaN propagates
    through both), read without the boolean array of ``np.isfinite``; (0, 0) when empty."""
    if s.size == 0:
        return 0.0, 0.0
    return float(s.min()), float(s.max())


def _registered(kind: str, z: np.ndarray, y: np.ndarray) -> float:
    """A registered stopping metric of one epoch: its float64 reference if it has one, else
    its batched form on one float32 epoch (:class:`tabbench.metrics.StoppingMetric`)."""

    metric = get_stopping_metric(kind)
    if metric.reference is not None:
        return float(metric.reference(np.asarray(z, dtype=np.float64), y))
    z32 = np.ascontiguousarray(z, dtype=np.float32)[None]
    return float(np.asarray(metric.batched(z32, y.astype(np.int64)))[0])


@dataclass
class _EvalSet:
    """What a :class:`Scorer` keeps of one evaluation set: its labels as given and their bytes
    (compared with each call's), their class codes, the last fitted log-temperature and the TS
    work state."""

    y_raw: np.ndarray
    y: np.ndarray
    n_classes: int
    log_beta: float | None = None
    rounds: BinaryRounds | MulticlassRounds | None = None
    y_bytes: bytes = b""

    def holds(self, y: np.ndarray, y_bytes: bytes) -> bool:
        """Whether ``y`` (with ``y_bytes`` = ``y.tobytes()``) are these labels: equal bytes of
        the same dtype and shape are equal values (NaN labels never get here: they fail
        validation); other bytes may still be equal values (another dtype, −0.0)."""
        raw = self.y_raw
        if raw.shape != y.shape:
            return False
        return (raw.dtype == y.dtype and y_bytes == self.y_bytes) or np.array_equal(raw, y)


class Scorer:
    """One refinement loss, evaluated again and again on new scores of the same task.

    Keeps, for each of the last :data:`MAX_EVAL_SETS` evaluation sets it saw (recognised by
    their labels: CatBoost scores the training set and the validation set every round, and a
    user may pass several eval sets), the validated labels, the last fitted log-temperature and
    work buffers: the next round's optimum is close, so the Newton solver starts there (fewer
    passes over the data; the optimum itself does not depend on the start, to ~1e-7 in log β).
    ``ts_ref`` and ``ts_ref_brier`` are scored by :mod:`tabbench.stopping.ts_rounds` (binary
    problems from the margin alone).
    """

    def __init__(self, kind: str, scores: ScoreType) -> None:
        self.kind = check_kind(kind)
        check_score_type(scores)
        self.scores = scores
        self._reset_caches()

    def _reset_caches(self) -> None:
        self._sets: list[_EvalSet] = []  # most recently used first

    def __getstate__(self) -> dict:  # labels, warm starts, buffers are caches: not pickled
        return {"kind": self.kind, "scores": self.scores}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset_caches()

    def _eval_set(self, y_true: Any, n: int, k: int, binary_1d: bool) -> _EvalSet:
        """The state of the set with these labels; the boosting libraries pass the same labels
        every round (XGBoost in a new array each time), recognised by comparing their bytes
        instead of re-validating them."""
        y = to_numpy(y_true)
        y_bytes = y.tobytes()
        for i, st in enumerate(self._sets):
            if st.n_classes == k and st.y.size == n and st.holds(y, y_bytes):
                if i:
                    self._sets.insert(0, self._sets.pop(i))
                return st
        try:
            labels = as_labels(y, n, k)
        except ValueError as err:
            if binary_1d:
                raise ValueError(
                    f"{err}. (N,) scores mean a binary problem (labels 0/1); "
                    "pass (N, K) scores for K classes"
                ) from None
            raise
        st = _EvalSet(np.array(y, copy=True), labels, k, y_bytes=y_bytes)
        self._sets = [st, *self._sets[:MAX_EVAL_SETS - 1]]
        return st

    def __call__(self, y_true: Any, y_score: Any, strict: bool = True) -> float:
        """The loss; non-finite scores raise ValueError (``strict``) or give NaN."""
        s = to_numpy(y_score)
        extremes = _extremes(s)
        if not -math.inf < extremes[0] <= extremes[1] < math.inf:  # NaN compares False
            if strict:
                raise ValueError("scores contain NaN or inf")
            return math.nan
        binary = s.ndim == 1 or (s.ndim == 2 and s.shape[1] == 2)
        if binary and self.kind in ("ts_ref", "ts_ref_brier"):
            st = self._eval_set(y_true, s.shape[0], 2, s.ndim == 1)
            if st.rounds is None:
                st.rounds = BinaryRounds(st.y, self.kind)
            return st.rounds(s, self.scores, extremes)
        if self.kind in ("ts_ref", "ts_ref_brier") and s.ndim == 2 and s.shape[1] >= 3:
            st = self._eval_set(y_true, s.shape[0], s.shape[1], False)
            if st.rounds is None:
                st.rounds = MulticlassRounds(st.y, st.n_classes, self.kind)
            return st.rounds(s, self.scores, extremes)
        z = scores_to_logits(s, self.scores)
        st = self._eval_set(y_true, z.shape[0], z.shape[1], s.ndim == 1)
        if self.kind == "ts_ref_cv5":
            b0 = None if st.log_beta is None else math.exp(st.log_beta)
            out = stopping_metrics_batched(z[None], st.y, beta0=b0)
            if np.isfinite(out["beta"][0]):
                st.log_beta = math.log(out["beta"][0])
            return float(out["ts_ref_cv5"][0])
        if self.kind == "ir_ref":
            return ir_ref(z, st.y)
        return _registered(self.kind, z, st.y)


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
    >>> from tabbench.metrics.examples import noisy_logits
    >>> logits, y = noisy_logits(400, 2, scale=5.0)
    >>> round(refinement_loss(y, logits, kind="logloss"), 3)
    0.897
    >>> round(refinement_loss(y, logits), 3)
    0.445
    >>> round(refinement_loss(y, np.exp(logits[:, 1]) / np.exp(logits).sum(1),
    ...                       scores="proba"), 3)  # P(class 1): the same loss
    0.445
    """
    return Scorer(kind, scores)(y_true, y_score)
