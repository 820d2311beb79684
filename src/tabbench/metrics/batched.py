"""All per-epoch metrics of many epochs at once: what the recorder calls after every chunk.

``stopping_metrics_batched`` computes every stopping metric of DESIGN.md §4 for E epochs of
validation logits; ``test_metrics_batched`` the raw and post-hoc-TS test metrics. Both process
epochs in blocks (see :func:`tabbench.metrics.temperature.epoch_blocks`), share one softmax
evaluation among the metrics that need the same β, fit the E full-data temperatures and the
5·E cross-validation temperatures with the vectorised Newton solver (each fold starts with a
free Newton step from the full-data optimum), and sort each (epoch, class) row of scores once
for both AUROC and the isotonic fit.

Non-finite logits in an epoch (diverged training) give NaN for every metric of that epoch and
β = NaN; other epochs of the same call are unaffected, and no exception is raised.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import StratifiedKFold

from tabbench.metrics._checks import as_labels, check_batched
from tabbench.metrics.losses import ECE_BINS
from tabbench.metrics.ranking import auroc_rows, isotonic_rows, sort_rows, unsort
from tabbench.metrics.temperature import (
    _SENTINEL,
    Prepared,
    SampleStats,
    Workspace,
    _initial_log_beta,
    epoch_blocks,
    fit_log_beta_prepared,
    newton_log_beta,
    prepare,
    sample_stats,
    smoothed_brier,
    smoothed_nll,
    smoothed_pmax,
    weighted_derivatives,
)
from tabbench.records import STOPPING_METRIC_IDS, TEST_METRIC_IDS

#: Cross-validated TS-refinement (``ts_ref_cv5``): stratified, shuffled, seed 0, as probmetrics.
CV_FOLDS = 5
CV_SEED = 0


def cv_folds(y: np.ndarray, n_splits: int = CV_FOLDS, seed: int = CV_SEED) -> np.ndarray | None:
    """Fold id (N,) of every sample under StratifiedKFold(n_splits, shuffle=True, seed), or None
    when the split is impossible (fewer than n_splits samples, or every class too small)."""
    folds = np.full(len(y), -1, dtype=np.int64)
    skf = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "least populated class" warning
            for f, (_, held_out) in enumerate(skf.split(np.zeros(len(y)), y)):
                folds[held_out] = f
    except ValueError:
        return None
    return folds


_fold_cache: dict[tuple[int, int], np.ndarray | None] = {}


def _cached_folds(y: np.ndarray) -> np.ndarray | None:
    """The recorder calls us once per chunk with the same labels: split them only once."""
    key = (len(y), hash(y.tobytes()))
    if key not in _fold_cache:
        if len(_fold_cache) > 8:
            _fold_cache.clear()
        _fold_cache[key] = cv_folds(y)
    return _fold_cache[key]


# ---------------------------------------------------------------------------------------------


def stopping_metrics_batched(
    logits_ENK: np.ndarray, y: np.ndarray, beta0: np.ndarray | float | None = None
) -> dict[str, np.ndarray]:
    """Every stopping metric (records.STOPPING_METRIC_IDS) for each of E epochs, plus ``beta``.

    logits_ENK: (E, N, K) validation logits (float32/64, binary as K = 2); y: (N,) class codes.
    beta0: optional warm start for the TS fits (scalar or (E,)), e.g. the last β of the
    previous chunk; inside the call each block of epochs starts from the previous block's β.
    Returns {id: (E,) float64} for all ids, and ``beta`` (E,): the TS inverse temperature fit
    on these logits (the same fit that ``ts_ref`` scores).
    """
    z, labels = check_batched(logits_ENK, y)
    n_epochs = z.shape[0]
    out = {m: np.full(n_epochs, np.nan) for m in (*STOPPING_METRIC_IDS, "beta")}
    folds = _cached_folds(labels)
    b_init = _initial_log_beta(beta0, n_epochs)
    b_prev: float | None = None
    for sl in epoch_blocks(z.shape):
        prep = prepare(z[sl], labels)
        b0 = b_init[sl] if b_init is not None else b_prev
        res = _stopping_block(prep, folds, b0)
        for m, v in res.items():
            out[m][sl] = np.where(prep.finite, v, np.nan)
        finite_b = np.log(res["beta"][prep.finite])
        if finite_b.size:
            b_prev = float(finite_b[-1])
    return out


def _stopping_block(prep: Prepared, folds: np.ndarray | None, b0) -> dict[str, np.ndarray]:
    n, k = prep.n_samples, prep.n_classes
    raw = sample_stats(prep, np.ones(prep.n_epochs), Workspace())
    res = {
        "logloss": raw.nll.mean(axis=1, dtype=np.float64),
        "brier": smoothed_brier(raw, k, None).mean(axis=1),
        "error": 1.0 - prep.top_is_y.mean(axis=1),
    }

    b, ts = fit_log_beta_prepared(prep, b0, Workspace())
    res["beta"] = np.exp(b)
    res["ts_ref"] = smoothed_nll(ts, k, n).mean(axis=1)
    res["ts_ref_brier"] = smoothed_brier(ts, k, n).mean(axis=1)
    res["ts_ref_cv5"] = _ts_ref_cv(prep, folds, b, ts)

    auc, ir = _rank_metrics(prep, raw)
    res["auroc"] = 1.0 - auc
    res["ir_ref"] = ir
    return res


def _ts_ref_cv(prep: Prepared, folds, b_all: np.ndarray, ts_all: SampleStats) -> np.ndarray:
    """TS fit on 4/5, smoothed log loss on the held-out 1/5, averaged over all N samples.

    Each fold's Newton search starts at the full-data optimum with a step computed from the
    full-data per-sample derivatives (free), so it typically needs 1–2 evaluations.
    """
    if folds is None:
        return np.full(prep.n_epochs, np.nan)
    total = np.zeros(prep.n_epochs)
    ws = Workspace()
    for f in range(CV_FOLDS):
        train = folds != f
        n_fit = int(train.sum())
        g0 = np.sum(ts_all.g, axis=1, dtype=np.float64, where=train[None, :]) / n_fit
        h0 = np.sum(ts_all.h, axis=1, dtype=np.float64, where=train[None, :]) / n_fit
        _, st = newton_log_beta(
            weighted_derivatives(prep, train, ws), b_all, first_derivs=(g0, h0)
        )
        total += smoothed_nll(st, prep.n_classes, n_fit)[:, ~train].sum(axis=1)
    return total / prep.n_samples


def _rank_metrics(prep: Prepared, raw: SampleStats) -> tuple[np.ndarray, np.ndarray]:
    """AUROC (one-vs-rest, macro over classes present) and isotonic refinement ``ir_ref``."""
    y, n, k = prep.y, prep.n_samples, prep.n_classes
    a, c = n / (n + 1.0), 1.0 / ((n + 1.0) * k)
    if prep.binary:
        rows = sort_rows(prep.diff.astype(np.float64))
        sorted_pos = (y == 1)[rows.order]
        auc = auroc_rows(rows, sorted_pos)
        p1 = unsort(isotonic_rows(rows, sorted_pos), rows)
        py = np.where(y == 1, p1, 1.0 - p1)
    else:
        counts = np.bincount(y, minlength=k)
        present = np.flatnonzero(counts)
        rows, sorted_pos = _class_rows(prep, _log_proba(prep, raw), present)
        auc_ek = auroc_rows(rows, sorted_pos).reshape(prep.n_epochs, len(present))
        auc = auc_ek.mean(axis=1) if len(present) >= 2 else np.full(prep.n_epochs, np.nan)
        cal = unsort(isotonic_rows(rows, sorted_pos), rows).reshape(
            prep.n_epochs, len(present), n
        )
        denom = cal.sum(axis=1)
        slot = np.searchsorted(present, y)  # y's row among the present classes
        cal_y = np.take_along_axis(cal, np.broadcast_to(slot, (prep.n_epochs, 1, n)), axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            py = np.where(denom > 0, cal_y[:, 0] / denom, 1.0 / k)
    with np.errstate(divide="ignore"):
        ir = -np.log(a * py + c).mean(axis=1)
    return auc, ir


def _log_proba(prep: Prepared, st: SampleStats, beta: np.ndarray | None = None) -> np.ndarray:
    """log softmax(β z) (E, K, N) float64 from the prepared (centred) logits."""
    zc = np.where(prep.zc == _SENTINEL, np.float32(0), prep.zc).astype(np.float64)
    if beta is not None:
        zc *= beta[:, None, None]
    zc -= st.log_z[:, None, :]
    return zc


def _class_rows(prep: Prepared, log_p: np.ndarray, classes: np.ndarray):
    """Sort one-vs-rest rows (epoch, class) of log-probabilities for the given classes."""
    scores = log_p[:, classes, :].reshape(-1, prep.n_samples)
    rows = sort_rows(scores)
    row_class = np.tile(classes, prep.n_epochs)
    sorted_pos = prep.y[rows.order] == row_class[:, None]
    return rows, sorted_pos


# ---------------------------------------------------------------------------------------------


def test_metrics_batched(
    test_logits_ENK: np.ndarray, y_test: np.ndarray, beta_E: np.ndarray, n_fit: int
) -> dict[str, np.ndarray]:
    """Test metrics (records.TEST_METRIC_IDS) of E epochs, raw and after post-hoc TS.

    ``beta_E`` (E,) are the inverse temperatures fit on validation at the same epochs and
    ``n_fit`` = N_val the number of samples they were fit on (Laplace smoothing
    n/(n+1)·p + 1/((n+1)K), DESIGN.md §4). Keys: ``<m>`` and ``<m>_ts`` for m in logloss,
    brier, error, auroc (= 1 − AUROC, lower is better, like the stopping metric), ece.
    Epochs with non-finite test logits get NaN everywhere; a non-finite or non-positive β
    gives NaN for that epoch's ``*_ts`` metrics.
    """
    z, labels = check_batched(test_logits_ENK, y_test)
    n_epochs = z.shape[0]
    beta_E = np.asarray(beta_E, dtype=np.float64).reshape(-1)
    if beta_E.shape[0] != n_epochs:
        raise ValueError(f"beta_E has {beta_E.shape[0]} entries for {n_epochs} epochs")
    if int(n_fit) < 1:
        raise ValueError(f"n_fit must be the (positive) number of validation samples, got {n_fit}")
    as_labels(labels, z.shape[1], z.shape[2])
    keys = [m for base in TEST_METRIC_IDS for m in (base, f"{base}_ts")]
    out = {m: np.full(n_epochs, np.nan) for m in keys}
    for sl in epoch_blocks(z.shape):
        prep = prepare(z[sl], labels)
        beta = beta_E[sl]
        beta_ok = np.isfinite(beta) & (beta > 0)
        res = _test_block(prep, np.where(beta_ok, beta, 1.0), int(n_fit))
        for m, v in res.items():
            ok = prep.finite & beta_ok if m.endswith("_ts") else prep.finite
            out[m][sl] = np.where(ok, v, np.nan)
    return out


def _test_block(prep: Prepared, beta: np.ndarray, n_fit: int) -> dict[str, np.ndarray]:
    k = prep.n_classes
    raw = sample_stats(prep, np.ones(prep.n_epochs), Workspace())
    ts = sample_stats(prep, beta, Workspace())
    err = 1.0 - prep.top_is_y.mean(axis=1)
    res = {
        "logloss": raw.nll.mean(axis=1, dtype=np.float64),
        "logloss_ts": smoothed_nll(ts, k, n_fit).mean(axis=1),
        "brier": smoothed_brier(raw, k, None).mean(axis=1),
        "brier_ts": smoothed_brier(ts, k, n_fit).mean(axis=1),
        "error": err,
        "error_ts": err,  # TS (β > 0) and smoothing never change the argmax
        "ece": _ece_rows(smoothed_pmax(raw, k, None), prep.top_is_y),
        "ece_ts": _ece_rows(smoothed_pmax(ts, k, n_fit), prep.top_is_y),
    }
    if prep.binary:
        rows = sort_rows(prep.diff.astype(np.float64))
        auc = auroc_rows(rows, (prep.y == 1)[rows.order])
        res["auroc"] = res["auroc_ts"] = 1.0 - auc  # ranking by β·(z₁ − z₀) is unchanged
    else:
        res["auroc"] = 1.0 - _macro_auroc(prep, _log_proba(prep, raw))
        res["auroc_ts"] = 1.0 - _macro_auroc(prep, _log_proba(prep, ts, beta))
    return res


def _macro_auroc(prep: Prepared, log_p: np.ndarray) -> np.ndarray:
    present = np.flatnonzero(np.bincount(prep.y, minlength=prep.n_classes))
    if len(present) < 2:
        return np.full(prep.n_epochs, np.nan)
    rows, sorted_pos = _class_rows(prep, log_p, present)
    return auroc_rows(rows, sorted_pos).reshape(prep.n_epochs, len(present)).mean(axis=1)


def _ece_rows(conf: np.ndarray, correct: np.ndarray, n_bins: int = ECE_BINS) -> np.ndarray:
    """Top-label ECE (E,) of confidences (E, N), same binning as ``losses.ece_proba``."""
    n_epochs, n = conf.shape
    idx = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    idx += n_bins * np.arange(n_epochs)[:, None]
    gaps = np.bincount(
        idx.ravel(), weights=(correct - conf).ravel(), minlength=n_epochs * n_bins
    ).reshape(n_epochs, n_bins)
    return np.abs(gaps).sum(axis=1) / n
