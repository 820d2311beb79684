"""Temperature-scaling implementations compared by ts_speed.py and ts_quality.py.

Each ``fit_*`` takes logits (N, K) and labels and returns the inverse temperature β (or, for
the logistic-regression baseline, a callable giving calibrated log-probabilities), so that the
benchmarks can time the fit alone and score every method with the same NLL code.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

import tabbench.metrics as M


def nll(z: np.ndarray, y: np.ndarray, beta: float) -> float:
    """Mean NLL of softmax(β z) in float64 (the loss every TS method minimises)."""
    lp = M.log_softmax(beta * np.asarray(z, dtype=np.float64))
    return float(-lp[np.arange(len(y)), y].mean())


def fit_ours(z, y):
    return M.fit_temperature(z, y)


def fit_paper_bisection(z, y):
    """The paper's algorithm (30 bisection steps on dNLL/dβ), plain numpy float64."""
    return M.fit_temperature_bisection(z, y)


def probmetrics_available() -> bool:
    try:
        import probmetrics  # noqa: F401
    except ImportError:
        return False
    return True


def fit_probmetrics(z, y):
    """probmetrics' TemperatureScalingCalibrator (bisection, torch), fit on the logits."""
    import torch
    from probmetrics.calibrators import TemperatureScalingCalibrator
    from probmetrics.distributions import CategoricalLogits

    cal = TemperatureScalingCalibrator()
    cal.fit_torch(CategoricalLogits(torch.as_tensor(z)), torch.as_tensor(y))
    return float(cal.invtemp_)


def fit_guo_lbfgs(z, y):
    """Temperature T fit by torch LBFGS on the cross-entropy as in Guo et al. (2017)'s public
    recipe: T initialised at 1.5, lr 0.01, at most 50 iterations; returns β = 1/T."""
    import torch

    logits = torch.as_tensor(np.asarray(z, dtype=np.float32))
    labels = torch.as_tensor(y)
    temperature = torch.nn.Parameter(torch.full((1,), 1.5))
    opt = torch.optim.LBFGS([temperature], lr=0.01, max_iter=50)
    loss_fn = torch.nn.CrossEntropyLoss()

    def closure():
        opt.zero_grad()
        loss = loss_fn(logits / temperature, labels)
        loss.backward()
        return loss

    opt.step(closure)
    return 1.0 / float(temperature.detach())


def fit_sklearn_logreg(z, y):
    """sklearn LogisticRegression on the logits, no intercept, no penalty.

    Binary: one weight on z₁ − z₀, i.e. exactly TS, returned as β. Multiclass: multinomial
    regression on the K logits (matrix scaling, K² parameters; *not* TS), returned as a
    function giving log-probabilities, so it is scored but not compared as a β.
    """
    from sklearn.linear_model import LogisticRegression

    z = np.asarray(z, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if z.shape[1] == 2:
            lr = LogisticRegression(penalty=None, fit_intercept=False, max_iter=1000)
            lr.fit((z[:, 1] - z[:, 0])[:, None], y)
            return float(lr.coef_[0, 0])
        lr = LogisticRegression(penalty=None, fit_intercept=False, max_iter=1000)
        lr.fit(z, y)
    classes = lr.classes_

    def log_proba(z_new):
        lp = np.full((len(z_new), z.shape[1]), -np.inf)
        lp[:, classes] = lr.predict_log_proba(np.asarray(z_new, dtype=np.float64))
        return lp

    return log_proba


class LogitsPassThrough(ClassifierMixin, BaseEstimator):
    """A "classifier" whose ``decision_function`` is its input logits (N, K): lets the
    scikit-learn meta-estimators calibrate given logits through their public API.

    ``half_margin``: binary logits are returned as x = (z₁ − z₀)/2, the (N,) form
    scikit-learn requires for two classes; it reads x as the logits (−x, x), whose margin is
    exactly z₁ − z₀, so its β is the β of the logits z."""

    def __init__(self, n_classes: int = 2, half_margin: bool = False) -> None:
        self.n_classes = n_classes
        self.half_margin = half_margin

    def fit(self, X, y):
        self.classes_ = np.arange(self.n_classes)
        return self

    def decision_function(self, X):
        z = np.asarray(X)
        if self.half_margin and z.shape[1] == 2:
            return (z[:, 1] - z[:, 0]) / 2
        return z

    def predict(self, X):
        return np.asarray(X).argmax(axis=1)


def fit_sklearn_temperature(z, y):
    """scikit-learn's own TS: CalibratedClassifierCV(FrozenEstimator(.), method="temperature")
    on the logits (N, K) (binary: see :class:`LogitsPassThrough`, the same problem as ours).
    Bounded Brent on log β in [−10, 10]."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    model = FrozenEstimator(LogitsPassThrough(z.shape[1], half_margin=True).fit(z, y))
    cal = CalibratedClassifierCV(model, method="temperature").fit(z, y)
    return float(cal.calibrated_classifiers_[0].calibrators[0].beta_)


def fit_ours_meta(z, y):
    """Ours through the same public path: TemperatureScaledClassifier(FrozenEstimator(.))."""
    from sklearn.frozen import FrozenEstimator

    from tabbench.calibration import TemperatureScaledClassifier

    model = FrozenEstimator(LogitsPassThrough(z.shape[1]).fit(z, y))
    return TemperatureScaledClassifier(model, smoothing=False).fit(z, y).beta_


def methods() -> dict[str, callable]:
    out = {
        "ours (Newton)": fit_ours,
        "paper bisection (numpy f64)": fit_paper_bisection,
    }
    if probmetrics_available():
        out["probmetrics TS"] = fit_probmetrics
    out["torch LBFGS (Guo)"] = fit_guo_lbfgs
    out["ours TSClassifier(Frozen)"] = fit_ours_meta
    out["sklearn CCV temperature"] = fit_sklearn_temperature
    out["sklearn LogReg"] = fit_sklearn_logreg  # K > 2: matrix scaling, not TS
    return out
