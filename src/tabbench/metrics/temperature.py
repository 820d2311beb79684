"""Temperature scaling (TS): fit the inverse temperature β of softmax(β·z) by minimum NLL.

Paper, App. E: b = log β is searched in [−16, 16] by bisection on the sign of dNLL/dβ (30 steps).
NLL(β) is convex in β, so any method reaching the same minimiser is equivalent; we use a
safeguarded Newton method on b, vectorised over many epochs (and over cross-validation folds)
at once, because the recorder fits a temperature after *every* epoch of every config:

* Newton on b converges quadratically, ~3–6 evaluations instead of 30, and fewer with a warm
  start from the previous epoch;
* every step is kept inside a bracket [lo, hi] maintained from the derivative's sign, and falls
  back to bisection when the Newton step leaves it or the curvature is not positive, so the
  method cannot do worse than the paper's bisection;
* an epoch stops when the Newton step is below ``tol`` in b (β relative error ~1e-7), or the
  optimum is at a bound of [−16, 16] (e.g. a perfectly separable set wants β → ∞).

Speed: logits are centred (max logit 0 per row) once and stored float32 in a class-major
(E, K, N) layout, so each evaluation is an exp plus a few reductions over K of contiguous rows;
the max entry is replaced by a large negative sentinel so that R = Σ_{k≠argmax} exp(β z_k) is
accumulated without the leading 1 and log(1 + R) = log1p(R) keeps full relative precision for
confident predictions. Sums over samples are accumulated in float64.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tabbench.metrics._checks import as_logits, check_batched, check_single
from tabbench.metrics.losses import laplace_smooth, log_softmax

#: Search interval for b = log β (paper, App. E).
LOG_BETA_BOUND = 16.0
#: Newton steps below this (in b = log β) end the search: β is then accurate to ~1e-7 relative.
LOG_BETA_TOL = 1e-7
MAX_NEWTON_ITER = 100

# Replaces the (centred, = 0) max logit of every row. β·SENTINEL underflows exp to exactly 0
# for every β ≥ e^−16, and SENTINEL² is still a finite float32, so 0·SENTINEL·SENTINEL = 0.
_SENTINEL = np.float32(-3e18)


# ---------------------------------------------------------------------------------------------
# Prepared logits and per-sample statistics at a given β
# ---------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """E epochs of logits for one label vector, in the form the evaluations need.

    Binary (K = 2) problems are reduced to the signed margin m = ±(z₁ − z₀) (sign + for y = 1):
    softmax(β z)_y = σ(β m), one exp per sample instead of two.
    """

    n_classes: int
    y: np.ndarray  # (N,) int64
    finite: np.ndarray  # (E,) bool: epochs whose logits were all finite
    top_is_y: np.ndarray  # (E, N) bool: argmax z == y (ties → first class)
    margin: np.ndarray | None = None  # binary: (E, N) float32
    diff: np.ndarray | None = None  # binary: (E, N) z₁ − z₀ in the input precision (ranking)
    zc: np.ndarray | None = None  # multiclass: (E, K, N) float32, z − max z, max → _SENTINEL
    zy: np.ndarray | None = None  # multiclass: (E, N) float32, z_y − max z (≤ 0)
    argmax: np.ndarray | None = None  # multiclass: (E, N) int64

    @property
    def binary(self) -> bool:
        return self.margin is not None

    @property
    def n_epochs(self) -> int:
        return self.top_is_y.shape[0]

    @property
    def n_samples(self) -> int:
        return self.top_is_y.shape[1]


def prepare(logits_ENK: np.ndarray, y: np.ndarray, force_multiclass: bool = False) -> Prepared:
    """Centre, transpose and cast E epochs of (validated) logits; non-finite epochs become 0."""
    finite = np.isfinite(logits_ENK).all(axis=(1, 2))
    if not finite.all():
        logits_ENK = np.where(finite[:, None, None], logits_ENK, 0)
    n_epochs, n_samples, n_classes = logits_ENK.shape
    if n_classes == 2 and not force_multiclass:
        diff = logits_ENK[:, :, 1] - logits_ENK[:, :, 0]
        sign = np.where(y == 1, 1, -1).astype(diff.dtype)
        margin = (diff * sign).astype(np.float32)
        top_is_y = (diff > 0) == (y == 1)[None, :]
        return Prepared(n_classes, y, finite, top_is_y, margin=margin, diff=diff)

    zc = np.ascontiguousarray(np.swapaxes(logits_ENK, 1, 2))  # (E, K, N), input precision
    zc -= zc.max(axis=1, keepdims=True)
    if zc.dtype != np.float32:
        zc = zc.astype(np.float32)
    argmax = np.zeros((n_epochs, n_samples), dtype=np.int64)
    for k in range(n_classes - 1, -1, -1):  # the first maximum wins, as in np.argmax
        argmax[zc[:, k, :] == 0] = k
    zy = np.take_along_axis(zc, np.broadcast_to(y, (n_epochs, 1, n_samples)), axis=1)[:, 0]
    np.put_along_axis(zc, argmax[:, None, :], _SENTINEL, axis=1)
    return Prepared(
        n_classes, y, finite, argmax == y[None, :], zc=zc, zy=zy, argmax=argmax
    )


@dataclass
class SampleStats:
    """Per-sample quantities at one β per epoch; all (E, N) float32.

    ``g``, ``h``: first and second derivative of the sample's NLL w.r.t. β;
    ``nll``: −log p_y; ``other``: 1 − p_y; ``other_sq``: Σ_{k≠y} p_k²; ``pmax``: max_k p_k;
    ``log_z``: log Σ_k exp(β(z_k − max z)) (multiclass only, for log-probabilities).
    """

    g: np.ndarray
    h: np.ndarray
    nll: np.ndarray
    other: np.ndarray
    other_sq: np.ndarray
    pmax: np.ndarray
    log_z: np.ndarray | None = None


class Workspace:
    """Reusable float32 buffers for :func:`sample_stats`.

    Why: every evaluation needs about ten (E, N) temporaries (and one (E, K, N) for
    multiclass). Freshly allocated arrays of a few MB come from mmap and are page-faulted on
    first touch, which made the evaluations several times slower than their arithmetic.
    Stats returned with a workspace are views into it, valid until its next use.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
        buf = self._buffers.get(name)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            buf = self._buffers[name] = np.empty(shape, dtype=dtype)
        return buf


def sample_stats(prep: Prepared, beta: np.ndarray, ws: Workspace | None = None) -> SampleStats:
    """Evaluate softmax(β z) for every epoch at its own β (E,)."""
    ws = Workspace() if ws is None else ws
    beta32 = np.asarray(beta, dtype=np.float32)[:, None]
    shape = (prep.n_epochs, prep.n_samples)
    buf = {n: ws.get(n, shape) for n in ("t", "e", "a", "b", "g", "h", "nll", "oth", "osq")}
    t, e, a, b = buf["t"], buf["e"], buf["a"], buf["b"]
    g, h, nll, other, other_sq = buf["g"], buf["h"], buf["nll"], buf["oth"], buf["osq"]
    if prep.binary:
        m = prep.margin
        np.multiply(beta32, m, out=t)  # t = β·m, p_y = σ(t)
        np.abs(t, out=e)
        np.negative(e, out=e)
        np.exp(e, out=e)  # e = exp(−|t|) ∈ (0, 1]
        np.add(e, 1, out=a)
        np.reciprocal(a, out=a)  # a = 1/(1+e) = σ(|t|) = max_k p_k
        np.multiply(e, a, out=other)  # σ(−|t|)
        mask = ws.get("mask", shape, np.bool_)
        np.less(t, 0, out=mask)
        np.copyto(other, a, where=mask)  # other = σ(−t) = 1 − p_y
        np.log1p(e, out=nll)
        np.negative(t, out=b)
        np.maximum(b, 0, out=b)
        nll += b  # softplus(−t)
        np.multiply(m, other, out=g)
        np.negative(g, out=g)  # dNLL/dβ = −m·σ(−t)
        np.multiply(e, a, out=b)
        b *= a  # σ(t)σ(−t)
        np.multiply(m, m, out=h)
        h *= b
        np.multiply(other, other, out=other_sq)
        return SampleStats(g=g, h=h, nll=nll, other=other, other_sq=other_sq, pmax=a)

    zc = prep.zc
    w = ws.get("w", zc.shape)
    r, q, s1, s2 = t, e, a, b
    np.multiply(beta32[:, :, None], zc, out=w)
    np.exp(w, out=w)
    np.sum(w, axis=1, out=r)  # R = Σ_{k≠argmax} exp(β zc_k)
    np.einsum("ekn,ekn->en", w, w, out=q)
    w *= zc
    np.sum(w, axis=1, out=s1)
    w *= zc
    np.sum(w, axis=1, out=s2)
    z0 = ws.get("z0", shape)
    np.add(r, 1, out=z0)
    pmax = ws.get("pmax", shape)
    np.reciprocal(z0, out=pmax)
    s1 *= pmax  # E_p[zc]
    s2 *= pmax  # E_p[zc²]
    np.subtract(s1, prep.zy, out=g)  # dNLL/dβ = E_p[z] − z_y
    np.multiply(s1, s1, out=h)
    np.subtract(s2, h, out=h)
    np.maximum(h, 0, out=h)  # Var_p[z]
    log_z = ws.get("log_z", shape)
    np.log1p(r, out=log_z)
    np.multiply(beta32, prep.zy, out=s2)  # β·z_y (s2 free again)
    np.subtract(log_z, s2, out=nll)
    wy = s2
    np.exp(wy, out=wy)  # exp(β z_y)
    top = prep.top_is_y
    # 1 − p_y and Σ_{k≠y} p_k², exact also for p_y → 1 (see module docstring)
    np.subtract(z0, wy, out=other)
    np.copyto(other, r, where=top)
    other *= pmax
    np.multiply(wy, wy, out=wy)
    np.subtract(q, wy, out=other_sq)
    other_sq += 1
    np.copyto(other_sq, q, where=top)
    other_sq *= pmax
    other_sq *= pmax
    return SampleStats(
        g=g, h=h, nll=nll, other=other, other_sq=other_sq, pmax=pmax, log_z=log_z
    )


def smoothed_nll(stats: SampleStats, n_classes: int, n_fit: int | None) -> np.ndarray:
    """Per-sample −log q_y with q = n/(n+1)·p + 1/((n+1)K), in float64; ``n_fit=None``: raw.

    1 − q_y = a(1 − p_y) + c(K − 1) is used when p_y > 1/2 so that confident correct
    predictions keep full relative precision.
    """
    if n_fit is None:
        return stats.nll.astype(np.float64)
    a, c = _smoothing_coefs(n_fit, n_classes)
    other = stats.other.astype(np.float64)
    with np.errstate(divide="ignore"):
        near_one = -np.log1p(-(a * other + c * (n_classes - 1)))
        generic = -np.log(a * np.exp(-stats.nll.astype(np.float64)) + c)
    return np.where(other < 0.5, near_one, generic)


def smoothed_brier(stats: SampleStats, n_classes: int, n_fit: int | None) -> np.ndarray:
    """Per-sample Σ_k (q_k − 1[y=k])² = (1 − q_y)² + Σ_{k≠y} q_k², float64, no cancellation."""
    a, c = (1.0, 0.0) if n_fit is None else _smoothing_coefs(n_fit, n_classes)
    other = stats.other.astype(np.float64)
    one_minus_qy = a * other + c * (n_classes - 1)
    other_sq = stats.other_sq.astype(np.float64)
    rest_sq = a * a * other_sq + 2 * a * c * other + (n_classes - 1) * c * c
    return one_minus_qy * one_minus_qy + rest_sq


def smoothed_pmax(stats: SampleStats, n_classes: int, n_fit: int | None) -> np.ndarray:
    a, c = (1.0, 0.0) if n_fit is None else _smoothing_coefs(n_fit, n_classes)
    return a * stats.pmax.astype(np.float64) + c


def _smoothing_coefs(n_fit: int, n_classes: int) -> tuple[float, float]:
    return n_fit / (n_fit + 1.0), 1.0 / ((n_fit + 1.0) * n_classes)


# ---------------------------------------------------------------------------------------------
# Safeguarded Newton on b = log β, vectorised over epochs
# ---------------------------------------------------------------------------------------------

#: evaluate(beta (E,)) -> (dNLL/dβ (E,), d²NLL/dβ² (E,), per-sample stats) at those β.
Evaluator = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, SampleStats]]


def weighted_derivatives(
    prep: Prepared, mask: np.ndarray | None = None, ws: Workspace | None = None
) -> Evaluator:
    """Evaluator of the mean NLL over the samples in ``mask`` (None: all samples)."""
    ws = Workspace() if ws is None else ws
    n = prep.n_samples if mask is None else int(mask.sum())
    where = True if mask is None else mask[None, :]

    def evaluate(beta: np.ndarray) -> tuple[np.ndarray, np.ndarray, SampleStats]:
        st = sample_stats(prep, beta, ws)
        g = np.sum(st.g, axis=1, dtype=np.float64, where=where) / n
        h = np.sum(st.h, axis=1, dtype=np.float64, where=where) / n
        return g, h, st

    return evaluate


@dataclass
class _Bracket:
    """Per-epoch state of the safeguarded search (all arrays (E,))."""

    lo: np.ndarray
    hi: np.ndarray
    lo_seen: np.ndarray  # derivative sign known at lo (evaluated), else lo is the bound −16
    hi_seen: np.ndarray
    step: np.ndarray  # last two step lengths, for the "converging fast enough" test
    step_old: np.ndarray

    @classmethod
    def new(cls, n: int) -> _Bracket:
        full = np.full(n, LOG_BETA_BOUND)
        no = np.zeros(n, dtype=bool)
        return cls(-full, full.copy(), no, no.copy(), 4 * full, 4 * full)


def newton_log_beta(
    evaluate: Evaluator,
    b0: np.ndarray,
    first_derivs: tuple[np.ndarray, np.ndarray] | None = None,
    tol: float = LOG_BETA_TOL,
    max_iter: int = MAX_NEWTON_ITER,
) -> tuple[np.ndarray, SampleStats]:
    """Minimise NLL(e^b) over b ∈ [−16, 16] for every epoch; return b and the stats at b.

    ``first_derivs``: derivatives (in β) already known at ``b0`` (e.g. a CV fold starting from
    the full-data optimum): the first Newton step is then taken without an evaluation. The
    returned b is always a point that was evaluated, so the returned stats belong to it.
    """
    b = np.clip(np.asarray(b0, dtype=np.float64), -LOG_BETA_BOUND, LOG_BETA_BOUND)
    br = _Bracket.new(b.shape[0])
    done = np.zeros(b.shape, dtype=bool)
    stats = None
    if first_derivs is not None:
        b, _ = _newton_update(b, *first_derivs, br, done, tol)
    for it in range(max_iter):
        g, h, stats = evaluate(np.exp(b))
        new_b, now_done = _newton_update(b, g, h, br, done, tol)
        done |= now_done
        if done.all() or it == max_iter - 1:
            break  # b stays the last evaluated point, so ``stats`` belong to it
        b = np.where(done, b, new_b)
    return b, stats


def _newton_update(b, g, h, br: _Bracket, done, tol):
    """One safeguarded step for every epoch not ``done`` (vectorised; updates ``br``).

    g, h: dNLL/dβ and d²NLL/dβ² at β = e^b. NLL is convex in β, so left of the optimum
    (g < 0) the Newton step is taken in β; right of it (g > 0) in b, where the step is at most
    1 (NLL grows like e^b for large b and a β-step could leave β > 0). Like Numerical
    Recipes' rtsafe, a step that leaves the bracket or does not halve the step before last is
    replaced by bisection of the bracket. g = 0 exactly (flat NLL, or underflow on a perfectly
    separable set) moves right like the paper's bisection, which then ends at b = 16.
    """
    active = ~done
    beta = np.exp(b)
    gb = beta * g  # dNLL/db
    hb = beta * beta * h + gb  # d²NLL/db²
    right, left = active & (gb > 0), active & (gb <= 0)
    br.hi = np.where(right, b, br.hi)
    br.hi_seen |= right
    br.lo = np.where(left, b, br.lo)
    br.lo_seen |= left
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        step_b = -gb / hb
        beta_new = beta - g / h
        step_beta = np.log(np.where(beta_new > 0, beta_new, 1.0)) - b
    ok_b = (hb > 0) & np.isfinite(step_b)
    ok_beta = (h > 0) & (beta_new > 0) & np.isfinite(step_beta)
    step = np.where(left & ok_beta, step_beta, np.where(ok_b, step_b, np.nan))
    flat = (g == 0) & (h == 0)
    step = np.where(flat, np.inf, step)  # flat: jump to the unverified upper bound if any
    cand = np.clip(b + np.nan_to_num(step, nan=0.0), -LOG_BETA_BOUND, LOG_BETA_BOUND)
    inside = (cand > br.lo) & (cand < br.hi)
    inside |= (cand == br.hi) & ~br.hi_seen & (cand != b)
    inside |= (cand == br.lo) & ~br.lo_seen & (cand != b)
    fast = (np.abs(2 * (cand - b)) <= br.step_old) | flat
    use_newton = np.isfinite(step) | flat
    cand = np.where(use_newton & inside & fast, cand, 0.5 * (br.lo + br.hi))
    br.step_old = np.where(active, br.step, br.step_old)
    br.step = np.where(active, np.abs(cand - b), br.step)
    at_bound = ((b >= LOG_BETA_BOUND) & (gb <= 0)) | ((b <= -LOG_BETA_BOUND) & (gb > 0))
    small = np.isfinite(step) & (np.abs(step) < tol)
    converged = small | at_bound | (br.hi - br.lo < tol) | ~np.isfinite(gb)
    return cand, active & converged


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def fit_log_beta_prepared(
    prep: Prepared, b0: np.ndarray | float | None = None, ws: Workspace | None = None
) -> tuple[np.ndarray, SampleStats]:
    """b = log β (E,) minimising the mean NLL of every epoch, plus the stats at that b."""
    start = np.zeros(prep.n_epochs) if b0 is None else np.broadcast_to(b0, (prep.n_epochs,))
    return newton_log_beta(weighted_derivatives(prep, None, ws), start)


def _initial_log_beta(beta0, n_epochs: int) -> np.ndarray | None:
    if beta0 is None:
        return None
    beta0 = np.broadcast_to(np.asarray(beta0, dtype=np.float64), (n_epochs,))
    b0 = np.log(np.where(np.isfinite(beta0) & (beta0 > 0), beta0, 1.0))
    return np.clip(b0, -LOG_BETA_BOUND, LOG_BETA_BOUND)


def fit_temperature_batched(
    logits_ENK: np.ndarray, y: np.ndarray, beta0: np.ndarray | float | None = None
) -> np.ndarray:
    """Inverse temperatures β (E,) of E epochs of logits (E, N, K), fit at once.

    ``beta0`` (scalar or (E,)): optional warm start, e.g. the previous chunk's last β.
    Epochs with non-finite logits get β = NaN (never an exception).
    """
    z, labels = check_batched(logits_ENK, y)
    out = np.empty(z.shape[0])
    b0_all = _initial_log_beta(beta0, z.shape[0])
    for sl in epoch_blocks(z.shape):
        prep = prepare(z[sl], labels)
        b, _ = fit_log_beta_prepared(prep, None if b0_all is None else b0_all[sl])
        out[sl] = np.where(prep.finite, np.exp(b), np.nan)
    return out


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """Inverse temperature β of one set of logits (N, K). Raises ValueError on NaN/inf."""
    z, labels = check_single(logits, y)
    b, _ = fit_log_beta_prepared(prepare(z[None], labels))
    return float(np.exp(b[0]))


def fit_temperature_bisection(logits: np.ndarray, y: np.ndarray, n_steps: int = 30) -> float:
    """The paper's algorithm (App. E), in plain float64: bisection on the sign of dNLL/dβ over
    b ∈ [−16, 16]. Slow; kept as the reference the fast solver is tested against."""
    z, labels = check_single(logits, y)
    zy = z[np.arange(len(labels)), labels]
    lo, hi = -LOG_BETA_BOUND, LOG_BETA_BOUND
    for _ in range(n_steps):
        mid = 0.5 * (lo + hi)
        p = np.exp(log_softmax(np.exp(mid) * z))
        grad = np.mean((p * z).sum(axis=1) - zy)  # dNLL/dβ
        if grad > 0:
            hi = mid
        else:
            lo = mid
    return float(np.exp(0.5 * (lo + hi)))


def epoch_blocks(shape: tuple[int, int, int], target_elements: int = 1_000_000) -> list[slice]:
    """Split E epochs into blocks of about ``target_elements`` logits, so that the working
    arrays of the Newton iterations stay in cache and memory stays bounded for large chunks."""
    n_epochs, n_samples, n_classes = shape
    per_epoch = n_samples * (1 if n_classes == 2 else n_classes)
    size = max(1, target_elements // max(per_epoch, 1))
    return [slice(s, min(s + size, n_epochs)) for s in range(0, n_epochs, size)]


class TemperatureScaling:
    """sklearn-style post-hoc temperature scaling with Laplace smoothing (paper, App. E).

    ``fit(logits, y)`` sets ``beta_`` (inverse temperature) and ``n_fit_``;
    ``predict_proba(logits)`` returns n/(n+1)·softmax(β z) + 1/((n+1)K) (``smoothing=False``:
    plain softmax(β z)). Raises ValueError on non-finite logits.
    """

    def __init__(self, smoothing: bool = True):
        self.smoothing = smoothing

    def fit(self, logits: np.ndarray, y: np.ndarray) -> TemperatureScaling:
        z, _ = check_single(logits, y)
        self.beta_ = fit_temperature(z, y)
        self.n_fit_ = z.shape[0]
        self.n_classes_ = z.shape[1]
        return self

    def _check_fitted(self, logits: np.ndarray) -> np.ndarray:
        if not hasattr(self, "beta_"):
            raise RuntimeError("TemperatureScaling is not fitted; call fit(logits, y) first")
        z = as_logits(logits, 2)
        if z.shape[1] != self.n_classes_:
            raise ValueError(f"fitted on K = {self.n_classes_} classes, got K = {z.shape[1]}")
        if not np.all(np.isfinite(z)):
            raise ValueError("logits contain NaN or inf")
        return z

    def predict_proba(self, logits: np.ndarray) -> np.ndarray:
        z = self._check_fitted(logits)
        p = np.exp(log_softmax(self.beta_ * z))
        return laplace_smooth(p, self.n_fit_) if self.smoothing else p

    def predict(self, logits: np.ndarray) -> np.ndarray:
        return self._check_fitted(logits).argmax(axis=1)


__all__ = [
    "TemperatureScaling",
    "fit_temperature",
    "fit_temperature_batched",
    "fit_temperature_bisection",
]
