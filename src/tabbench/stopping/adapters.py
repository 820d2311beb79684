"""Refinement losses where the libraries look for a metric: a scikit-learn scorer for model
selection (:func:`refinement_scorer`) and custom eval metrics for the early stopping of XGBoost,
LightGBM and CatBoost (:func:`xgboost_metric`, :func:`lightgbm_metric`,
:func:`catboost_metric`). None of the libraries is imported here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tabbench._scores import (
    ScoreType,
    class_positions,
    proba_to_logits,
    to_numpy,
)
from tabbench.stopping.loss import Scorer

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

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`.
    response_method : str or sequence of str, default ("decision_function", "predict_proba")
        The estimator's outputs to score, the first it has.
    clip : float or None, default None
        How probabilities 0 and 1 are read (:func:`tabbench.calibration.proba_to_logits`).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from tabbench.stopping import RefinementScorer
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> model = LogisticRegression().fit(X[:200], y[:200])
    >>> scorer = RefinementScorer("ts_ref")
    >>> round(scorer(model, X[200:], y[200:]), 3)  # −TS-refinement of the held-out part
    -0.215
    """

    def __init__(self, kind: str = "ts_ref",
                 response_method: Sequence[str] = ("decision_function", "predict_proba"),
                 clip: float | None = None) -> None:
        self._loss = Scorer(kind, "logits")
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

    The value is −loss (greater is better, like ``neg_log_loss``). See
    :class:`RefinementScorer` for how scores are read.

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`.
    response_method : str or sequence of str, default ("decision_function", "predict_proba")
        The estimator's outputs to score, the first it has.
    clip : float or None, default None
        How probabilities 0 and 1 are read (:func:`tabbench.calibration.proba_to_logits`).

    Returns
    -------
    RefinementScorer
        The scorer, for ``scoring=``.

    Examples
    --------
    Tune the regularisation of a temperature-scaled model on cross-validated TS-refinement:

    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> from tabbench.calibration import TemperatureScaledClassifier
    >>> from tabbench.stopping import refinement_scorer
    >>> X, y = make_classification(n_samples=400, random_state=0)
    >>> model = TemperatureScaledClassifier(LogisticRegression(), cv=0.25, random_state=0)
    >>> search = GridSearchCV(model, {"estimator__C": [0.001, 1.0]}, cv=3,
    ...                       scoring=refinement_scorer("ts_ref")).fit(X, y)
    >>> search.best_params_
    {'estimator__C': 1.0}
    >>> round(float(-search.best_score_), 3)  # the lowest cross-validated TS-refinement
    0.404
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

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`.
    scores : {"proba", "logits"}, default "proba"
        What XGBoost passes: probabilities with its built-in objectives, margins with a
        custom one.

    Examples
    --------
    What XGBoost calls after each round, on the validation labels and probabilities:

    >>> import numpy as np
    >>> from tabbench.stopping import XGBoostMetric
    >>> metric = XGBoostMetric("ts_ref")
    >>> metric.__name__  # the key of evals_result()
    'ts_ref'
    >>> round(metric(np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.9, 0.6])), 3)
    0.398
    """

    def __init__(self, kind: str = "ts_ref", scores: ScoreType = "proba") -> None:
        self._scorer = Scorer(kind, scores)
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

    With XGBoost's built-in objectives the scikit-learn API passes probabilities (binary:
    P(class 1), (N,); multiclass: (N, K)), hence ``scores="proba"``; with a custom objective it
    passes raw margins: use ``scores="logits"``. Non-finite predictions (a diverged model)
    give NaN, which never counts as an improvement. XGBoost records a custom metric's value
    with 6 decimals (its ``%f`` log format), so rounds within 5e-7 of each other tie and the
    earlier one is kept.

    Pass ``disable_default_eval_metric=True`` too: beside a custom metric XGBoost still computes
    its objective's default metric (``logloss``/``mlogloss``) on every eval set after every
    round, which costs about as much as our metric where trees are cheap. Early stopping reads
    the last metric, ours, either way, so the stopping round is the same; only that log loss
    disappears from ``evals_result()``.

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`.
    scores : {"proba", "logits"}, default "proba"
        What XGBoost passes: probabilities with its built-in objectives, margins with a
        custom one.

    Returns
    -------
    XGBoostMetric
        The metric, for ``eval_metric=``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from xgboost import XGBClassifier
    >>> from tabbench.stopping import xgboost_metric
    >>> X, y = make_classification(n_samples=1000, random_state=0)
    >>> clf = XGBClassifier(n_estimators=300, learning_rate=0.3, early_stopping_rounds=20,
    ...                     eval_metric=xgboost_metric("ts_ref"),
    ...                     disable_default_eval_metric=True, n_jobs=1)
    >>> clf = clf.fit(X[:700], y[:700], eval_set=[(X[700:], y[700:])], verbose=False)
    >>> clf.best_iteration < 300  # the round of minimal validation TS-refinement
    True
    >>> list(clf.evals_result()["validation_0"])  # no log loss computed beside it
    ['ts_ref']
    >>> clf.predict_proba(X[:1]).shape  # uses rounds 0..best_iteration, as any eval_metric
    (1, 2)
    """
    return XGBoostMetric(kind, scores)


class LightGBMMetric:
    """Custom ``eval_metric`` for LightGBM; create with :func:`lightgbm_metric`.

    Scikit-learn API: ``metric(y_true, y_pred, weight)`` -> ``(kind, value, False)`` (False:
    lower is better). Native API (``lgb.train(feval=metric)``): ``metric(preds, dataset)``,
    recognised by the ``lightgbm.Dataset`` in second place.

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`.
    scores : {"proba", "logits"}, default "proba"
        What LightGBM passes: probabilities with its built-in objectives, raw scores with a
        custom one.

    Examples
    --------
    What LightGBM's scikit-learn API calls after each round:

    >>> import numpy as np
    >>> from tabbench.stopping import LightGBMMetric
    >>> name, value, higher_is_better = LightGBMMetric("ts_ref")(
    ...     np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.9, 0.6]))
    >>> name, round(value, 3), higher_is_better
    ('ts_ref', 0.398, False)
    """

    def __init__(self, kind: str = "ts_ref", scores: ScoreType = "proba") -> None:
        self._scorer = Scorer(kind, scores)
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

    ``metric="None"`` matters: LightGBM also evaluates the objective's own metric
    (``binary_logloss``) and ``early_stopping`` stops as soon as *any* metric stops improving.
    Predictions are probabilities with LightGBM's built-in objectives (``scores="proba"``),
    raw scores with a custom objective (``scores="logits"``). Non-finite predictions give NaN.

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`.
    scores : {"proba", "logits"}, default "proba"
        What LightGBM passes: probabilities with its built-in objectives, raw scores with a
        custom one.

    Returns
    -------
    LightGBMMetric
        The metric, for ``eval_metric=`` or ``feval=``.

    Examples
    --------
    >>> import lightgbm
    >>> from sklearn.datasets import make_classification
    >>> from tabbench.stopping import lightgbm_metric
    >>> X, y = make_classification(n_samples=1000, random_state=0)
    >>> clf = lightgbm.LGBMClassifier(n_estimators=300, metric="None", n_jobs=1, verbose=-1)
    >>> clf = clf.fit(X[:700], y[:700], eval_set=[(X[700:], y[700:])],
    ...               eval_metric=lightgbm_metric("ts_ref"),
    ...               callbacks=[lightgbm.early_stopping(20, verbose=False)])
    >>> 1 <= clf.best_iteration_ < 300  # 1-based, as LightGBM counts
    True
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

    ``no_jit``: the attribute by which CatBoost's metric set-up skips compiling the metric's
    methods with numba at every ``fit`` (or warning that numba is missing): ``evaluate`` cannot
    be compiled (it calls numpy and keeps state), and compiling the trivial others costs a fit
    more than the metric work of many rounds.

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`.

    Examples
    --------
    What CatBoost calls after each round, on the validation labels and raw scores (binary:
    one array of log-odds):

    >>> import numpy as np
    >>> from tabbench.stopping import CatBoostMetric
    >>> metric = CatBoostMetric("ts_ref")
    >>> error, weight = metric.evaluate([np.array([-1.4, 0.8, 2.2, 0.4])],
    ...                                 np.array([0, 1, 1, 0]), None)
    >>> round(metric.get_final_error(error, weight), 3), metric.is_max_optimal()
    (0.4, False)
    """

    no_jit = True

    def __init__(self, kind: str = "ts_ref") -> None:
        self._scorer = Scorer(kind, "logits")
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
        else:  # (N, K) as a view of the class-major stack, which the TS kernels read
            z = np.stack([np.asarray(a) for a in approxes]).T
        return self._scorer(np.asarray(target), z, strict=False), 1.0

    def get_final_error(self, error: float, weight: float) -> float:
        return error

    def __repr__(self) -> str:
        return f"catboost_metric(kind={self.kind!r})"


def catboost_metric(kind: str = "ts_ref") -> CatBoostMetric:
    """A refinement loss as CatBoost's ``eval_metric`` (early stopping and
    ``use_best_model=True`` select the round that minimises it).

    CatBoost evaluates Python metrics in Python, on the training set too (its learn-set
    metric; the callable keeps a warm start for each set). It has no option to skip the
    training set for a metric object: its ``hints=skip_train~true`` applies to metrics named
    by a string, and ``metric_period`` would change which rounds early stopping sees.

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`.

    Returns
    -------
    CatBoostMetric
        The metric, for ``eval_metric=``.

    Examples
    --------
    >>> import warnings
    >>> from catboost import CatBoostClassifier
    >>> from sklearn.datasets import make_classification
    >>> from tabbench.stopping import catboost_metric
    >>> X, y = make_classification(n_samples=1000, random_state=0)
    >>> clf = CatBoostClassifier(iterations=200, eval_metric=catboost_metric("ts_ref"),
    ...                          early_stopping_rounds=20, use_best_model=True,
    ...                          thread_count=1, verbose=False, allow_writing_files=False)
    >>> with warnings.catch_warnings():  # CatBoost's own notices, if any
    ...     warnings.simplefilter("ignore")
    ...     clf = clf.fit(X[:700], y[:700], eval_set=(X[700:], y[700:]))
    >>> clf.get_best_iteration() < 200
    True
    """
    return CatBoostMetric(kind)
