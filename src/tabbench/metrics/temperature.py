"""Temperature scaling (TS): fit the inverse temperature β of softmax(β·z) by minimum NLL.

The estimator, as the public functions :func:`fit_temperature` (one set of logits),
:func:`fit_temperature_batched` (E epochs at once, what the recorder calls after every chunk)
and :func:`fit_temperature_bisection` (the paper's App. E algorithm, the reference the fast
path is tested against). It puts together the two parts that do the work:
:mod:`tabbench.metrics.ts_kernel` (prepared logits and their derivatives at β) and
:mod:`tabbench.metrics.ts_solver` (the safeguarded Newton method on b = log β, vectorised over
epochs, which reaches the bisection's optimum in ~3–6 evaluations instead of 30). Epochs are
processed in blocks (:func:`epoch_blocks`) so that the working arrays stay in cache.
"""

from __future__ import annotations

import numpy as np

from tabbench.metrics._checks import check_batched, check_single
from tabbench.metrics.losses import log_softmax
from tabbench.metrics.ts_kernel import (
    Prepared,
    SampleStats,
    Workspace,
    full_data_evaluator,
    prepare,
    sample_stats,
)
from tabbench.metrics.ts_solver import LOG_BETA_BOUND, solve_log_beta


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

    Epochs with non-finite logits get β = NaN (never an exception).

    Parameters
    ----------
    logits_ENK : array-like of shape (n_epochs, n_samples, n_classes)
        The logits of every epoch on the same samples.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.
    beta0 : float, array-like of shape (n_epochs,) or None, default None
        A warm start, e.g. the previous chunk's last β.

    Returns
    -------
    ndarray of shape (n_epochs,)
        β of every epoch, as :func:`fit_temperature` would fit it on each.

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.metrics import fit_temperature_batched
    >>> from tabbench.metrics.examples import noisy_logits
    >>> z, y = noisy_logits(200, 2, scale=1.0)
    >>> epochs = np.stack([z, 3.0 * z, np.full_like(z, np.nan)])  # the last one diverged
    >>> fit_temperature_batched(epochs, y).round(3)  # 3z needs a third of z's β
    array([1.061, 0.354,   nan])
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
    """Inverse temperature β of one set of logits (N, K): the β minimising the log loss of
    softmax(β z) (exact: the paper's bisection result to ~1e-7).

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        β = 1/T; > 1 sharpens, < 1 softens.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    Logits three times too confident are scaled back by β ≈ 1/3:

    >>> import numpy as np
    >>> from tabbench.metrics import fit_temperature
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(5000, 3))
    >>> y = np.array([rng.choice(3, p=p) for p in np.exp(z) / np.exp(z).sum(1, keepdims=True)])
    >>> round(fit_temperature(3.0 * z, y), 2)
    0.34
    """
    z, labels = check_single(logits, y)
    b, _ = fit_log_beta_prepared(prepare(z[None], labels))
    return float(np.exp(b[0]))


def fit_temperature_bisection(logits: np.ndarray, y: np.ndarray, n_steps: int = 30) -> float:
    """The paper's algorithm (App. E), in plain float64: bisection on the sign of dNLL/dβ over
    b = log β ∈ [−16, 16]. Slow; kept as the reference the fast solver is tested against.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.
    n_steps : int, default 30
        Bisection steps.

    Returns
    -------
    float
        β = 1/T.

    Examples
    --------
    >>> from tabbench.metrics import fit_temperature, fit_temperature_bisection
    >>> from tabbench.metrics.examples import noisy_logits
    >>> logits, y = noisy_logits(300, 3, scale=4.0)
    >>> abs(fit_temperature_bisection(logits, y) - fit_temperature(logits, y)) < 1e-6
    True
    """
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
