"""Temperature scaling as a scikit-learn classifier on logits (paper, App. E).

:class:`TemperatureScaling` is the estimator form of :func:`tabbench.metrics.fit_temperature`
(one definition of the fit): ``fit(logits, y)``, ``predict_proba(logits)``. It is public as
``tabbench.metrics.TemperatureScaling`` and ``tabbench.calibration.TemperatureScaling``;
:class:`tabbench.calibration.TemperatureScaledClassifier` wraps a model around it.

Its "features" are logits, one column per class, so it follows scikit-learn's conventions
(``validate_data``, ``classes_``, ``n_features_in_``, ``NotFittedError``, tags) with one
constraint scikit-learn has no tag for: the number of columns *is* the number of classes
(:data:`SKLEARN_CHECKS_NOT_APPLICABLE` lists the estimator checks that this rules out).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_array
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from tabbench.metrics.losses import laplace_smooth, log_softmax
from tabbench.metrics.temperature import fit_temperature

#: scikit-learn estimator checks that cannot apply to a classifier on logits, with the reason.
#: Each builds a multiclass problem with fewer feature columns (2) than classes (3): for
#: logits that is malformed input, so ``fit`` rejects it. scikit-learn has no tag for "one
#: column per class" (``classifier_tags.multi_class = False`` would be false: multiclass
#: logits are supported and tested), so these are passed as ``expected_failed_checks`` and
#: the tests require them to fail for exactly this reason and every other check to pass.
_FEWER_COLUMNS = "fits a 3-class problem on 2 columns; logits need one column per class"
SKLEARN_CHECKS_NOT_APPLICABLE: dict[str, str] = {
    "check_estimators_overwrite_params": _FEWER_COLUMNS,
    "check_estimators_fit_returns_self": _FEWER_COLUMNS,
    "check_readonly_memmap_input": _FEWER_COLUMNS,
    "check_classifiers_classes": _FEWER_COLUMNS,
    "check_classifiers_train": _FEWER_COLUMNS,
}


def _is_integer_codes(y: np.ndarray) -> bool:
    if np.issubdtype(y.dtype, np.integer):  # not bool: [False, True] are labels
        return True
    return (np.issubdtype(y.dtype, np.floating) and bool(np.all(np.isfinite(y)))
            and bool(np.all(y == np.round(y))))


def label_codes(y: np.ndarray, n_columns: int) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, codes)`` of labels ``y`` for logits with ``n_columns`` columns.

    Integer codes within 0..K−1 are the columns' indices (classes = 0..K−1; classes may be
    absent from ``y``, as in a small validation set). Any other labels follow scikit-learn's
    convention: the sorted distinct labels, one per column, so every class must be present.
    """
    y = np.asarray(y)
    if _is_integer_codes(y) and y.size and y.min() >= 0 and y.max() < n_columns:
        return np.arange(n_columns), y.astype(np.int64)
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) != n_columns:
        raise ValueError(
            f"y holds {len(classes)} distinct labels {classes[:10].tolist()} but the logits "
            f"have {n_columns} columns: pass class codes 0..{n_columns - 1} (column indices), "
            "or labels with exactly one class per column"
        )
    return classes, codes.astype(np.int64)


class TemperatureScaling(ClassifierMixin, BaseEstimator):
    """Post-hoc temperature scaling with Laplace smoothing (paper, App. E) on logits.

    ``fit(logits, y)`` fits the inverse temperature β = 1/T by minimum NLL of softmax(β z)
    (:func:`tabbench.metrics.fit_temperature`: exact, the paper's bisection result to ~1e-7);
    ``predict_proba`` returns q = N/(N+1)·softmax(β z) + 1/((N+1)K), N = the number of samples
    ``fit`` saw (``smoothing=False``: plain softmax(β z)). Why smoothing by default: the paper
    smooths every TS output, so that one confident mistake on new data cannot cost an
    infinite log loss.

    Inputs: logits (N, K), or for a binary problem scores (N,) = the logit margin z₁ − z₀
    (what a ``decision_function`` returns). The log-probabilities log p of any model are valid
    logits: softmax(β log p) = softmax(β z) whenever p = softmax(z). Labels: class codes
    0..K−1 (the logits' column indices; classes may be absent from ``y``), or any labels with
    one distinct label per column, in sorted order (scikit-learn's convention).
    ``y`` must hold at least two classes: a temperature fit on one class only sharpens
    without bound. β > 0 never changes the argmax, so ``predict`` is ``classes_[argmax z]``.
    Non-finite logits raise ``ValueError``; methods before ``fit`` raise ``NotFittedError``.

    Parameters
    ----------
    smoothing : bool, default True
        Laplace smoothing of the calibrated probabilities, as the paper does.

    Attributes
    ----------
    beta_ : float
        The inverse temperature; > 1 sharpens, < 1 softens.
    classes_ : ndarray of shape (n_classes,)
        0..K−1, or the sorted labels.
    n_classes_ : int
        K.
    n_features_in_ : int
        K (the logits are the features).
    n_fit_ : int
        N, the number of samples ``fit`` saw (the smoothing's sample count).

    Examples
    --------
    Over-confident validation logits: the temperature softens them (β < 1).

    >>> from tabbench.calibration import TemperatureScaling
    >>> from tabbench.metrics.examples import noisy_logits
    >>> logits, y = noisy_logits(500, 3, scale=4.0)
    >>> ts = TemperatureScaling().fit(logits, y)
    >>> round(ts.beta_, 3)
    0.275
    >>> ts.predict_proba(logits[:2]).round(3)
    array([[0.025, 0.013, 0.962],
           [0.256, 0.287, 0.457]])
    >>> bool((ts.predict(logits) == logits.argmax(axis=1)).all())
    True
    """

    def __init__(self, smoothing: bool = True) -> None:
        self.smoothing = smoothing

    def _logits(self, logits: Any, reset: bool, y: Any = "no_validation") -> Any:
        """Validated float logits (N, K ≥ 2), with ``y`` when given; (N,) binary margins
        become (N, 2) = (0, m)."""
        ndim = getattr(logits, "ndim", None)
        if ndim is None and not sp.issparse(logits):
            ndim = np.asarray(logits).ndim
        # (N,) binary margins: at fit, or later for a binary fit (else the 2-D check below
        # raises scikit-learn's "Reshape your data": a single row of K logits, say)
        if ndim == 1 and (reset or getattr(self, "n_features_in_", None) == 2):
            m = check_array(logits, ensure_2d=False, dtype=[np.float64, np.float32],
                            input_name="logits")
            logits = np.stack([np.zeros_like(m), m], axis=1)
        # at fit: K >= 2 columns; later the n_features_in_ check says what is wrong
        kwargs = {"ensure_min_features": 2} if reset else {}
        return validate_data(self, logits, y, reset=reset, dtype=[np.float64, np.float32],
                             **kwargs)

    def fit(self, logits: Any, y: Any) -> TemperatureScaling:
        """Fit β on validation logits (N, K) or binary margins (N,) and their labels.

        Parameters
        ----------
        logits : array-like of shape (n_samples, n_classes) or (n_samples,)
            Logits, or binary margins z₁ − z₀.
        y : array-like of shape (n_samples,)
            Class codes 0..K−1, or one distinct label per column in sorted order; at least
            two classes.

        Returns
        -------
        TemperatureScaling
            ``self``, fitted.
        """
        z, y = self._logits(logits, reset=True, y=y)
        check_classification_targets(y)
        classes, codes = label_codes(y, z.shape[1])
        present = np.unique(codes)
        if len(present) < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes, got 1 class "
                f"({classes[present[0]]!r})"
            )
        self.beta_ = fit_temperature(z, codes)
        self.classes_ = classes
        self.n_fit_ = z.shape[0]
        self.n_classes_ = z.shape[1]
        return self

    def predict_proba(self, logits: Any) -> np.ndarray:
        """Calibrated probabilities (N, K), float64, columns in the order of ``classes_``.

        Parameters
        ----------
        logits : array-like of shape (n_samples, n_classes) or (n_samples,)
            Logits, or binary margins, of the model the temperature was fit for.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            softmax(β z), Laplace-smoothed unless ``smoothing=False``.
        """
        check_is_fitted(self)
        z = self._logits(logits, reset=False)
        p = np.exp(log_softmax(self.beta_ * z))
        return laplace_smooth(p, self.n_fit_) if self.smoothing else p

    def predict(self, logits: Any) -> np.ndarray:
        """``classes_[argmax z]`` (ties: the first class), unchanged by temperature scaling.

        Parameters
        ----------
        logits : array-like of shape (n_samples, n_classes) or (n_samples,)
            Logits, or binary margins.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted classes.
        """
        check_is_fitted(self)
        return self.classes_[self._logits(logits, reset=False).argmax(axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Reason: its prediction is the argmax of its input, it learns no decision from
        # features; the accuracy thresholds scikit-learn's checks demand on raw feature data
        # (e.g. > 0.83 on blobs) do not apply to a calibrator of logits.
        tags.classifier_tags.poor_score = True
        return tags


__all__ = ["SKLEARN_CHECKS_NOT_APPLICABLE", "TemperatureScaling", "label_codes"]
