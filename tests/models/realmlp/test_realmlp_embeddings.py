"""Numerical (PBLD/PL/PLR) and categorical embeddings: shapes, formulas, init ranges."""

import math

import pytest
import torch

from tabbench.models.realmlp.embeddings import CategoricalEmbedding, PeriodicNumEmbedding

CPU = torch.device("cpu")


def _emb(kind, n=3, sigma=0.1):
    return PeriodicNumEmbedding(n, kind, sigma, 16, 4, torch.Generator().manual_seed(0), CPU)


def test_pbld_matches_formula_and_appends_raw_value():
    emb = _emb("pbld")
    assert emb.out_features == 3 * 3 + 3
    assert emb.bias_1.abs().max() <= math.pi
    assert emb.weight_2.abs().max() <= 0.25 and emb.bias_2.abs().max() <= 0.25
    x = torch.tensor([[0.3, -1.0, 2.0], [0.0, 0.5, -0.2]])
    out = emb(x)
    for f in range(3):
        h = torch.cos(2 * math.pi * x[:, f : f + 1] * emb.weight_1[f] + emb.bias_1[f])
        o = h @ emb.weight_2[f] + emb.bias_2[f]
        torch.testing.assert_close(out[:, 3 * f : 3 * f + 3], o)
    torch.testing.assert_close(out[:, 9:], x)


@pytest.mark.parametrize("kind", ["pl", "plr"])
def test_pl_and_plr(kind):
    emb = _emb(kind)
    assert emb.weight_1.shape == (3, 8) and emb.bias_1 is None
    assert emb.out_features == 3 * 4
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))
    out = emb(x)
    f = 1
    phase = 2 * math.pi * x[:, f : f + 1] * emb.weight_1[f]
    o = torch.cat([torch.cos(phase), torch.sin(phase)], dim=1) @ emb.weight_2[f] + emb.bias_2[f]
    if kind == "plr":
        o = torch.relu(o)
    torch.testing.assert_close(out[:, 4:8], o)


def test_frequency_init_std_is_sigma():
    emb = PeriodicNumEmbedding(400, "pbld", 0.3, 16, 4, torch.Generator().manual_seed(0), CPU)
    assert abs(emb.weight_1.std().item() - 0.3) < 0.01


def test_categorical_embedding_offsets():
    emb = CategoricalEmbedding([3, 5], 8, torch.Generator().manual_seed(0), CPU)
    x = torch.tensor([[0, 4], [2, 0]])
    out = emb(x)
    assert out.shape == (2, 16)
    torch.testing.assert_close(out[0, :8], emb.table[0])
    torch.testing.assert_close(out[0, 8:], emb.table[3 + 4])
    torch.testing.assert_close(out[1, :8], emb.table[2])
    torch.testing.assert_close(out[1, 8:], emb.table[3])
