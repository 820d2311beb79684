"""Replay of the selected models: the logits reproduce the records (self-check), work is shared
(one training per distinct config, stopped after the last needed epoch), a non-deterministic
trainer fails the check, and the files are what the diagnostics read."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from fixtures.data_fixtures import write_processed_toy
from fixtures.jobs import replay_job, train_job

from tabbench.core.layout import replay_sidecar
from tabbench.data.dataset import load_split_data
from tabbench.diagnostics.paths import logits_key
from tabbench.diagnostics.replay import (
    ReplayMismatchError,
    Selection,
    collect_epochs,
    read_replay,
    replay_plan,
)
from tabbench.metrics import logloss
from tabbench.models.base import EpochChunk
from tabbench.summary.select import read_records, select_table

EPOCHS = {"xgboost_default": 7, "xgboost_tuned": 9, "mlp": 5, "realmlp": 4, "fake": 12,
          "lightgbm_default": 7, "lightgbm_tuned": 9}


def write_dataset(folder, n=700, n_classes=3, seed=0):
    return write_processed_toy(folder, n=n, n_classes=n_classes, seed=seed, n_splits=1)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_dataset(tmp_path_factory.mktemp("data"))


#: "fake" is registered like any model, through a throwaway distribution's entry point (the
#: job and the replay look the model up in the registry); its trainer is injected by the tests
FAKE_SPACE = """
from tabbench.models.registry import ModelSpec

DEFAULT_CONFIG = {"scale": 0.5}


def suggest(trial):
    return {"scale": trial.suggest_float("scale", 0.5, 2.0)}


MODEL = ModelSpec(name="fake", trainer="fake_replay_model:NoTrainerHere",
                  search_space="fake_replay_model", epochs_keys=("fake", "fake"),
                  paper_epochs={"fake": 12})
"""


@pytest.fixture(scope="module", autouse=True)
def fake_registered(tmp_path_factory):
    import sys

    from fixtures.plugin_dists import write_distribution

    from tabbench.metrics import registry as metrics_registry
    from tabbench.models import registry as models_registry

    root = write_distribution(tmp_path_factory.mktemp("site"), "tabbench-fake-replay",
                              {"fake_replay_model": FAKE_SPACE},
                              {"tabbench.models": {"fake": "fake_replay_model:MODEL"}})
    sys.path.insert(0, str(root))
    models_registry.reload_registry()
    metrics_registry.reload_registry()
    yield
    sys.path.remove(str(root))
    sys.modules.pop("fake_replay_model", None)
    models_registry.reload_registry()
    metrics_registry.reload_registry()


class FakeTrainer:
    """Logits that depend only on (seed, params, epoch) — deterministic like a real trainer —
    unless ``noise`` > 0 adds unseeded noise (a non-deterministic trainer). Counts the epochs it
    produced and how often it was asked to train."""

    name = "fake"

    def __init__(self, noise: float = 0.0, log: list | None = None) -> None:
        self.noise = noise
        self.chunk_epochs = 5
        self.log = log if log is not None else []

    def train(self, params, data, ctx):
        rng = np.random.default_rng(ctx.seed)
        K = data.n_classes
        w = rng.normal(size=(2, K)) * params["scale"]
        x_val = data.X_val[["a", "b"]].to_numpy()
        x_test = data.X_test[["a", "b"]].to_numpy()
        record = {"seed": ctx.seed, "epochs": 0}
        self.log.append(record)
        chunk = self.chunk_epochs
        for first in range(1, ctx.n_epochs + 1, chunk):
            n = min(chunk, ctx.n_epochs - first + 1)
            ts = np.arange(first, first + n)[:, None, None] / ctx.n_epochs
            val = ts * (x_val @ w)[None] + np.sin(3 * ts) * x_val[None, :, :1]
            test = ts * (x_test @ w)[None] + np.sin(3 * ts) * x_test[None, :, :1]
            if self.noise:
                val = val + np.random.default_rng().normal(0, self.noise, val.shape)
            record["epochs"] += n
            yield EpochChunk(first, val.astype(np.float32), test.astype(np.float32),
                             np.arange(first, first + n, dtype=float))


def fake_factory(noise: float = 0.0, log: list | None = None):
    def make(name, **options):
        assert name == "fake" and not options
        return FakeTrainer(noise, log)
    return make


def train_fake(dataset, out, n_configs=3):
    """Records of the fake model (its configs: a scale per config id)."""
    from tabbench.study import train_job as module

    processed, splits = dataset
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "sample_config", lambda model, c, **kw: {"scale": 0.5 + 0.3 * c})
        mp.setattr(module, "n_epochs_for", lambda model, c, epochs: EPOCHS["fake"] - c)
        train_job("fake", "toy", 0, processed, splits, out, n_configs=n_configs,
                  epochs={}, seed=3, progress=io.StringIO(),
                  trainer_factory=fake_factory())


@pytest.fixture(scope="module")
def fake_runs(dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "split0.parquet"
    train_fake(dataset, out)
    return out


def replay(runs, dataset, out, **kw):
    processed, splits = dataset
    kw.setdefault("progress", io.StringIO())
    return replay_job(runs, processed, splits, out, seed=kw.pop("seed", 3), **kw)


def test_plan_shares_one_training_per_config():
    sel = [Selection("default", "logloss", 0, 4, 1.0, 1.0),
           Selection("default", "error", 0, 9, 1.0, 1.0),
           Selection("tuned", "logloss", 2, 3, 1.0, 1.0),
           Selection("tuned", "brier", 2, 3, 1.0, 1.0),
           Selection("tuned", "error", 1, 7, 1.0, 1.0)]
    assert replay_plan(sel) == {0: [4, 9], 1: [7], 2: [3]}


def test_collect_epochs_keeps_needed_epochs_and_stops_after_the_last():
    produced = []

    def chunks():
        for first in (1, 4, 7, 10):
            produced.append(first)
            v = np.arange(first, first + 3, dtype=np.float64)[:, None, None] * np.ones((3, 2, 2))
            yield EpochChunk(first, v, -v, np.arange(3.0))

    got = collect_epochs(chunks(), [5, 2])
    assert sorted(got) == [2, 5]
    assert got[5][0].dtype == np.float32 and got[5][0][0, 0] == 5 and got[2][1][0, 0] == -2
    assert produced == [1, 4]  # the chunk of epoch 7.. was never asked for
    with pytest.raises(RuntimeError, match="epochs \\[20\\] missing"):
        collect_epochs(chunks(), [20])


def test_fake_replay_reproduces_records_and_shares_work(fake_runs, dataset, tmp_path):
    log: list = []
    out = tmp_path / "replay" / "split0.npz"
    res = replay(fake_runs, dataset, out, trainer_factory=fake_factory(0.0, log))
    records = pd.read_parquet(fake_runs)
    chosen = select_table(read_records(fake_runs))
    # one training per distinct selected config, each stopped right after its last needed epoch
    need = chosen.groupby("config")["epoch"].max()
    assert len(log) == len(need)
    assert sorted(r["epochs"] for r in log) == sorted(need.tolist())
    arrays, side = read_replay(out)
    data = load_split_data(*dataset, 0)
    assert np.array_equal(arrays["y_val"], data.y_val)
    assert np.array_equal(arrays["y_test"], data.y_test)
    assert set(side["selections"]) == {f"{r}__{s}" for r, s in zip(chosen["regime"],
                                                                   chosen["stopping"],
                                                                   strict=True)}
    for row in chosen.itertuples():
        key = f"{row.regime}__{row.stopping}"
        val = arrays[logits_key("val", row.regime, row.stopping)]
        test = arrays[logits_key("test", row.regime, row.stopping)]
        assert val.dtype == np.float32 and val.shape == (len(data.y_val), data.n_classes)
        assert test.shape == (len(data.y_test), data.n_classes)
        rec = records[(records["config"] == row.config) & (records["epoch"] == row.epoch)]
        assert logloss(val, data.y_val) == pytest.approx(rec["val_logloss"].item(), rel=1e-6)
        assert side["selections"][key]["config"] == row.config
        assert side["selections"][key]["epoch"] == row.epoch
    cost = side["cost"]
    assert cost["study_configs"] == records["config"].nunique()
    # the fake's fit_seconds are 1, 2, ..., so recorded seconds = epochs
    assert cost["study_train_seconds"] == records.groupby("config")["epoch"].max().sum()
    assert cost["recorded_fit_seconds_replayed"] == need.sum()
    assert cost["fraction_recorded"] == pytest.approx(need.sum() / cost["study_train_seconds"])
    assert res.sidecar == side


def test_replay_takes_the_studys_tie_rule(fake_runs, dataset, tmp_path):
    """With epoch_ties="last" the replayed (config, epoch)s are select_table's under that rule
    (the study's selected files and diagnostics use it too), and the sidecar says which."""
    out = tmp_path / "replay" / "split0.npz"
    replay(fake_runs, dataset, out, trainer_factory=fake_factory(0.0), epoch_ties="last")
    side = read_replay(out)[1]
    got = {k: (v["config"], v["epoch"]) for k, v in side["selections"].items()}
    for ties in ("last", "first"):
        chosen = select_table(read_records(fake_runs), epoch_ties=ties)
        want = {f"{r.regime}__{r.stopping}": (r.config, r.epoch) for r in chosen.itertuples()}
        assert (got == want) is (ties == "last")  # the fake's accuracy ties: the rules differ
    assert side["epoch_ties"] == "last"


def test_noisy_trainer_fails_the_self_check(fake_runs, dataset, tmp_path):
    out = tmp_path / "replay" / "split0.npz"
    with pytest.raises(ReplayMismatchError) as err:
        replay(fake_runs, dataset, out, trainer_factory=fake_factory(noise=1e-3))
    msg = str(err.value)
    assert "replayed validation logloss" in msg and "!= recorded" in msg
    # both numbers are in the message
    assert msg.count("recorded") >= 1 and "rtol 1e-05" in msg
    assert not out.exists() and not replay_sidecar(out).exists()


def test_wrong_seed_fails_the_self_check(fake_runs, dataset, tmp_path):
    with pytest.raises(ReplayMismatchError):
        replay(fake_runs, dataset, tmp_path / "r.npz", seed=4,
               trainer_factory=fake_factory())


@pytest.mark.parametrize("model", ["xgboost", "lightgbm", "mlp", "realmlp"])
def test_real_trainers_replay_their_records(model, dataset, tmp_path):
    processed, splits = dataset
    runs = tmp_path / "runs.parquet"
    train_job(model, "toy", 0, processed, splits, runs, n_configs=2, epochs=EPOCHS,
              seed=5, progress=io.StringIO())
    out = tmp_path / "replay.npz"
    res = replay(runs, dataset, out, seed=5)
    side = json.loads(replay_sidecar(out).read_text())
    assert side == json.loads(json.dumps(res.sidecar))
    for entry in side["selections"].values():
        assert entry["val_logloss_replayed"] == pytest.approx(entry["val_logloss_recorded"],
                                                              rel=1e-5)
        assert entry["test_logloss_replayed"] == pytest.approx(
            entry["test_logloss_recorded"], rel=1e-5)
    assert 0 < side["cost"]["fraction_recorded"] <= 1


def test_xgboost_logits_at_equal_the_recorded_rounds(dataset):
    from tabbench.models.base import TrainContext
    from tabbench.models.xgboost import XGBoostTrainer

    data = load_split_data(*dataset, 0)
    params = {"max_depth": 3, "eta": 0.3}
    ctx = TrainContext(seed=1, n_epochs=12)
    chunks = list(XGBoostTrainer(chunk_rounds=5).train(params, data, ctx))
    val = np.concatenate([c.val_logits for c in chunks])
    test = np.concatenate([c.test_logits for c in chunks])
    got = XGBoostTrainer().logits_at(params, data, ctx, [9, 2])
    for r in (2, 9):
        np.testing.assert_allclose(got[r][0], val[r - 1], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[r][1], test[r - 1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
# min_data_in_leaf 300 of 448 training rows: no split is possible, so after round 1 the rounds
# add no tree (the model stays at 1 iteration), a case the recorder handles on its own path
@pytest.mark.parametrize("min_data_in_leaf", [40, 300])
def test_lightgbm_logits_at_equal_the_recorded_rounds_bit_for_bit(n_classes, min_data_in_leaf,
                                                                   tmp_path):
    from tabbench.models.base import TrainContext
    from tabbench.models.lightgbm import LightGBMTrainer

    data = load_split_data(*write_dataset(tmp_path, n_classes=n_classes), 0)
    params = {"num_leaves": 7, "learning_rate": 0.3, "min_data_in_leaf": min_data_in_leaf}
    ctx = TrainContext(seed=1, n_epochs=30)
    chunks = list(LightGBMTrainer(chunk_rounds=8, block_rounds=3).train(params, data, ctx))
    val = np.concatenate([c.val_logits for c in chunks])
    test = np.concatenate([c.test_logits for c in chunks])
    got = LightGBMTrainer().logits_at(params, data, ctx, [30, 1, 17])
    for r in (1, 17, 30):
        np.testing.assert_array_equal(got[r][0].astype(np.float32), val[r - 1])
        np.testing.assert_array_equal(got[r][1].astype(np.float32), test[r - 1])


def test_cli_replays_and_fails_with_both_numbers(dataset, tmp_path, capsys):
    from tabbench import cli

    processed, splits = dataset
    runs = tmp_path / "runs" / "xgboost" / "toy" / "split0.parquet"
    train_job("xgboost", "toy", 0, processed, splits, runs, n_configs=1, epochs=EPOCHS,
              seed=2, progress=io.StringIO())
    args = ["replay", "--runs", str(runs), "--processed", str(processed), "--splits",
            str(splits), "--seed", "2"]
    out = tmp_path / "replay" / "split0.npz"
    assert cli.main(args + ["--out", str(out)]) == 0
    assert out.exists() and replay_sidecar(out).exists()
    # the wrong seed: the tuned config subsamples differently, the self-check fails, the CLI
    # says why and writes nothing
    bad = tmp_path / "bad" / "split0.npz"
    wrong = [a if a != "2" else "3" for a in args]
    assert json.loads(read_records(runs).column("params")[-1].as_py())["subsample"] < 1
    assert cli.main(wrong + ["--out", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "tabbench replay: error:" in err and "!= recorded" in err
    assert not bad.exists()


def test_empty_runs_file_gives_labels_only(dataset, tmp_path):
    from tabbench.models.recorder import empty_records

    runs = tmp_path / "runs" / "mlp" / "toy" / "split0.parquet"
    runs.parent.mkdir(parents=True)
    empty_records().to_parquet(runs, index=False)
    out = tmp_path / "replay.npz"
    res = replay(runs, dataset, out)
    arrays, side = read_replay(out)
    assert set(arrays) == {"y_val", "y_test"} and side["selections"] == {}
    assert res.sidecar["dataset"] == "toy" and side["model"] == "mlp"
