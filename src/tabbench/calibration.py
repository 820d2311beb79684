"""Temperature scaling for your own classifiers, as scikit-learn estimators.

The second half of "refine, then calibrate": once a model has been stopped (or tuned) on
validation refinement (:mod:`tabbench.stopping`), fit one temperature on data the model was
not trained on and apply it to new predictions. Temperature scaling divides the logits by
T = 1/β: it never changes the predicted class, so accuracy and AUROC are untouched, and it is
fit by minimum log loss on its data, which it can only lower there (β = 1 is a candidate).

* :class:`TemperatureScaling` — on logits: ``fit(logits, y)``, ``predict_proba(logits)``
  (:mod:`tabbench.metrics.temperature_scaling`; the same class as
  ``tabbench.metrics.TemperatureScaling``);
* :class:`TemperatureScaledClassifier` — a meta-estimator in the manner of scikit-learn's
  ``CalibratedClassifierCV``: a classifier (scikit-learn, XGBoost, LightGBM, CatBoost, ...)
  followed by a temperature fit on outputs it did not train on; an already fitted model is
  passed as ``sklearn.frozen.FrozenEstimator(model)``.

Both apply Laplace smoothing by default, as the paper does: q = N/(N+1)·p + 1/((N+1)K) with
N the number of samples the temperature was fit on.

Importing this module imports neither PyTorch nor any gradient-boosting library.
"""

from __future__ import annotations

import dataclasses
import warnings
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import check_cv, cross_val_predict, train_test_split
from sklearn.utils import check_array, get_tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from tabbench._scores import class_positions, proba_to_logits, scores_to_logits
from tabbench.metrics.temperature_scaling import TemperatureScaling

__all__ = ["TemperatureScaledClassifier", "TemperatureScaling", "proba_to_logits"]

ResponseMethod = Literal["auto", "predict_proba", "decision_function"]
RESPONSE_METHODS: tuple[str, ...] = ("auto", "predict_proba", "decision_function")


def response_method_of(estimator: Any, response_method: str) -> str:
    """The method whose output is scaled: ``"auto"`` = ``predict_proba`` if the estimator has
    it, else ``decision_function``."""
    if response_method not in RESPONSE_METHODS:
        raise ValueError(
            f"response_method must be one of {RESPONSE_METHODS}, got {response_method!r}"
        )
    names = ("predict_proba", "decision_function") if response_method == "auto" \
        else (response_method,)
    for name in names:
        if hasattr(estimator, name):
            return name
    raise TypeError(f"{type(estimator).__name__} has no {' or '.join(names)}")


def outputs_to_logits(out: Any, method: str, clip: float | None) -> np.ndarray:
    """Logits (N, K) of a ``predict_proba`` (log p, :func:`proba_to_logits`) or a
    ``decision_function`` output (logits (N, K) or binary margins (N,))."""
    if method == "predict_proba":
        return proba_to_logits(np.asarray(out), clip)
    return scores_to_logits(out, "logits")


def _already_fitted(estimator: Any) -> bool:
    try:
        check_is_fitted(estimator)
    except (NotFittedError, TypeError):
        return False
    return True


class TemperatureScaledClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """A classifier followed by temperature scaling fit on outputs it was not trained on.

    Follows ``sklearn.calibration.CalibratedClassifierCV``: ``fit(X, y)`` fits a clone of
    ``estimator`` and the temperature on data the clone did not train on, chosen by ``cv``;
    an already fitted model is calibrated as is when passed as
    ``sklearn.frozen.FrozenEstimator(model)`` (then ``fit(X_val, y_val)`` fits the temperature
    alone). Being an ordinary estimator, it can be cloned and refit inside a ``Pipeline``,
    ``GridSearchCV`` or ``cross_val_score``.

    ``predict_proba(X)`` returns the calibrated probabilities in the order of ``classes_``;
    ``decision_function(X)`` the scaled logits β·z (binary: the margin), unsmoothed;
    ``predict(X)`` is the fitted estimator's ``predict(X)``: temperature scaling never changes
    the decision (β > 0 keeps the argmax, and delegating keeps it bit for bit, ties included).
    Extra ``fit`` keyword arguments go to the estimator's ``fit``; sample weights are not
    supported (the temperature is fit unweighted).

    An already fitted ``estimator`` that is not wrapped in ``FrozenEstimator`` (this class's
    former only convention) is still calibrated as is, with a FutureWarning (deprecated).

    Parameters
    ----------
    estimator : classifier
        A classifier with ``fit``, ``classes_`` and ``predict_proba`` or
        ``decision_function`` (binary or multiclass); never modified (a clone is fit).
    cv : float, int, CV splitter, iterable of splits or None, default None
        Where the temperature's data come from (unless ``estimator`` is frozen).
        A float in (0, 1): that fraction of (X, y) is held out (stratified, ``random_state``),
        the estimator is fit on the rest and the temperature on the held-out part — the
        paper's train/validation setting, one fit. None (5 folds), an int, a CV splitter or
        an iterable of splits: cross-fitted as ``CalibratedClassifierCV(ensemble=False)``: the
        temperature is fit on the out-of-fold outputs of ``cross_val_predict``, and the
        estimator refit on all of (X, y) makes the predictions (one model, one temperature).
    smoothing : bool, default True
        Laplace smoothing of the calibrated probabilities, as the paper does.
    response_method : {"auto", "predict_proba", "decision_function"}, default "auto"
        Which output is scaled. ``"auto"``: ``predict_proba`` if the estimator has it, else
        ``decision_function``. Probabilities are turned into logits by log p: temperature
        scaling of log-probabilities equals temperature scaling of the model's logits, since
        they differ by a per-row constant. ``decision_function`` must return logits ((N,)
        margins for binary): right for linear models and boosted trees, not a calibrated
        choice for e.g. one-vs-rest SVM scores.
    clip : float or None, default None
        How probabilities 0 and 1 are read (log 0 = −inf), see :func:`proba_to_logits`.
        None: binary margins are read within ±log(2/ε) (±36.7 for float64, ±16.6 for float32
        probabilities), multiclass p = 0 as the smallest positive normal float. For models
        with many exact zeros on plausible classes (random forests, k-NN) pass e.g.
        ``clip=1e-6``.
    random_state : int, RandomState or None, default None
        Seed of the held-out split (float ``cv`` only).
    n_jobs : int or None, default None
        Parallel fits of ``cross_val_predict`` (int ``cv`` only).

    Attributes
    ----------
    estimator_ : classifier
        The fitted model that predicts.
    calibrator_ : TemperatureScaling
        The fitted temperature (:class:`TemperatureScaling`).
    beta_ : float
        Its inverse temperature (> 1 sharpens, < 1 softens).
    classes_ : ndarray of shape (n_classes,)
        The estimator's classes.
    n_classes_ : int
        Their number.
    n_features_in_ : int
        The number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Their names (DataFrame input only).

    Examples
    --------
    Hold out 30 % of the training data for the temperature (the paper's setting):

    >>> from sklearn.datasets import make_classification
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> from tabbench.calibration import TemperatureScaledClassifier
    >>> X, y = make_classification(n_samples=600, random_state=0)
    >>> clf = TemperatureScaledClassifier(GradientBoostingClassifier(random_state=0),
    ...                                   cv=0.3, random_state=0).fit(X, y)
    >>> round(clf.beta_, 2)  # < 1: the boosted trees were over-confident on held-out data
    0.92
    >>> clf.predict_proba(X[:2]).round(2)
    array([[1.  , 0.  ],
           [0.01, 0.99]])
    >>> bool((clf.predict(X) == clf.estimator_.predict(X)).all())  # the decision is kept
    True

    A model already stopped on a validation set: freeze it, fit the temperature on that set.

    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.linear_model import LogisticRegression
    >>> model = LogisticRegression().fit(X[:400], y[:400])
    >>> ts = TemperatureScaledClassifier(FrozenEstimator(model)).fit(X[400:], y[400:])
    >>> round(ts.beta_, 2)  # > 1: the logistic regression was under-confident on new data
    1.31
    """

    def __init__(
        self,
        estimator: Any,
        *,
        cv: Any = None,
        smoothing: bool = True,
        response_method: ResponseMethod = "auto",
        clip: float | None = None,
        random_state: Any = None,
        n_jobs: int | None = None,
    ) -> None:
        self.estimator = estimator
        self.cv = cv
        self.smoothing = smoothing
        self.response_method = response_method
        self.clip = clip
        self.random_state = random_state
        self.n_jobs = n_jobs

    # -- fit ---------------------------------------------------------------------------------

    def fit(self, X: Any, y: Any, **fit_params: Any) -> TemperatureScaledClassifier:
        """Fit the estimator (unless frozen) and the temperature, on different data.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            What the estimator takes.
        y : array-like of shape (n_samples,)
            Class labels, at least two classes.
        **fit_params
            Passed to the estimator's ``fit`` (``sample_weight`` is refused).

        Returns
        -------
        TemperatureScaledClassifier
            ``self``, fitted.
        """
        if "sample_weight" in fit_params:
            raise TypeError(
                f"{type(self).__name__}.fit does not support sample_weight: the temperature "
                "(and the refinement it stands for) is fit unweighted"
            )
        validate_data(self, X, y, skip_check_array=True)  # names, n_features_in_, y given
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        check_classification_targets(y)
        n_labels = len(np.unique(y))
        if n_labels < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes, got 1 class"
            )
        estimator = self.estimator
        if not isinstance(estimator, FrozenEstimator) and _already_fitted(estimator):
            warnings.warn(
                f"{type(self).__name__} was given an already fitted "
                f"{type(estimator).__name__}: it is calibrated as is (the former "
                "convention), which is deprecated. Pass FrozenEstimator(estimator) to keep "
                "it as is, or an unfitted estimator to have fit() fit it (see cv).",
                FutureWarning, stacklevel=2,
            )
            estimator = FrozenEstimator(estimator)
        if isinstance(estimator, FrozenEstimator):
            self.estimator_ = estimator
            method = response_method_of(estimator, self.response_method)
            z = outputs_to_logits(getattr(estimator, method)(X), method, self.clip)
            y_cal = y
        elif isinstance(self.cv, Real) and not isinstance(self.cv, Integral):
            z, y_cal = self._fit_held_out(X, y, fit_params)
        else:
            z, y_cal = self._fit_cross(X, y, fit_params)
        self.classes_ = np.asarray(self.estimator_.classes_)
        if z.shape[1] != len(self.classes_):
            raise ValueError(
                f"the estimator's outputs have {z.shape[1]} columns for "
                f"{len(self.classes_)} classes"
            )
        self.calibrator_ = TemperatureScaling(smoothing=self.smoothing).fit(
            z, class_positions(self.classes_, y_cal))
        self.beta_ = self.calibrator_.beta_
        self.n_classes_ = len(self.classes_)
        return self

    def _fit_held_out(self, X: Any, y: np.ndarray, fit_params: dict
                      ) -> tuple[np.ndarray, np.ndarray]:
        if not 0 < self.cv < 1:
            raise ValueError(f"a float cv is the held-out fraction in (0, 1), got {self.cv}")
        X_fit, X_held, y_fit, y_held = train_test_split(
            X, y, test_size=self.cv, stratify=y, random_state=self.random_state)
        est = clone(self.estimator).fit(X_fit, y_fit, **fit_params)
        self.estimator_ = est
        method = response_method_of(est, self.response_method)
        return outputs_to_logits(getattr(est, method)(X_held), method, self.clip), y_held

    def _fit_cross(self, X: Any, y: np.ndarray, fit_params: dict
                   ) -> tuple[np.ndarray, np.ndarray]:
        splits = list(check_cv(self.cv, y, classifier=True).split(X, y))
        # Every training fold must see every class, or its model has no output column for
        # the missing one (cross_val_predict would fill it with p = 0). Held-out folds may
        # lack classes: their outputs are pooled before the one temperature is fit.
        labels = np.unique(y)
        for i, (train, _) in enumerate(splits):
            missing = np.setdiff1d(labels, y[train])
            if missing.size:
                raise ValueError(
                    f"training fold {i} of cv={self.cv!r} lacks the classes "
                    f"{missing[:10].tolist()}: every class needs samples in every training "
                    "fold (at least 2 per class with a stratified k-fold)"
                )
        est = clone(self.estimator)
        method = response_method_of(est, self.response_method)
        out = cross_val_predict(est, X, y, cv=splits, method=method, n_jobs=self.n_jobs,
                                params=fit_params)
        self.estimator_ = clone(self.estimator).fit(X, y, **fit_params)
        return outputs_to_logits(out, method, self.clip), y

    # -- predict -----------------------------------------------------------------------------

    def _check_X(self, X: Any) -> None:
        """Fitted, and X has the features seen in ``fit`` (their number and names); the
        estimator validates the values."""
        check_is_fitted(self)
        ndim = getattr(X, "ndim", None)
        if ndim is None and isinstance(X, list | tuple):
            ndim = np.ndim(X)
        if ndim == 1 and hasattr(self, "n_features_in_"):
            check_array(X, accept_sparse=True, dtype=None, ensure_all_finite=False)  # raises
        validate_data(self, X, reset=False, skip_check_array=True)

    def _logits(self, X: Any) -> np.ndarray:
        self._check_X(X)
        method = response_method_of(self.estimator_, self.response_method)
        return outputs_to_logits(getattr(self.estimator_, method)(X), method, self.clip)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Calibrated probabilities (N, n_classes), columns in the order of ``classes_``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            What the estimator takes.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            softmax(β z), Laplace-smoothed unless ``smoothing=False``.
        """
        z = self._logits(X)
        return self.calibrator_.predict_proba(z)

    def decision_function(self, X: Any) -> np.ndarray:
        """The scaled logits β·z (N, n_classes), binary: the margin β(z₁ − z₀) (N,).

        Unsmoothed, so that the refinement of these scores is the model's own:
        re-calibrating β·z by another temperature reaches the same optimum as z.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            What the estimator takes.

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples,)
            The scaled logits; binary problems: the scaled margin.
        """
        z = self._logits(X)
        z = self.calibrator_.beta_ * z
        return z[:, 1] - z[:, 0] if z.shape[1] == 2 else z

    def predict(self, X: Any) -> np.ndarray:
        """The fitted estimator's ``predict(X)``, unchanged by calibration.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            What the estimator takes.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted classes.
        """
        self._check_X(X)
        return self.estimator_.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            inner = get_tags(self.estimator)
        except AttributeError:  # a duck-typed classifier without scikit-learn's tags
            return tags
        # The estimator sees X as given, so it decides what X may hold (NaN, sparse,
        # categorical columns, ...): its input tags are this estimator's.
        tags.input_tags = dataclasses.replace(inner.input_tags)
        # A temperature never changes the decision: the accuracy is the estimator's.
        if inner.classifier_tags is not None:
            tags.classifier_tags.poor_score = inner.classifier_tags.poor_score
        tags.non_deterministic = inner.non_deterministic
        return tags
