"""NTK linear layers, data-dependent init, he+5 biases, parametric activations, dropout."""

import math

import pytest
import torch

from tabbench.models.realmlp.config import RealMLPConfig
from tabbench.models.realmlp.layers import (
    NTKLinear,
    ParametricActivation,
    ScheduledDropout,
    he_plus_bias,
)
from tabbench.models.realmlp.network import RealMLPNetwork

CPU = torch.device("cpu")


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_ntk_forward_divides_by_sqrt_fan_in():
    lin = NTKLinear(4, 2, CPU)
    with torch.no_grad():
        lin.weight.copy_(torch.arange(8.0).reshape(4, 2))
        lin.bias.copy_(torch.tensor([1.0, -1.0]))
    x = torch.tensor([[1.0, 1.0, 1.0, 1.0]])
    # column sums 0+2+4+6 = 12 and 1+3+5+7 = 16, divided by sqrt(4) = 2
    torch.testing.assert_close(lin(x), torch.tensor([[7.0, 7.0]]))


def test_data_dependent_init_gives_unit_std_preactivations():
    g = _gen()
    x = 5.0 * torch.randn(500, 7, generator=g) + 3.0  # neither centred nor unit scale
    lin = NTKLinear(7, 32, CPU)
    lin.init_from_data(x, g)
    pre = (x @ lin.weight) / math.sqrt(7)  # without bias
    torch.testing.assert_close(pre.std(dim=0, correction=0), torch.ones(32), rtol=1e-4, atol=1e-5)


def test_init_keeps_degenerate_columns_finite():
    x = torch.zeros(10, 3)
    lin = NTKLinear(3, 4, CPU)
    out = lin.init_from_data(x, _gen())
    assert torch.isfinite(lin.weight).all() and torch.isfinite(out).all()


def test_he_plus_bias_constant_columns():
    # every row has the same pre-activation c_j, so any convex combination is c_j: b_j = -c_j
    pre = torch.tensor([[1.0, -2.0, 0.5]]).repeat(20, 1)
    torch.testing.assert_close(he_plus_bias(pre, 5, _gen()), torch.tensor([-1.0, 2.0, -0.5]))


def test_he_plus_bias_is_minus_convex_combination_of_five_rows():
    n, d = 50, 400
    # column j holds row indices, so -b_j is a convex combination of 5 row indices
    pre = torch.arange(n, dtype=torch.float32).unsqueeze(1).repeat(1, d)
    b = he_plus_bias(pre, 5, _gen(3))
    assert ((-b >= 0) & (-b <= n - 1)).all()
    # rows are uniform and weights Dirichlet(1): E[-b] = (n-1)/2; spread well inside the range
    assert abs(float(-b.mean()) - (n - 1) / 2) < 2.0
    assert float(b.std()) > 5.0  # not collapsed onto one point
    # reproducible from the generator
    torch.testing.assert_close(b, he_plus_bias(pre, 5, _gen(3)))


def test_he_plus_bias_formula_with_the_same_draws():
    g = _gen(7)
    pre = torch.randn(30, 4, generator=g)
    b = he_plus_bias(pre, 5, _gen(7 + 1))
    g2 = _gen(7 + 1)
    rows = torch.randint(0, 30, (4, 5), generator=g2)
    w = torch.empty(4, 5).exponential_(1.0, generator=g2)
    w /= w.sum(dim=1, keepdim=True)
    expected = torch.stack([-(pre[rows[j], j] * w[j]).sum() for j in range(4)])
    torch.testing.assert_close(b, expected)


def test_network_init_puts_each_layer_at_unit_std_on_train_data():
    cfg = RealMLPConfig(hidden_sizes=[64, 32])
    g = _gen(1)
    x_num = torch.randn(300, 5, generator=g)
    x_oh = torch.sign(torch.randn(300, 2, generator=g))
    x_cat = torch.randint(0, 11, (300, 1), generator=g)
    net = RealMLPNetwork(5, 2, [11], 3, cfg, g, CPU)
    net.init_from_data(x_num, x_oh, x_cat, g)
    net.eval()
    with torch.no_grad():
        h = net.embed(x_num, x_oh, x_cat)
        for i, lin in enumerate(net.linears):
            pre = (h @ lin.weight) * lin.factor
            torch.testing.assert_close(
                pre.std(dim=0, correction=0), torch.ones(lin.out_features), rtol=1e-3, atol=1e-4
            )
            h = lin(h)
            if i < len(net.acts):
                h = net.acts[i](h)


@pytest.mark.parametrize("name", ["selu", "relu", "mish"])
def test_parametric_activation_interpolates(name):
    act = ParametricActivation(name, 3, True, CPU)
    x = torch.tensor([[-2.0, 0.5, 3.0]])
    f = act.f(x)
    torch.testing.assert_close(act(x), f)  # alpha = 1 at init
    with torch.no_grad():
        act.alpha.copy_(torch.tensor([0.0, 0.5, 1.0]))
    expected = torch.stack([x[0, 0], 0.5 * x[0, 1] + 0.5 * f[0, 1], f[0, 2]]).unsqueeze(0)
    torch.testing.assert_close(act(x), expected)


def test_non_parametric_activation_has_no_alpha():
    act = ParametricActivation("relu", 3, False, CPU)
    assert act.alpha is None and list(act.parameters()) == []
    torch.testing.assert_close(
        act(torch.tensor([[-1.0, 2.0, 0.0]])), torch.tensor([[0.0, 2.0, 0.0]])
    )


def test_scheduled_dropout_rate_and_eval():
    drop = ScheduledDropout(_gen())
    x = torch.ones(200, 500)
    drop.p = 0.3
    y = drop(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.7) < 0.01
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / 0.7))
    drop.eval()
    assert drop(x) is x
    drop.train()
    drop.p = 0.0
    assert drop(x) is x
