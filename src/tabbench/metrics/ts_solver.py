"""The safeguarded Newton solver of temperature scaling: b = log β minimising a convex NLL(e^b).

Paper, App. E: b = log β is searched in [−16, 16] by bisection on the sign of dNLL/dβ (30 steps).
NLL(β) is convex in β, so any method reaching the same minimiser is equivalent; we use a
safeguarded Newton method on b, vectorised over many problems (epochs, cross-validation folds)
at once, because the recorder fits a temperature after *every* epoch of every config:

* Newton on b converges quadratically, ~3–6 evaluations instead of 30, and fewer with a warm
  start from the previous epoch;
* every step is kept inside a bracket [lo, hi] maintained from the derivative's sign, and falls
  back to bisection when the Newton step leaves it or the curvature is not positive, so the
  method cannot do worse than the paper's bisection;
* a problem stops when the Newton step is below ``tol`` in b (β relative error ~1e-7), or the
  optimum is at a bound of [−16, 16] (e.g. a perfectly separable set wants β → ∞), or after a
  Newton step whose predicted error (quadratic convergence) is below ``tol`` — then without
  evaluating its end point (see :func:`solve_log_beta`);
* each iteration asks its :data:`Evaluator` for the derivatives of the problems not yet
  finished only.

Why a module of its own: the solver knows nothing of logits. It sees problems only through an
evaluator (mean dNLL/dβ and d²NLL/dβ² at given β), so the same rules serve the full-data fits,
the held-out folds and :mod:`tabbench.stopping`'s one-problem callables;
:mod:`tabbench.metrics.ts_kernel` evaluates the derivatives of prepared logits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Search interval for b = log β (paper, App. E).
LOG_BETA_BOUND = 16.0
#: Newton steps below this (in b = log β) end the search: β is then accurate to ~1e-7 relative.
LOG_BETA_TOL = 1e-7
MAX_NEWTON_ITER = 100

#: A Newton step shorter than this (in b) is taken without evaluating its end point: Newton's
#: error after a step of length d is O(d²) (~1e-10 here), below the ``LOG_BETA_TOL`` accuracy
#: of a search that stops at an evaluated point. Saves the confirming evaluation of every fit.
ACCEPT_STEP = 1e-5

#: evaluate(beta (A,), idx (A,)) -> mean dNLL/dβ and d²NLL/dβ² (A,) of the problems ``idx``.
Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


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
    exp, log, nan = math.exp, math.log, math.nan  # locals: this loop runs every round
    lo, hi, lo_seen, hi_seen = -bound, bound, False, False
    b = min(max(b0, -bound), bound)
    step = step_old = 4 * bound
    prev = nan  # length of the previous Newton step
    for _ in range(MAX_NEWTON_ITER):
        beta = exp(b)
        g, h = sums(beta)
        gb = beta * g
        hb = beta * beta * h + gb
        if gb > 0:
            hi, hi_seen = b, True
        else:
            lo, lo_seen = b, True
        flat = g == 0 and h == 0
        newton_step = nan  # left of the optimum a Newton step in β, else in b
        if gb <= 0 and h > 0:
            beta_new = beta - g / h
            if beta_new > 0:
                newton_step = log(beta_new) - b
        if not math.isfinite(newton_step) and hb > 0:
            newton_step = -gb / hb
        has_step = math.isfinite(newton_step)  # else no Newton step (NaN)
        if flat:
            cand = bound
        else:
            cand = b + newton_step if has_step else b
            cand = bound if cand > bound else (-bound if cand < -bound else cand)
        inside = (lo < cand < hi or (cand == hi and not hi_seen and cand != b)
                  or (cand == lo and not lo_seen and cand != b))
        fast = flat or abs(2 * (cand - b)) <= step_old
        if not ((has_step or flat) and inside and fast):
            cand = 0.5 * (lo + hi)  # bisection of the bracket
        step_old, step = step, abs(cand - b)
        at_bound = (b >= bound and gb <= 0) or (b <= -bound and gb > 0)
        newton = has_step and inside and fast and not at_bound
        if newton:  # a short Newton step is taken without evaluating its end point
            d = abs(cand - b)
            if d < accept or (prev > 0 and max(d / (prev * prev), 1.0) * d * d < tol):
                return cand
        if ((has_step and abs(newton_step) < tol) or at_bound or hi - lo < tol
                or not math.isfinite(gb)):
            return b
        prev = abs(cand - b) if newton else nan
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
