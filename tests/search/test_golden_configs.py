"""Reproducibility guard: the configs a study trains, pinned.

Config ``i`` of (model, dataset, split) is a draw of optuna's RandomSampler from a seed derived
from those values (tabbench.search.sampling). An upgrade of optuna or numpy that changes the
sampler's stream, or a change of a search space or of the seed derivation, would silently give
another study; these literal values (computed with optuna 5.0.0, numpy 2.4.6) make it fail
loudly instead. If the change is intended, results trained before it are not comparable with
results trained after: say so in the changelog, then update the values here.

Floats are compared to 1e-12 relative (a different libm may move the last bit of an exp or a
log); every integer and categorical choice exactly.
"""

from __future__ import annotations

import math

import pytest

from tabbench.search import sample_config, stable_seed

#: (model, dataset, split, config) -> (stable seed at global seed 0, the sampled config)
GOLDEN = {
    ("xgboost", "adult", 0, 1): (861959118, {
        "eta": 0.06116297619733477, "max_depth": 9, "min_child_weight": 12.882202008368258,
        "subsample": 0.5226634916296167, "colsample_bytree": 0.8135794445428008,
        "colsample_bylevel": 0.838226567658195, "alpha": 0.00012699616134121392,
        "lambda": 0.00015737073606678304, "gamma": 0.0005087898389502207,
    }),
    ("xgboost", "kc1", 3, 17): (60499996, {
        "eta": 0.6246225380792256, "max_depth": 7, "min_child_weight": 3.238271573214625e-05,
        "subsample": 0.8598688632412743, "colsample_bytree": 0.8151815778614697,
        "colsample_bylevel": 0.9054784027025409, "alpha": 0.03028569612765031,
        "lambda": 0.0005347520556743934, "gamma": 1.0084621336538835,
    }),
    ("mlp", "segment", 1, 2): (969735176, {
        "lr": 0.0006825817064197903, "dropout": 0.0, "weight_decay": 1e-05,
        "n_hidden_layers": 3, "hidden_width": 256, "batch_size": 256,
    }),
    ("realmlp", "phoneme", 2, 5): (1465840052, {
        "num_emb_type": "none", "add_front_scale": True, "lr": 0.08922081045692383,
        "p_drop": 0.15, "act": "selu", "hidden_sizes": [256, 256, 256], "wd": 0.002,
        "plr_sigma": 0.296995934367975, "ls_eps": 0.1, "batch_size": 256,
        "lr_sched": "coslog4", "p_drop_sched": "flat_cos", "wd_sched": "flat_cos", "mom": 0.9,
        "sq_mom": 0.95, "opt_eps": 1e-08, "use_parametric_act": True, "act_lr_factor": 0.1,
        "bias_lr_factor": 0.1, "scale_lr_factor": 6.0, "plr_lr_factor": 0.1, "plr_hidden_1": 16,
        "plr_hidden_2": 4, "max_one_hot_cats": 8, "embedding_size": 8,
        "smooth_clip_max_abs": 3.0, "wd_squared_factors": True,
    }),
    ("realmlp", "letter", 4, 30): (592229789, {
        "num_emb_type": "pl", "add_front_scale": True, "lr": 0.1680684342543909,
        "p_drop": 0.15, "act": "mish", "hidden_sizes": [256, 256, 256], "wd": 0.002,
        "plr_sigma": 0.09197908171552102, "ls_eps": 0.1, "batch_size": 256,
        "lr_sched": "coslog4", "p_drop_sched": "flat_cos", "wd_sched": "flat_cos", "mom": 0.9,
        "sq_mom": 0.95, "opt_eps": 1e-08, "use_parametric_act": True, "act_lr_factor": 0.1,
        "bias_lr_factor": 0.1, "scale_lr_factor": 6.0, "plr_lr_factor": 0.1, "plr_hidden_1": 16,
        "plr_hidden_2": 4, "max_one_hot_cats": 8, "embedding_size": 8,
        "smooth_clip_max_abs": 3.0, "wd_squared_factors": True,
    }),
}


def _same(got, want) -> bool:
    if isinstance(want, float) and not isinstance(got, bool):
        return isinstance(got, float) and math.isclose(got, want, rel_tol=1e-12, abs_tol=0.0)
    return type(got) is type(want) and got == want


@pytest.mark.parametrize("case", sorted(GOLDEN), ids=lambda c: "-".join(map(str, c)))
def test_sampled_configs_are_the_pinned_ones(case):
    model, dataset, split, config = case
    seed, want = GOLDEN[case]
    assert stable_seed(0, dataset, split, model, config) == seed
    got = sample_config(model, config, seed=0, dataset=dataset, split=split)
    assert list(got) == list(want), "keys or their order changed"
    diff = {k: (got[k], want[k]) for k in want if not _same(got[k], want[k])}
    assert not diff, f"{case}: sampled values changed (got, pinned): {diff}"
