"""The metric callables' TS-refinement (tabbench.stopping.ts_rounds) equals the exact fit.

A callable scores each round at the solver's optimum by extrapolating the loss from the last
derivative pass over the solver's final, unevaluated Newton step (module doc). These tests hold
the result to the float64 definitions (``tabbench.metrics.ts_ref`` / ``ts_ref_brier``: exact
temperature fit, Laplace smoothing) to 1e-6 on every round of whole boosting runs — XGBoost,
LightGBM and CatBoost, binary and multiclass, a noisy and a separable task — check that those
runs did take the extrapolated path, and check the extrapolation itself at a chosen step.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fixtures.optional import import_optional
from scipy.special import expit
from sklearn.datasets import make_classification

import tabbench.metrics as M
from tabbench._scores import binary_margin, scores_to_logits
from tabbench.metrics.losses import brier_proba, laplace_smooth, log_softmax
from tabbench.stopping import (
    CatBoostMetric,
    LightGBMMetric,
    XGBoostMetric,
    refinement_loss,
)
from tabbench.stopping.loss import MAX_EVAL_SETS, Scorer
from tabbench.stopping.ts_rounds import (
    DOT_BLOCK,
    EXP_SAFE,
    TAYLOR_STEP,
    BinaryRounds,
    MulticlassRounds,
    _margin_bound,
    dot,
)

ROUNDS = 80
TOL = 1e-6


def _task(k: int, separable: bool):
    """Noisy labels (refinement has an interior minimum), or a separable task whose late rounds
    are confident, with a few confident mistakes."""
    X, y = make_classification(
        2000, 12, n_informative=6, n_classes=k, random_state=3,
        flip_y=0.01 if separable else 0.15, class_sep=2.5 if separable else 1.0,
    )
    return X[:1400], y[:1400], X[1400:], y[1400:]


@pytest.fixture
def steps(monkeypatch):
    """The extrapolation step b − b_last of every loss computed through ts_rounds."""
    seen: list[float] = []
    for cls, name in ((BinaryRounds, "_loss"), (MulticlassRounds, "_nll")):
        original = getattr(cls, name)

        def spy(self, b, original=original):
            seen.append(b - math.log(self._beta_at) if self._beta_at > 0 else math.inf)
            return original(self, b)

        monkeypatch.setattr(cls, name, spy)
    return seen


def _exact(kind: str, y: np.ndarray, scores: np.ndarray, score_type: str) -> float:
    z = np.asarray(scores_to_logits(np.asarray(scores), score_type), dtype=np.float64)
    return getattr(M, kind)(z, y.astype(np.int64))


def _check_run(seen: list[tuple], kind: str, score_type: str, steps: list[float]) -> None:
    """Every recorded round equals the exact fit; most took the extrapolated path."""
    diffs = [abs(value - _exact(kind, y, scores, score_type)) for y, scores, value in seen]
    assert len(diffs) >= ROUNDS
    assert max(diffs) <= TOL, max(diffs)
    if kind == "ts_ref" or np.asarray(seen[0][1]).ndim == 1 or seen[0][1].shape[1] == 2:
        used = np.mean([0 < abs(d) <= TAYLOR_STEP for d in steps])
        assert used > 0.5, f"extrapolated in only {used:.0%} of the rounds"


@pytest.mark.parametrize("kind", ["ts_ref", "ts_ref_brier"])
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("separable", [False, True])
def test_xgboost_run_equals_the_exact_fit(kind, k, separable, steps):
    xgb = pytest.importorskip("xgboost")
    X_tr, y_tr, X_val, y_val = _task(k, separable)
    seen: list[tuple] = []

    class Recording(XGBoostMetric):
        def __call__(self, y_true, y_pred, sample_weight=None):
            value = super().__call__(y_true, y_pred, sample_weight)
            seen.append((np.array(y_true), np.array(y_pred), value))
            return value

    clf = xgb.XGBClassifier(n_estimators=ROUNDS, learning_rate=0.3, max_depth=4, n_jobs=1,
                            random_state=0, eval_metric=Recording(kind))
    clf.fit(X_tr, y_tr, eval_set=[(X_tr, y_tr), (X_val, y_val)], verbose=False)
    _check_run(seen, kind, "proba", steps)


@pytest.mark.parametrize("kind", ["ts_ref", "ts_ref_brier"])
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("separable", [False, True])
def test_lightgbm_run_equals_the_exact_fit(kind, k, separable, steps):
    lgb = pytest.importorskip("lightgbm")
    X_tr, y_tr, X_val, y_val = _task(k, separable)
    seen: list[tuple] = []

    class Recording(LightGBMMetric):
        def __call__(self, y_true, y_pred, weight=None):
            out = super().__call__(y_true, y_pred, weight)
            seen.append((np.array(y_true), np.array(y_pred), out[1]))
            return out

    clf = lgb.LGBMClassifier(n_estimators=ROUNDS, learning_rate=0.3, num_leaves=15, n_jobs=1,
                             random_state=0, verbose=-1, metric="None")
    clf.fit(X_tr, y_tr, eval_set=[(X_val, y_val)], eval_metric=Recording(kind))
    _check_run(seen, kind, "proba", steps)


@pytest.mark.parametrize("kind", ["ts_ref", "ts_ref_brier"])
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("separable", [False, True])
def test_catboost_run_equals_the_exact_fit(kind, k, separable, steps):
    catboost = import_optional("catboost", "catboost")
    X_tr, y_tr, X_val, y_val = _task(k, separable)
    seen: list[tuple] = []

    class Recording(CatBoostMetric):
        def evaluate(self, approxes, target, weight):
            out = super().evaluate(approxes, target, weight)
            scores = np.array(approxes[0]) if len(approxes) == 1 else np.stack(approxes, 1)
            seen.append((np.array(target), scores, out[0]))
            return out

    metric = Recording(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numba compilation of the metric, no warning
        clf = catboost.CatBoostClassifier(
            iterations=ROUNDS, learning_rate=0.3, depth=4, thread_count=1, random_seed=0,
            verbose=0, allow_writing_files=False, eval_metric=metric,
            loss_function="Logloss" if k == 2 else "MultiClass")
        clf.fit(X_tr, y_tr, eval_set=(X_val, y_val))
    assert not hasattr(metric, "_jited")  # CatBoost's mark of an object it tried to compile
    # CatBoost scores the training set and the validation set, alternately, every round
    assert {len(y) for y, _, _ in seen} == {len(y_tr), len(y_val)}
    _check_run(seen, kind, "logits", steps)


def _smoothed_loss_at(kind: str, z: np.ndarray, y: np.ndarray, beta: float) -> float:
    """The definition of the loss at a given β (not the fitted one), in float64."""
    q = laplace_smooth(np.exp(log_softmax(beta * z)), len(y))
    if kind == "ts_ref":
        return float(-np.mean(np.log(q[np.arange(len(y)), y])))
    return brier_proba(q, y)


@pytest.mark.parametrize("k, kind", [(2, "ts_ref"), (2, "ts_ref_brier"), (4, "ts_ref")])
@pytest.mark.parametrize("step", [TAYLOR_STEP, -TAYLOR_STEP, 3e-5])
def test_extrapolation_over_a_step_equals_the_loss_there(k, kind, step):
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.5
    z[:30] *= 12  # a few confident predictions, right and wrong: a steep smoothed loss
    rounds = BinaryRounds(y, kind) if k == 2 else MulticlassRounds(y, k, kind)
    rounds(z[:, 1] - z[:, 0] if k == 2 else z, "logits")  # fills the buffers for these scores
    beta0 = 0.7  # away from the optimum: the slope is large
    rounds._sums(beta0)
    b = math.log(beta0) + step
    value = rounds._loss(b) if k == 2 else rounds._nll(b)
    there = _smoothed_loss_at(kind, z, y, math.exp(b))
    assert value == pytest.approx(there, abs=1e-8)
    # the slope term is what makes it exact: the loss moved by more than the tolerance
    assert abs(_smoothed_loss_at(kind, z, y, beta0) - there) > 100 * 1e-8


def test_each_eval_set_keeps_its_own_state():
    rng = np.random.default_rng(1)
    sets = []
    for n in (500, 800, 500, 300, 400):  # two sets of the same size, different labels
        y = rng.integers(0, 2, n)
        sets.append((y, rng.normal(size=n) + 2 * y - 1))
    scorer = Scorer("ts_ref", "logits")
    for _ in range(2):
        for y, m in sets[:2]:  # alternately, like CatBoost's training and validation sets
            assert scorer(y, m) == pytest.approx(M.ts_ref(np.stack([0 * m, m], 1), y), abs=TOL)
    assert len(scorer._sets) == 2
    for y, m in sets:
        assert scorer(y, m) == pytest.approx(refinement_loss(y, m), abs=1e-9)
    assert len(scorer._sets) == MAX_EVAL_SETS  # the least recently used was dropped
    assert np.array_equal(scorer._sets[0].y, sets[-1][0])


def test_dot_sums_long_arrays_in_blocks():
    rng = np.random.default_rng(2)
    for n in (10, DOT_BLOCK, 3 * DOT_BLOCK + 17):
        a, b = rng.normal(size=n), rng.normal(size=n)
        assert dot(a, b) == pytest.approx(float(np.dot(a, b)), rel=1e-12, abs=1e-12)


def test_labels_are_recognised_in_a_new_array_of_any_dtype():
    """XGBoost passes the same labels in a new array every round: the set (its warm start) is
    found again by its bytes, or by value when the bytes differ (another dtype, −0.0)."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 600)
    m = rng.normal(size=600) + 2 * y - 1
    scorer = Scorer("ts_ref", "logits")
    expected = M.ts_ref(np.stack([0 * m, m], 1), y)
    y64 = y.astype(np.float64)
    negative_zero = np.where(y == 0, -0.0, y64)  # other bytes, the same labels
    assert negative_zero.tobytes() != y64.tobytes()
    for labels in (y64, y64.copy(), negative_zero, y, y.astype(np.float32), y.tolist()):
        assert scorer(labels, m) == pytest.approx(expected, abs=TOL)
        assert len(scorer._sets) == 1, labels
    flipped = y.copy()
    flipped[0] = 1 - flipped[0]  # other labels of the same size: another set
    scorer(flipped, m)
    assert len(scorer._sets) == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ndim", [1, 2])
def test_probabilities_within_their_bounds_are_read_unclipped(dtype, ndim):
    """binary_margin skips the clip when the extremes show it would change nothing: the same
    margins as the clipped read, with and without probabilities 0 and 1."""
    rng = np.random.default_rng(4)
    p1 = rng.uniform(size=500).astype(dtype)
    for ends in ([], [0.0, 1.0]):
        p = np.concatenate([p1, np.asarray(ends, dtype=dtype)])
        s = p if ndim == 1 else np.stack([1 - p, p], 1)
        got = binary_margin(s, "proba", extremes=(float(s.min()), float(s.max())))
        np.testing.assert_array_equal(got, binary_margin(s, "proba"))


@pytest.mark.parametrize("score_type, ndim", [("proba", 1), ("proba", 2), ("logits", 1),
                                              ("logits", 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_margin_bound_bounds_every_margin(score_type, ndim, dtype):
    """The bound that lets a derivative pass skip np.errstate is at least every |margin|
    (and, for probabilities, their largest one up to rounding)."""
    rng = np.random.default_rng(5)
    for scale in (0.1, 3.0, 40.0):
        z = (scale * rng.normal(size=(400, 2))).astype(dtype)
        if score_type == "proba":
            p = expit(z[:, 1].astype(np.float64) - z[:, 0])  # 0 and 1 at scale 40
            p = np.concatenate([p, [0.0, 1.0][: int(scale > 10) * 2]]).astype(dtype)
            s = p if ndim == 1 else np.stack([1 - p, p], 1)
        else:
            s = z[:, 1] - z[:, 0] if ndim == 1 else z
        extremes = (float(s.min()), float(s.max()))
        largest = float(np.abs(binary_margin(s, score_type)).max())
        bound = _margin_bound(s, score_type, extremes)
        assert bound >= largest
        if score_type == "proba":
            assert bound == pytest.approx(largest, rel=1e-12)
    assert _margin_bound(s, score_type, None) == math.inf


@pytest.mark.parametrize("beta", [1.0, 2.0, 40.0])
def test_a_pass_that_may_overflow_is_silent_and_the_same(beta):
    """Margins of ±800 overflow exp(βm): that pass runs under np.errstate (no warning, σ = 0
    exactly) and gives what the unguarded pass gives where nothing overflows."""
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 300)
    m = rng.normal(size=300) + 2 * y - 1
    m[:5] = 800.0 * (2 * y[:5] - 1)  # right and far too confident
    m[5:8] = -800.0 * (2 * y[5:8] - 1)  # wrong and far too confident
    rounds = BinaryRounds(y, "ts_ref")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = rounds(m, "logits", (float(m.min()), float(m.max())))
        assert value == pytest.approx(M.ts_ref(np.stack([0 * m, m], 1), y), abs=TOL)
        g, h = rounds._sums(beta)
        assert math.isfinite(g) and math.isfinite(h)
    assert rounds._m_bound * beta >= EXP_SAFE
    small = BinaryRounds(y, "ts_ref")
    safe = np.clip(m, -5, 5)
    small(safe, "logits", (float(safe.min()), float(safe.max())))
    assert small._m_bound * beta < EXP_SAFE
    unguarded = small._sums(beta)
    small._m_bound = math.inf  # forces the guarded pass
    assert small._sums(beta) == unguarded
