"""XGBoost trainer: incremental per-round logits equal fresh predictions of that round's model."""

import numpy as np
import pytest
import xgboost as xgb

from tabbench.models.base import TrainContext
from tabbench.models.xgboost import (
    MarginPredictor,
    XGBoostTrainer,
    positional,
    to_logits,
    xgb_params,
)

PARAMS = {"eta": 0.2, "max_depth": 4, "subsample": 0.8, "colsample_bylevel": 0.7}


def _collect(trainer, params, data, ctx):
    chunks = list(trainer.train(params, data, ctx))
    return chunks, np.concatenate([c.val_logits for c in chunks]), np.concatenate(
        [c.test_logits for c in chunks])


def test_incremental_logits_equal_fresh_predictions(split_data):
    K = split_data.n_classes
    trainer = XGBoostTrainer(chunk_rounds=7)
    ctx = TrainContext(seed=3, n_epochs=40)
    chunks, val, test = _collect(trainer, PARAMS, split_data, ctx)
    assert [c.first_epoch for c in chunks] == [1, 8, 15, 22, 29, 36]
    assert val.shape == (40, len(split_data.y_val), K)
    assert test.shape == (40, len(split_data.y_test), K)
    for X, logits in ((split_data.X_val, val), (split_data.X_test, test)):
        d = xgb.DMatrix(positional(X), enable_categorical=True)
        for r in (1, 2, 13, 40):
            fresh = trainer.booster.predict(d, iteration_range=(0, r), output_margin=True)
            np.testing.assert_allclose(logits[r - 1], to_logits(fresh, K), rtol=1e-6, atol=1e-6)
    if K == 2:
        assert (val[..., 0] == 0).all()
    fit = np.concatenate([c.fit_seconds for c in chunks])
    assert (np.diff(fit) >= 0).all() and fit[0] > 0


def test_same_model_as_xgboost_train(split_data):
    """Driving the boosting loop ourselves trains exactly what xgboost.train trains."""
    ctx = TrainContext(seed=5, n_epochs=25, threads=2)
    trainer = XGBoostTrainer()
    list(trainer.train(PARAMS, split_data, ctx))
    dtrain = xgb.DMatrix(positional(split_data.X_train), split_data.y_train,
                         enable_categorical=True)
    ref = xgb.train(xgb_params(PARAMS, split_data.n_classes, ctx), dtrain, 25)
    dtest = xgb.DMatrix(positional(split_data.X_test), enable_categorical=True)
    np.testing.assert_array_equal(ref.predict(dtest), trainer.booster.predict(dtest))


def test_params_seed_threads_and_objective():
    ctx = TrainContext(seed=11, n_epochs=5, threads=3)
    p = xgb_params({"eta": 0.1}, 2, ctx)
    assert p["objective"] == "binary:logistic" and p["tree_method"] == "hist"
    assert p["nthread"] == 3 and p["seed"] == 11 and p["eta"] == 0.1
    p = xgb_params({}, 5, ctx)
    assert p["objective"] == "multi:softprob" and p["num_class"] == 5
    with pytest.raises(ValueError, match="may not set"):
        xgb_params({"nthread": 8}, 2, ctx)


def test_deterministic(split_data):
    ctx = TrainContext(seed=1, n_epochs=15)
    a = _collect(XGBoostTrainer(), PARAMS, split_data, ctx)
    b = _collect(XGBoostTrainer(), PARAMS, split_data, ctx)
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])
    c = _collect(XGBoostTrainer(), PARAMS, split_data, TrainContext(seed=2, n_epochs=15))
    assert not np.array_equal(a[2], c[2])  # subsampling follows the seed


def test_chunks_respect_memory_cap(split_data):
    n = len(split_data.y_val) + len(split_data.y_test)
    per_round = n * split_data.n_classes * 4  # float32 logits
    trainer = XGBoostTrainer(chunk_rounds=100, max_chunk_bytes=3 * per_round)
    chunks = list(trainer.train({}, split_data, TrainContext(seed=0, n_epochs=10)))
    assert [len(c.fit_seconds) for c in chunks] == [3, 3, 3, 1]


def test_val_test_categories_must_match_train(split_data):
    """Native categoricals are read by code: other categories would silently change meaning."""
    X_val = split_data.X_val.copy()
    X_val["d"] = X_val["d"].cat.reorder_categories(["q", "p"])
    bad = type(split_data)(split_data.X_train, split_data.y_train, X_val, split_data.y_val,
                           split_data.X_test, split_data.y_test, split_data.n_classes)
    with pytest.raises(ValueError, match="'d': val categories differ"):
        next(XGBoostTrainer().train({}, bad, TrainContext(seed=0, n_epochs=2)))


def test_fast_margin_predictor_equals_booster_predict(split_data):
    """The direct C call writes exactly Booster.predict's margins, and the trainer's logits do
    not depend on which path produced them."""
    ctx = TrainContext(seed=4, n_epochs=12)
    fast = XGBoostTrainer(chunk_rounds=5)
    slow = XGBoostTrainer(chunk_rounds=5, fast_predict=False)
    a, b = _collect(fast, PARAMS, split_data, ctx), _collect(slow, PARAMS, split_data, ctx)
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])
    d = xgb.DMatrix(positional(split_data.X_test), enable_categorical=True)
    pred = MarginPredictor(fast.booster, d)
    assert pred.fast
    shape = (len(split_data.y_test),) + ((split_data.n_classes,) if split_data.n_classes > 2
                                         else ())
    out = np.empty(shape, dtype=np.float32)
    pred.predict_into(out)
    np.testing.assert_array_equal(out, fast.booster.predict(d, output_margin=True))
    with pytest.raises(ValueError, match="buffer"):
        pred.predict_into(np.empty(3, dtype=np.float32))


def test_eval_matrix_predicts_exactly_like_the_frame(split_data):
    """The dense float32 val+test matrix (categorical codes, NaN = missing) is read by XGBoost
    exactly like the pandas frame it replaces: identical margins, bit for bit."""
    from tabbench.models.xgboost import _eval_dmatrix

    trainer = XGBoostTrainer()
    list(trainer.train(PARAMS, split_data, TrainContext(seed=1, n_epochs=30)))
    X = split_data.X_test.copy()
    X.loc[X.index[:5], "a"] = np.nan  # missing numericals too
    from_frame = trainer.booster.predict(xgb.DMatrix(positional(X), enable_categorical=True),
                                         output_margin=True)
    from_matrix = trainer.booster.predict(_eval_dmatrix(X, threads=1), output_margin=True)
    np.testing.assert_array_equal(from_matrix, from_frame)


def test_column_names_xgboost_rejects_are_fine(split_data):
    """Real datasets have columns like ``a[1]`` or ``x<2``, which XGBoost refuses as feature
    names: the trainer names features by position, and learns the same model."""
    import dataclasses

    odd = {c: f"{c}[{i}]<x>" for i, c in enumerate(split_data.X_train.columns)}
    renamed = dataclasses.replace(
        split_data, **{k: getattr(split_data, k).rename(columns=odd)
                       for k in ("X_train", "X_val", "X_test")})
    ctx = TrainContext(seed=3, n_epochs=5)
    _, val_a, test_a = _collect(XGBoostTrainer(), PARAMS, split_data, ctx)
    _, val_b, test_b = _collect(XGBoostTrainer(), PARAMS, renamed, ctx)
    np.testing.assert_array_equal(val_a, val_b)
    np.testing.assert_array_equal(test_a, test_b)
