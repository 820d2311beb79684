"""Post-hoc calibrators of the chosen models: fit on validation logits, applied to test logits.

The paper calibrates the selected model with temperature scaling (TS). Would another standard
calibrator do better on the same model? Compared here, each fit on the validation set of the
split and scored on its test set with :mod:`tabbench.metrics`' definitions (log loss, Brier
score summed over classes, top-label ECE with 15 bins, top-label smooth ECE through relplot):

* ``none``: softmax of the logits, nothing fit (the records' raw ``test_*`` columns);
* ``ts``: :class:`tabbench.metrics.TemperatureScaling` (the paper; the records' ``test_*_ts``);
* ``isotonic``: isotonic regression of the class indicator on the predicted probability, as
  scikit-learn's ``CalibratedClassifierCV(method="isotonic")`` does it (binary: class 1 only,
  p₀ = 1 − p₁; multiclass: one-vs-rest, renormalised, uniform where every class gets 0;
  predictions outside the fitted range are clipped);
* ``platt_vector``: Platt scaling σ(a·(z₁ − z₀) + b) for binary problems and vector scaling
  softmax(w ⊙ z + b) (a scale and a bias per class) for multiclass ones, fit by minimum log
  loss (Newton's method with a backtracking line search; the objective carries a ridge of
  :data:`RIDGE` towards the identity map so that the optimum stays finite when the validation
  set is separable and the Hessian stays invertible although one bias is redundant).

Every fitted calibrator's output gets the Laplace smoothing n/(n+1)·p + 1/((n+1)K) with n the
number of validation samples, as TS does in the paper (App. E): a calibrator fit on n points
must not output an exact 0 (isotonic regression does), or one unseen mistake costs an infinite
log loss. The comparison is therefore like for like with the paper's TS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from tabbench.metrics import TemperatureScaling, laplace_smooth, log_softmax, logloss
from tabbench.metrics.losses import brier_proba, ece_proba, logloss_proba, smece_proba

#: calibrator names in the order tables and figures show them; TS is the reference
CALIBRATORS: tuple[str, ...] = ("none", "ts", "isotonic", "platt_vector")
CALIBRATOR_LABELS: dict[str, str] = {
    "none": "None (raw softmax)",
    "ts": "TS",
    "isotonic": "Isotonic (one-vs-rest)",
    "platt_vector": "Platt (binary) / vector scaling",
}
REFERENCE = "ts"
#: test scores of every calibrator (tabbench.metrics definitions)
SCORES: tuple[str, ...] = ("logloss", "brier", "ece", "smece")

#: ridge towards the identity map (w = 1, b = 0) in Platt and vector scaling (per sample)
RIDGE = 1e-6
_MAX_NEWTON = 100
_GRAD_TOL = 1e-10


class Calibrator(Protocol):
    def fit(self, logits: np.ndarray, y: np.ndarray) -> Calibrator: ...

    def predict_proba(self, logits: np.ndarray) -> np.ndarray: ...


def _softmax64(logits: np.ndarray) -> np.ndarray:
    return np.exp(log_softmax(np.asarray(logits, dtype=np.float64)))


class Uncalibrated:
    """softmax(z); nothing is fit and nothing smoothed (the records' raw test metrics)."""

    def fit(self, logits: np.ndarray, y: np.ndarray) -> Uncalibrated:
        return self

    def predict_proba(self, logits: np.ndarray) -> np.ndarray:
        return _softmax64(logits)


class IsotonicCalibrator:
    """One-vs-rest isotonic regression on the softmax probabilities (module docstring)."""

    def __init__(self, smoothing: bool = True) -> None:
        self.smoothing = smoothing

    def fit(self, logits: np.ndarray, y: np.ndarray) -> IsotonicCalibrator:
        # lazy: scikit-learn, ~0.8 s that the workflow's parse would pay (it plans diagnostics)
        from sklearn.isotonic import IsotonicRegression

        p = _softmax64(logits)
        y = np.asarray(y)
        self.n_fit_, self.n_classes_ = p.shape
        classes = [1] if self.n_classes_ == 2 else range(self.n_classes_)
        self.models_ = [IsotonicRegression(out_of_bounds="clip").fit(p[:, c], y == c)
                        for c in classes]
        return self

    def predict_proba(self, logits: np.ndarray) -> np.ndarray:
        p = _softmax64(logits)
        if self.n_classes_ == 2:
            p1 = self.models_[0].predict(p[:, 1])
            out = np.stack([1.0 - p1, p1], axis=1)
        else:
            cal = np.stack([m.predict(p[:, c]) for c, m in enumerate(self.models_)], axis=1)
            denom = cal.sum(axis=1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                out = np.where(denom > 0, cal / denom, 1.0 / self.n_classes_)
        return laplace_smooth(out, self.n_fit_) if self.smoothing else out


def newton_minimize(fgh: Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]],
                    theta0: np.ndarray, max_iter: int = _MAX_NEWTON,
                    grad_tol: float = _GRAD_TOL) -> np.ndarray:
    """Minimise a smooth strictly convex function given ``fgh(θ) -> (f, ∇f, ∇²f)``: Newton
    steps halved until the function decreases (backtracking), stopping when the gradient's
    max-norm is below ``grad_tol`` or no step decreases ``f`` any more."""
    theta = np.asarray(theta0, dtype=np.float64).copy()
    f, g, h = fgh(theta)
    for _ in range(max_iter):
        if np.max(np.abs(g)) < grad_tol:
            break
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            step = g / max(float(np.max(np.abs(np.diag(h)))), 1e-12)
        t = 1.0
        while t > 1e-12:
            cand = theta - t * step
            f_new, g_new, h_new = fgh(cand)
            if np.isfinite(f_new) and f_new <= f:
                break
            t *= 0.5
        else:
            break
        improved = f - f_new
        theta, f, g, h = cand, f_new, g_new, h_new
        if improved <= 1e-16 * max(1.0, abs(f)) and t < 1:
            break
    return theta


def platt_objective(theta: np.ndarray, margin: np.ndarray, y: np.ndarray, ridge: float = RIDGE
                    ) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean log loss of σ(a·m + b) for labels y ∈ {0, 1} + ridge/2·((a − 1)² + b²), its
    gradient and Hessian in θ = (a, b)."""
    a, b = theta
    f = a * margin + b
    s = np.where(y == 1, 1.0, -1.0)
    # −log σ(s f) = softplus(−s f), computed without overflow
    loss = np.logaddexp(0.0, -s * f).mean() + 0.5 * ridge * ((a - 1.0) ** 2 + b**2)
    p = 0.5 * (1.0 + np.tanh(0.5 * f))  # σ(f), stable
    r = p - (y == 1)
    grad = np.array([np.mean(r * margin) + ridge * (a - 1.0), np.mean(r) + ridge * b])
    w = p * (1.0 - p)
    hess = np.array([[np.mean(w * margin**2), np.mean(w * margin)],
                     [np.mean(w * margin), np.mean(w)]]) + ridge * np.eye(2)
    return float(loss), grad, hess


def vector_objective(theta: np.ndarray, z: np.ndarray, y: np.ndarray, ridge: float = RIDGE
                     ) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean log loss of softmax(w ⊙ z + b) + ridge/2·(‖w − 1‖² + ‖b‖²), its gradient and
    Hessian in θ = (w, b) (2K values)."""
    n, k = z.shape
    w, b = theta[:k], theta[k:]
    u = z * w + b
    logp = log_softmax(u)
    p = np.exp(logp)
    rows = np.arange(n)
    loss = -logp[rows, y].mean() + 0.5 * ridge * (np.sum((w - 1.0) ** 2) + np.sum(b**2))
    r = p.copy()
    r[rows, y] -= 1.0
    grad = np.concatenate([(r * z).mean(axis=0) + ridge * (w - 1.0),
                           r.mean(axis=0) + ridge * b])
    # ∂²/∂u_j∂u_k = p_j δ_jk − p_j p_k; chain rule with ∂u_k/∂w_k = z_k, ∂u_k/∂b_k = 1
    pz = p * z
    h_ww = np.diag((pz * z).mean(axis=0)) - pz.T @ pz / n
    h_wb = np.diag(pz.mean(axis=0)) - pz.T @ p / n
    h_bb = np.diag(p.mean(axis=0)) - p.T @ p / n
    hess = np.block([[h_ww, h_wb], [h_wb.T, h_bb]]) + ridge * np.eye(2 * k)
    return float(loss), grad, hess


class PlattCalibrator:
    """Platt scaling of a binary problem's margin m = z₁ − z₀: p₁ = σ(a·m + b)."""

    def __init__(self, smoothing: bool = True, ridge: float = RIDGE) -> None:
        self.smoothing, self.ridge = smoothing, ridge

    def fit(self, logits: np.ndarray, y: np.ndarray) -> PlattCalibrator:
        z = np.asarray(logits, dtype=np.float64)
        if z.shape[1] != 2:
            raise ValueError(f"Platt scaling is for binary problems, got K = {z.shape[1]}")
        m, y = z[:, 1] - z[:, 0], np.asarray(y)
        self.a_, self.b_ = newton_minimize(lambda t: platt_objective(t, m, y, self.ridge),
                                           np.array([1.0, 0.0]))
        self.n_fit_ = len(y)
        return self

    def predict_proba(self, logits: np.ndarray) -> np.ndarray:
        z = np.asarray(logits, dtype=np.float64)
        f = self.a_ * (z[:, 1] - z[:, 0]) + self.b_
        p1 = 0.5 * (1.0 + np.tanh(0.5 * f))
        p = np.stack([1.0 - p1, p1], axis=1)
        return laplace_smooth(p, self.n_fit_) if self.smoothing else p


class VectorScaling:
    """Vector scaling softmax(w ⊙ z + b): a scale and a bias per class (Guo et al. 2017)."""

    def __init__(self, smoothing: bool = True, ridge: float = RIDGE) -> None:
        self.smoothing, self.ridge = smoothing, ridge

    def fit(self, logits: np.ndarray, y: np.ndarray) -> VectorScaling:
        # the logits as the model gave them: w ⊙ z is not invariant to shifting a row
        z, y = np.asarray(logits, dtype=np.float64), np.asarray(y)
        k = z.shape[1]
        theta = newton_minimize(lambda t: vector_objective(t, z, y, self.ridge),
                                np.concatenate([np.ones(k), np.zeros(k)]))
        self.w_, self.b_ = theta[:k], theta[k:]
        self.n_fit_ = len(y)
        return self

    def predict_proba(self, logits: np.ndarray) -> np.ndarray:
        z = np.asarray(logits, dtype=np.float64)
        p = np.exp(log_softmax(z * self.w_ + self.b_))
        return laplace_smooth(p, self.n_fit_) if self.smoothing else p


def make_calibrator(name: str, n_classes: int) -> Calibrator:
    """A fresh calibrator ``name`` (:data:`CALIBRATORS`) for a K-class problem."""
    if name == "none":
        return Uncalibrated()
    if name == "ts":
        return TemperatureScaling(smoothing=True)
    if name == "isotonic":
        return IsotonicCalibrator()
    if name == "platt_vector":
        return PlattCalibrator() if n_classes == 2 else VectorScaling()
    raise ValueError(f"unknown calibrator {name!r}; known: {CALIBRATORS}")


def scores(p: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Test log loss, Brier score, ECE and smooth ECE of probabilities (tabbench.metrics'
    definitions)."""
    return {"logloss": logloss_proba(p, y), "brier": brier_proba(p, y), "ece": ece_proba(p, y),
            "smece": smece_proba(p, y)}


def calibrated_test_proba(val_logits: np.ndarray, y_val: np.ndarray, test_logits: np.ndarray,
                          names: tuple[str, ...] = CALIBRATORS) -> dict[str, np.ndarray]:
    """calibrator -> its test probabilities, each calibrator fit on (val_logits, y_val)."""
    k = val_logits.shape[1]
    return {name: make_calibrator(name, k).fit(val_logits, y_val).predict_proba(test_logits)
            for name in names}


def score_calibrated(proba: dict[str, np.ndarray], test_logits: np.ndarray, y_test: np.ndarray
                     ) -> dict[str, dict[str, float]]:
    """calibrator -> test scores of its probabilities. ``none``'s log loss is computed from the
    logits (log-softmax), as the records do, so that a confident mistake whose probability
    underflows to 0 still has its finite loss."""
    out = {}
    for name, p in proba.items():
        s = scores(p, y_test)
        if name == "none":
            s["logloss"] = logloss(test_logits, y_test)
        out[name] = s
    return out


def calibrate_and_score(val_logits: np.ndarray, y_val: np.ndarray, test_logits: np.ndarray,
                        y_test: np.ndarray, names: tuple[str, ...] = CALIBRATORS
                        ) -> dict[str, dict[str, float]]:
    """calibrator -> its test scores, each calibrator fit on (val_logits, y_val)."""
    proba = calibrated_test_proba(val_logits, y_val, test_logits, names)
    return score_calibrated(proba, test_logits, y_test)
