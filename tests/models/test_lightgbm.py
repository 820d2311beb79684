"""LightGBM trainer: incremental per-round logits equal fresh predictions of that round's model
bit for bit, native categoricals coded like LightGBM's own pandas path, determinism, failing and
diverging configs, and a whole train job (every epoch of every config)."""

import io
import json
import time
import warnings

import lightgbm as lgb
import numpy as np
import optuna
import pandas as pd
import pytest

from tabbench.metrics import logloss
from tabbench.models.base import SplitData, TrainContext
from tabbench.models.lightgbm import RESERVED, LightGBMTrainer, eval_matrix, lgb_params, to_logits
from tabbench.models.recorder import check_records
from tabbench.search import lightgbm as space

PARAMS = {"learning_rate": 0.2, "num_leaves": 15, "bagging_fraction": 0.8, "bagging_freq": 1,
          "feature_fraction": 0.7}


def _collect(trainer, params, data, ctx):
    chunks = list(trainer.train(params, data, ctx))
    return chunks, np.concatenate([c.val_logits for c in chunks]), np.concatenate(
        [c.test_logits for c in chunks])


def _fresh(booster, X, r, K):
    """Round ``r``'s logits from scratch: LightGBM's own predict on the pandas frame."""
    raw = booster.predict(X, num_iteration=r, raw_score=True)
    return to_logits(raw, K).astype(np.float32)


def _assert_equal_to_fresh(trainer, data, val, test, rounds):
    for X, logits in ((data.X_val, val), (data.X_test, test)):
        for r in rounds:
            np.testing.assert_array_equal(logits[r - 1], _fresh(trainer.booster, X, r,
                                                                data.n_classes), err_msg=f"{r}")


@pytest.mark.parametrize("via_leaves", [True, False], ids=["leaf-blocks", "raw-per-round"])
def test_incremental_logits_equal_fresh_predictions(split_data, via_leaves):
    """Every round, bit for bit, for both ways of obtaining the newest trees' contributions;
    blocks of 3 rounds inside chunks of 7, so block and chunk boundaries do not line up."""
    K = split_data.n_classes
    trainer = LightGBMTrainer(chunk_rounds=7, block_rounds=3, via_leaves=via_leaves)
    chunks, val, test = _collect(trainer, PARAMS, split_data, TrainContext(seed=3, n_epochs=40))
    assert [c.first_epoch for c in chunks] == [1, 8, 15, 22, 29, 36]
    assert val.shape == (40, len(split_data.y_val), K)
    assert test.shape == (40, len(split_data.y_test), K)
    assert val.dtype == test.dtype == np.float32
    assert trainer.booster.current_iteration() == 40
    _assert_equal_to_fresh(trainer, split_data, val, test, range(1, 41))
    if K == 2:
        assert (val[..., 0] == 0).all() and (test[..., 0] == 0).all()
    assert len({val[r].tobytes() for r in range(40)}) == 40  # every round changed the model
    fit = np.concatenate([c.fit_seconds for c in chunks])
    assert len(fit) == 40 and (np.diff(fit) >= 0).all() and fit[0] > 0


def test_same_model_as_lightgbm_train(split_data):
    """Driving the boosting loop ourselves trains exactly what lightgbm.train trains."""
    ctx = TrainContext(seed=5, n_epochs=25)
    trainer = LightGBMTrainer()
    list(trainer.train(PARAMS, split_data, ctx))
    params = lgb_params(PARAMS, split_data.n_classes, ctx)
    ds = lgb.Dataset(split_data.X_train, split_data.y_train, params=params,
                     categorical_feature=split_data.cat_columns)
    ref = lgb.train(params, ds, num_boost_round=25)
    for X in (split_data.X_val, split_data.X_test):
        np.testing.assert_array_equal(ref.predict(X, raw_score=True),
                                      trainer.booster.predict(X, raw_score=True))


def test_params_seed_threads_objective_and_determinism_flags():
    ctx = TrainContext(seed=11, n_epochs=5, threads=3)
    p = lgb_params({"learning_rate": 0.1}, 2, ctx)
    assert p["objective"] == "binary" and "num_class" not in p
    assert p["num_threads"] == 3 and p["seed"] == 11 and p["learning_rate"] == 0.1
    assert p["deterministic"] is True and p["force_col_wise"] is True and p["verbosity"] == -1
    p = lgb_params({}, 5, ctx)
    assert p["objective"] == "multiclass" and p["num_class"] == 5
    with pytest.raises(ValueError, match="at least 2 classes"):
        lgb_params({}, 1, ctx)


@pytest.mark.parametrize("key", ["num_threads", "n_jobs", "random_state", "bagging_seed",
                                 "n_estimators", "early_stopping_rounds", "objective",
                                 "verbose", "device", "force_row_wise", "categorical_feature"])
def test_config_may_not_set_what_the_trainer_owns(key):
    with pytest.raises(ValueError, match=f"may not set \\['{key}'\\]"):
        lgb_params({key: 1}, 2, TrainContext(seed=0, n_epochs=1))


def test_reserved_names_cover_lightgbms_aliases():
    """An alias missing from RESERVED would let a config override, e.g., the seed silently."""
    from lightgbm.basic import _ConfigAliases

    for name, aliases in RESERVED.items():
        assert _ConfigAliases.get(name) <= aliases, name


@pytest.mark.parametrize("boosting", ["dart", "rf", "random_forest"])
def test_non_additive_boosting_is_rejected(boosting):
    with pytest.raises(ValueError, match="running sum of trees"):
        lgb_params({"boosting": boosting}, 2, TrainContext(seed=0, n_epochs=1))


def test_goss_and_linear_trees_are_recorded_exactly(split_data):
    """GOSS is still a sum of fixed trees; linear trees' leaf outputs depend on the row, so they
    take the per-round raw prediction (the leaf-value path would be wrong for them)."""
    goss = {"learning_rate": 0.2, "data_sample_strategy": "goss"}  # (no bagging with GOSS)
    for params in (goss, {**PARAMS, "linear_tree": True}):
        trainer = LightGBMTrainer(chunk_rounds=6, block_rounds=4)
        _, val, test = _collect(trainer, params, split_data, TrainContext(seed=2, n_epochs=12))
        _assert_equal_to_fresh(trainer, split_data, val, test, (1, 5, 12))


def test_deterministic_across_runs_and_threads(split_data):
    ctx = TrainContext(seed=1, n_epochs=15)
    a = _collect(LightGBMTrainer(), PARAMS, split_data, ctx)
    b = _collect(LightGBMTrainer(), PARAMS, split_data,
                 TrainContext(seed=1, n_epochs=15, threads=2))
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])
    c = _collect(LightGBMTrainer(), PARAMS, split_data, TrainContext(seed=2, n_epochs=15))
    assert not np.array_equal(a[2], c[2])  # bagging and feature fraction follow the seed


def test_chunks_and_blocks_respect_memory_caps(split_data):
    n = len(split_data.y_val) + len(split_data.y_test)
    per_round = n * split_data.n_classes * 4  # float32 logits
    trainer = LightGBMTrainer(chunk_rounds=100, max_chunk_bytes=3 * per_round,
                              max_block_bytes=1)  # blocks of one round
    chunks, val, test = _collect(trainer, PARAMS, split_data, TrainContext(seed=0, n_epochs=10))
    assert [len(c.fit_seconds) for c in chunks] == [3, 3, 3, 1]
    _assert_equal_to_fresh(trainer, split_data, val, test, (1, 4, 10))


def test_fit_seconds_exclude_time_spent_recording(split_data):
    """The time the generator is suspended (the recorder's metrics) is not training time."""
    gen = LightGBMTrainer(chunk_rounds=5).train(PARAMS, split_data,
                                                 TrainContext(seed=0, n_epochs=10))
    first = next(gen)
    time.sleep(1.0)
    second = next(gen)
    assert second.fit_seconds[0] - first.fit_seconds[-1] < 0.5


def _categorical_split(n_classes=3, seed=0):
    """Train rows use levels x, y, z of the list [x, y, z, never]; val/test rows hold those,
    missing values, "never" (in train's list, in no train row) and "new" (not in train's list),
    with their categories in another order than train's."""
    rng = np.random.default_rng(seed)

    def frame(n, levels, categories):
        c = rng.choice(levels, size=n).astype(object)
        c[rng.random(n) < 0.1] = None
        X = pd.DataFrame({"a": rng.normal(size=n),
                          "c": pd.Categorical(c, categories=categories)})
        score = X["a"] + 2.0 * (X["c"] == "x") - 1.5 * (X["c"] == "y") + rng.normal(size=n) * .5
        edges = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
        return X, np.digitize(score, edges).astype(np.int64)

    Xtr, ytr = frame(800, ["x", "y", "z"], ["x", "y", "z", "never"])
    other = ["z", "new", "never", "y", "x"]
    Xva, yva = frame(300, ["x", "y", "z", "never", "new"], other)
    Xte, yte = frame(300, ["x", "y", "z", "never", "new"], other)
    return SplitData(Xtr, ytr, Xva, yva, Xte, yte, n_classes)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_categoricals_are_native_and_coded_against_train_levels(n_classes):
    data = _categorical_split(n_classes)
    trainer = LightGBMTrainer(chunk_rounds=8, block_rounds=5)
    _, val, test = _collect(trainer, PARAMS, data, TrainContext(seed=0, n_epochs=20))
    # LightGBM's own pandas path (remap to train's levels by value) agrees, bit for bit
    _assert_equal_to_fresh(trainer, data, val, test, (1, 7, 20))
    trees = trainer.booster.trees_to_dataframe()
    assert (trees["decision_type"] == "==").any()  # categorical splits, not numerical codes

    # one val row with its categorical set to each value: "never", "new" and missing are all
    # "not a level seen in training" and land where LightGBM sends missing values
    levels = ["x", "y", "z", "never", "new", None]
    row = data.X_val.iloc[[0] * len(levels)].reset_index(drop=True)
    row["c"] = pd.Categorical(levels, categories=data.X_val["c"].cat.categories)
    probe = SplitData(data.X_train, data.y_train, row, np.zeros(len(levels), np.int64),
                      row, np.zeros(len(levels), np.int64), n_classes)
    _, pval, _ = _collect(LightGBMTrainer(), PARAMS, probe, TrainContext(seed=0, n_epochs=20))
    last = pval[-1]
    np.testing.assert_array_equal(last[3], last[5])  # never == missing
    np.testing.assert_array_equal(last[4], last[5])  # new == missing
    assert not np.array_equal(last[0], last[1])  # x and y are told apart

    # the same values with train's category order give the same logits: codes mean levels
    same = data.X_val.copy()
    same["c"] = same["c"].cat.reorder_categories(["x", "y", "z", "never", "new"])
    np.testing.assert_array_equal(eval_matrix(same, data.X_train),
                                  eval_matrix(data.X_val, data.X_train))
    m = eval_matrix(data.X_val, data.X_train)[:, 1]
    want = data.X_val["c"].map({"x": 0.0, "y": 1.0, "z": 2.0, "never": 3.0}).astype(float)
    np.testing.assert_array_equal(m, want.to_numpy())  # "new" and missing -> NaN


def test_ordered_categoricals_are_categorical_too():
    """LightGBM's "auto" takes only unordered categories as categorical (ordered ones would be
    split as numbers); SplitData's contract is that every category column is categorical."""
    data = _categorical_split(2)
    ordered = [X.assign(c=X["c"].cat.as_ordered()) for X in (data.X_train, data.X_val,
                                                             data.X_test)]
    data = SplitData(ordered[0], data.y_train, ordered[1], data.y_val, ordered[2], data.y_test, 2)
    trainer = LightGBMTrainer()
    _, val, test = _collect(trainer, PARAMS, data, TrainContext(seed=0, n_epochs=10))
    assert (trainer.booster.trees_to_dataframe()["decision_type"] == "==").any()
    _assert_equal_to_fresh(trainer, data, val, test, (1, 10))


def test_eval_matrix_rejects_mismatched_columns(split_data):
    with pytest.raises(ValueError, match="columns differ"):
        eval_matrix(split_data.X_val[["b", "a", "c", "d"]], split_data.X_train)
    X = split_data.X_val.copy()
    X["d"] = X["d"].astype(str)
    with pytest.raises(ValueError, match="'d' is categorical in train"):
        eval_matrix(X, split_data.X_train)


def test_column_names_lightgbm_would_reject_are_fine(split_data):
    """LightGBM refuses feature names with JSON characters; real datasets have such names."""
    names = ['a[0]', 'b: "x"', "c,{y}", "d"]
    ren = {old: new for old, new in zip(split_data.X_train.columns, names, strict=True)}
    data = SplitData(*(x.rename(columns=ren) if isinstance(x, pd.DataFrame) else x
                       for x in (split_data.X_train, split_data.y_train, split_data.X_val,
                                 split_data.y_val, split_data.X_test, split_data.y_test)),
                     split_data.n_classes)
    with pytest.raises(lgb.basic.LightGBMError, match="special JSON characters"):
        lgb.train({"verbosity": -1}, lgb.Dataset(data.X_train, data.y_train), 1)
    trainer = LightGBMTrainer()
    _, val, test = _collect(trainer, PARAMS, data, TrainContext(seed=0, n_epochs=5))
    _assert_equal_to_fresh(trainer, data, val, test, (1, 5))


def test_rounds_without_a_split_repeat_the_last_model(split_data):
    """No leaf can be split (min_data_in_leaf > n_train): LightGBM keeps only its constant
    first-round trees; every round is still recorded, equal to predict(num_iteration=r)."""
    trainer = LightGBMTrainer(chunk_rounds=4, block_rounds=3)
    chunks, val, test = _collect(trainer, {"min_data_in_leaf": 10_000}, split_data,
                                 TrainContext(seed=0, n_epochs=9))
    assert sum(len(c.fit_seconds) for c in chunks) == 9
    assert trainer.booster.num_trees() == trainer.booster.num_model_per_iteration()
    _assert_equal_to_fresh(trainer, split_data, val, test, range(1, 10))
    assert (val == val[0]).all() and np.isfinite(val).all()


def test_diverging_config_yields_non_finite_logits(split_data):
    """As for XGBoost: a diverged model is not an error here; its non-finite logits go to the
    recorder, which records NaN metrics for those rounds (and the float32 overflow is no
    warning: it is the expected outcome)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, val, test = _collect(LightGBMTrainer(), {"learning_rate": 1e39}, split_data,
                                TrainContext(seed=0, n_epochs=5))
    assert val.shape[0] == 5 and not np.isfinite(val).all() and not np.isfinite(test).all()


def test_failing_config_raises_before_any_chunk(split_data):
    with pytest.raises(lgb.basic.LightGBMError, match="num_leaves"):
        next(LightGBMTrainer().train({"num_leaves": 1}, split_data,
                                     TrainContext(seed=0, n_epochs=3)))


@pytest.mark.parametrize("via_leaves", [True, False])
def test_every_predict_call_keeps_the_run_s_threads(split_data, monkeypatch, via_leaves):
    """A predict call without num_threads resets LightGBM's process-wide OpenMP thread count,
    and the following rounds train with all cores (25x slower on a loaded 2-core machine)."""
    calls = []
    real = lgb.Booster.predict

    def spy(self, data, *args, **kwargs):
        calls.append(kwargs)
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(lgb.Booster, "predict", spy)
    list(LightGBMTrainer(block_rounds=2, via_leaves=via_leaves).train(
        PARAMS, split_data, TrainContext(seed=0, n_epochs=5, threads=1)))
    assert len(calls) == (3 if via_leaves else 5)
    assert all(c["num_threads"] == 1 and c["verbosity"] == -1 for c in calls)


def test_training_is_silent(split_data, capfd):
    list(LightGBMTrainer(block_rounds=2).train({**PARAMS, "min_data_in_leaf": 10_000},
                                                split_data, TrainContext(seed=0, n_epochs=4)))
    list(LightGBMTrainer(via_leaves=False).train(PARAMS, split_data,
                                                 TrainContext(seed=0, n_epochs=4)))
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("seed", range(4))
def test_draws_of_the_search_space_train(seed, split_data):
    """Whatever the draw (a large min_data_in_leaf or min_sum_hessian_in_leaf can leave nothing
    to split on a small split), every round is recorded with finite logits."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed)).ask()
    chunks = list(LightGBMTrainer().train(space.suggest(trial), split_data,
                                          TrainContext(seed=0, n_epochs=3)))
    assert sum(len(c.fit_seconds) for c in chunks) == 3
    assert all(np.isfinite(c.val_logits).all() for c in chunks)


# --- a whole train job ---------------------------------------------------------------------

EPOCHS = {"lightgbm_default": 6, "lightgbm_tuned": 9}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A processed parquet + splits parquet in tabbench.data's on-disk contract: 3 classes,
    a categorical column with missing values."""
    from tabbench.data.dataset import LABEL_COLUMN

    folder = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)
    n = 900
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                       "c": pd.Categorical(rng.choice(["x", "y", "z", None], size=n))})
    score = df["a"] - df["b"] * (df["c"] == "x") + rng.normal(size=n) * 0.8
    df[LABEL_COLUMN] = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3])).astype(np.int64)
    n_test, n_val = n // 5, (n - n // 5) // 5
    roles = ["test"] * n_test + ["val"] * n_val + ["train"] * (n - n_test - n_val)
    splits = pd.concat([pd.DataFrame({"split": s, "row": np.random.default_rng(s).permutation(n),
                                      "role": roles}) for s in range(2)])
    df.to_parquet(folder / "toy.parquet", index=False)
    splits.to_parquet(folder / "toy.splits.parquet", index=False)
    return folder / "toy.parquet", folder / "toy.splits.parquet"


def _run(dataset, out, factory, n_configs=2):
    from fixtures.jobs import train_job

    processed, splits = dataset
    return train_job("lightgbm", "toy", 1, processed, splits, out, n_configs=n_configs,
                     epochs=EPOCHS, seed=0, progress=io.StringIO(), trainer_factory=factory)


def test_train_job_records_every_epoch_of_every_config(dataset, tmp_path):
    from tabbench.core.layout import failures_path
    from tabbench.data.dataset import load_split_data
    from tabbench.search import stable_seed

    trainers = []

    def factory(name):
        assert name == "lightgbm"
        trainers.append(LightGBMTrainer(chunk_rounds=4, block_rounds=3))
        return trainers[-1]

    out = tmp_path / "runs.parquet"
    df = _run(dataset, out, factory)
    check_records(pd.read_parquet(out), {0: 6, 1: 9, 2: 9})
    assert json.loads(failures_path(out).read_text()) == []
    metric_cols = [c for c in df.columns if c.startswith(("val_", "test_"))]
    assert np.isfinite(df[metric_cols].to_numpy()).all()
    # config 0 is LightGBM's defaults; configs 1, 2 are draws of this module's space
    by_config = df.groupby("config")["params"].first()
    assert json.loads(by_config[0]) == space.DEFAULT_CONFIG == {}
    for c in (1, 2):
        sampler = optuna.samplers.RandomSampler(seed=stable_seed(0, "toy", 1, "lightgbm", c))
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        want = space.suggest(optuna.create_study(sampler=sampler).ask())
        assert json.loads(by_config[c]) == pytest.approx(want)
    # the recorded metric is that round's model's: val logloss from a fresh prediction
    data = load_split_data(*dataset, 1)
    for c in (0, 2):
        for r in (1, 6):
            fresh = _fresh(trainers[c].booster, data.X_val, r, data.n_classes)
            row = df[(df["config"] == c) & (df["epoch"] == r)].iloc[0]
            np.testing.assert_allclose(row["val_logloss"], logloss(fresh, data.y_val),
                                       rtol=1e-6)


def test_train_job_records_failing_and_diverging_configs(dataset, tmp_path):
    """Config 1 fails (invalid num_leaves): in the failures sidecar, the job goes on. Config 2
    diverges (non-finite logits): every epoch recorded, with NaN metrics."""
    from tabbench.core.layout import failures_path

    replaced = iter([None, {"num_leaves": 1}, {"learning_rate": 1e39}])

    class Replaced(LightGBMTrainer):
        """Trains ``params`` instead of the job's config (whose draw might split no leaf)."""

        def __init__(self, params):
            super().__init__()
            self.params = params

        def train(self, params, data, ctx):
            return super().train(self.params or params, data, ctx)

    out = tmp_path / "f.parquet"
    df = _run(dataset, out, lambda name: Replaced(next(replaced)))
    assert sorted(df["config"].unique()) == [0, 2]
    check_records(df, {0: 6, 2: 9})
    fails = json.loads(failures_path(out).read_text())
    assert [(f["config"], f["error_type"], f["epochs_done"]) for f in fails] == [
        (1, "LightGBMError", 0)]
    diverged = df[df["config"] == 2]
    assert diverged["val_logloss"].isna().all() and diverged["test_logloss"].isna().all()
    assert np.isfinite(df.loc[df["config"] == 0, "val_logloss"]).all()
