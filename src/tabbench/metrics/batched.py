"""All per-epoch metrics of many epochs at once: what the recorder calls after every chunk.

``fused_stopping_metrics`` computes every built-in stopping metric of docs/design.md §4 for E epochs
of validation logits (the registry's :func:`~tabbench.metrics.registry.stopping_metrics_batched`
calls it once per chunk for all of them); ``metrics_on_test_batched`` the raw and post-hoc-TS test
metrics. Both process
epochs in blocks (see :func:`tabbench.metrics.temperature.epoch_blocks`), share one softmax
evaluation among the metrics that need the same β, and sort each (epoch, class) row of scores
once for both AUROC and the isotonic fit (binary: the test AUROC is that of z₁ − z₀, which
β > 0 does not reorder, so it serves raw and TS alike; multiclass log-probabilities
β z_k − log Z(β) do reorder across samples, so raw and TS are sorted separately).

Where the time goes, and what keeps it small (per epoch, ~3K validation samples; the recorder
runs after every boosting round, and XGBoost rounds take ~1 ms):

* TS fits: the E full-data fits are solved by the vectorised safeguarded Newton method of
  :mod:`tabbench.metrics.ts_solver`, evaluating only the problems not yet finished, with a
  derivative-only pass (the losses are computed once, at the optimum), and ending one
  evaluation early with an accepted short Newton step.
* CV fits (``ts_ref_cv5``): the 5·E fold optima come from a Taylor model of each fold's
  derivative around its epoch's full-data optimum (:mod:`tabbench.metrics.fold_taylor`): one
  pass for per-sample derivatives up to 5th order, then scalar arithmetic, with an error
  estimate that sends doubtful problems (small sets, large shifts) to the exact Newton solver.
  Binary held-out folds are then scored in one float64 pass over all folds.
* Ranking: rows are sorted by packed integer keys (:func:`tabbench.metrics.ranking.sort_rows`)
  and ties are handled sparsely; binary ``ir_ref`` is averaged in sorted order (no unsort).

Non-finite logits in an epoch (diverged training) give NaN for every metric of that epoch and
β = NaN; other epochs of the same call are unaffected, and no exception is raised.
"""

from __future__ import annotations

import numpy as np

from tabbench.metrics._checks import as_labels, check_batched
from tabbench.metrics.fold_taylor import fold_optima
from tabbench.metrics.folds import CV_FOLDS, cv_folds
from tabbench.metrics.losses import ECE_BINS, TEST_METRIC_IDS, laplace_coefs
from tabbench.metrics.ranking import auroc_rows, isotonic_rows, sort_rows, unsort
from tabbench.metrics.temperature import epoch_blocks, fit_log_beta_prepared, initial_log_beta
from tabbench.metrics.ts_kernel import (
    Prepared,
    SampleStats,
    Workspace,
    derivative_sums,
    prepare,
    sample_stats,
)
from tabbench.metrics.ts_smoothing import (
    binary_smoothed_miss,
    nll_from_miss,
    smoothed_brier,
    smoothed_nll,
    smoothed_pmax,
)
from tabbench.metrics.ts_solver import solve_log_beta

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


def fused_stopping_metrics(
    logits_ENK: np.ndarray, y: np.ndarray, beta0: np.ndarray | float | None = None
) -> dict[str, np.ndarray]:
    """The built-in stopping metrics for each of E epochs in one fused pass, plus ``beta``.

    The built-in entries of the registry (:mod:`tabbench.metrics.builtin`) are outputs of this
    kernel (:class:`tabbench.metrics.registry.FusedOutput`): the recorder calls it once per
    chunk for all of them, through :func:`tabbench.metrics.registry.stopping_metrics_batched`.

    logits_ENK: (E, N, K) validation logits (float32/64, binary as K = 2); y: (N,) class codes.
    beta0: optional warm start for the TS fits (scalar or (E,)), e.g. the last β of the
    previous chunk; inside the call each block of epochs starts from the previous block's β.
    Returns {key: (E,) float64} for every key :func:`_stopping_block` computes, and ``beta``
    (E,): the TS inverse temperature fit on these logits (the same fit that ``ts_ref`` scores).
    """
    z, labels = check_batched(logits_ENK, y)
    n_epochs = z.shape[0]
    out: dict[str, np.ndarray] = {}
    folds = _cached_folds(labels)
    if folds is not None:  # order samples by fold: folds become contiguous column blocks
        perm = np.argsort(folds, kind="stable")
        labels = labels[perm]
        bounds = np.searchsorted(folds[perm], np.arange(CV_FOLDS + 1))
    b_init = initial_log_beta(beta0, n_epochs)
    b_prev: float | None = None
    if b_init is not None and np.ndim(beta0) == 0:  # a scalar starts the first block only
        b_prev, b_init = float(b_init[0]), None
    ws = (Workspace(), Workspace(), Workspace())  # raw, full-data TS, CV folds; reused by blocks
    for sl in epoch_blocks(z.shape):
        zb = z[sl] if folds is None else np.take(z[sl], perm, axis=1)  # C-contiguous
        prep = prepare(zb, labels)
        b0 = b_init[sl] if b_init is not None else b_prev
        res = _stopping_block(prep, None if folds is None else bounds, b0, ws)
        for m, v in res.items():
            out.setdefault(m, np.full(n_epochs, np.nan))[sl] = np.where(prep.finite, v, np.nan)
        finite_b = np.log(res["beta"][prep.finite])
        if finite_b.size:
            b_prev = float(finite_b[-1])
    return out


def _stopping_block(
    prep: Prepared, bounds: np.ndarray | None, b0, ws: tuple[Workspace, ...]
) -> dict[str, np.ndarray]:
    n, k = prep.n_samples, prep.n_classes
    raw = sample_stats(prep, np.ones(prep.n_epochs), ws[0], derivs=False)
    res = {
        "logloss": raw.nll.mean(axis=1, dtype=np.float64),
        "brier": smoothed_brier(raw, k, None).mean(axis=1, dtype=np.float64),
        "error": 1.0 - prep.top_is_y.mean(axis=1),
    }

    b, ts = fit_log_beta_prepared(prep, b0, ws[1])
    res["beta"] = np.exp(b)
    res["ts_ref"] = smoothed_nll(ts, k, n).mean(axis=1, dtype=np.float64)
    res["ts_ref_brier"] = smoothed_brier(ts, k, n).mean(axis=1, dtype=np.float64)
    res["ts_ref_cv5"] = _ts_ref_cv(prep, bounds, b, ts, ws[2])

    auc, ir = _rank_metrics(prep, raw)
    res["auroc"] = 1.0 - auc
    res["ir_ref"] = ir
    return res


def _ts_ref_cv(
    prep: Prepared,
    bounds: np.ndarray | None,
    b_all: np.ndarray,
    ts_all: SampleStats,
    ws: Workspace,
) -> np.ndarray:
    """TS fit on 4/5, smoothed log loss on the held-out 1/5, averaged over all N samples.

    Samples are ordered by fold (fold f = columns bounds[f]:bounds[f+1]). The 5·E fits are
    problems f·E + e (fold-major). Most are solved by the Taylor model of
    :mod:`tabbench.metrics.fold_taylor` around the epoch's full-data optimum (no pass over the
    data per fold); the rest (small sets, large shifts) by the exact safeguarded Newton method,
    as one batch, each starting at the full-data optimum with a free first step (the fold's
    derivative sums there are known). Each fold is then scored on its held-out 1/5.
    """
    if bounds is None:
        return np.full(prep.n_epochs, np.nan)
    n_ep, n = prep.n_epochs, prep.n_samples
    n_folds = len(bounds) - 1
    held = [slice(int(bounds[f]), int(bounds[f + 1])) for f in range(n_folds)]
    n_fit = np.array([n - (h.stop - h.start) for h in held], dtype=np.float64)
    b, ok = fold_optima(prep, bounds, b_all, ts_all, ws)
    if not ok.all():
        pending = np.flatnonzero(~ok)
        b[pending] = _exact_fold_optima(prep, held, n_fit, b_all, ts_all, ws, pending)
    beta = np.exp(b).reshape(n_folds, n_ep)
    if prep.binary:
        return _binary_held_out_nll(prep.margin, beta, bounds, n_fit, ws).sum(axis=1) / n
    total = np.zeros(n_ep)
    for f, h in enumerate(held):
        st = sample_stats(prep.columns(h), beta[f], ws, derivs=False)
        total += smoothed_nll(st, prep.n_classes, int(n_fit[f])).sum(axis=1, dtype=np.float64)
    return total / n


def _binary_held_out_nll(
    margin: np.ndarray, beta: np.ndarray, bounds: np.ndarray, n_fit: np.ndarray, ws: Workspace
) -> np.ndarray:
    """Per-sample −log q_y (E, N) float64 of each fold's held-out samples at its own β_f,
    q = a_f σ(β_f m) + c_f smoothed with the fold's training size (binary margins m).

    One float64 pass over all folds at once: 1 − q_y = a σ(−βm) + c and −log q_y =
    −log1p(−(1 − q_y)) is accurate at both ends in float64 (q_y ≥ c ≥ 1/(2(n+1)) keeps
    1 − (1 − q_y) to ~1e-12 relative), so no branch for confident or wrong samples is needed.
    """
    counts = np.diff(bounds)
    out = ws.get("held_nll", margin.shape, np.float64)
    # each fold at its own β_f, smoothed with its own training size (docs/design.md §4)
    binary_smoothed_miss(margin, np.repeat(beta.T, counts, axis=1), np.repeat(n_fit, counts),
                         out=out)
    return nll_from_miss(out)


def _column_sums(x: np.ndarray, exclude: slice | None = None) -> np.ndarray:
    """Row sums of (E, N) float32 accumulated in float64, optionally without a column block."""
    total = x.sum(axis=1, dtype=np.float64)
    if exclude is not None:
        total -= x[:, exclude].sum(axis=1, dtype=np.float64)
    return total


def _exact_fold_optima(
    prep: Prepared,
    held: list[slice],
    n_fit: np.ndarray,
    b_all: np.ndarray,
    ts_all: SampleStats,
    ws: Workspace,
    problems: np.ndarray,
) -> np.ndarray:
    """Fold optima of the fold-major ``problems`` (f·E + e) by the exact Newton solver, which
    evaluates each fold's derivative sums over its 4/5 of the samples."""
    n_ep, n = prep.n_epochs, prep.n_samples
    fold_of, epoch_of = problems // n_ep, problems % n_ep
    g0, h0 = np.empty(problems.size), np.empty(problems.size)
    for f in np.unique(fold_of):
        sel = np.flatnonzero(fold_of == f)
        rows = epoch_of[sel]
        g0[sel] = _column_sums(ts_all.g[rows], held[f]) / n_fit[f]
        h0[sel] = _column_sums(ts_all.h[rows], held[f]) / n_fit[f]
    zy_fit = None
    if not prep.binary:
        zy_all = prep.zy.sum(axis=1, dtype=np.float64)
        zy_fit = [zy_all - prep.zy[:, h].sum(axis=1, dtype=np.float64) for h in held]

    def evaluate(beta: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g, h = np.empty(idx.size), np.empty(idx.size)
        fold, epoch = fold_of[idx], epoch_of[idx]
        for f in np.unique(fold):
            sel = np.flatnonzero(fold == f)
            rows = epoch[sel]
            rows_arg = None if rows.size == n_ep and (rows == np.arange(n_ep)).all() else rows
            zero = None if prep.binary else np.zeros(rows.size)
            gs = hs = 0.0
            for cols in (slice(0, held[f].start), slice(held[f].stop, n)):  # the fold's 4/5
                if cols.stop > cols.start:
                    gp, hp = derivative_sums(prep, rows_arg, cols, beta[sel], ws, zero)
                    gs, hs = gs + gp, hs + hp
            if zy_fit is not None:  # Σ (E_p[z] − z_y) = Σ E_p[z] − Σ z_y
                gs = gs - zy_fit[f][rows]
            g[sel], h[sel] = gs / n_fit[f], hs / n_fit[f]
        return g, h

    return solve_log_beta(evaluate, b_all[epoch_of], first_derivs=(g0, h0))


def _rank_metrics(prep: Prepared, raw: SampleStats) -> tuple[np.ndarray, np.ndarray]:
    """AUROC (one-vs-rest, macro over classes present) and isotonic refinement ``ir_ref``.

    ir_ref follows sklearn's ``CalibratedClassifierCV(method="isotonic")`` on the fixed
    probabilities, restricted like probmetrics to the classes present in y: their
    probabilities are renormalised, calibrated (two present classes: the binary way, one
    isotonic fit on the second class), absent classes get probability 0, and the result is
    Laplace-smoothed over all K classes. When every class is present, the (epoch, class) rows
    are sorted once for both AUROC and the isotonic fits.
    """
    y, n, k = prep.y, prep.n_samples, prep.n_classes
    a, c = laplace_coefs(n, k)
    if prep.binary:
        rows = sort_rows(prep.diff)
        sorted_pos = (y == 1)[rows.order]
        auc = auroc_rows(rows, sorted_pos)
        # the log loss is a mean over samples: p_y in sorted order, no need to unsort
        py = isotonic_rows(rows, sorted_pos)  # p_1, then p_y in place
        np.subtract(1.0, py, out=py, where=~sorted_pos)
    else:
        present = np.flatnonzero(np.bincount(y, minlength=k))
        log_p = _log_proba(prep, raw)
        if len(present) == k:
            rows, sorted_pos = _class_rows(prep, log_p, present)
            auc = _mean_auroc(rows, sorted_pos, prep.n_epochs, len(present))
            py = _multiclass_isotonic_py(prep, rows, sorted_pos, present)
        else:
            rows, sorted_pos = _class_rows(prep, log_p, present)
            auc = _mean_auroc(rows, sorted_pos, prep.n_epochs, len(present))
            log_p = log_p[:, present]  # renormalise over the present classes
            log_p -= _logsumexp(log_p, axis=1)[:, None, :]
            if len(present) == 1:
                py = np.ones((prep.n_epochs, n))
            elif len(present) == 2:
                second = y == present[1]
                rows = sort_rows(log_p[:, 1])
                py = _binary_isotonic_py(rows, second[rows.order], second)
            else:
                rows, sorted_pos = _class_rows(prep, log_p, np.arange(len(present)), present)
                py = _multiclass_isotonic_py(prep, rows, sorted_pos, present)
    py *= a
    py += c
    with np.errstate(divide="ignore"):
        np.log(py, out=py)
    return auc, -py.mean(axis=1)


def _mean_auroc(rows, sorted_pos, n_epochs: int, n_present: int) -> np.ndarray:
    if n_present < 2:
        return np.full(n_epochs, np.nan)
    return auroc_rows(rows, sorted_pos).reshape(n_epochs, n_present).mean(axis=1)


def _binary_isotonic_py(rows, sorted_pos: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """p_y (E, N) after one isotonic fit of the positive class (the other gets 1 − p)."""
    p1 = unsort(isotonic_rows(rows, sorted_pos), rows)
    return np.where(positive, p1, 1.0 - p1)


def _multiclass_isotonic_py(prep: Prepared, rows, sorted_pos, classes: np.ndarray) -> np.ndarray:
    """p_y (E, N) after one-vs-rest isotonic fits of ``classes``, renormalised (uniform when
    every fit gives 0, as sklearn)."""
    n_epochs, n = prep.n_epochs, prep.n_samples
    cal = unsort(isotonic_rows(rows, sorted_pos), rows).reshape(n_epochs, len(classes), n)
    denom = cal.sum(axis=1)
    slot = np.searchsorted(classes, prep.y)  # y's row among the calibrated classes
    cal_y = np.take_along_axis(cal, np.broadcast_to(slot, (n_epochs, 1, n)), axis=1)[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, cal_y / denom, 1.0 / len(classes))


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _log_proba(prep: Prepared, st: SampleStats, beta: np.ndarray | None = None) -> np.ndarray:
    """log softmax(β z) (E, K, N) float64 from the prepared (centred) logits."""
    zc = prep.zc.astype(np.float64)
    np.put_along_axis(zc, prep.argmax[:, None, :], 0.0, axis=1)  # the sentinel's true value
    if beta is not None:
        zc *= beta[:, None, None]
    zc -= st.log_z[:, None, :]
    return zc


def _class_rows(
    prep: Prepared, log_p: np.ndarray, columns: np.ndarray, labels: np.ndarray | None = None
):
    """Sort one-vs-rest rows (epoch, class) of log-probabilities: ``log_p[:, columns]``
    scored against the class codes ``labels`` (default: the same as ``columns``)."""
    if len(columns) == log_p.shape[1] and (columns == np.arange(len(columns))).all():
        scores = log_p.reshape(-1, prep.n_samples)  # a view: every class is scored
    else:
        scores = log_p[:, columns, :].reshape(-1, prep.n_samples)
    rows = sort_rows(scores)
    row_class = np.tile(columns if labels is None else labels, prep.n_epochs)
    sorted_pos = prep.y[rows.order] == row_class[:, None]
    return rows, sorted_pos


# ---------------------------------------------------------------------------------------------


def metrics_on_test_batched(
    test_logits_ENK: np.ndarray, y_test: np.ndarray, beta_E: np.ndarray, n_fit: int
) -> dict[str, np.ndarray]:
    """Test metrics (losses.TEST_METRIC_IDS) of E epochs, raw and after post-hoc TS.

    Epochs with non-finite test logits get NaN everywhere; a non-finite or non-positive β
    gives NaN for that epoch's ``*_ts`` metrics.

    Parameters
    ----------
    test_logits_ENK : array-like of shape (n_epochs, n_samples, n_classes)
        The test logits of every epoch.
    y_test : array-like of shape (n_samples,)
        Class codes 0..K−1.
    beta_E : array-like of shape (n_epochs,)
        The inverse temperatures fit on validation at the same epochs.
    n_fit : int
        N_val, the number of samples they were fit on (Laplace smoothing
        n/(n+1)·p + 1/((n+1)K), docs/design.md §4).

    Returns
    -------
    dict of str to ndarray of shape (n_epochs,)
        ``<m>`` and ``<m>_ts`` for m in logloss, brier, error, auroc (= 1 − AUROC, lower is
        better, like the stopping metric), ece.

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.metrics import metrics_on_test_batched
    >>> from tabbench.metrics.examples import noisy_logits
    >>> z, y = noisy_logits(200, 2, scale=3.0)
    >>> out = metrics_on_test_batched(np.stack([z, 2 * z]), y, np.array([0.5, 0.25]), n_fit=100)
    >>> {m: v.round(3).tolist() for m, v in out.items() if m.startswith("logloss")}  # β·z alike
    {'logloss': [0.67, 1.163], 'logloss_ts': [0.49, 0.49]}
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
    ws = (Workspace(), Workspace())  # raw, TS; reused by all blocks
    for sl in epoch_blocks(z.shape):
        prep = prepare(z[sl], labels)
        beta = beta_E[sl]
        beta_ok = np.isfinite(beta) & (beta > 0)
        res = _test_block(prep, np.where(beta_ok, beta, 1.0), int(n_fit), ws)
        for m, v in res.items():
            ok = prep.finite & beta_ok if m.endswith("_ts") else prep.finite
            out[m][sl] = np.where(ok, v, np.nan)
    return out


def _test_block(
    prep: Prepared, beta: np.ndarray, n_fit: int, ws: tuple[Workspace, Workspace]
) -> dict[str, np.ndarray]:
    k = prep.n_classes
    raw = sample_stats(prep, np.ones(prep.n_epochs), ws[0], derivs=False)
    ts = sample_stats(prep, beta, ws[1], derivs=False)
    err = 1.0 - prep.top_is_y.mean(axis=1)
    res = {
        "logloss": raw.nll.mean(axis=1, dtype=np.float64),
        "logloss_ts": smoothed_nll(ts, k, n_fit).mean(axis=1, dtype=np.float64),
        "brier": smoothed_brier(raw, k, None).mean(axis=1, dtype=np.float64),
        "brier_ts": smoothed_brier(ts, k, n_fit).mean(axis=1, dtype=np.float64),
        "error": err,
        "error_ts": err,  # TS (β > 0) and smoothing never change the argmax
        "ece": _ece_rows(smoothed_pmax(raw, k, None), prep.top_is_y),
        "ece_ts": _ece_rows(smoothed_pmax(ts, k, n_fit), prep.top_is_y),
    }
    if prep.binary:
        rows = sort_rows(prep.diff)
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
    """Top-label ECE (E,) of confidences (E, N), same binning as ``losses.ece_proba``.

    float32 confidences are binned in float32 (a sample within float32 rounding of a bin edge
    may land in the neighbouring bin, a change of at most |gap|/N); bin sums are float64."""
    n_epochs, n = conf.shape
    buf = conf * conf.dtype.type(n_bins)
    idx = buf.astype(np.intp)
    np.minimum(idx, n_bins - 1, out=idx)
    idx += n_bins * np.arange(n_epochs)[:, None]
    np.subtract(correct, conf, out=buf)
    gaps = np.bincount(idx.ravel(), weights=buf.ravel(), minlength=n_epochs * n_bins)
    return np.abs(gaps.reshape(n_epochs, n_bins)).sum(axis=1) / n
