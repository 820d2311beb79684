"""Temperature scaling for your own classifiers, as scikit-learn estimators.

The second half of "refine, then calibrate": once a model has been stopped (or tuned) on
validation refinement (:mod:`tabbench.stopping`), fit one temperature on the same validation
set and apply it to new predictions. Temperature scaling divides the logits by T = 1/β:
it never changes the predicted class, so accuracy and AUROC are untouched, and it is fit by
minimum validation log loss, which it can only lower (β = 1 is a candidate).

* :class:`TemperatureScaling` — on logits: ``fit(logits, y)``, ``predict_proba(logits)``
  (the fitter of :mod:`tabbench.metrics.temperature`, exact and fast; the same class as
  ``tabbench.metrics.TemperatureScaling``);
* :class:`TemperatureScaledClassifier` — wraps an already fitted classifier (scikit-learn,
  XGBoost, LightGBM, CatBoost, ...) and calibrates its outputs.

Both apply Laplace smoothing by default, as the paper does: q = N/(N+1)·p + 1/((N+1)K) with
N the number of validation samples the temperature was fit on.

Importing this module imports neither PyTorch nor any gradient-boosting library.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from tabbench._scores import proba_to_logits, scores_to_logits
from tabbench.metrics.temperature import TemperatureScaling

__all__ = ["TemperatureScaledClassifier", "TemperatureScaling", "proba_to_logits"]

ResponseMethod = Literal["auto", "predict_proba", "decision_function"]


class TemperatureScaledClassifier(ClassifierMixin, BaseEstimator):
    """An already fitted classifier followed by temperature scaling fit on validation data.

    Parameters
    ----------
    estimator : a *fitted* classifier with ``classes_`` and ``predict_proba`` or
        ``decision_function`` (binary or multiclass). It is never refit.
    smoothing : Laplace smoothing of the calibrated probabilities (default True, as the paper).
    response_method : which output is scaled. ``"auto"``: ``predict_proba`` if the estimator
        has it, else ``decision_function``. Probabilities are turned into logits by log p:
        temperature scaling of log-probabilities equals temperature scaling of the model's
        logits, since they differ by a per-row constant. ``decision_function`` must return
        logits ((N,) margins for binary): right for linear models and boosted trees, not a
        calibrated choice for e.g. one-vs-rest SVM scores.
    clip : how probabilities 0 and 1 are read (log 0 = −inf), see
        :func:`proba_to_logits`. Default None: binary margins are read
        within ±log(2/ε) (±36.7 for float64, ±16.6 for float32 probabilities: the resolution
        of 1 − p), and multiclass p = 0 as the smallest positive normal float (−708 as a
        float64 logit), so every non-zero probability keeps its exact logit. For models with
        many exact zeros on plausible classes (random forests, k-NN), a zero on the true class
        then dominates the fit; pass e.g. ``clip=1e-6`` for them.

    ``fit(X_val, y_val)`` maps the labels through ``estimator.classes_`` and fits the
    temperature on the estimator's outputs; ``predict_proba(X)`` returns the calibrated
    probabilities in the order of ``classes_``; ``predict(X)`` is ``estimator.predict(X)``:
    temperature scaling never changes the decision (β > 0 keeps the argmax, and delegating
    keeps it bit for bit, ties included).

    Cloning: the estimator is *frozen* (like ``sklearn.frozen.FrozenEstimator``):
    ``sklearn.base.clone`` keeps the same fitted estimator and drops only the temperature, so
    clones can be refit on other validation data, e.g. in ``cross_val_score``.

    Attributes after ``fit``: ``calibrator_`` (the fitted :class:`TemperatureScaling`),
    ``beta_`` (its inverse temperature), ``classes_``, ``n_classes_``.
    """

    def __init__(
        self,
        estimator: Any,
        *,
        smoothing: bool = True,
        response_method: ResponseMethod = "auto",
        clip: float | None = None,
    ) -> None:
        self.estimator = estimator
        self.smoothing = smoothing
        self.response_method = response_method
        self.clip = clip

    def __sklearn_clone__(self) -> TemperatureScaledClassifier:
        # sklearn's clone would clone (= unfit) the wrapped estimator; it is a fixed input here
        return type(self)(**self.get_params(deep=False))

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(self.estimator.classes_)

    def _method(self) -> str:
        if self.response_method == "auto":
            for name in ("predict_proba", "decision_function"):
                if hasattr(self.estimator, name):
                    return name
            raise TypeError(
                f"{type(self.estimator).__name__} has neither predict_proba nor "
                "decision_function"
            )
        if self.response_method not in ("predict_proba", "decision_function"):
            raise ValueError(
                "response_method must be 'auto', 'predict_proba' or 'decision_function', "
                f"got {self.response_method!r}"
            )
        if not hasattr(self.estimator, self.response_method):
            raise TypeError(f"{type(self.estimator).__name__} has no {self.response_method}")
        return self.response_method

    def _logits(self, X: Any) -> np.ndarray:
        method = self._method()
        out = getattr(self.estimator, method)(X)
        if method == "predict_proba":
            return proba_to_logits(np.asarray(out), self.clip)
        return scores_to_logits(out, "logits")

    def _codes(self, y: Any) -> np.ndarray:
        """Positions of the labels ``y`` in ``classes_`` (which need not be sorted)."""
        classes = self.classes_
        y = np.asarray(y)
        order = np.argsort(classes, kind="stable")
        pos = np.searchsorted(classes[order], y)
        pos = np.minimum(pos, len(classes) - 1)
        codes = order[pos]
        unknown = classes[codes] != y
        if np.any(unknown):
            raise ValueError(
                f"y contains labels the estimator was not fitted on: "
                f"{np.unique(y[unknown])[:10].tolist()} (classes_: {classes.tolist()})"
            )
        return codes

    def fit(self, X: Any, y: Any) -> TemperatureScaledClassifier:
        """Fit the temperature on validation data (X, y) that the estimator was not fit on."""
        if not hasattr(self.estimator, "classes_"):
            raise TypeError(
                f"{type(self.estimator).__name__} has no classes_: pass a fitted classifier"
            )
        z = self._logits(X)
        if z.shape[1] != len(self.classes_):
            raise ValueError(
                f"the estimator's {self._method()} gives {z.shape[1]} columns for "
                f"{len(self.classes_)} classes"
            )
        self.calibrator_ = TemperatureScaling(smoothing=self.smoothing).fit(z, self._codes(y))
        self.beta_ = self.calibrator_.beta_
        self.n_classes_ = self.calibrator_.n_classes_
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Calibrated probabilities (N, n_classes), columns in the order of ``classes_``."""
        check_is_fitted(self, "calibrator_")
        return self.calibrator_.predict_proba(self._logits(X))

    def predict(self, X: Any) -> np.ndarray:
        """The wrapped estimator's ``predict(X)``, unchanged by calibration."""
        check_is_fitted(self, "calibrator_")
        return self.estimator.predict(X)
