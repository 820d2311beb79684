"""Prepared logits and what temperature scaling evaluates on them at given β.

:func:`prepare` turns E epochs of logits into the form every evaluation reads;
:func:`sample_stats` gives the per-sample losses and derivatives of softmax(β z) at one β per
epoch; the derivative sums (:func:`derivative_sums` and its binary and multiclass kernels) are
all the Newton iterations of :mod:`tabbench.metrics.ts_solver` need. The estimator
(:mod:`tabbench.metrics.temperature`), the fused metrics (:mod:`tabbench.metrics.batched`) and
:mod:`tabbench.stopping`'s multiclass fits all evaluate through here.

Speed: logits are centred (max logit 0 per row) once and stored float32 in a class-major
(E, K, N) layout, so each evaluation is an exp plus a few reductions over K of contiguous rows;
the max entry is replaced by a large negative sentinel so that R = Σ_{k≠argmax} exp(β z_k) is
accumulated without the leading 1 and log(1 + R) = log1p(R) keeps full relative precision for
confident predictions. Binary problems are reduced to one signed margin per sample. Sums over
samples are accumulated in float64; the derivative-only kernels make ~10 passes over float32
memory instead of the ~20 of the full per-sample statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tabbench.metrics.ts_solver import Evaluator

#: Replaces the (centred, = 0) max logit of every row. β·SENTINEL underflows exp to exactly 0
#: for every β ≥ e^−16, and SENTINEL² is still a finite float32, so 0·SENTINEL·SENTINEL = 0.
SENTINEL = np.float32(-3e18)


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
    zc: np.ndarray | None = None  # multiclass: (E, K, N) float32, z − max z, max → SENTINEL
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
    np.put_along_axis(zc, argmax[:, None, :], SENTINEL, axis=1)
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


def multiclass_moments(
    zc: np.ndarray, beta: np.ndarray, ws: Workspace
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-sample 1/Z, E_p[zc] and E_p[zc²] (float32, (rows, n), views into ``ws``) of
    softmax(β z) for prepared logits zc (rows, K, n) at β (rows,): what the derivatives of the
    NLL are made of (:func:`multiclass_derivative_sums`), and, with z_y, what p_y is made of."""
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
    return z_inv, s1, s2


def multiclass_derivative_sums(
    zc: np.ndarray, zy_sum: np.ndarray, beta: np.ndarray, ws: Workspace
) -> tuple[np.ndarray, np.ndarray]:
    """Σ_n (E_p[z] − z_y) and Σ_n Var_p[z] (float64, (rows,)) for prepared logits zc
    (rows, K, n) at β (rows,); ``zy_sum`` = Σ_n z_y (centred) per row."""
    _, s1, s2 = multiclass_moments(zc, beta, ws)
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
