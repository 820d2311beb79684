"""Input validation shared by every metric entry point.

Bad input must fail loudly (wrong shapes, labels out of range, K = 1) rather than produce a
plausible-looking number. Non-finite logits are *not* rejected here: the single-epoch API
raises on them (see :func:`require_finite`), the batched API turns them into NaN metrics.
"""

from __future__ import annotations

import numpy as np


def as_logits(logits: np.ndarray, ndim: int, name: str = "logits") -> np.ndarray:
    """Return ``logits`` as a float32/float64 array of the given rank with K ≥ 2 classes."""
    arr = np.asarray(logits)
    if arr.ndim != ndim:
        shape = "(N, K)" if ndim == 2 else "(E, N, K)"
        raise ValueError(f"{name} must have shape {shape}, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    if arr.shape[-1] < 2:
        raise ValueError(
            f"{name} need K >= 2 classes (binary problems use K = 2 logits), "
            f"got K = {arr.shape[-1]}"
        )
    if arr.shape[-2] < 1:
        raise ValueError(f"{name} contain no samples")
    return arr


def as_labels(y: np.ndarray, n_samples: int, n_classes: int, name: str = "y") -> np.ndarray:
    """Return integer class codes in ``0..n_classes-1`` as an int64 array of length N."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D class codes, got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise ValueError(f"{name} has {arr.shape[0]} labels but the logits have {n_samples} rows")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold integer class codes, got non-integer values")
    elif not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise ValueError(f"{name} must hold integer class codes, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(
            f"{name} must be class codes in 0..{n_classes - 1}, got range "
            f"[{arr.min()}, {arr.max()}]"
        )
    return arr


def require_finite(logits: np.ndarray) -> None:
    """Single-epoch functions reject non-finite logits (a diverged model has no metric)."""
    if not np.all(np.isfinite(logits)):
        raise ValueError(
            "logits contain NaN or inf; single-epoch metrics are undefined for them "
            "(the batched functions return NaN for such epochs instead)"
        )


def check_single(logits: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate one epoch's logits (N, K) and labels; raise on non-finite logits."""
    z = as_logits(logits, 2)
    labels = as_labels(y, z.shape[0], z.shape[1])
    require_finite(z)
    return z, labels


def check_batched(logits_ENK: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate E epochs of logits (E, N, K) and labels; non-finite values are allowed."""
    z = as_logits(logits_ENK, 3, name="logits_ENK")
    labels = as_labels(y, z.shape[1], z.shape[2])
    return z, labels
