"""Early stopping on refinement ("refine, then calibrate") in your own training code.

The paper's recipe: stop (and tune) on the *refinement* loss of the validation set — the loss
left after re-calibrating the model on that set — instead of its plain log loss, then
temperature-scale the chosen model (:mod:`tabbench.calibration`). Validation log loss is
refinement plus calibration error, and the two rarely bottom out together (typically the model
grows over-confident while refinement still improves, and log loss stops too early); the
calibration error is what the temperature removes afterwards, so refinement picks the epoch
whose *calibrated* model is best.

Refinement kinds (all lower is better; exactly the metrics of :mod:`tabbench.metrics`), each
with a fast path here:

* ``"ts_ref"`` (default, the paper's choice): log loss after temperature scaling fit on the
  same set, with Laplace smoothing;
* ``"ts_ref_brier"``: Brier score of that same temperature-scaled output;
* ``"ts_ref_cv5"``: temperature fit on 4/5 of the set, log loss on the held-out 1/5
  (stratified 5-fold); NaN for fewer than 5 samples;
* ``"ir_ref"``: log loss after isotonic calibration (+ smoothing).

Every registered stopping metric (the entry points ``tabbench.stopping_metrics``,
:mod:`tabbench.metrics.registry`: the built-in ``logloss``, ``brier``, ``error``, ``auroc`` and
any installed package's) is accepted as a ``kind`` too, evaluated by its single-epoch
``reference`` (else its ``batched`` with one epoch); :func:`stopping_kinds` lists them all.

What is provided:

* :func:`refinement_loss` — the loss of one set of scores;
* :func:`xgboost_metric`, :func:`lightgbm_metric`, :func:`catboost_metric` — custom eval
  metrics for the libraries' own early stopping (``best_iteration``, model slicing and
  ``use_best_model`` work unchanged);
* :class:`EarlyStopping` — a framework-free helper for PyTorch (or any) training loops;
* :func:`refinement_scorer` — a scikit-learn scorer (``scoring=``) for tuning on refinement.

Speed (profiled; ``docs/usage.md`` has the numbers): ``ts_ref``/``ts_ref_brier`` fit one
temperature per call with the solver of :mod:`tabbench.metrics.ts_solver` run for a single
problem in Python floats, warm-started from the previous call's temperature, on float32
scores (binary: the margin alone) with reused buffers, then score in one pass; ``ts_ref_cv5``
uses :func:`tabbench.metrics.stopping_metrics_batched` with one epoch (5× faster than the
float64 single-epoch definition); ``ir_ref`` the single-epoch definition (the faster one for
one epoch).

Importing this module imports neither PyTorch nor XGBoost, LightGBM or CatBoost.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tabbench._scores import (
    ScoreType,
    binary_margin,
    check_score_type,
    class_positions,
    proba_to_logits,
    scores_to_logits,
    to_numpy,
)
from tabbench.metrics import ir_ref, stopping_metrics_batched
from tabbench.metrics._checks import as_labels
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

__all__ = [
    "REFINEMENT_KINDS",
    "CatBoostMetric",
    "EarlyStopping",
    "LightGBMMetric",
    "RefinementScorer",
    "XGBoostMetric",
    "catboost_metric",
    "lightgbm_metric",
    "refinement_loss",
    "refinement_scorer",
    "stopping_kinds",
    "xgboost_metric",
]


def stopping_kinds() -> tuple[str, ...]:
    """Every accepted ``kind``: the refinement kinds, then the other registered stopping
    metrics in registry order (reading the registry imports no numerical kernel)."""
    from tabbench.metrics.registry import stopping_metric_ids

    return REFINEMENT_KINDS + tuple(m for m in stopping_metric_ids() if m not in REFINEMENT_KINDS)


def check_kind(kind: str) -> str:
    """``kind`` if it is a refinement kind or a registered stopping metric, else ValueError."""
    if kind in REFINEMENT_KINDS:
        return kind
    allowed = stopping_kinds()
    if kind not in allowed:
        raise ValueError(f"unknown kind {kind!r}; allowed: {', '.join(allowed)}")
    return kind


def _registered(kind: str, z: np.ndarray, y: np.ndarray) -> float:
    """A registered stopping metric of one epoch: its float64 reference if it has one, else
    its batched form on one float32 epoch (:class:`tabbench.metrics.StoppingMetric`)."""
    from tabbench.metrics.registry import get_stopping_metric

    metric = get_stopping_metric(kind)
    if metric.reference is not None:
        return float(metric.reference(np.asarray(z, dtype=np.float64), y))
    z32 = np.ascontiguousarray(z, dtype=np.float32)[None]
    return float(np.asarray(metric.batched(z32, y.astype(np.int64)))[0])


class _Scorer:
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

    y_true: (N,) class codes 0..K−1 (ints, or floats holding ints).
    y_score: with ``scores="logits"`` (default), logits (N, K) or binary margins (N,) = z₁ − z₀
    (a ``decision_function``); with ``scores="proba"``, probabilities (N, K) or (N,) = P(class 1)
    (a ``predict_proba``; they are turned into logits by a log, which temperature scaling
    cannot tell from the model's own logits — see :func:`tabbench.calibration.proba_to_logits`
    for p = 0 and p = 1). The type is explicit because 0.3 is a fine logit and a fine
    probability. Numpy arrays, lists and tensors (PyTorch, on any device) are accepted.
    kind: one of :func:`stopping_kinds` (a refinement kind, or any registered stopping metric).
    Equals ``tabbench.metrics.<kind>(logits, y_true)`` (a registered metric's ``reference``).

    Raises ValueError on non-finite scores, labels out of range, or an unknown ``kind``.
    """
    return _Scorer(kind, scores)(y_true, y_score)


# ---------------------------------------------------------------------------------------------
# scikit-learn model selection
# ---------------------------------------------------------------------------------------------


class RefinementScorer:
    """A scikit-learn scorer ``scorer(estimator, X, y)`` of a refinement loss; create with
    :func:`refinement_scorer`.

    Greater is better, as scikit-learn's model selection maximises: it returns the *negative*
    loss (the ``neg_`` convention of ``neg_log_loss``). Scores come from the first of
    ``response_method`` the estimator has; ``decision_function`` must give logits ((N,) =
    margins of ``classes_[1]``), ``predict_proba`` probabilities (read through log p, see
    :func:`tabbench.calibration.proba_to_logits`, with ``clip``). Labels are mapped through
    ``estimator.classes_``.

    Why ``decision_function`` first: a :class:`tabbench.calibration.TemperatureScaledClassifier`
    returns its scaled logits there, unsmoothed, whose refinement is the model's own (another
    temperature absorbs its β), while its ``predict_proba`` is Laplace-smoothed.
    """

    def __init__(self, kind: str = "ts_ref",
                 response_method: Sequence[str] = ("decision_function", "predict_proba"),
                 clip: float | None = None) -> None:
        self._loss = _Scorer(kind, "logits")
        methods = (response_method,) if isinstance(response_method, str) \
            else tuple(response_method)
        bad = [m for m in methods if m not in ("decision_function", "predict_proba")]
        if bad or not methods:
            raise ValueError("response_method: 'decision_function' and/or 'predict_proba', "
                             f"got {response_method!r}")
        self.kind, self.response_method, self.clip = kind, methods, clip

    def __call__(self, estimator: Any, X: Any, y_true: Any, sample_weight: Any = None) -> float:
        if sample_weight is not None:
            raise ValueError("refinement losses are unweighted: score without sample_weight")
        method = next((m for m in self.response_method if hasattr(estimator, m)), None)
        if method is None:
            raise TypeError(f"{type(estimator).__name__} has no "
                            f"{' or '.join(self.response_method)}")
        out = to_numpy(getattr(estimator, method)(X))
        z = proba_to_logits(out, self.clip) if method == "predict_proba" else out
        codes = class_positions(np.asarray(estimator.classes_), to_numpy(y_true))
        return -self._loss(codes, z)

    def __repr__(self) -> str:
        return (f"refinement_scorer(kind={self.kind!r}, "
                f"response_method={self.response_method!r}, clip={self.clip!r})")


def refinement_scorer(kind: str = "ts_ref",
                      response_method: Sequence[str] = ("decision_function", "predict_proba"),
                      clip: float | None = None) -> RefinementScorer:
    """A scorer for tuning on refinement: ``scoring=refinement_scorer()`` in ``GridSearchCV``,
    ``RandomizedSearchCV``, ``HalvingRandomSearchCV``, ``cross_validate``, ...

    Example::

        search = GridSearchCV(TemperatureScaledClassifier(XGBClassifier()),
                              {"estimator__max_depth": [2, 4, 6]},
                              scoring=refinement_scorer("ts_ref"))
        search.fit(X, y)   # best_params_: the lowest cross-validated TS-refinement

    The value is −loss (greater is better, like ``neg_log_loss``); ``kind``: any of
    :func:`stopping_kinds`. See :class:`RefinementScorer` for how scores are read.
    """
    return RefinementScorer(kind, response_method, clip)


# ---------------------------------------------------------------------------------------------
# Gradient-boosting libraries
# ---------------------------------------------------------------------------------------------

#: XGBoost's early stopping maximises a metric whose name starts with one of these.
XGBOOST_MAXIMISED_PREFIXES: tuple[str, ...] = ("auc", "map", "ndcg", "pre")


class XGBoostMetric:
    """Custom ``eval_metric`` for XGBoost's scikit-learn API; create with :func:`xgboost_metric`.

    XGBoost calls it as ``metric(y_true, y_pred)`` on each ``eval_set`` after every round,
    names it by ``__name__`` (= ``kind``, so ``evals_result()["validation_0"]["ts_ref"]``), and
    minimises a callable metric by default, unless its name starts with a name XGBoost treats
    as "higher is better" (:data:`XGBOOST_MAXIMISED_PREFIXES`), which no built-in kind does:
    a registered metric named so is called ``"min_<kind>"``. The early stopping uses the
    *last* eval set and the *last* metric.
    """

    def __init__(self, kind: str = "ts_ref", scores: ScoreType = "proba") -> None:
        self._scorer = _Scorer(kind, scores)
        self.kind, self.scores = kind, scores
        self.__name__ = f"min_{kind}" if kind.startswith(XGBOOST_MAXIMISED_PREFIXES) else kind

    def __call__(self, y_true: np.ndarray, y_pred: np.ndarray, sample_weight=None) -> float:
        if sample_weight is not None:
            raise ValueError(
                "refinement losses are unweighted: drop sample_weight_eval_set for this metric"
            )
        return self._scorer(y_true, y_pred, strict=False)

    def __repr__(self) -> str:
        return f"xgboost_metric(kind={self.kind!r}, scores={self.scores!r})"


def xgboost_metric(kind: str = "ts_ref", scores: ScoreType = "proba") -> XGBoostMetric:
    """A refinement loss for ``XGBClassifier(eval_metric=..., early_stopping_rounds=...)``.

    Example::

        clf = XGBClassifier(n_estimators=1000, early_stopping_rounds=50,
                            eval_metric=xgboost_metric("ts_ref"))
        clf.fit(X_train, y_train, eval_set=[(X_val, y_val)])
        clf.best_iteration          # the round of minimal validation TS-refinement
        clf.predict_proba(X_test)   # uses rounds 0..best_iteration, as with any eval_metric

    With XGBoost's built-in objectives the scikit-learn API passes probabilities (binary:
    P(class 1), (N,); multiclass: (N, K)), hence ``scores="proba"``; with a custom objective it
    passes raw margins: use ``scores="logits"``. Non-finite predictions (a diverged model)
    give NaN, which never counts as an improvement. XGBoost records a custom metric's value
    with 6 decimals (its ``%f`` log format), so rounds within 5e-7 of each other tie and the
    earlier one is kept.
    """
    return XGBoostMetric(kind, scores)


class LightGBMMetric:
    """Custom ``eval_metric`` for LightGBM; create with :func:`lightgbm_metric`.

    Scikit-learn API: ``metric(y_true, y_pred, weight)`` -> ``(kind, value, False)`` (False:
    lower is better). Native API (``lgb.train(feval=metric)``): ``metric(preds, dataset)``,
    recognised by the ``lightgbm.Dataset`` in second place.
    """

    def __init__(self, kind: str = "ts_ref", scores: ScoreType = "proba") -> None:
        self._scorer = _Scorer(kind, scores)
        self.kind, self.scores = kind, scores
        self.__name__ = kind

    # exactly three parameters: LightGBM's wrapper passes the weights to a 3-argument metric
    def __call__(self, y_true: Any, y_pred: Any, weight: Any = None) -> tuple[str, float, bool]:
        if hasattr(y_pred, "get_label"):  # native API: (preds, Dataset)
            y_true, y_pred, weight = y_pred.get_label(), y_true, y_pred.get_weight()
        if weight is not None:
            raise ValueError("refinement losses are unweighted: evaluate on an unweighted set")
        return self.kind, self._scorer(y_true, y_pred, strict=False), False

    def __repr__(self) -> str:
        return f"lightgbm_metric(kind={self.kind!r}, scores={self.scores!r})"


def lightgbm_metric(kind: str = "ts_ref", scores: ScoreType = "proba") -> LightGBMMetric:
    """A refinement loss for LightGBM's ``eval_metric`` (scikit-learn API) or ``feval``
    (``lgb.train``), for its early stopping.

    Example::

        clf = LGBMClassifier(n_estimators=1000, metric="None")
        clf.fit(X_train, y_train, eval_set=[(X_val, y_val)],
                eval_metric=lightgbm_metric("ts_ref"),
                callbacks=[lightgbm.early_stopping(50)])
        clf.best_iteration_         # 1-based, as LightGBM counts

    ``metric="None"`` matters: LightGBM also evaluates the objective's own metric
    (``binary_logloss``) and ``early_stopping`` stops as soon as *any* metric stops improving.
    Predictions are probabilities with LightGBM's built-in objectives (``scores="proba"``),
    raw scores with a custom objective (``scores="logits"``). Non-finite predictions give NaN.
    """
    return LightGBMMetric(kind, scores)


class CatBoostMetric:
    """Custom ``eval_metric`` object for CatBoost; create with :func:`catboost_metric`.

    CatBoost's protocol: ``is_max_optimal()``, ``evaluate(approxes, target, weight)`` ->
    (error, weight) and ``get_final_error(error, weight)``. ``approxes`` are raw scores, one
    array per dimension: the log-odds for ``Logloss``/``CrossEntropy``, K arrays of logits for
    ``MultiClass`` (with ``MultiClassOneVsAll`` they are per-class log-odds, scored as if they
    were softmax logits). A refinement loss is not a sum over samples, so ``evaluate`` returns
    the loss itself with weight 1 (CatBoost evaluates the whole set in one call).
    """

    def __init__(self, kind: str = "ts_ref") -> None:
        self._scorer = _Scorer(kind, "logits")
        self.kind = kind

    def is_max_optimal(self) -> bool:
        return False

    def evaluate(
        self, approxes: Sequence[Any], target: Any, weight: Any | None
    ) -> tuple[float, float]:
        if weight is not None and np.any(np.asarray(weight) != 1):
            raise ValueError("refinement losses are unweighted: evaluate on an unweighted set")
        if len(approxes) == 1:
            z = np.asarray(approxes[0])  # binary log-odds
        else:
            z = np.stack([np.asarray(a) for a in approxes], axis=1)
        return self._scorer(np.asarray(target), z, strict=False), 1.0

    def get_final_error(self, error: float, weight: float) -> float:
        return error

    def __repr__(self) -> str:
        return f"catboost_metric(kind={self.kind!r})"


def catboost_metric(kind: str = "ts_ref") -> CatBoostMetric:
    """A refinement loss as CatBoost's ``eval_metric`` (early stopping and
    ``use_best_model=True`` select the round that minimises it).

    Example::

        clf = CatBoostClassifier(iterations=1000, eval_metric=catboost_metric("ts_ref"),
                                 early_stopping_rounds=50, use_best_model=True)
        clf.fit(X_train, y_train, eval_set=(X_val, y_val))

    CatBoost evaluates Python metrics in Python, on the training set too (its learn-set
    metric), and warns once when numba is not installed to compile them; neither changes
    the result.
    """
    return CatBoostMetric(kind)


# ---------------------------------------------------------------------------------------------
# Any training loop
# ---------------------------------------------------------------------------------------------


class EarlyStopping:
    """Early stopping on a refinement loss for PyTorch or any framework's training loop.

    Call :meth:`step` once per epoch with that epoch's validation logits and labels (and,
    optionally, the model state to keep); it returns True once ``patience`` epochs in a row
    have not improved the best loss by more than ``min_delta``. Then restore
    :attr:`best_state` and temperature-scale the model on the same validation set::

        stopper = EarlyStopping("ts_ref", patience=16)
        for epoch in range(max_epochs):
            train_one_epoch(model)
            with torch.no_grad():
                val_logits = model(X_val)
            if stopper.step(val_logits, y_val, state=model.state_dict()):
                break
        model.load_state_dict(stopper.best_state)

    Attributes: ``history`` (loss per step; NaN for non-finite logits, which never count as
    an improvement), ``best_epoch`` (0-based index of the best step; None before any finite
    loss), ``best_score`` (+inf before), ``best_state`` (a deep copy of the ``state`` passed
    at the best step: a ``state_dict`` holds references to the live parameters, so it is
    copied, on its device), ``stopped``.
    ``kind``: any of :func:`stopping_kinds`; ``"logloss"`` (plain validation log loss) is the
    classic criterion, for comparisons. ``scores="proba"`` when the loop produces
    probabilities.
    """

    def __init__(
        self,
        kind: str = "ts_ref",
        patience: int = 10,
        min_delta: float = 0.0,
        scores: ScoreType = "logits",
    ) -> None:
        if int(patience) != patience or patience < 1:
            raise ValueError(f"patience must be a positive integer, got {patience!r}")
        if not min_delta >= 0:
            raise ValueError(f"min_delta must be >= 0, got {min_delta!r}")
        self._scorer = _Scorer(kind, scores)
        self.kind, self.patience, self.min_delta, self.scores = kind, patience, min_delta, scores
        self.reset()

    def reset(self) -> None:
        """Forget every step (to reuse the object for another training run)."""
        self.history: list[float] = []
        self.best_epoch: int | None = None
        self.best_score: float = math.inf
        self.best_state: Any = None
        self.stopped = False
        self._since_best = 0

    def step(self, val_logits: Any, y_val: Any, state: Any = None) -> bool:
        """Score one epoch; True = stop now (``patience`` steps without improvement)."""
        score = self._scorer(y_val, val_logits, strict=False)
        self.history.append(score)
        if score < self.best_score - self.min_delta:  # False for NaN
            self.best_score, self.best_epoch = score, len(self.history) - 1
            self.best_state = copy.deepcopy(state)
            self._since_best = 0
        else:
            self._since_best += 1
        self.stopped = self._since_best >= self.patience
        return self.stopped

    def __repr__(self) -> str:
        return (
            f"EarlyStopping(kind={self.kind!r}, patience={self.patience}, "
            f"min_delta={self.min_delta}, scores={self.scores!r})"
        )
