"""MLP trainer: preprocessing fit on train only, per-epoch logits equal a fresh evaluation of
that epoch's network, determinism, failure and divergence handling."""

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from tabbench.models.base import SplitData, TrainContext
from tabbench.models.mlp import MLPPreprocessor, MLPTrainer, build_mlp


def test_preprocessing_is_fit_on_train_only():
    train = pd.DataFrame({
        "num": np.arange(100, dtype=float),
        "bin": pd.Categorical(["u", "v"] * 50, categories=["t", "u", "v"]),
        "multi": pd.Categorical(["a", "b", "c", "a"] * 25, categories=["a", "b", "c", "d"]),
        "const": pd.Categorical(["k"] * 100),
    })
    pre = MLPPreprocessor().fit(train)
    # 1 numerical + 1 (±1 binary: "t" never seen in train) + 3 (one-hot a, b, c); const dropped
    assert pre.n_features == 5
    other = pd.DataFrame({
        "num": [-50.0, 49.5, 1e6],
        "bin": pd.Categorical(["v", "t", None], categories=["t", "u", "v"]),
        "multi": pd.Categorical(["c", "d", None], categories=["a", "b", "c", "d"]),
        "const": pd.Categorical(["k", "k", "k"]),
    })
    Z = pre.transform(other)
    # quantiles come from train: below/above the train range clip to the train extremes
    lo, hi = pre.transform(train)[[0, -1], 0]
    assert Z[0, 0] == lo and Z[2, 0] == hi and abs(Z[1, 0]) < 0.05
    np.testing.assert_array_equal(Z[:, 1], [1.0, 0.0, 0.0])  # v=+1, unseen t=0, missing=0
    np.testing.assert_array_equal(Z[:, 2:], [[0, 0, 1], [0, 0, 0], [0, 0, 0]])
    assert pre.quantile.n_quantiles == 100  # min(1000, n_train)


def test_preprocessing_rejects_missing_numericals():
    X = pd.DataFrame({"num": [1.0, np.nan, 2.0]})
    with pytest.raises(ValueError, match="finite"):
        MLPPreprocessor().fit(X)


def test_architecture():
    net = build_mlp(7, 3, 3, 256, 0.0)
    linear = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linear] == [(7, 256), (256, 256),
                                                                 (256, 256), (256, 3)]
    assert not any(isinstance(m, torch.nn.Dropout) for m in net)
    assert sum(isinstance(m, torch.nn.Dropout) for m in build_mlp(7, 3, 3, 256, 0.2)) == 3


def test_logits_equal_a_fresh_evaluation_of_that_epoch(split_data):
    snaps = {}

    def hook(epoch, net, pre):
        if epoch in (1, 4, 6):
            snaps[epoch] = (copy.deepcopy(net), pre)

    trainer = MLPTrainer(chunk_epochs=4, epoch_hook=hook)
    chunks = list(trainer.train({"dropout": 0.1}, split_data, TrainContext(seed=0, n_epochs=6)))
    assert [c.first_epoch for c in chunks] == [1, 5]
    val = np.concatenate([c.val_logits for c in chunks])
    test = np.concatenate([c.test_logits for c in chunks])
    assert test.shape == (6, len(split_data.y_test), split_data.n_classes)
    for epoch, (net, pre) in snaps.items():
        net.eval()
        with torch.no_grad():
            for X, logits in ((split_data.X_val, val), (split_data.X_test, test)):
                fresh = net(torch.as_tensor(pre.transform(X))).numpy()
                np.testing.assert_allclose(logits[epoch - 1], fresh, rtol=1e-6, atol=1e-6)
    assert not np.allclose(test[0], test[-1])  # it trains


def _run(params, data, seed=0, n_epochs=3, **kw):
    chunks = list(MLPTrainer(**kw).train(params, data, TrainContext(seed=seed, n_epochs=n_epochs)))
    return np.concatenate([c.test_logits for c in chunks])


def test_deterministic_on_cpu(split_data):
    a = _run({"dropout": 0.2}, split_data, seed=4)
    np.testing.assert_array_equal(a, _run({"dropout": 0.2}, split_data, seed=4))
    assert not np.array_equal(a, _run({"dropout": 0.2}, split_data, seed=5))


def test_small_training_set_still_trains(split_data):
    small = SplitData(split_data.X_train.iloc[:40].reset_index(drop=True),
                      split_data.y_train[:40], split_data.X_val, split_data.y_val,
                      split_data.X_test, split_data.y_test, split_data.n_classes)
    test = _run({}, small, n_epochs=2)
    assert np.isfinite(test).all() and not np.array_equal(test[0], test[1])


def test_non_finite_loss_in_first_epoch_fails(split_data):
    with pytest.raises(FloatingPointError, match="first epoch"):
        _run({"lr": 1e30, "batch_size": 32}, split_data, n_epochs=2)


def test_divergence_later_gives_nan_logits_not_a_crash(split_data):
    def poison(epoch, net, pre):
        if epoch == 2:
            with torch.no_grad():
                net[0].weight[0, 0] = float("nan")

    test = _run({}, split_data, n_epochs=4, epoch_hook=poison)
    assert np.isfinite(test[:2]).all()
    assert np.isnan(test[2:]).all()


def test_unknown_parameter():
    with pytest.raises(ValueError, match="unknown MLP parameters"):
        next(MLPTrainer().train({"lr_typo": 1}, None, TrainContext(seed=0, n_epochs=1)))
