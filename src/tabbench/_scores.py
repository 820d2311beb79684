"""Model outputs -> logits, for the public API (:mod:`tabbench.calibration`,
:mod:`tabbench.stopping`).

Why logits suffice everywhere: temperature scaling of log-probabilities equals temperature
scaling of logits. If p = softmax(z), then log p = z − logsumexp(z) differs from z by a
per-row constant, and softmax(β log p) = softmax(β z) for every β. So probabilities are turned
into logits by a log, and binary class-1 probabilities into the margin log p − log(1 − p).

No deep-learning framework is imported here: tensors are recognised by their methods.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

import numpy as np

ScoreType = Literal["logits", "proba"]
SCORE_TYPES: tuple[str, ...] = ("logits", "proba")


def check_score_type(scores: str) -> None:
    if scores not in SCORE_TYPES:
        raise ValueError(f"scores must be one of {SCORE_TYPES}, got {scores!r}")


def to_numpy(x: Any) -> np.ndarray:
    """A numpy view/copy of an array-like: numpy, lists, or a framework tensor (PyTorch, JAX,
    CuPy: anything with ``detach``/``cpu``/``get``), moved to host memory; float16/bfloat16
    tensors become float32 (numpy has no bfloat16)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch
        x = x.detach()
        if str(x.dtype) in ("torch.float16", "torch.bfloat16"):
            x = x.float()
        return x.cpu().numpy()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def as_float(x: np.ndarray) -> np.ndarray:
    """Numeric scores as float32 or float64 (other numbers as float64)."""
    if x.dtype.char in "fd":  # float32, float64
        return x
    if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
        raise ValueError(f"scores must be numeric, got dtype {x.dtype}")
    return x.astype(np.float64)


def proba_to_logits(p: np.ndarray, clip: float | None = None) -> np.ndarray:
    """Logits (N, K) whose softmax is ``p`` (up to the clipping below).

    Binary — ``p`` (N,) = P(class 1), or (N, 2): the logits (log(1 − p₁), log p₁), i.e. the
    margin log p₁ − log(1 − p₁), from P(class 1) alone, kept within [ε/2, 1 − ε/2] (ε = the
    dtype's machine epsilon; or [clip, 1 − clip]). Why: libraries compute p₁ = σ(margin) and
    1 − p₁ by subtraction, which is resolved only to ε/2, so p₁ = 1.0 in float32 stands for any
    margin above log(2/ε) ≈ 16.6 and is read as that margin; margins are thus read within
    ±16.6 (float32) or ±36.7 (float64), symmetrically, and p = 0 or 1 need no special case.

    Multiclass — ``p`` (N, K ≥ 3): log(max(p, clip)). Default ``clip``: the dtype's smallest
    positive normal number (1.2e-38 for float32, 2.2e-308 for float64), so every representable
    probability keeps its exact logit. p = 0 has none (log 0 = −inf) and is read as a logit of
    log(clip) (−87 for float32, −708 for float64): such a class stays (almost) impossible after
    scaling. Models that output exact zeros for plausible classes (random forests, k-NN) make
    such a point cost ≈ β·|log clip| whenever it is the true class; pass a larger ``clip``
    (e.g. 1e-6) for them, or use their ``decision_function``.

    Parameters
    ----------
    p : array-like of shape (n_samples,) or (n_samples, n_classes)
        Probabilities: P(class 1) (binary) or one column per class.
    clip : float or None, default None
        The smallest probability read as itself (binary: also 1 − ``clip`` the largest);
        None: as described above.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Logits, in ``p``'s float dtype (float64 for integer input).

    Raises
    ------
    ValueError
        When the values are not probabilities (outside [0, 1], or NaN).

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.calibration import proba_to_logits
    >>> proba_to_logits(np.array([0.5, 0.9])).round(3)  # binary: (log(1 − p₁), log p₁)
    array([[-0.693, -0.693],
           [-2.303, -0.105]])
    >>> proba_to_logits(np.array([[0.2, 0.3, 0.5]])).round(3)
    array([[-1.609, -1.204, -0.693]])
    """
    p = check_proba(p)
    if p.ndim == 2 and p.shape[1] != 2:
        return clipped_log(p, clip)
    p1 = _binary_p1(p, clip)
    out = np.empty((p1.shape[0], 2), dtype=p.dtype)
    np.log1p(-p1, out=out[:, 0])
    np.log(p1, out=out[:, 1])
    return out


def clipped_log(p: np.ndarray, clip: float | None = None,
                out: np.ndarray | None = None) -> np.ndarray:
    """log(max(p, clip)) of multiclass probabilities (checked), clip defaulting to the dtype's
    smallest positive normal number (:func:`proba_to_logits`); into ``out`` if given (any
    array of p's shape, e.g. the transpose of a class-major buffer)."""
    clip = np.finfo(p.dtype).tiny if clip is None else clip
    out = np.maximum(p, p.dtype.type(clip), out=out)
    return np.log(out, out=out)


def check_proba(p: np.ndarray, extremes: tuple[float, float] | None = None) -> np.ndarray:
    p = as_float(np.asarray(p))
    if p.ndim not in (1, 2):
        raise ValueError(f"probabilities must have shape (N,) or (N, K), got shape {p.shape}")
    if p.size == 0:
        raise ValueError("probabilities contain no samples")
    lo, hi = (p.min(), p.max()) if extremes is None else extremes
    if not (lo >= 0 and hi <= 1 + 1e-6):  # also False for NaN
        raise ValueError(
            f"scores='proba' expects probabilities in [0, 1] (no NaN), got values in "
            f"[{lo}, {hi}] (pass scores='logits' for raw scores / logit margins)"
        )
    return p


def p1_bounds(dtype: np.dtype, clip: float | None) -> tuple[float, float]:
    """[ε/2, 1 − ε/2] (ε: the machine epsilon of ``dtype``), or [clip, 1 − clip] if wider:
    where P(class 1) is read (:func:`proba_to_logits`)."""
    return _p1_bounds(dtype if isinstance(dtype, np.dtype) else np.dtype(dtype), clip)


@lru_cache(maxsize=64)
def _p1_bounds(dtype: np.dtype, clip: float | None) -> tuple[float, float]:
    """:func:`p1_bounds` of a dtype, computed once (a metric callable reads them every round)."""
    bound = max(np.finfo(dtype).eps / 2, 0.0 if clip is None else clip)
    return bound, 1 - bound


def _binary_p1(p: np.ndarray, clip: float | None) -> np.ndarray:
    """P(class 1) of (N,) or (N, 2) probabilities, within :func:`p1_bounds`; a new array."""
    p1 = p if p.ndim == 1 else p[:, 1]
    lo, hi = p1_bounds(p.dtype, clip)
    out = np.maximum(p1, p.dtype.type(lo))  # np.clip's values, without its Python layer
    return np.minimum(out, p.dtype.type(hi), out=out)


def binary_margin(y_score: Any, scores: ScoreType, clip: float | None = None, *,
                  out: np.ndarray | None = None,
                  extremes: tuple[float, float] | None = None) -> np.ndarray:
    """The margin z₁ − z₀ (N,), float64, of binary scores: (N,) or (N, 2) logits, or
    probabilities read as in :func:`proba_to_logits` (in float64: exact for float32 ones).
    Cheaper than building (N, 2) logits when only the margin is needed (the binary temperature
    fit).

    ``out``: a float64 work array (2, N) to compute in, whose row 0 is returned (a caller
    scoring round after round allocates nothing); ``extremes``: the scores' (min, max) when the
    caller has them (the range check of probabilities then reads no data, and probabilities
    already within the bounds are not clipped: the clip would change none of them).
    """
    check_score_type(scores)
    s = to_numpy(y_score)
    if scores == "proba":
        p = check_proba(s, extremes)
        work = np.empty((2, p.shape[0])) if out is None else out
        m, rest = work[0], work[1]
        lo, hi = _p1_bounds(p.dtype, clip)
        p1 = p if p.ndim == 1 else p[:, 1]
        if extremes is not None and extremes[0] >= lo and extremes[1] <= hi:
            np.copyto(m, p1)  # P(class 1), within its bounds, as float64
        else:
            np.maximum(p1, lo, out=m)  # in the input precision
            np.minimum(m, hi, out=m)  # P(class 1) within its bounds, as float64
        np.subtract(1.0, m, out=rest)  # 1 − p₁, exact for float32 p₁ and for p₁ ≥ 1/2
        np.divide(m, rest, out=m)
        return np.log(m, out=m)  # log p₁ − log(1 − p₁)
    s = as_float(s)
    m = np.empty(s.shape[0]) if out is None else out[0]
    if s.ndim == 2 and s.shape[1] == 2:
        return np.subtract(s[:, 1], s[:, 0], out=m, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"binary logits must have shape (N,) or (N, 2), got shape {s.shape}")
    np.copyto(m, s)
    return m


def scores_to_logits(y_score: Any, scores: ScoreType, clip: float | None = None) -> np.ndarray:
    """Logits (N, K) from logits (N, K), binary margins (N,) z₁ − z₀, or probabilities
    (``scores="proba"``: (N, K), or (N,) = P(class 1)); float32 stays float32."""
    check_score_type(scores)
    s = to_numpy(y_score)
    if scores == "proba":
        return proba_to_logits(s, clip)
    s = as_float(s)
    if s.ndim == 1:  # margin m = z₁ − z₀ -> (0, m): the same softmax
        out = np.zeros((s.shape[0], 2), dtype=s.dtype)
        out[:, 1] = s
        return out
    if s.ndim != 2:
        raise ValueError(f"logits must have shape (N,) or (N, K), got shape {s.shape}")
    return s


def class_positions(classes: np.ndarray, y: Any) -> np.ndarray:
    """Positions of the labels ``y`` in ``classes`` (an estimator's ``classes_``, which need
    not be sorted): the class codes 0..K−1 the metrics take. Unknown labels raise
    ValueError naming them."""
    classes = np.asarray(classes)
    y = np.asarray(y)
    order = np.argsort(classes, kind="stable")
    pos = np.minimum(np.searchsorted(classes[order], y), len(classes) - 1)
    codes = order[pos]
    unknown = classes[codes] != y
    if np.any(unknown):
        raise ValueError(
            f"y contains labels the estimator was not fitted on: "
            f"{np.unique(y[unknown])[:10].tolist()} (classes_: {classes.tolist()})"
        )
    return codes
