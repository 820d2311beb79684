"""tabbench.stopping: refinement losses as early-stopping criteria for XGBoost, LightGBM,
CatBoost and any training loop.

The losses must equal tabbench.metrics' definitions, and each library's own early stopping must
pick the round that minimises our refinement on the validation set, checked against a full
run without early stopping whose per-round validation logits are scored by tabbench.metrics.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from fixtures.optional import import_optional
from fixtures.plugin_dists import (
    METRIC_GROUP,
    METRIC_ID,
    install_example_plugin,
    metric_source,
    write_distribution,
)
from sklearn.base import clone
from sklearn.datasets import make_classification

import tabbench.metrics as M
from tabbench.metrics.registry import get_stopping_metric
from tabbench.stopping import (
    REFINEMENT_KINDS,
    EarlyStopping,
    catboost_metric,
    lightgbm_metric,
    refinement_loss,
    stopping_kinds,
    xgboost_metric,
)

ROOT = Path(__file__).resolve().parents[2]


def make_logits(n: int, k: int, scale: float = 1.0, seed: int = 0):
    """Logits with a true-class bonus, times ``scale`` (large = over-confident)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.0
    return scale * z, y


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _logits_of_margin(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return m[:, None] * np.array([0.0, 1.0]) if m.ndim == 1 else m


# ---------------------------------------------------------------------------------------------
# refinement_loss = tabbench.metrics.<kind>
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", REFINEMENT_KINDS)
@pytest.mark.parametrize("n, k, scale", [(600, 2, 3.0), (500, 5, 2.0), (90, 3, 8.0)])
def test_refinement_loss_equals_metrics_on_logits(kind, n, k, scale):
    z, y = make_logits(n, k, scale=scale, seed=n + k)
    expected = getattr(M, kind)(z, y)
    assert refinement_loss(y, z, kind) == pytest.approx(expected, rel=1e-6)
    assert refinement_loss(y, z.astype(np.float32), kind) == pytest.approx(expected, rel=1e-6)
    assert refinement_loss(y.astype(np.float32), z.tolist(), kind) == pytest.approx(
        expected, rel=1e-6
    )
    if k == 2:  # binary margins z1 - z0, as a decision_function returns them
        assert refinement_loss(y, z[:, 1] - z[:, 0], kind) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("kind", REFINEMENT_KINDS)
def test_refinement_loss_on_probabilities_equals_it_on_logits(kind):
    """TS of log-probabilities is TS of logits; ir_ref ranks them the same."""
    z, y = make_logits(700, 4, scale=3.0, seed=1)
    expected = getattr(M, kind)(z, y)
    assert refinement_loss(y, _softmax(z), kind, scores="proba") == pytest.approx(
        expected, rel=1e-6
    )
    zb, yb = make_logits(700, 2, scale=3.0, seed=2)
    expected = getattr(M, kind)(zb, yb)
    p1 = _softmax(zb)[:, 1]
    assert refinement_loss(yb, p1, kind, scores="proba") == pytest.approx(expected, rel=1e-6)
    assert refinement_loss(yb, _softmax(zb), kind, scores="proba") == pytest.approx(
        expected, rel=1e-6
    )
    assert refinement_loss(yb, p1.astype(np.float32), kind, scores="proba") == pytest.approx(
        expected, rel=1e-5  # float32 probabilities keep ~7 digits
    )


def test_saturated_probabilities_are_read_as_capped_margins():
    """p = 1.0 and p = 0 (float32 sigmoid saturation) have no logit; binary margins are read
    within ±log(2/eps), multiclass zeros as the smallest normal float: finite, documented."""
    y = np.array([1, 0, 1, 0, 1, 0])
    p = np.array([1.0, 0.0, 0.9, 0.2, 0.6, 1.0], dtype=np.float32)  # last: a confident mistake
    cap = np.log(2 / np.finfo(np.float32).eps)  # 16.6
    m = np.array([cap, -cap, np.log(0.9 / 0.1), np.log(0.2 / 0.8), np.log(1.5), cap])
    got = refinement_loss(y, p, scores="proba")
    assert np.isfinite(got)
    assert got == pytest.approx(M.ts_ref(_logits_of_margin(m), y), rel=1e-5)
    p3 = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])
    assert np.isfinite(refinement_loss(np.array([1, 1, 2]), p3, scores="proba"))


def test_refinement_loss_errors_are_clear():
    z, y = make_logits(50, 3, seed=3)
    with pytest.raises(ValueError, match="ts_ref, ts_ref_brier, ts_ref_cv5, ir_ref"):
        refinement_loss(y, z, "ts-ref")
    with pytest.raises(ValueError, match="logits.*proba"):
        refinement_loss(y, z, scores="probabilities")
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\].*scores='logits'"):
        refinement_loss(y, z, scores="proba")
    with pytest.raises(ValueError, match="binary"):
        refinement_loss(y, z[:, 0])  # (N,) scores with labels 0..2
    with pytest.raises(ValueError, match="NaN or inf"):
        refinement_loss(y, np.where(np.arange(50)[:, None] == 3, np.nan, z))


# ---------------------------------------------------------------------------------------------
# The libraries' metric callables, on given scores
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", REFINEMENT_KINDS)
@pytest.mark.parametrize("k", [2, 4])
def test_metric_callables_agree_with_metrics(kind, k):
    z, y = make_logits(400, k, scale=2.5, seed=k)
    expected = getattr(M, kind)(z, y)
    p = _softmax(z)
    y_float = y.astype(np.float32)  # XGBoost and LightGBM hand labels over as floats
    xgb_pred, lgb_pred = (p[:, 1], p[:, 1]) if k == 2 else (p, p)
    xm, lm, cm = xgboost_metric(kind), lightgbm_metric(kind), catboost_metric(kind)
    for _ in range(2):  # the second call starts warm: same value
        assert xm(y_float, xgb_pred) == pytest.approx(expected, rel=1e-6)
        name, value, higher_better = lm(y_float, lgb_pred, None)
        assert (name, higher_better) == (kind, False) and value == pytest.approx(expected, rel=1e-6)
        approxes = (z[:, 1] - z[:, 0],) if k == 2 else tuple(z.T.copy())  # CatBoost: raw
        err, weight = cm.evaluate(approxes, y.astype(np.float64), None)
        assert cm.get_final_error(err, weight) == pytest.approx(expected, rel=1e-6)
    assert xm.__name__ == kind and not cm.is_max_optimal()
    # other labels of the same length (the label cache must notice)
    y_rev = y[::-1].copy()
    assert xm(y_rev.astype(np.float32), xgb_pred) == pytest.approx(getattr(M, kind)(z, y_rev),
                                                                   rel=1e-6)
    # a different set of scores right after (warm start from another problem): still exact
    z2, y2 = make_logits(300, k, scale=0.5, seed=9)
    assert xm(y2, _softmax(z2)[:, 1] if k == 2 else _softmax(z2)) == pytest.approx(
        getattr(M, kind)(z2, y2), rel=1e-6
    )


def test_metric_callables_follow_library_conventions():
    # LightGBM passes weights only to metrics with exactly three parameters
    assert len(inspect.signature(lightgbm_metric()).parameters) == 3
    # XGBoost treats a callable as a cost, except names starting like auc/map/ndcg/pre
    assert not any(k.startswith(("auc", "map", "ndcg", "pre")) for k in REFINEMENT_KINDS)
    # non-finite predictions (a diverged model) give NaN, not an exception mid-training
    y = np.array([0, 1, 0, 1])
    assert np.isnan(xgboost_metric()(y, np.array([0.1, np.nan, 0.3, 0.9])))
    assert np.isnan(catboost_metric().evaluate((np.array([0.0, np.inf, 1.0, 2.0]),), y, None)[0])
    with pytest.raises(ValueError, match="unweighted"):
        xgboost_metric()(y, np.array([0.1, 0.8, 0.3, 0.9]), sample_weight=np.ones(4))
    with pytest.raises(ValueError, match="ts_ref, ts_ref_brier.*logloss"):
        xgboost_metric("log_loss")
    # the estimators that hold them can be cloned and pickled (caches are not carried)
    m = xgboost_metric("ts_ref_cv5")
    m(y.repeat(5), np.tile([0.1, 0.8, 0.3, 0.9], 5))
    assert len(m._scorer._sets) == 1
    for other in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert other.kind == "ts_ref_cv5" and other.__name__ == "ts_ref_cv5"
        assert other._scorer._sets == []
    xgb = pytest.importorskip("xgboost")
    assert clone(xgb.XGBClassifier(eval_metric=m)).get_params()["eval_metric"].kind == m.kind


def test_every_registered_stopping_metric_is_a_kind(site):
    """Wherever a kind is taken, a registered stopping metric is accepted: the built-ins
    (logloss, brier, error, auroc) and an installed package's, through its entry point."""
    install_example_plugin(site, [METRIC_GROUP])
    assert stopping_kinds()[:4] == REFINEMENT_KINDS
    assert {"logloss", "brier", "error", "auroc", METRIC_ID} <= set(stopping_kinds())
    z, y = make_logits(300, 3, scale=2.0, seed=8)
    plugin = get_stopping_metric(METRIC_ID).reference
    assert refinement_loss(y, z, "logloss") == pytest.approx(M.logloss(z, y), rel=1e-12)
    assert refinement_loss(y, z, "auroc") == pytest.approx(M.one_minus_auroc(z, y), rel=1e-12)
    assert refinement_loss(y, z, METRIC_ID) == pytest.approx(plugin(z, y), rel=1e-12)
    p = _softmax(z)
    assert xgboost_metric(METRIC_ID)(y, p) == pytest.approx(plugin(z, y), rel=1e-5)
    assert lightgbm_metric(METRIC_ID)(y, p)[1] == pytest.approx(plugin(z, y), rel=1e-5)
    cat = catboost_metric(METRIC_ID).evaluate(tuple(z.T), y, None)[0]
    assert cat == pytest.approx(plugin(z, y), rel=1e-12)
    stopper = EarlyStopping(METRIC_ID, patience=2)
    stopper.step(z, y)
    assert stopper.history == [pytest.approx(plugin(z, y), rel=1e-12)]
    with pytest.raises(ValueError, match=f"unknown kind.*{METRIC_ID}"):
        refinement_loss(y, z, "no_such_metric")


def test_a_kind_xgboost_would_maximise_is_renamed(site):
    """XGBoost's early stopping maximises metrics named auc*, map*, ndcg*, pre*: a registered
    "pre_gap" is named "min_pre_gap", and the round kept is its minimum."""
    xgb = pytest.importorskip("xgboost")
    module = metric_source("pre_gap", "Pre-Gap")
    write_distribution(site, "tabbench-pre-gap", {"pre_gap_metric": module},
                       {"tabbench.stopping_metrics": {"pre_gap": "pre_gap_metric:METRIC"}})
    assert xgboost_metric("ts_ref").__name__ == "ts_ref"
    metric = xgboost_metric("pre_gap")
    assert metric.__name__ == "min_pre_gap"
    X, y = make_classification(600, 8, random_state=0)
    clf = xgb.XGBClassifier(n_estimators=25, max_depth=2, learning_rate=0.3, n_jobs=1,
                            eval_metric=metric, early_stopping_rounds=25)
    clf.fit(X[:400], y[:400], eval_set=[(X[400:], y[400:])], verbose=False)
    history = clf.evals_result()["validation_0"]["min_pre_gap"]
    assert np.argmin(history) != np.argmax(history)
    assert clf.best_iteration == int(np.argmin(history))


# ---------------------------------------------------------------------------------------------
# Each library's early stopping stops where our refinement of its val logits is minimal
# ---------------------------------------------------------------------------------------------

PATIENCE = 15


def _noisy_task(k: int, seed: int = 1):
    """Label noise + a high learning rate: validation refinement has a clear interior minimum."""
    X, y = make_classification(
        2400, 20, n_informative=6, n_classes=k, flip_y=0.15, random_state=seed
    )
    return X[:1600], y[:1600], X[1600:], y[1600:]


def _stopping_round(scores: np.ndarray, patience: int) -> int:
    """The round a patience-based early stopping keeps: improve = strictly below the best."""
    best, since = 0, 0
    for i in range(1, len(scores)):
        if scores[i] < scores[best]:
            best, since = i, 0
        else:
            since += 1
            if since >= patience:
                break
    return best


def _assert_stopped_by_patience(best: int, recorded: Sequence[float], patience: int) -> None:
    """The library kept the round that the patience rule keeps on the values it recorded: exact,
    since both read the same floats. (Applying the rule to our own float64 refinement instead
    would make the round depend on how near-equal rounds round: the library records e.g. 6
    decimals, so two rounds it sees as equal may differ in our values, and the patience count
    then runs differently.) That those values are our refinement is checked beside, within the
    recording precision."""
    expected = _stopping_round(np.asarray(recorded, dtype=float), patience)
    assert expected > 0, "the test task should not stop at its first round"
    assert best == expected, (best, expected)


@pytest.mark.parametrize("k", [2, 3])
def test_xgboost_stops_at_our_refinement_minimum(k):
    xgb = pytest.importorskip("xgboost")
    X_tr, y_tr, X_val, y_val = _noisy_task(k)
    params = dict(n_estimators=120, learning_rate=0.3, max_depth=6, n_jobs=1, random_state=0)
    full = xgb.XGBClassifier(**params, eval_metric=xgboost_metric("ts_ref"))
    full.fit(X_tr, y_tr, eval_set=[(X_val, y_val)], verbose=False)
    ours = np.array([
        M.ts_ref(_logits_of_margin(full.predict(X_val, output_margin=True,
                                                 iteration_range=(0, i + 1))), y_val)
        for i in range(params["n_estimators"])
    ])
    recorded = np.array(full.evals_result()["validation_0"]["ts_ref"])
    # recorded with 6 decimals from float32 probabilities, ours from the float32 margins
    np.testing.assert_allclose(recorded, ours, atol=3e-6)

    es = xgb.XGBClassifier(
        **params, eval_metric=xgboost_metric("ts_ref"), early_stopping_rounds=PATIENCE
    )
    es.fit(X_tr, y_tr, eval_set=[(X_val, y_val)], verbose=False)
    # the same rounds as `full` (deterministic), so `full`'s record is what `es` stopped on
    _assert_stopped_by_patience(es.best_iteration, recorded, PATIENCE)
    assert es.best_iteration < params["n_estimators"] - PATIENCE  # it did stop early
    # model slicing: predictions use rounds 0..best_iteration, like with a built-in metric
    np.testing.assert_allclose(
        es.predict_proba(X_val),
        full.predict_proba(X_val, iteration_range=(0, es.best_iteration + 1)),
        rtol=1e-6,
    )


@pytest.mark.parametrize("k", [2, 3])
def test_xgboost_default_metric_off_stops_at_the_same_round(k):
    """``disable_default_eval_metric=True`` (the documented usage: XGBoost otherwise computes
    its log loss beside a custom metric every round) removes only that log loss: the stopping
    round and our recorded values are those of the fit that computes both."""
    xgb = pytest.importorskip("xgboost")
    X_tr, y_tr, X_val, y_val = _noisy_task(k)
    params = dict(n_estimators=120, learning_rate=0.3, max_depth=6, n_jobs=1, random_state=0,
                  early_stopping_rounds=PATIENCE)
    fits = {}
    for off in (False, True):
        clf = xgb.XGBClassifier(**params, eval_metric=xgboost_metric("ts_ref"),
                                disable_default_eval_metric=off)
        fits[off] = clf.fit(X_tr, y_tr, eval_set=[(X_val, y_val)], verbose=False)
    both, ours = (fits[off].evals_result()["validation_0"] for off in (False, True))
    assert list(both) == ["logloss" if k == 2 else "mlogloss", "ts_ref"]
    assert list(ours) == ["ts_ref"]
    assert ours["ts_ref"] == both["ts_ref"]
    assert fits[True].best_iteration == fits[False].best_iteration
    assert fits[True].best_iteration < params["n_estimators"] - PATIENCE  # it did stop early


def _lgb_eval(lgb, X_val, y_val) -> dict:
    if "eval_X" in inspect.signature(lgb.LGBMClassifier.fit).parameters:  # LightGBM >= 4.7
        return {"eval_X": X_val, "eval_y": y_val}
    return {"eval_set": [(X_val, y_val)]}


@pytest.mark.parametrize("k", [2, 3])
def test_lightgbm_stops_at_our_refinement_minimum(k):
    lgb = pytest.importorskip("lightgbm")
    X_tr, y_tr, X_val, y_val = _noisy_task(k)
    params = dict(n_estimators=120, learning_rate=0.3, n_jobs=1, random_state=0, verbose=-1,
                  metric="None")
    full = lgb.LGBMClassifier(**params)
    full.fit(X_tr, y_tr, **_lgb_eval(lgb, X_val, y_val), eval_metric=lightgbm_metric())
    ours = np.array([
        M.ts_ref(_logits_of_margin(full.predict(X_val, raw_score=True, num_iteration=i + 1)),
                 y_val)
        for i in range(params["n_estimators"])
    ])
    recorded = full.evals_result_["valid_0"]["ts_ref"]
    np.testing.assert_allclose(recorded, ours, atol=1e-6)

    es = lgb.LGBMClassifier(**params)
    es.fit(X_tr, y_tr, **_lgb_eval(lgb, X_val, y_val), eval_metric=lightgbm_metric(),
           callbacks=[lgb.early_stopping(PATIENCE, verbose=False)])
    _assert_stopped_by_patience(es.best_iteration_ - 1, recorded, PATIENCE)  # counts from 1
    assert es.best_iteration_ < params["n_estimators"] - PATIENCE

    # the native API: feval=metric(preds, Dataset)
    objective = {"objective": "binary"} if k == 2 else {"objective": "multiclass",
                                                         "num_class": k}
    evals: dict = {}
    booster = lgb.train(
        {**objective, "learning_rate": 0.3, "metric": "None", "verbose": -1, "num_threads": 1,
         "seed": 0},
        lgb.Dataset(X_tr, y_tr), params["n_estimators"], valid_sets=[lgb.Dataset(X_val, y_val)],
        feval=lightgbm_metric(), callbacks=[lgb.early_stopping(PATIENCE, verbose=False),
                                            lgb.record_evaluation(evals)],
    )
    recorded = evals["valid_0"]["ts_ref"]  # every round trained, up to the stop
    _assert_stopped_by_patience(booster.best_iteration - 1, recorded, PATIENCE)
    # the booster keeps the rounds up to the best one; what was recorded on them is ours
    assert booster.current_iteration() == booster.best_iteration < len(recorded)
    native = np.array([
        M.ts_ref(_logits_of_margin(booster.predict(X_val, raw_score=True, num_iteration=i + 1)),
                 y_val)
        for i in range(booster.current_iteration())
    ])
    np.testing.assert_allclose(recorded[: len(native)], native, atol=1e-6)


@pytest.mark.parametrize("k", [2, 3])
def test_catboost_stops_at_our_refinement_minimum(k):
    catboost = import_optional("catboost", "catboost")
    X_tr, y_tr, X_val, y_val = _noisy_task(k)
    params = dict(iterations=120, learning_rate=0.3, depth=6, thread_count=1, random_seed=0,
                  verbose=0, loss_function="Logloss" if k == 2 else "MultiClass",
                  allow_writing_files=False)
    with warnings.catch_warnings():  # "Failed to import numba": the metric runs in Python
        warnings.filterwarnings("ignore", message=".*numba.*")
        full = catboost.CatBoostClassifier(**params, eval_metric=catboost_metric(),
                                           use_best_model=False)
        full.fit(X_tr, y_tr, eval_set=(X_val, y_val))
        es = catboost.CatBoostClassifier(**params, eval_metric=catboost_metric(),
                                         early_stopping_rounds=PATIENCE, use_best_model=True)
        es.fit(X_tr, y_tr, eval_set=(X_val, y_val))
    ours = np.array([
        M.ts_ref(_logits_of_margin(np.asarray(raw)), y_val)
        for raw in full.staged_predict(X_val, prediction_type="RawFormulaVal")
    ])
    recorded = full.get_evals_result()["validation"]["CatBoostMetric"]
    np.testing.assert_allclose(recorded, ours, rtol=1e-6)
    _assert_stopped_by_patience(es.get_best_iteration(), recorded, PATIENCE)
    assert es.tree_count_ == es.get_best_iteration() + 1  # use_best_model dropped the rest
    np.testing.assert_allclose(
        es.predict_proba(X_val),
        full.predict_proba(X_val, ntree_end=es.get_best_iteration() + 1),
        rtol=1e-9,
    )


# ---------------------------------------------------------------------------------------------
# EarlyStopping for any training loop
# ---------------------------------------------------------------------------------------------


def _epochs(n_epochs: int = 30, seed: int = 0):
    """Logits whose signal first grows then decays (refinement has a minimum), multiplied by a
    growing scale (miscalibration, which TS-refinement ignores)."""
    rng = np.random.default_rng(seed)
    n, k = 400, 3
    y = rng.integers(0, k, n)
    onehot = np.eye(k)[y]
    # one peak: the decay starts one step below it, so no two epochs carry the same signal (a
    # shared maximum made the best epoch a tie that float rounding decided)
    peak = n_epochs // 2
    signal = np.concatenate([np.linspace(0.2, 2.0, peak),
                             np.linspace(2.0, 0.5, n_epochs - peak + 1)[1:]])
    noise = rng.normal(size=(n, k))
    return [(1 + e) * (signal[e] * onehot + noise) for e in range(n_epochs)], y


def test_early_stopping_tracks_refinement_and_keeps_best_state():
    epochs, y = _epochs()
    stopper = EarlyStopping("ts_ref", patience=4)
    state = {"w": np.zeros(3)}
    stopped_at = None
    for e, z in enumerate(epochs):
        state["w"][:] = e  # mutated in place, like a model's parameters
        if stopper.step(z, y, state=state):
            stopped_at = e
            break
    expected = [M.ts_ref(z, y) for z in epochs[: stopped_at + 1]]
    np.testing.assert_allclose(stopper.history, expected, rtol=1e-6)
    best = int(np.argmin(expected))
    assert best == 30 // 2 - 1  # the signal's peak (refinement is best where the signal is)
    assert stopper.best_epoch == best and stopped_at == best + 4 and stopper.stopped
    assert stopper.best_score == stopper.history[best] == pytest.approx(min(expected), rel=1e-6)
    assert stopper.best_state["w"][0] == best  # a copy, not the mutated live state
    # scaling logits (miscalibration) leaves TS-refinement unchanged, not the log loss
    assert M.ts_ref(3 * epochs[5], y) == pytest.approx(M.ts_ref(epochs[5], y), rel=1e-6)
    stopper.reset()
    assert stopper.history == [] and stopper.best_epoch is None and not stopper.stopped


def test_early_stopping_logloss_baseline_min_delta_and_nan():
    epochs, y = _epochs()
    ll = EarlyStopping("logloss", patience=3, min_delta=0.0)
    for z in epochs[:10]:
        ll.step(z, y)
    np.testing.assert_allclose(ll.history, [M.logloss(z, y) for z in epochs[:10]], rtol=1e-9)
    strict = EarlyStopping(patience=2, min_delta=10.0)  # nothing improves by 10 nats
    assert not strict.step(epochs[0], y)
    assert not strict.step(epochs[1], y) and strict.step(epochs[2], y)
    assert strict.best_epoch == 0
    diverged = EarlyStopping(patience=2)
    diverged.step(epochs[0], y, state="ok")
    assert not diverged.step(np.full_like(epochs[0], np.nan), y, state="nan")
    assert np.isnan(diverged.history[1]) and diverged.best_state == "ok"
    for bad in (dict(patience=0), dict(patience=1.5), dict(min_delta=-1.0), dict(kind="auc")):
        with pytest.raises(ValueError):
            EarlyStopping(**bad)


def test_early_stopping_with_torch_tensors_and_state_dict():
    torch = pytest.importorskip("torch")
    epochs, y = _epochs(12)
    model = torch.nn.Linear(2, 2)
    stopper = EarlyStopping("ts_ref", patience=20)
    for z in epochs:
        with torch.no_grad():
            model.weight.add_(1.0)  # the live parameters change every epoch
        stopper.step(torch.as_tensor(z, dtype=torch.float32), torch.as_tensor(y),
                     state=model.state_dict())
    best = stopper.best_epoch
    assert best == int(np.nanargmin(stopper.history))
    w0 = model.weight.detach().clone() - (len(epochs) - best - 1)
    torch.testing.assert_close(stopper.best_state["weight"], w0)
    np.testing.assert_allclose(stopper.history, [M.ts_ref(z.astype(np.float32), y)
                                                 for z in epochs], rtol=1e-6)


# ---------------------------------------------------------------------------------------------


def test_public_modules_import_no_framework():
    """Users without Snakemake, PyTorch or the boosting libraries can import the API."""
    code = (
        "import sys, tabbench.calibration, tabbench.stopping; "
        "heavy = {'torch', 'xgboost', 'lightgbm', 'catboost', 'snakemake'}; "
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_scalar_solver_is_the_vectorised_one():
    """The metric callables' one-problem solver takes the same steps as
    tabbench.metrics.ts_solver.solve_log_beta: same optimum from any start, including the
    bound (separable data) and the flat case (constant logits)."""
    import tabbench.metrics.ts_kernel as K
    from tabbench.metrics.ts_solver import solve_log_beta, solve_log_beta_scalar

    rng = np.random.default_rng(0)
    for t in range(60):
        n, k = int(rng.integers(20, 2000)), int(rng.choice([2, 3, 7]))
        z, y = make_logits(n, k, scale=float(np.exp(rng.uniform(-3, 3))), seed=t)
        if t == 0:
            z = np.zeros((n, k))
        if t == 1:
            z = 5.0 * np.eye(k)[y]
        prep = K.prepare(z[None].astype(np.float32), y)
        evaluate = K.full_data_evaluator(prep, K.Workspace())

        def sums(beta, evaluate=evaluate):
            g, h = evaluate(np.array([beta]), np.arange(1))
            return float(g[0]), float(h[0])

        for b0 in (0.0, float(rng.uniform(-6, 6))):
            expected = solve_log_beta(evaluate, np.array([b0]))[0]
            assert solve_log_beta_scalar(sums, b0) == pytest.approx(expected, abs=1e-12), (t, b0)
