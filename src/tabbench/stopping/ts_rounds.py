"""TS-refinement (``ts_ref``, ``ts_ref_brier``) of one evaluation set, scored again after every
boosting round or epoch: the work of the metric callables of :mod:`tabbench.stopping`.

Each call fits one temperature with the solver of :mod:`tabbench.metrics.ts_solver`
(:func:`~tabbench.metrics.ts_solver.solve_log_beta_scalar`), warm-started from the previous
call's, and scores the set at it. The temperature moves little from one round to the next, so
the solver usually evaluates the derivatives twice (at the previous optimum and after one Newton
step) and then returns a further Newton step d without evaluating its end point (its acceptance
rule bounds |d| by √1e-7 ≈ 3.2e-4 in b = log β, below 1e-5 for a first step). Why this module:

* **No pass for the loss.** Each derivative pass keeps what the loss is made of at its β
  (binary: σ(−βm); multiclass: 1/Z and E_p[z]). The loss S at the returned b = b_last + d is
  then S(b_last) + S'(b_last)·d: the slope S' (of the *smoothed* loss, which is not stationary
  at the NLL optimum) comes from the same kept arrays, and the error ½·S''·d² is below 1e-7
  for the |d| the solver accepts (tested to equal the exact fit to 1e-6 over whole boosting
  runs). A returned b farther than :data:`TAYLOR_STEP` from the last evaluation (the solver's
  rare endings: a bound, a collapsed bracket, the iteration cap) is evaluated, exactly.
* **Binary problems in float64 signed margins** with BLAS dot products for the sums: fewer,
  cheaper passes than the float32 kernels of :mod:`tabbench.metrics.ts_kernel`, which are
  built for many epochs at once (their float32 → float64 sums cost more than the arithmetic
  for one epoch). Dot products are taken over blocks of :data:`DOT_BLOCK` samples: longer ones
  make OpenBLAS start threads, which costs more than the sum itself and takes a second core
  from a training run told to use one.

The multiclass Brier kind keeps the exact pass at the fitted β (its Taylor slope needs Σ_k p_k²
and its derivative, a second pass over the K × N logits).
"""

from __future__ import annotations

import math

import numpy as np

from tabbench._scores import (
    ScoreType,
    as_float,
    binary_margin,
    check_proba,
    clipped_log,
    p1_bounds,
)
from tabbench.metrics.losses import laplace_coefs
from tabbench.metrics.ts_kernel import (
    SENTINEL,
    Prepared,
    Workspace,
    multiclass_moments,
    sample_stats,
)
from tabbench.metrics.ts_smoothing import smoothed_brier, smoothed_miss_from_sigma
from tabbench.metrics.ts_solver import solve_log_beta_scalar

#: Largest distance in b = log β between the returned optimum and the last evaluated point for
#: which the loss is extrapolated (first order) rather than evaluated. The solver accepts
#: unevaluated steps up to √1e-7 ≈ 3.2e-4; the extrapolation error ½·S''·d² stays below 1e-7
#: for |S''| ≤ 2 at this bound (S'' is a mean of terms like u²σ(u)σ(−u) ≤ 0.44).
TAYLOR_STEP = 3.2e-4

#: Dot products are summed over blocks of at most this many samples: OpenBLAS runs a longer
#: ``ddot`` (above 10,000) on several threads.
DOT_BLOCK = 8192

#: exp(x) overflows float64 above x ≈ 709.78. A binary derivative pass whose β·|m| is known to
#: stay below this bound (from the scores' extremes, no pass over the data) runs without
#: ``np.errstate``, whose context costs more than a numpy call on a few thousand samples.
EXP_SAFE = 700.0


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """Σ a·b (float64, 1-D) on one thread (see :data:`DOT_BLOCK`)."""
    n = a.shape[0]
    if n <= DOT_BLOCK:
        return float(np.dot(a, b))
    return float(sum(np.dot(a[i:i + DOT_BLOCK], b[i:i + DOT_BLOCK])
                     for i in range(0, n, DOT_BLOCK)))


def _start(log_beta: float | None) -> float:
    return 0.0 if log_beta is None else log_beta


class BinaryRounds:
    """TS-refinement of one binary evaluation set (labels fixed), one call per round.

    Works on the signed margins m = ±(z₁ − z₀) (+ for y = 1) in float64: p_y = σ(βm).
    ``log_beta`` is the last fitted b = log β, the next call's starting point.
    """

    def __init__(self, y: np.ndarray, kind: str) -> None:
        n = y.shape[0]
        self.kind, self.n = kind, n
        self.a = laplace_coefs(n, 2)[0]  # q = a·p + c
        self._sign = np.where(y == 1, 1.0, -1.0)
        self._work = np.empty((2, n))  # the margin and the scratch row of binary_margin
        self._m, self._m2 = self._work
        self._sig, self._w, self._t = (np.empty(n) for _ in range(3))
        self._beta_at = math.nan  # β of the last derivative pass
        self._m_bound = math.inf  # a bound of |m| this round (see EXP_SAFE)
        self.log_beta: float | None = None

    def __call__(self, scores: np.ndarray, score_type: ScoreType,
                 extremes: tuple[float, float] | None = None) -> float:
        """The loss of binary scores (all finite) as :func:`tabbench._scores.binary_margin`
        reads them; ``extremes``: their (min, max) if known."""
        m = binary_margin(scores, score_type, out=self._work, extremes=extremes)
        self._m_bound = _margin_bound(scores, score_type, extremes)
        m *= self._sign
        np.multiply(m, m, out=self._m2)
        self._beta_at = math.nan
        b = solve_log_beta_scalar(self._sums, _start(self.log_beta))
        self.log_beta = b
        return self._loss(b)

    def _sums(self, beta: float) -> tuple[float, float]:
        """Mean dNLL/dβ = −⟨m σ(−βm)⟩ and d²NLL/dβ² = ⟨m² σ(βm)σ(−βm)⟩; keeps σ(−βm) and
        σ(βm)σ(−βm) for the loss. (σ(βm) = 1 − σ(−βm) loses relative precision when tiny:
        that perturbs only the curvature, i.e. the step length, never the root.)"""
        if beta * self._m_bound < EXP_SAFE:
            return self._pass(beta)
        with np.errstate(over="ignore"):  # exp(βm) = inf: σ(−βm) = 0 exactly
            return self._pass(beta)

    def _pass(self, beta: float) -> tuple[float, float]:
        sig, w, m, n = self._sig, self._w, self._m, self.n
        np.multiply(m, beta, out=sig)
        np.exp(sig, out=sig)
        sig += 1.0
        np.reciprocal(sig, out=sig)  # σ(−βm) = 1 − p_y
        np.multiply(sig, sig, out=w)
        np.subtract(sig, w, out=w)  # σ(βm)σ(−βm)
        self._beta_at = beta
        if n <= DOT_BLOCK:
            return -float(np.dot(m, sig)) / n, float(np.dot(self._m2, w)) / n
        return -dot(m, sig) / n, dot(self._m2, w) / n

    def _loss(self, b: float) -> float:
        """S at b from the last derivative pass, plus S'·(b − b_last) (module doc)."""
        d = b - math.log(self._beta_at) if self._beta_at > 0 else math.inf
        if not abs(d) <= TAYLOR_STEP:
            self._sums(math.exp(b))
            d = 0.0
        sig, w, t, n, a = self._sig, self._w, self._t, self.n, self.a
        # dσ(−βm)/db = −βm·σ(βm)σ(−βm): the slope of any function of σ(−βm)
        scale = -a * self._beta_at * d / n
        miss = smoothed_miss_from_sigma(sig, n, out=t)  # 1 − q_y
        if self.kind == "ts_ref":
            q = np.subtract(1.0, miss, out=sig)  # q_y, to ~1e-16 absolute
            slope = 0.0
            if d:
                np.divide(w, q, out=w)  # −log q_y has slope −a·(dσ(βm)/db)/q_y
                slope = scale * dot(self._m, w)
            np.log(q, out=q)
            return -float(np.add.reduce(q)) / n + slope
        value = 2.0 * dot(t, t) / n  # the Brier score 2(1 − q_y)²
        if d:
            np.multiply(t, w, out=w)
            value += 4.0 * scale * dot(self._m, w)
        return value


def _margin_bound(scores: np.ndarray, score_type: ScoreType,
                  extremes: tuple[float, float] | None) -> float:
    """A bound of |z₁ − z₀| over the samples from the scores' (min, max), without a pass over
    them; inf when they are not known. Probabilities: the margin of the most extreme
    P(class 1) as :func:`tabbench._scores.binary_margin` reads it (within its bounds); (N,)
    logits: the largest |score|; (N, 2) logits: max − min. A bound, not the maximum: it only
    decides whether a pass may overflow (:data:`EXP_SAFE`, which leaves a margin of 9.78 for
    rounding)."""
    if extremes is None:
        return math.inf
    lo, hi = extremes
    if score_type == "logits":
        return max(-lo, hi) if scores.ndim == 1 else hi - lo
    p_lo, p_hi = p1_bounds(scores.dtype, None)
    lo, hi = min(max(lo, p_lo), p_hi), max(min(hi, p_hi), p_lo)
    return max(math.log((1.0 - lo) / lo), math.log(hi / (1.0 - hi)))


class MulticlassRounds:
    """TS-refinement of one multiclass evaluation set (labels fixed), one call per round.

    Logits are prepared as :func:`tabbench.metrics.ts_kernel.prepare` does (centred on the row
    maximum, float32, class-major, the maximum replaced by its sentinel) into buffers kept
    between calls: probabilities are logged straight into the class-major layout, and logits
    that are the transpose of a class-major array (CatBoost's ``approxes``) are read in place.
    """

    def __init__(self, y: np.ndarray, k: int, kind: str) -> None:
        n = y.shape[0]
        self.kind, self.n, self.k, self.y = kind, n, k, y
        self._rows = np.arange(n)
        self._ws = Workspace()
        self._zc = np.empty((1, k, n), dtype=np.float32)
        self._zt: np.ndarray | None = None  # class-major logits of (N, K) scores
        self._zy, self._p, self._q, self._t = (np.empty(n) for _ in range(4))
        self._beta_at = math.nan
        self._zy_sum = 0.0
        self._z_inv: np.ndarray | None = None  # 1/Z and E_p[z] of the last pass (views)
        self._e_z: np.ndarray | None = None
        self.log_beta: float | None = None

    def _class_major(self, scores: np.ndarray, score_type: ScoreType,
                     extremes: tuple[float, float] | None) -> np.ndarray:
        """The logits (K, N), C-contiguous: the scores' transpose if it is (CatBoost's stacked
        ``approxes``), else written into a kept buffer (probabilities: their clipped log, as
        :func:`tabbench._scores.proba_to_logits` reads them)."""
        s = check_proba(scores, extremes) if score_type == "proba" else as_float(scores)
        if score_type == "logits" and s.T.flags.c_contiguous:
            return s.T
        if self._zt is None or self._zt.dtype != s.dtype:
            self._zt = np.empty((self.k, self.n), dtype=s.dtype)
        if score_type == "proba":
            clipped_log(s, out=self._zt.T)
        else:
            np.copyto(self._zt.T, s)
        return self._zt

    def _prepare(self, zt: np.ndarray) -> Prepared:
        """:func:`tabbench.metrics.ts_kernel.prepare` of one epoch, from class-major logits."""
        zc = self._zc[0]
        np.subtract(zt, zt.max(axis=0), out=zc, casting="same_kind")  # in the input precision
        argmax = np.zeros(self.n, dtype=np.int64)
        for k in range(self.k - 1, 0, -1):  # the first maximum wins, as in prepare()
            argmax[zc[k] == 0] = k
        zy = zc[self.y, self._rows]  # z_y − max z ≤ 0
        zc[argmax, self._rows] = SENTINEL
        return Prepared(self.k, self.y, np.ones(1, dtype=bool), (argmax == self.y)[None],
                        zc=self._zc, zy=zy[None], argmax=argmax[None])

    def __call__(self, scores: np.ndarray, score_type: ScoreType,
                 extremes: tuple[float, float] | None = None) -> float:
        """The loss of (N, K ≥ 3) scores, all finite: logits, or probabilities read as
        :func:`tabbench._scores.proba_to_logits` reads them; ``extremes``: their (min, max)
        if known."""
        prep = self._prepare(self._class_major(scores, score_type, extremes))
        np.copyto(self._zy, prep.zy[0])
        self._zy_sum = float(self._zy.sum())
        self._beta_at = math.nan
        b = solve_log_beta_scalar(self._sums, _start(self.log_beta))
        self.log_beta = b
        if self.kind == "ts_ref":
            return self._nll(b)
        stats = sample_stats(prep, np.full(1, math.exp(b)), self._ws, derivs=False)
        return float(smoothed_brier(stats, self.k, self.n).mean(dtype=np.float64))

    def _sums(self, beta: float) -> tuple[float, float]:
        """Mean dNLL/dβ = ⟨E_p[z] − z_y⟩ and d²NLL/dβ² = ⟨Var_p[z]⟩; 1/Z and E_p[z] are kept
        for the loss."""
        z_inv, s1, s2 = multiclass_moments(self._zc, np.full(1, beta), self._ws)
        self._z_inv, self._e_z = z_inv[0], s1[0]
        var = self._ws.get("var", s1.shape)
        np.multiply(s1, s1, out=var)
        np.subtract(s2, var, out=var)
        np.maximum(var, 0, out=var)
        self._beta_at = beta
        n = self.n
        g = (float(s1.sum(dtype=np.float64)) - self._zy_sum) / n
        return g, float(var.sum(dtype=np.float64)) / n

    def _nll(self, b: float) -> float:
        """Smoothed −log q_y at b: p_y = exp(β z_y)/Z at the last pass, plus the slope."""
        d = b - math.log(self._beta_at) if self._beta_at > 0 else math.inf
        if not abs(d) <= TAYLOR_STEP:
            self._sums(math.exp(b))
            d = 0.0
        n, (a, c) = self.n, laplace_coefs(self.n, self.k)
        p, q = self._p, self._q
        np.multiply(self._zy, self._beta_at, out=p)
        np.exp(p, out=p)
        p *= self._z_inv  # p_y
        np.multiply(p, a, out=q)
        q += c  # q_y
        slope = 0.0
        if d:  # d(−log q_y)/db = −a·β·p_y·(z_y − E_p[z])/q_y
            p /= q
            np.subtract(self._zy, self._e_z, out=self._t)
            slope = -a * self._beta_at * d * dot(p, self._t) / n
        np.log(q, out=q)
        return -float(q.sum()) / n + slope
