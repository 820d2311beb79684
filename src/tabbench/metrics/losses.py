"""Proper losses and scores of one set of logits (N, K), written for clarity in float64.

These are the *definitions* (docs/design.md §4). The per-epoch recorder uses the vectorised
implementations in :mod:`tabbench.metrics.batched`, which the tests check against these.
All functions take logits (binary = K = 2 columns) and integer labels; they raise
``ValueError`` on non-finite logits (a diverged model has no loss).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabbench.core.extras import require_extra
from tabbench.metrics._checks import check_single

#: ECE bins (docs/design.md §4: 15 equal-width bins on the top-label confidence).
ECE_BINS = 15

#: The test metrics recorded at every epoch (docs/design.md §4), each defined below (``auroc``
#: as :func:`one_minus_auroc`, lower is better). The runs files store them as ``test_<m>`` and
#: ``test_<m>_ts`` (:mod:`tabbench.models.runs_schema`); they are defined here, beside their
#: definitions, so that the kernels computing them need not import the file schema.
TEST_METRIC_IDS: tuple[str, ...] = ("logloss", "brier", "error", "auroc", "ece")


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax(z) along the last axis, in float64 (max-shifted: no overflow).

    Parameters
    ----------
    logits : array-like of shape (..., n_classes)
        Logits.

    Returns
    -------
    ndarray of the same shape
        The log-probabilities.

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.metrics import log_softmax
    >>> log_softmax(np.array([[0.0, 0.0], [1000.0, 0.0]])).round(4).tolist()
    [[-0.6931, -0.6931], [0.0, -1000.0]]
    """
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def log_proba_ranking(logits: np.ndarray) -> np.ndarray:
    """log softmax(z) computed as z_k − max z − log1p(Σ_{j≠argmax} exp(z_j − max z)).

    Same values as :func:`log_softmax`, but the log-probability of a confident top class stays
    distinct from 0 (log(1 + 1e-20) rounds to 0, log1p does not), so rankings of confident
    predictions (AUROC, isotonic regression) do not collapse into ties.
    """
    z = np.asarray(logits, dtype=np.float64)
    zc = z - z.max(axis=-1, keepdims=True)
    w = np.exp(zc)
    top = zc.argmax(axis=-1)[..., None]
    np.put_along_axis(w, top, 0.0, axis=-1)
    return zc - np.log1p(w.sum(axis=-1, keepdims=True))


def softmax(logits: np.ndarray) -> np.ndarray:
    """softmax(z) along the last axis, in float64 (through :func:`log_softmax`).

    Parameters
    ----------
    logits : array-like of shape (..., n_classes)
        Logits.

    Returns
    -------
    ndarray of the same shape
        The probabilities.

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.metrics import softmax
    >>> softmax(np.array([[0.0, np.log(3.0)]])).round(4)
    array([[0.25, 0.75]])
    """
    return np.exp(log_softmax(logits))


def laplace_coefs(n: Any, k: int) -> tuple[Any, Any]:
    """(a, c) of the Laplace smoothing q = a·p + c of K-class probabilities fit on ``n``
    samples: a = n/(n+1), c = 1/((n+1)·K); ``n`` a number or an array of them (one per
    held-out fold). The one definition: :func:`laplace_smooth` and the fast TS-refinement
    kernels (:mod:`tabbench.metrics.ts_smoothing`, :mod:`tabbench.metrics.batched`) use it."""
    return n / (n + 1.0), 1.0 / ((n + 1.0) * k)


def laplace_smooth(p: np.ndarray, n: int) -> np.ndarray:
    """Laplace smoothing of probabilities fit on ``n`` samples (paper App. E):
    q = n/(n+1)·p + 1/((n+1)·K).

    Why: a calibrator fit on n points must not output exact zeros, or one unseen mistake costs
    an infinite log loss; this is the posterior mean under one pseudo-count spread over K classes.

    Parameters
    ----------
    p : array-like of shape (..., n_classes)
        Probabilities.
    n : int
        The number of samples they were fit on (≥ 1).

    Returns
    -------
    ndarray of the same shape
        The smoothed probabilities.

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.metrics import laplace_smooth
    >>> laplace_smooth(np.array([[1.0, 0.0]]), n=9)  # 9/10 · p + 1/20
    array([[0.95, 0.05]])
    """
    p = np.asarray(p, dtype=np.float64)
    if n < 1:
        raise ValueError(f"laplace_smooth needs n >= 1 fit samples, got {n}")
    a, c = laplace_coefs(n, p.shape[-1])
    return a * p + c


# ---- losses on probabilities (used for smoothed / calibrated outputs) ------------------------


def logloss_proba(p: np.ndarray, y: np.ndarray) -> float:
    """Mean −log p_y. Zero probabilities give +inf (no clipping: smoothing is the remedy)."""
    p = np.asarray(p, dtype=np.float64)
    py = p[np.arange(len(y)), y]
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log(py)))


def brier_proba(p: np.ndarray, y: np.ndarray) -> float:
    """Multiclass Brier score Σ_k (p_k − 1[y=k])², averaged over samples (sum over classes,
    as in the paper: twice sklearn's binary ``brier_score_loss``)."""
    p = np.asarray(p, dtype=np.float64)
    onehot = np.zeros_like(p)
    onehot[np.arange(len(y)), y] = 1.0
    return float(np.mean(np.sum((p - onehot) ** 2, axis=-1)))


def ece_proba(p: np.ndarray, y: np.ndarray, n_bins: int = ECE_BINS) -> float:
    """Top-label expected calibration error with ``n_bins`` equal-width bins.

    Bin b holds confidences in [b/n_bins, (b+1)/n_bins) (the last bin includes 1), like
    torchmetrics; ECE = Σ_b |Σ_{i∈b} (1[ŷ_i = y_i] − conf_i)| / N. Also for binary problems we
    use the top label (docs/design.md §4), not the positive class as torchmetrics' binary task does.
    """
    p = np.asarray(p, dtype=np.float64)
    conf = p.max(axis=-1)
    correct = (p.argmax(axis=-1) == y).astype(np.float64)
    idx = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    gaps = np.bincount(idx, weights=correct - conf, minlength=n_bins)
    return float(np.abs(gaps).sum() / len(y))


def smece_proba(p: np.ndarray, y: np.ndarray) -> float:
    """Top-label smooth ECE (Błasiok & Nakkiran 2023), as reported by the paper's tables:
    ``relplot.smECE`` (its authors' implementation, with their automatic kernel bandwidth) of
    the (confidence, correct) pairs of ``relplot.multiclass_logits_to_confidences``.

    Why next to :func:`ece_proba`: binned ECE depends on the bin edges and is biased upwards
    for few samples per bin; smECE is a consistent, bin-free estimate of the same top-label
    miscalibration. relplot is imported here only (it imports seaborn), and comes with the
    ``pipeline`` extra (the diagnostics tables are its only user).
    """
    require_extra("pipeline", "smooth ECE (tabbench.metrics.losses.smece_proba)")
    import relplot  # lazy: optional dependency, the pipeline extra checked above

    conf, correct = relplot.multiclass_logits_to_confidences(
        np.asarray(p, dtype=np.float64), np.asarray(y), probs=True)
    return float(relplot.smECE(conf, correct))


def auroc_scores(scores: np.ndarray, y: np.ndarray) -> float:
    """Macro one-vs-rest AUROC of per-class scores (N, K) (any monotone transform of the
    probabilities gives the same value). Classes absent from ``y`` are left out; with fewer than
    two classes present AUROC is undefined and NaN is returned (no exception).

    Binary (K = 2): the usual AUROC of class 1 (class 0's one-vs-rest AUROC is identical).
    Ties count one half (Mann–Whitney U with mid-ranks).
    """
    from scipy.stats import rankdata  # lazy: scipy.stats takes ~1 s; other losses skip it

    scores = np.asarray(scores, dtype=np.float64)
    n, k = scores.shape
    counts = np.bincount(y, minlength=k)
    if np.count_nonzero(counts) < 2:
        return float("nan")
    classes = [1] if k == 2 else [c for c in range(k) if counts[c] > 0]
    aucs = []
    for c in classes:
        pos = y == c
        n_pos = int(pos.sum())
        ranks = rankdata(scores[:, c])
        aucs.append((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * (n - n_pos)))
    return float(np.mean(aucs))


# ---- losses on logits (the public single-epoch API) -----------------------------------------


def logloss(logits: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log-likelihood −log softmax(z)_y.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        The log loss.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import logloss
    >>> from tabbench.metrics.examples import four_samples
    >>> logits, y = four_samples()
    >>> round(logloss(logits, y), 4)
    0.3657
    """
    z, y = check_single(logits, y)
    return float(-np.mean(log_softmax(z)[np.arange(len(y)), y]))


def brier(logits: np.ndarray, y: np.ndarray) -> float:
    """Multiclass Brier score (sum over classes) of softmax(z).

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        Σ_k (p_k − 1[y = k])², averaged over samples (twice scikit-learn's binary
        ``brier_score_loss``).

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import brier
    >>> from tabbench.metrics.examples import four_samples
    >>> logits, y = four_samples()
    >>> round(brier(logits, y), 4)
    0.2381
    """
    z, y = check_single(logits, y)
    return brier_proba(softmax(z), y)


def error(logits: np.ndarray, y: np.ndarray) -> float:
    """Classification error 1 − accuracy of argmax z (ties: first class, as numpy's argmax).

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        The fraction of samples whose argmax is not their label.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import error
    >>> from tabbench.metrics.examples import four_samples
    >>> logits, y = four_samples()
    >>> round(error(logits, y), 4)
    0.25
    """
    z, y = check_single(logits, y)
    return float(np.mean(z.argmax(axis=-1) != y))


def auroc(logits: np.ndarray, y: np.ndarray) -> float:
    """Plain AUROC (higher is better), macro one-vs-rest on softmax probabilities.

    Binary problems: the AUROC of class 1. Classes absent from ``y`` are left out;
    ties count one half.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        The AUROC; NaN when ``y`` holds fewer than two classes.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import auroc
    >>> from tabbench.metrics.examples import four_samples
    >>> logits, y = four_samples()
    >>> round(auroc(logits, y), 4)
    1.0
    """
    z, y = check_single(logits, y)
    # log-probabilities rank like probabilities but do not saturate at 1.0 in floating point
    return auroc_scores(log_proba_ranking(z), y)


def one_minus_auroc(logits: np.ndarray, y: np.ndarray) -> float:
    """1 − AUROC: the lower-is-better form used as stopping metric ``auroc`` (docs/design.md
    §4).

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        1 − :func:`auroc`.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import one_minus_auroc
    >>> from tabbench.metrics.examples import four_samples
    >>> logits, y = four_samples()
    >>> round(one_minus_auroc(logits, y), 4)
    0.0
    """
    return 1.0 - auroc(logits, y)


def ece(logits: np.ndarray, y: np.ndarray, n_bins: int = ECE_BINS) -> float:
    """Top-label ECE of softmax(z), with ``n_bins`` equal-width bins of the confidence.

    Bin b holds confidences in [b/n_bins, (b+1)/n_bins) (the last bin includes 1), like
    torchmetrics; ECE = Σ_b |Σ_{i∈b} (1[ŷ_i = y_i] − conf_i)| / N, the top label also for
    binary problems (:func:`ece_proba` on the probabilities).

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.
    n_bins : int, default 15
        The number of bins.

    Returns
    -------
    float
        The expected calibration error.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import ece
    >>> from tabbench.metrics.examples import four_samples
    >>> logits, y = four_samples()
    >>> round(ece(logits, y), 4)
    0.2645
    """
    z, y = check_single(logits, y)
    return ece_proba(softmax(z), y, n_bins)
