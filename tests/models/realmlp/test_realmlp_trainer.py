"""RealMLPTrainer end to end on small synthetic data: the EpochChunk contract, determinism,
learning, input validation."""

import numpy as np
import pandas as pd
import pytest
import torch

from tabbench.models.base import SplitData, TrainContext
from tabbench.models.realmlp import RealMLPTrainer
from tabbench.search.realmlp import DEFAULT_CONFIG


def _frame(rng, n):
    cats12 = [f"c{i}" for i in range(12)]
    return pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.exponential(size=n),
            "x3": rng.integers(0, 3, n).astype(float),
            "bin": pd.Categorical(rng.choice(["a", "b"], n), categories=["a", "b"]),
            "many": pd.Categorical(rng.choice(cats12, n), categories=cats12),
        }
    )


def make_data(n_classes=2, n=500, seed=0):
    rng = np.random.default_rng(seed)
    X = _frame(rng, n)
    score = 2 * X["x1"].to_numpy() + (X["bin"] == "a").to_numpy() - X["x2"].to_numpy()
    score += np.isin(X["many"].astype(str), ["c1", "c2", "c3"]) * 1.5
    if n_classes == 2:
        y = (score + 0.3 * rng.normal(size=n) > np.median(score)).astype(np.int64)
    else:
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    tr, va, te = np.split(np.arange(n), [int(0.64 * n), int(0.8 * n)])

    def part(idx):
        return X.iloc[idx].reset_index(drop=True)

    return SplitData(part(tr), y[tr], part(va), y[va], part(te), y[te], n_classes)


def run(params=None, data=None, **ctx):
    data = data or make_data()
    ctx = {"seed": 0, "n_epochs": 3, **ctx}
    trainer = RealMLPTrainer(chunk_epochs=ctx.pop("chunk_epochs", 16))
    return list(trainer.train(params or DEFAULT_CONFIG, data, TrainContext(**ctx)))


def logloss(logits, y):
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return -logp[..., np.arange(len(y)), y].mean(axis=-1)


def test_chunks_follow_the_contract():
    data = make_data()
    chunks = run(data=data, n_epochs=5, chunk_epochs=2)
    assert [c.first_epoch for c in chunks] == [1, 3, 5]
    assert [c.val_logits.shape for c in chunks] == [(2, 80, 2), (2, 80, 2), (1, 80, 2)]
    assert [c.test_logits.shape for c in chunks] == [(2, 100, 2), (2, 100, 2), (1, 100, 2)]
    fit = np.concatenate([c.fit_seconds for c in chunks])
    assert fit.shape == (5,) and np.all(fit > 0) and np.all(np.diff(fit) > 0)
    assert all(np.isfinite(c.val_logits).all() for c in chunks)
    assert chunks[0].val_logits.dtype == np.float32


def test_deterministic_on_cpu_and_seed_matters():
    a = run(seed=3)[0]
    b = run(seed=3)[0]
    c = run(seed=4)[0]
    np.testing.assert_array_equal(a.val_logits, b.val_logits)
    np.testing.assert_array_equal(a.test_logits, b.test_logits)
    assert not np.array_equal(a.val_logits, c.val_logits)


def test_global_torch_rng_and_threads_are_left_alone():
    state = torch.random.get_rng_state()
    threads = torch.get_num_threads()
    run(threads=1)
    assert torch.equal(state, torch.random.get_rng_state())
    assert torch.get_num_threads() == threads


def test_learns_an_easy_problem():
    data = make_data(n=600, seed=1)
    chunks = run(data=data, n_epochs=24)
    val = np.concatenate([logloss(c.val_logits, data.y_val) for c in chunks])
    prior = -np.mean(np.log(np.bincount(data.y_train)[data.y_val] / len(data.y_train)))
    assert val.min() < 0.6 * prior


@pytest.mark.parametrize(
    "override",
    [
        {"num_emb_type": "none"},
        {"num_emb_type": "pl", "act": "relu", "add_front_scale": False},
        {"num_emb_type": "plr", "act": "mish", "hidden_sizes": [512]},
        {"hidden_sizes": [64] * 5, "ls_eps": 0.1, "p_drop": 0.0, "wd": 0.0},
    ],
)
def test_search_space_variants_train_multiclass(override):
    data = make_data(n_classes=4)
    chunks = run({**DEFAULT_CONFIG, **override}, data=data, n_epochs=2)
    assert chunks[0].val_logits.shape == (2, 80, 4)
    assert np.isfinite(chunks[0].test_logits).all()


def test_only_numericals_and_only_categoricals():
    data = make_data()
    nums = SplitData(
        data.X_train[["x1", "x2"]],
        data.y_train,
        data.X_val[["x1", "x2"]],
        data.y_val,
        data.X_test[["x1", "x2"]],
        data.y_test,
        2,
    )
    cats = SplitData(
        data.X_train[["bin", "many"]],
        data.y_train,
        data.X_val[["bin", "many"]],
        data.y_val,
        data.X_test[["bin", "many"]],
        data.y_test,
        2,
    )
    for d in (nums, cats):
        assert np.isfinite(run(data=d, n_epochs=1)[0].val_logits).all()


def test_small_train_set_uses_one_full_batch():
    data = make_data(n=100)  # 64 train rows < batch size 256
    assert run(data=data, n_epochs=2)[0].val_logits.shape == (2, 16, 2)


def test_bad_config_raises_before_iteration():
    with pytest.raises(ValueError, match="unknown RealMLP parameter"):
        RealMLPTrainer().train({"lr_typo": 1}, make_data(), TrainContext(seed=0, n_epochs=1))


def test_bad_inputs_raise():
    data = make_data()
    with pytest.raises(ValueError, match="unknown RealMLP parameter"):
        run({**DEFAULT_CONFIG, "learning_rate": 0.1}, data=data)
    with pytest.raises(ValueError, match="act"):
        run({**DEFAULT_CONFIG, "act": "tanh"}, data=data)
    bad = SplitData(
        data.X_train, data.y_train + 5, data.X_val, data.y_val, data.X_test, data.y_test, 2
    )
    with pytest.raises(ValueError, match="labels"):
        run(data=bad)
    with pytest.raises(ValueError, match="n_epochs"):
        run(data=data, n_epochs=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    chunks = run(n_epochs=2, device="cuda")
    assert chunks[0].val_logits.shape == (2, 80, 2)
    assert np.isfinite(chunks[0].val_logits).all()
