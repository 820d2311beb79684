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
  optimum is at a bound of [−16, 16] (e.g. a perfectly separable set wants β → ∞), or after a
  Newton step whose predicted error (quadratic convergence) is below ``tol`` — then without
  evaluating its end point (see :func:`solve_log_beta`);
* the iterations evaluate only the derivative sums (~10 passes over float32 memory instead of
  the ~20 of the full per-sample statistics), only for the problems not yet finished.

Speed: logits are centred (max logit 0 per row) once and stored float32 in a class-major
(E, K, N) layout, so each evaluation is an exp plus a few reductions over K of contiguous rows;
the max entry is replaced by a large negative sentinel so that R = Σ_{k≠argmax} exp(β z_k) is
accumulated without the leading 1 and log(1 + R) = log1p(R) keeps full relative precision for
confident predictions. Sums over samples are accumulated in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tabbench.metrics._checks import check_batched, check_single
from tabbench.metrics.losses import log_softmax

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

    def columns(self, cols: slice) -> Prepared:
        """The same epochs restricted to the samples ``cols`` (views, no copies): a held-out
        CV fold is scored on its own columns only."""
        return Prepared(
            self.n_classes, self.y[cols], self.finite, self.top_is_y[:, cols],
            margin=None if self.margin is None else self.margin[:, cols],
            diff=None if self.diff is None else self.diff[:, cols],
            zc=None if self.zc is None else self.zc[:, :, cols],
            zy=None if self.zy is None else self.zy[:, cols],
            argmax=None if self.argmax is None else self.argmax[:, cols],
        )


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
    return Prepared(n_classes, y, finite, argmax == y[None, :], zc=zc, zy=zy, argmax=argmax)


@dataclass
class SampleStats:
    """Per-sample quantities at one β per epoch; all (E, N) float32.

    ``g``, ``h``: first and second derivative of the sample's NLL w.r.t. β;
    ``nll``: −log p_y; ``other``: 1 − p_y; ``other_sq``: Σ_{k≠y} p_k²; ``pmax``: max_k p_k;
    ``log_z``: log Σ_k exp(β(z_k − max z)) (multiclass only, for log-probabilities).
    """

    g: np.ndarray | None  # None when evaluated with derivs=False
    h: np.ndarray | None
    nll: np.ndarray
    other: np.ndarray
    other_sq: np.ndarray
    pmax: np.ndarray
    log_z: np.ndarray | None = None
    u: np.ndarray | None = None  # binary: β·m, the signed scaled margin
    pq: np.ndarray | None = None  # binary, with derivs: p_y(1 − p_y), without cancellation


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
        """A C-contiguous array of ``shape`` backed by the buffer ``name``, which only grows
        (CV folds and the last block of epochs reuse it at their own, smaller, shapes)."""
        size = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self._buffers[name] = np.empty(max(size, 1), dtype=dtype)
        return buf[:size].reshape(shape)


def sample_stats(
    prep: Prepared, beta: np.ndarray, ws: Workspace | None = None, derivs: bool = True
) -> SampleStats:
    """Evaluate softmax(β z) for every epoch at its own β (E,).

    Written with in-place ufuncs only (no masked copies, which are slow in numpy) so that one
    evaluation costs a few passes over float32 memory. ``derivs=False`` skips g and h (returned
    as None): scoring at a fitted β needs only the losses. The Newton iterations themselves use
    the cheaper :func:`binary_derivative_sums` / :func:`multiclass_derivative_sums`.
    """
    ws = Workspace() if ws is None else ws
    beta32 = np.asarray(beta, dtype=np.float32)[:, None]
    shape = (prep.n_epochs, prep.n_samples)
    buf = {n: ws.get(n, shape) for n in ("t", "e", "a", "b", "g", "h", "nll", "oth", "osq")}
    t, e, a, b = buf["t"], buf["e"], buf["a"], buf["b"]
    g, h, nll, other, other_sq = buf["g"], buf["h"], buf["nll"], buf["oth"], buf["osq"]
    with np.errstate(over="ignore"):
        if prep.binary:
            m = prep.margin
            np.multiply(beta32, m, out=t)  # t = β·m, p_y = σ(t)
            np.abs(t, out=e)
            np.negative(e, out=e)
            np.exp(e, out=e)  # e = exp(−|t|) ∈ (0, 1]
            np.add(e, 1, out=a)
            np.reciprocal(a, out=a)  # a = σ(|t|) = max_k p_k
            np.exp(t, out=other)  # may overflow to inf: then 1/(1 + inf) = 0 exactly
            other += 1
            np.reciprocal(other, out=other)  # σ(−t) = 1 − p_y
            np.log1p(e, out=nll)
            np.negative(t, out=b)
            np.maximum(b, 0, out=b)
            nll += b  # −log p_y = softplus(−t)
            if derivs:
                np.multiply(m, other, out=g)
                np.negative(g, out=g)  # dNLL/dβ = −m·σ(−t)
                np.multiply(e, a, out=b)
                b *= a  # σ(t)σ(−t)
                np.multiply(m, m, out=h)
                h *= b  # d²NLL/dβ² = m²σ(t)σ(−t)
            else:
                g = h = b = None
            np.multiply(other, other, out=other_sq)
            return SampleStats(g=g, h=h, nll=nll, other=other, other_sq=other_sq, pmax=a, u=t,
                               pq=b)

        zc = prep.zc
        w = ws.get("w", zc.shape)
        r, q, s1, s2 = t, e, a, b
        np.multiply(beta32[:, :, None], zc, out=w)
        np.exp(w, out=w)
        np.sum(w, axis=1, out=r)  # R = Σ_{k≠argmax} exp(β zc_k); Z = 1 + R
        np.einsum("ekn,ekn->en", w, w, out=q)  # Σ_{k≠argmax} exp(2β zc_k)
        pmax = ws.get("pmax", shape)
        np.add(r, 1, out=pmax)
        np.reciprocal(pmax, out=pmax)  # 1/Z = max_k p_k
        if derivs:
            w *= zc
            np.sum(w, axis=1, out=s1)
            w *= zc
            np.sum(w, axis=1, out=s2)
            s1 *= pmax  # E_p[zc]
            s2 *= pmax  # E_p[zc²]
            np.subtract(s1, prep.zy, out=g)  # dNLL/dβ = E_p[z] − z_y
            np.multiply(s1, s1, out=h)
            np.subtract(s2, h, out=h)
            np.maximum(h, 0, out=h)  # d²NLL/dβ² = Var_p[z]
        else:
            g = h = None
        log_z = ws.get("log_z", shape)
        np.log1p(r, out=log_z)
        wy = s2
        np.multiply(beta32, prep.zy, out=wy)
        np.subtract(log_z, wy, out=nll)  # −log p_y = log Z − β z_y
        np.exp(wy, out=wy)  # exp(β z_y), = 1 exactly when y is a maximum
        # 1 − p_y = (R + (1 − e^{βz_y}))/Z and Σ_{k≠y} p_k² = (Q + (1 − e^{2βz_y}))/Z²: both
        # reduce to R/Z and Q/Z² without cancellation when y is the argmax (p_y → 1).
        np.subtract(1, wy, out=other)
        other += r
        other *= pmax
        np.multiply(wy, wy, out=wy)
        np.subtract(1, wy, out=other_sq)
        other_sq += q
        other_sq *= pmax
        other_sq *= pmax
        return SampleStats(
            g=g, h=h, nll=nll, other=other, other_sq=other_sq, pmax=pmax, log_z=log_z
        )


def smoothed_nll(
    stats: SampleStats, n_classes: int, n_fit: int | None, cols: slice = slice(None)
) -> np.ndarray:
    """Per-sample −log q_y (float32) with q = n/(n+1)·p + 1/((n+1)K); ``n_fit=None``: raw p.

    1 − q_y = a(1 − p_y) + c(K − 1) is used when p_y > 1/2 so that confident correct
    predictions keep full relative precision. Averages should be taken in float64.
    """
    if n_fit is None:
        return stats.nll[:, cols]
    a, c = _smoothing_coefs(n_fit, n_classes)
    other = stats.other[:, cols]
    out = np.float32(a) * other
    out += np.float32(c * (n_classes - 1))  # 1 − q_y
    np.negative(out, out=out)
    with np.errstate(divide="ignore"):
        np.log1p(out, out=out)
        np.negative(out, out=out)
        far = ~(other < 0.5)  # p_y ≤ 1/2 (usually few samples): −log q_y from log p_y
        out[far] = -np.log(np.float32(a) * np.exp(-stats.nll[:, cols][far]) + np.float32(c))
    return out


def smoothed_brier(stats: SampleStats, n_classes: int, n_fit: int | None) -> np.ndarray:
    """Per-sample Σ_k (q_k − 1[y=k])² = (1 − q_y)² + Σ_{k≠y} q_k² (float32, no cancellation)."""
    other = stats.other
    if n_fit is None:  # a = 1, c = 0 below
        return other * other + stats.other_sq
    a, c = _smoothing_coefs(n_fit, n_classes)
    a, c = np.float32(a), np.float32(c)
    one_minus_qy = a * other + c * (n_classes - 1)
    rest_sq = a * a * stats.other_sq + (2 * a * c) * other + (n_classes - 1) * c * c
    return one_minus_qy * one_minus_qy + rest_sq


def smoothed_pmax(stats: SampleStats, n_classes: int, n_fit: int | None) -> np.ndarray:
    """max_k q_k (E, N) float32 (a view of the stats when ``n_fit`` is None)."""
    if n_fit is None:
        return stats.pmax
    a, c = _smoothing_coefs(n_fit, n_classes)
    out = stats.pmax * np.float32(a)
    out += np.float32(c)
    return out


def _smoothing_coefs(n_fit: Any, n_classes: int) -> tuple[Any, Any]:
    """Laplace smoothing q = a·p + c (docs/design.md §4): a = n/(n+1), c = 1/((n+1)K); for a
    set size ``n_fit`` (a number, or an array of them)."""
    return n_fit / (n_fit + 1.0), 1.0 / ((n_fit + 1.0) * n_classes)


def binary_smoothed_miss(signed_margin: np.ndarray, beta: Any, n_fit: Any,
                         out: np.ndarray | None = None) -> np.ndarray:
    """1 − q_y of binary problems in one float64 pass: q = a·σ(β m) + c Laplace-smoothed for a
    fit on ``n_fit`` samples, from the *signed* margins m (positive towards the true class) at
    inverse temperature ``beta``; ``beta`` and ``n_fit`` broadcast against ``signed_margin``
    (one per sample for held-out folds fit separately). 1 − q_y = a·σ(−βm) + c is accurate at
    both ends (q_y ≥ c keeps 1 − (1 − q_y) to ~1e-12 relative), so −log q_y =
    −log1p(−(1 − q_y)) and the Brier score 2(1 − q_y)² need no branch for confident or wrong
    samples. The one binary TS-refinement kernel: the fused metrics' held-out folds and
    :mod:`tabbench.stopping` both score through it."""
    a, c = _smoothing_coefs(np.asarray(n_fit, dtype=np.float64), 2)
    out = np.multiply(beta, signed_margin, out=out, dtype=np.float64)  # u = β m
    with np.errstate(over="ignore"):
        np.exp(out, out=out)  # inf for very confident samples: then σ(−u) = 0 exactly
    out += 1
    np.reciprocal(out, out=out)  # σ(−u) = 1 − p_y
    out *= a
    out += c  # 1 − q_y
    return out


def nll_from_miss(miss: np.ndarray) -> np.ndarray:
    """−log q_y from 1 − q_y (:func:`binary_smoothed_miss`), in place."""
    np.negative(miss, out=miss)
    np.log1p(miss, out=miss)
    np.negative(miss, out=miss)
    return miss


# ---------------------------------------------------------------------------------------------
# Safeguarded Newton on b = log β, vectorised over epochs
# ---------------------------------------------------------------------------------------------

#: A Newton step shorter than this (in b) is taken without evaluating its end point: Newton's
#: error after a step of length d is O(d²) (~1e-10 here), below the ``LOG_BETA_TOL`` accuracy
#: of a search that stops at an evaluated point. Saves the confirming evaluation of every fit.
ACCEPT_STEP = 1e-5

#: evaluate(beta (A,), idx (A,)) -> mean dNLL/dβ and d²NLL/dβ² (A,) of the problems ``idx``.
Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def binary_derivative_sums(
    m: np.ndarray, beta: np.ndarray, ws: Workspace
) -> tuple[np.ndarray, np.ndarray]:
    """Σ_n dNLL_n/dβ = −Σ m σ(−βm) and Σ_n d²NLL_n/dβ² = Σ m² σ(βm)σ(−βm) (float64, (rows,))
    for binary margins m (rows, n) at β (rows,): the Newton iterations need only these, in
    ~10 passes over float32 memory instead of the ~20 of the full :func:`sample_stats`.
    (σ(βm) = 1 − σ(−βm) loses relative precision when tiny; that only perturbs the curvature,
    i.e. the step length, never the root g = 0.)"""
    s = ws.get("ds", m.shape)
    u = ws.get("du", m.shape)
    np.multiply(np.asarray(beta, dtype=np.float32)[:, None], m, out=s)
    with np.errstate(over="ignore"):
        np.exp(s, out=s)  # overflow to inf gives σ(−βm) = 0 exactly
    s += 1
    np.reciprocal(s, out=s)  # σ(−βm) = 1 − p_y
    np.multiply(m, s, out=u)
    g = -u.sum(axis=1, dtype=np.float64)
    np.subtract(1, s, out=u)
    u *= s
    u *= m
    u *= m
    return g, u.sum(axis=1, dtype=np.float64)


def multiclass_derivative_sums(
    zc: np.ndarray, zy_sum: np.ndarray, beta: np.ndarray, ws: Workspace
) -> tuple[np.ndarray, np.ndarray]:
    """Σ_n (E_p[z] − z_y) and Σ_n Var_p[z] (float64, (rows,)) for prepared logits zc
    (rows, K, n) at β (rows,); ``zy_sum`` = Σ_n z_y (centred) per row."""
    rows, _, n = zc.shape
    w = ws.get("dw", zc.shape)
    z_inv, s1, s2 = (ws.get(name, (rows, n)) for name in ("dz", "d1", "d2"))
    np.multiply(np.asarray(beta, dtype=np.float32)[:, None, None], zc, out=w)
    with np.errstate(over="ignore"):
        np.exp(w, out=w)
    np.sum(w, axis=1, out=z_inv)
    w *= zc
    np.sum(w, axis=1, out=s1)
    w *= zc
    np.sum(w, axis=1, out=s2)
    z_inv += 1
    np.reciprocal(z_inv, out=z_inv)  # 1/Z (the max logit contributes exp(0) = 1)
    s1 *= z_inv  # E_p[zc]
    s2 *= z_inv  # E_p[zc²]
    g = s1.sum(axis=1, dtype=np.float64) - zy_sum
    s1 *= s1
    np.subtract(s2, s1, out=s2)
    np.maximum(s2, 0, out=s2)  # Var_p[zc]
    return g, s2.sum(axis=1, dtype=np.float64)


def derivative_sums(
    prep: Prepared, rows: np.ndarray | None, cols: slice, beta: np.ndarray, ws: Workspace,
    zy_sum: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Derivative sums over the samples ``cols`` for the epochs ``rows`` (None: all)."""
    if prep.binary:
        m = prep.margin[:, cols] if rows is None else prep.margin[rows, cols]
        return binary_derivative_sums(m, beta, ws)
    zc = prep.zc[:, :, cols] if rows is None else prep.zc[rows][:, :, cols]
    if zy_sum is None:
        zy = prep.zy[:, cols] if rows is None else prep.zy[rows, cols]
        zy_sum = zy.sum(axis=1, dtype=np.float64)
    return multiclass_derivative_sums(zc, zy_sum, beta, ws)


def full_data_evaluator(prep: Prepared, ws: Workspace) -> Evaluator:
    """Mean derivatives over all samples of epoch ``idx``, evaluated for the unfinished
    epochs only."""
    n = prep.n_samples
    zy_sum = None if prep.binary else prep.zy.sum(axis=1, dtype=np.float64)

    def evaluate(beta: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = None if idx.size == prep.n_epochs else idx
        zs = None if zy_sum is None else zy_sum[idx]
        g, h = derivative_sums(prep, rows, slice(None), beta, ws, zs)
        return g / n, h / n

    return evaluate


def column_sums(x: np.ndarray, exclude: slice | None = None) -> np.ndarray:
    """Row sums of (E, N) float32 accumulated in float64, optionally without a column block."""
    total = x.sum(axis=1, dtype=np.float64)
    if exclude is not None:
        total -= x[:, exclude].sum(axis=1, dtype=np.float64)
    return total


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


def solve_log_beta(
    evaluate: Evaluator,
    b0: np.ndarray,
    first_derivs: tuple[np.ndarray, np.ndarray] | None = None,
    tol: float = LOG_BETA_TOL,
    accept: float = ACCEPT_STEP,
    max_iter: int = MAX_NEWTON_ITER,
) -> np.ndarray:
    """Minimise NLL(e^b) over b ∈ [−16, 16] for M problems at once; return b (M,).

    Each iteration evaluates only the problems not yet finished. A problem finishes at an
    evaluated point whose Newton step is below ``tol`` (or at a bound, or with a collapsed
    bracket), or at the end of a plain Newton step d whose predicted error is below ``tol``:
    d < ``accept`` (see ACCEPT_STEP), or, after two successive Newton steps, C·d² < tol with
    Newton's contraction constant C ≥ 1 estimated from them (d = C·d_prev²). Either way b is
    as accurate as with the plain rule (stop at an evaluated point whose step is < tol), with
    one evaluation fewer. ``accept=0`` turns accepted steps off (the plain rule only).
    ``first_derivs``: mean derivatives already known at ``b0`` (a CV fold starting from the
    full-data optimum): the first step is then taken without an evaluation.
    """
    b = np.clip(np.array(b0, dtype=np.float64), -LOG_BETA_BOUND, LOG_BETA_BOUND)
    n_prob = b.shape[0]
    br = _Bracket.new(n_prob)
    done = np.zeros(n_prob, dtype=bool)
    final = b.copy()
    prev = np.full(n_prob, np.nan)  # length of the previous step if it was a Newton step

    def advance(g: np.ndarray, h: np.ndarray) -> None:
        nonlocal b, prev
        cand, conv, newton = _newton_update(b, g, h, br, done, tol)
        final[conv] = b[conv]  # stop at the evaluated point ...
        d = np.abs(cand - b)
        with np.errstate(divide="ignore", invalid="ignore"):
            # Newton's error after a step d is ≈ C·d², C estimated from this step and the
            # previous one (d = C·prev²), and at least 1 to stay on the safe side
            predicted = np.maximum(d / (prev * prev), 1.0) * d * d
        acc = newton & ((d < accept) | (np.isfinite(prev) & (predicted < tol))) & (accept > 0)
        final[acc] = cand[acc]  # ... or one short Newton step further
        done[:] |= conv | acc
        prev = np.where(newton, d, np.nan)
        b = np.where(done, b, cand)

    if first_derivs is not None:
        advance(*first_derivs)
    for _ in range(max_iter):
        idx = np.flatnonzero(~done)
        if idx.size == 0:
            break
        g_a, h_a = evaluate(np.exp(b[idx]), idx)
        g, h = np.zeros(n_prob), np.ones(n_prob)
        g[idx], h[idx] = g_a, h_a
        advance(g, h)
    final[~done] = b[~done]  # max_iter reached: the last point
    return final


def solve_log_beta_scalar(sums: Callable[[float], tuple[float, float]], b0: float) -> float:
    """b = log β minimising one problem's NLL: :func:`solve_log_beta` (same bracket,
    Newton/bisection rules, tolerances and accepted final step; tested to give the same b) for
    a single problem, in Python floats.

    Why a scalar version: a metric callable (:mod:`tabbench.stopping`) fits one temperature per
    boosting round, and for
    one problem the vectorised solver's bookkeeping (~40 numpy calls on length-1 arrays per
    iteration) costs more than its passes over a few thousand validation samples.
    ``sums(β)`` = mean dNLL/dβ and d²NLL/dβ² over the samples.
    """
    bound, tol, accept = LOG_BETA_BOUND, LOG_BETA_TOL, ACCEPT_STEP
    lo, hi, lo_seen, hi_seen = -bound, bound, False, False
    b = min(max(b0, -bound), bound)
    step = step_old = 4 * bound
    prev = math.nan  # length of the previous Newton step
    for _ in range(MAX_NEWTON_ITER):
        beta = math.exp(b)
        g, h = sums(beta)
        gb = beta * g  # dNLL/db
        hb = beta * beta * h + gb
        if gb > 0:
            hi, hi_seen = b, True
        else:
            lo, lo_seen = b, True
        flat = g == 0 and h == 0
        newton_step = math.nan  # left of the optimum a Newton step in β, else in b
        if gb <= 0 and h > 0 and beta - g / h > 0:
            newton_step = math.log(beta - g / h) - b
        if not math.isfinite(newton_step) and hb > 0:
            newton_step = -gb / hb
        if not math.isfinite(newton_step):
            newton_step = math.nan
        if flat:  # e.g. a perfectly separable set: try the upper bound, as the bisection would
            cand = bound
        else:
            cand = min(max(b + (0.0 if math.isnan(newton_step) else newton_step), -bound), bound)
        inside = (lo < cand < hi or (cand == hi and not hi_seen and cand != b)
                  or (cand == lo and not lo_seen and cand != b))
        fast = abs(2 * (cand - b)) <= step_old or flat
        use_newton = math.isfinite(newton_step) or flat
        if not (use_newton and inside and fast):
            cand = 0.5 * (lo + hi)  # bisection of the bracket
        step_old, step = step, abs(cand - b)
        at_bound = (b >= bound and gb <= 0) or (b <= -bound and gb > 0)
        newton = use_newton and inside and fast and math.isfinite(newton_step) and not at_bound
        if newton:  # a short Newton step is taken without evaluating its end point
            d = abs(cand - b)
            predicted = max(d / (prev * prev), 1.0) * d * d if prev > 0 else math.inf
            if d < accept or predicted < tol:
                return cand
        small = math.isfinite(newton_step) and abs(newton_step) < tol
        if small or at_bound or hi - lo < tol or not math.isfinite(gb):
            return b
        prev = abs(cand - b) if newton else math.nan
        b = cand
    return b


def _newton_update(b, g, h, br: _Bracket, done, tol):
    """One safeguarded step for every epoch not ``done`` (vectorised; updates ``br``).

    Returns the next point, which problems converged at ``b`` and which were given a plain
    (not bisection, not bound) Newton step.

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
    newton = active & use_newton & inside & fast & np.isfinite(step) & ~at_bound
    return cand, active & converged, newton


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def fit_log_beta_prepared(
    prep: Prepared, b0: np.ndarray | float | None = None, ws: Workspace | None = None
) -> tuple[np.ndarray, SampleStats]:
    """b = log β (E,) minimising the mean NLL of every epoch, plus the stats at that b."""
    ws = Workspace() if ws is None else ws
    start = np.zeros(prep.n_epochs) if b0 is None else np.broadcast_to(b0, (prep.n_epochs,))
    b = solve_log_beta(full_data_evaluator(prep, ws), start)
    return b, sample_stats(prep, np.exp(b), ws)


def initial_log_beta(beta0, n_epochs: int) -> np.ndarray | None:
    """Warm start b = log β (E,) from ``beta0`` (scalar or (E,)); a non-finite or non-positive
    β starts at β = 1, and b is clipped to the search interval. None when ``beta0`` is None."""
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
    b0_all = initial_log_beta(beta0, z.shape[0])
    ws = Workspace()
    b_prev = None
    for sl in epoch_blocks(z.shape):
        prep = prepare(z[sl], labels)
        b, _ = fit_log_beta_prepared(prep, b_prev if b0_all is None else b0_all[sl], ws)
        if prep.finite.any():
            b_prev = float(b[prep.finite][-1])
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


def epoch_blocks(shape: tuple[int, int, int], target_elements: int = 65_536) -> list[slice]:
    """Split E epochs into blocks of about ``target_elements`` logits, so that the working
    arrays of the Newton iterations stay in cache and memory stays bounded for large chunks."""
    n_epochs, n_samples, n_classes = shape
    per_epoch = n_samples * (1 if n_classes == 2 else n_classes)
    size = max(1, target_elements // max(per_epoch, 1))
    return [slice(s, min(s + size, n_epochs)) for s in range(0, n_epochs, size)]


__all__ = [
    "fit_temperature",
    "fit_temperature_batched",
    "fit_temperature_bisection",
]
