"""Parameter-group lr/wd factors, the squared-factor weight-decay quirk, and Adam arithmetic."""

import math

import pytest
import torch

from tabbench.models.realmlp.config import RealMLPConfig
from tabbench.models.realmlp.network import ParamGroup, RealMLPNetwork
from tabbench.models.realmlp.optim import Scheduled, ScheduledAdam
from tabbench.models.realmlp.schedules import constant, get_schedule

CPU = torch.device("cpu")


def _net(**cfg):
    g = torch.Generator().manual_seed(0)
    return RealMLPNetwork(4, 2, [10], 3, RealMLPConfig(**cfg), g, CPU)


def test_parameter_group_factors():
    groups = {g.name: (g.lr_factor, g.wd_factor, len(g.params)) for g in _net().param_groups()}
    assert groups == {
        "weights": (1.0, 1.0, 4),
        "biases": (0.1, 0.0, 4),
        "front_scale": (6.0, 1.0, 1),
        "act_alpha": (0.1, 1.0, 3),
        "num_emb": (0.1, 1.0, 4),  # PBLD: w1, b1, W2, b2
        "cat_emb": (1.0, 1.0, 1),
    }


def test_groups_follow_architecture_options():
    net = _net(add_front_scale=False, use_parametric_act=False, num_emb_type="none")
    names = {g.name for g in net.param_groups()}
    assert names == {"weights", "biases", "cat_emb"}


def _opt(groups, wd_squared=True, lr=0.04, wd=0.02, total=100):
    return ScheduledAdam(
        groups,
        lr=Scheduled(lr, get_schedule("coslog4")),
        wd=Scheduled(wd, get_schedule("flat_cos")),
        betas=(0.9, 0.95),
        eps=1e-8,
        total_steps=total,
        wd_squared_factors=wd_squared,
    )


def test_scheduled_hyperparameters():
    opt = _opt([ParamGroup("w", [torch.nn.Parameter(torch.ones(2))], 1.0, 1.0)])
    lr_t, wd_t = opt.hyperparameters(75)  # t = 0.75
    assert lr_t == pytest.approx(
        0.04 * 0.5 * (1 - math.cos(2 * math.pi * math.log2(1 + 15 * 0.75)))
    )
    assert wd_t == pytest.approx(0.02 * 0.5)
    assert opt.hyperparameters(0)[0] == 0.0  # coslog4 starts at lr 0


def test_weight_decay_quirk_squares_the_factors():
    scale = ParamGroup("front_scale", [], 6.0, 1.0)
    bias = ParamGroup("biases", [], 0.1, 0.0)
    alpha = ParamGroup("act_alpha", [], 0.1, 1.0)
    opt = _opt([ParamGroup("w", [torch.nn.Parameter(torch.ones(1))], 1.0, 1.0)])
    lr_t, wd_t = 0.03, 0.02
    assert opt.decay_multiplier(scale, lr_t, wd_t) == pytest.approx(1 - 0.03 * 0.02 * 36)
    assert opt.decay_multiplier(alpha, lr_t, wd_t) == pytest.approx(1 - 0.03 * 0.02 * 0.01)
    assert opt.decay_multiplier(bias, lr_t, wd_t) == 1.0
    plain = _opt([ParamGroup("w", [torch.nn.Parameter(torch.ones(1))], 1.0, 1.0)], False)
    assert plain.decay_multiplier(scale, lr_t, wd_t) == pytest.approx(1 - 0.03 * 6 * 0.02)


def test_step_applies_decay_then_adam_with_group_lr():
    p_scale = torch.nn.Parameter(torch.tensor([2.0]))
    p_bias = torch.nn.Parameter(torch.tensor([2.0]))
    opt = _opt(
        [ParamGroup("front_scale", [p_scale], 6.0, 1.0), ParamGroup("biases", [p_bias], 0.1, 0.0)]
    )
    for p in (p_scale, p_bias):
        p.grad = torch.tensor([0.5])
    step = 20
    lr_t, wd_t = opt.hyperparameters(step)
    opt.step(step)
    # first Adam step moves each entry by lr_group * sign(grad) (bias-corrected m/sqrt(v) = 1)
    expected_scale = 2.0 * (1 - lr_t * wd_t * 36) - 6.0 * lr_t
    expected_bias = 2.0 - 0.1 * lr_t
    assert p_scale.item() == pytest.approx(expected_scale, rel=1e-6)
    assert p_bias.item() == pytest.approx(expected_bias, rel=1e-6)


def test_adam_matches_torch_adam_per_group():
    torch.manual_seed(0)
    a1, b1 = torch.randn(5, 3), torch.randn(4)
    ours = [torch.nn.Parameter(a1.clone()), torch.nn.Parameter(b1.clone())]
    ref = [torch.nn.Parameter(a1.clone()), torch.nn.Parameter(b1.clone())]
    opt = ScheduledAdam(
        [ParamGroup("a", [ours[0]], 1.0, 1.0), ParamGroup("b", [ours[1]], 0.1, 0.0)],
        lr=Scheduled(0.05, constant),
        wd=Scheduled(0.0, constant),
        betas=(0.9, 0.95),
        eps=1e-8,
        total_steps=10,
    )
    torch_opt = torch.optim.Adam(
        [{"params": [ref[0]], "lr": 0.05}, {"params": [ref[1]], "lr": 0.005}], betas=(0.9, 0.95)
    )
    for step in range(6):
        grads = [torch.randn(5, 3), torch.randn(4)]
        for p, q, g in zip(ours, ref, grads, strict=True):
            p.grad, q.grad = g.clone(), g.clone()
        opt.step(step)
        torch_opt.step()
    for p, q in zip(ours, ref, strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6)


def test_missing_gradient_raises():
    p = torch.nn.Parameter(torch.ones(2))
    opt = _opt([ParamGroup("w", [p], 1.0, 1.0)])
    with pytest.raises(RuntimeError, match="no gradient"):
        opt.step(0)
