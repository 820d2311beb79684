"""Stacked training (docs/design.md §15) is the same algorithm as training each config alone:
forward and backward equal k single networks, the optimizer equals k torch.optim.AdamW (and
RealMLP's ScheduledAdam), a member's records do not depend on its group, dropout rates are per
member, and the whole trainers agree with the single-config trainers."""

import copy

import numpy as np
import pytest
import torch
from conftest import make_split

from tabbench.models import mlp_stacked
from tabbench.models.base import TrainContext
from tabbench.models.mlp import MLPTrainer, build_mlp
from tabbench.models.realmlp import stacked as realmlp_stacked
from tabbench.models.realmlp.config import RealMLPConfig
from tabbench.models.realmlp.network import RealMLPNetwork
from tabbench.models.realmlp.trainer import RealMLPTrainer
from tabbench.models.stacked.adam import StackedAdam, step_scalars
from tabbench.models.stacked.layers import MemberDropout, StackedLinear
from tabbench.models.stacked.loop import member_losses
from tabbench.search import sample_config


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _mlps(k, n_in, n_out, dtype, seed=0):
    torch.manual_seed(seed)
    return [build_mlp(n_in, n_out, 3, 16, 0.0).to(dtype) for _ in range(k)]


def _stack_mlps(nets):
    linears = []
    for i in range(len([m for m in nets[0] if isinstance(m, torch.nn.Linear)])):
        layers = [[m for m in net if isinstance(m, torch.nn.Linear)][i] for net in nets]
        linears.append(StackedLinear.from_members([lin.weight.t() for lin in layers],
                                                  [lin.bias for lin in layers]))
    return mlp_stacked.StackedMLP(linears)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_mlp_forward_backward_equal_k_single_networks(dtype, tol):
    k, B, n_in, K = 5, 32, 7, 3
    nets = _mlps(k, n_in, K, dtype)
    stacked = _stack_mlps(nets)
    x = torch.randn(k, B, n_in, dtype=dtype)
    y = torch.randint(0, K, (k, B))
    losses = member_losses(stacked((x,), None), y, None)
    losses.sum().backward()
    for m, net in enumerate(nets):
        loss = torch.nn.functional.cross_entropy(net(x[m]), y[m])
        loss.backward()
        assert losses[m].item() == pytest.approx(loss.item(), rel=tol, abs=tol)
        singles = [p for lin in net if isinstance(lin, torch.nn.Linear)
                   for p in (lin.weight, lin.bias)]
        for p_stacked, p_single in zip(stacked.optimizer_params(), singles, strict=True):
            g = p_stacked.grad[m].reshape(p_single.shape[::-1] if p_single.dim() == 2
                                          else p_single.shape)
            want = p_single.grad.t() if p_single.dim() == 2 else p_single.grad
            torch.testing.assert_close(g, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_realmlp_forward_backward_equal_k_single_networks(dtype, tol):
    """Members differing in activation, front scale, lr and label smoothing, with embeddings
    (numerical PBLD, one-hot, categorical table)."""
    data = make_split(3, sizes=(120, 40, 40))
    base = RealMLPConfig().to_params()
    cfgs = [RealMLPConfig.from_params(dict(base, act=a, add_front_scale=f, ls_eps=ls))
            for a, f, ls in (("selu", True, 0.0), ("relu", False, 0.1), ("mish", True, 0.1))]
    from tabbench.models.realmlp.inputs import encoded_tensors
    from tabbench.models.realmlp.preprocessing import RealMLPPreprocessor

    prep = RealMLPPreprocessor(8, 3.0).fit(data.X_train)
    train32 = encoded_tensors(prep.transform(data.X_train), torch.device("cpu"))
    nets = [realmlp_stacked.member_network(c, train32, prep.cat_sizes, 3, seed, "cpu")[0]
            .to(dtype) for seed, c in enumerate(cfgs)]
    train = tuple(t.to(dtype) if t.is_floating_point() else t for t in train32)
    stacked = realmlp_stacked.StackedRealMLP(nets, cfgs)
    B = 30
    xs = tuple(t[:B] for t in train)
    y = torch.as_tensor(data.y_train[:B])
    k = len(nets)
    ls = torch.tensor([c.ls_eps for c in cfgs], dtype=dtype)
    out = stacked(tuple(t.unsqueeze(0).expand(k, *t.shape).contiguous() for t in xs))
    losses = member_losses(out, y.expand(k, B), ls)
    losses.sum().backward()
    for m, (net, cfg) in enumerate(zip(nets, cfgs, strict=True)):
        net.eval()  # no dropout
        single = net(*xs)
        torch.testing.assert_close(out[m], single, rtol=tol, atol=tol)
        loss = torch.nn.functional.cross_entropy(single, y, label_smoothing=cfg.ls_eps)
        loss.backward()
        assert losses[m].item() == pytest.approx(loss.item(), rel=tol, abs=tol)
        for group in net.param_groups():
            for p in group.params:
                match = [q for q in stacked.optimizer_params()
                         if q.shape[1:] == p.shape or q.shape[1:] == (1, *p.shape)]
                grads = [q.grad[m].reshape(p.shape) for q in match]
                assert any(torch.allclose(g, p.grad, rtol=tol, atol=tol) for g in grads), group.name


def test_stacked_adam_equals_torch_adamw_per_member():
    """20 steps, per-member lr and weight decay, float64: StackedAdam with AdamW's scalars
    equals torch.optim.AdamW run on each member alone."""
    k, shapes = 4, [(6, 5), (5,), (5, 3)]
    lr = np.array([1e-3, 3e-2, 1e-4, 5e-3])
    wd = np.array([0.0, 1e-2, 1e-3, 0.1])
    gen = torch.Generator().manual_seed(0)
    start = [torch.randn(k, *s, generator=gen, dtype=torch.float64) for s in shapes]
    grads = [[torch.randn(k, *s, generator=gen, dtype=torch.float64) for s in shapes]
             for _ in range(20)]
    stacked = [p.clone().requires_grad_() for p in start]
    opt = StackedAdam(stacked, (0.9, 0.999), 1e-8)
    for t, gs in enumerate(grads):
        opt.zero_grad()
        for p, g in zip(stacked, gs, strict=True):
            p.grad += g  # as backward accumulates into the optimizer's gradient buffer
        table_shape = (1, len(shapes), k)
        decay, neg, bc2 = step_scalars(np.broadcast_to(lr, table_shape),
                                       np.broadcast_to(1 - lr * wd, table_shape), t + 1,
                                       (0.9, 0.999), torch.float64, torch.device("cpu"))
        opt.step(decay[0], neg[0], bc2)
    for m in range(k):
        ps = [p[m].clone().requires_grad_() for p in start]
        ref = torch.optim.AdamW(ps, lr=float(lr[m]), weight_decay=float(wd[m]))
        for gs in grads:
            for p, g in zip(ps, gs, strict=True):
                p.grad = g[m].clone()
            ref.step()
        for p_ref, p in zip(ps, stacked, strict=True):
            torch.testing.assert_close(p[m].detach(), p_ref.detach(), rtol=1e-10, atol=1e-12)


def test_member_dropout_rates_are_per_member_and_from_own_streams():
    M, B, H = 3, 400, 50
    rates = [0.0, 0.1, 0.5]
    gens = [None if p == 0 else torch.Generator().manual_seed(7 + m) for m, p in enumerate(rates)]
    drop = MemberDropout(gens, B, [H], block=1, device=torch.device("cpu"))
    keep = torch.tensor([[1 - p for p in rates]])
    drop.refill(keep, 1 / keep)
    h = drop.apply(0, torch.ones(M, B, H), torch.zeros(1, dtype=torch.long))
    for m, p in enumerate(rates):
        zero = (h[m] == 0).float().mean().item()
        assert zero == pytest.approx(p, abs=0.02)
        kept = h[m][h[m] != 0]
        torch.testing.assert_close(kept, torch.full_like(kept, 1 / (1 - p)))
    # a member's masks are its generator's draws, wherever it sits in the group
    alone = MemberDropout([torch.Generator().manual_seed(9)], B, [H, 7], 2, torch.device("cpu"))
    alone.refill(torch.tensor([[0.5], [0.6]]), torch.tensor([[2.0], [1 / 0.6]]))
    again = MemberDropout([None, torch.Generator().manual_seed(9), None], B, [H, 7], 2,
                          torch.device("cpu"))
    again.refill(torch.tensor([[1.0, 0.5, 1.0], [1.0, 0.6, 1.0]]),
                 torch.tensor([[1.0, 2.0, 1.0], [1.0, 1 / 0.6, 1.0]]))
    assert torch.equal(alone.masks[0], again.masks[1])
    assert (again.masks[0] == 1).all() and (again.masks[2] == 1).all()
    slot1 = torch.ones(1, dtype=torch.long)
    site1 = again.apply(1, torch.ones(3, B, 7), slot1)
    assert site1.shape == (3, B, 7) and torch.equal(site1[1], alone.masks[0, 1, :, H:])


def _val_logits(chunks_by_member):
    return [np.concatenate(c) for c in chunks_by_member]


def _train_stacked(module, params, data, ctxs):
    out = [[] for _ in params]
    for group in module.train_members(params, data, ctxs):
        assert not group.failures
        for i, chunk in enumerate(group.members):
            out[i].append(np.concatenate([chunk.val_logits, chunk.test_logits], axis=1))
    return _val_logits(out)


def _train_single(trainer, params, data, ctx):
    return np.concatenate([np.concatenate([c.val_logits, c.test_logits], axis=1)
                           for c in trainer.train(params, data, ctx)])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_mlp_member_equals_single_trainer_without_dropout_and_is_group_invariant(n_classes):
    data = make_split(n_classes, sizes=(300, 80, 80))
    configs = [sample_config("mlp", c, seed=0, dataset="toy", split=0) for c in range(5)]
    configs = [dict(c, dropout=0.0) if i < 3 else c for i, c in enumerate(configs)]
    ctxs = [TrainContext(seed=100 + i, n_epochs=3) for i in range(5)]
    group = _train_stacked(mlp_stacked, configs, data, ctxs)
    for i in range(3):  # dropout off: MLPTrainer's logits (float32 rounding at most)
        single = _train_single(MLPTrainer(), configs[i], data, ctxs[i])
        np.testing.assert_allclose(group[i], single, rtol=1e-5, atol=1e-5)
    # another group, another order, another size: the same records bit for bit
    other = _train_stacked(mlp_stacked, [configs[4], configs[1], configs[3]],
                           data, [ctxs[4], ctxs[1], ctxs[3]])
    for got, want in zip(other, [group[4], group[1], group[3]], strict=True):
        assert np.array_equal(got, want)
    alone = _train_stacked(mlp_stacked, [configs[3]], data, [ctxs[3]])
    assert np.array_equal(alone[0], group[3])


def test_realmlp_member_equals_single_trainer_without_dropout_and_is_group_invariant():
    data = make_split(3, sizes=(300, 80, 80))
    base = RealMLPConfig().to_params()
    configs = [dict(base, p_drop=0.0), dict(base, p_drop=0.0, act="relu", add_front_scale=False,
                                             ls_eps=0.1, lr=0.1, wd=0.0),
               dict(base, act="mish"), dict(base, p_drop=0.3, plr_sigma=0.3, lr=0.02)]
    ctxs = [TrainContext(seed=10 + i, n_epochs=3) for i in range(4)]
    group = _train_stacked(realmlp_stacked, configs, data, ctxs)
    for i in range(2):
        single = _train_single(RealMLPTrainer(), configs[i], data, ctxs[i])
        np.testing.assert_allclose(group[i], single, rtol=1e-5, atol=1e-5)
    other = _train_stacked(realmlp_stacked, [configs[3], configs[2], configs[0]],
                           data, [ctxs[3], ctxs[2], ctxs[0]])
    for got, want in zip(other, [group[3], group[2], group[0]], strict=True):
        assert np.array_equal(got, want)


def test_stacked_records_follow_each_members_own_learning_rate_with_dropout():
    """In distribution: with dropout on (other random streams than the single trainer's), each
    member's validation-loss curve is closest to the single-config run of its own config, over
    two seeds; a stacked model whose members shared one learning rate would fail this."""
    from tabbench.metrics import logloss

    data = make_split(2, sizes=(600, 200, 200))
    n_val = len(data.y_val)
    lrs = (1e-5, 3e-4, 2e-3)

    def curves(runs):
        return np.array([[logloss(z[e, :n_val], data.y_val) for e in range(len(z))]
                         for z in runs])

    for seed in (0, 1):
        configs = [dict(sample_config("mlp", 0, seed=0, dataset="t", split=0), lr=lr,
                        dropout=0.2) for lr in lrs]
        ctxs = [TrainContext(seed=5 + i + 10 * seed, n_epochs=4) for i in range(3)]
        stacked = curves(_train_stacked(mlp_stacked, configs, data, ctxs))
        single = curves([_train_single(MLPTrainer(), c, data, x)
                         for c, x in zip(configs, ctxs, strict=True)])
        distance = np.abs(stacked[:, None, :] - single[None, :, :]).sum(axis=2)
        assert list(distance.argmin(axis=1)) == [0, 1, 2], (stacked, single)
        assert not np.array_equal(stacked, single)  # other dropout streams, as documented


def test_a_member_with_a_non_finite_first_epoch_fails_alone():
    """As MLPTrainer fails such a config (FloatingPointError), the member fails; the other
    member's records are those it has alone."""
    data = make_split(2, sizes=(600, 80, 80))  # two steps per epoch: the second one overflows
    good = sample_config("mlp", 0, seed=0, dataset="t", split=0)
    bad = dict(good, lr=1e30)
    ctxs = [TrainContext(seed=i, n_epochs=2) for i in range(2)]
    with pytest.raises(FloatingPointError):
        list(MLPTrainer().train(bad, data, ctxs[1]))
    groups = list(mlp_stacked.train_members([good, bad], data, ctxs))
    assert 1 in groups[0].failures and isinstance(groups[0].failures[1], FloatingPointError)
    assert all(g.members[1] is None for g in groups)
    assert all(np.isfinite(g.members[0].val_logits).all() for g in groups)
    alone = _train_stacked(mlp_stacked, [good], data, ctxs[:1])
    assert np.array_equal(np.concatenate([np.concatenate([g.members[0].val_logits,
                                                          g.members[0].test_logits], axis=1)
                                          for g in groups]), alone[0])


def test_stack_keys_group_what_shares_shapes():
    mlp = [sample_config("mlp", c, seed=0, dataset="adult", split=0) for c in range(31)]
    assert len({mlp_stacked.stack_key(p) for p in mlp}) == 1
    real = [sample_config("realmlp", c, seed=0, dataset="adult", split=0) for c in range(31)]
    keys = {realmlp_stacked.stack_key(p) for p in real}
    shapes = {(tuple(p["hidden_sizes"]), p["num_emb_type"]) for p in real}
    assert len(keys) == len(shapes) > 1
    with pytest.raises(ValueError, match="share"):
        mlp_stacked.train_members([mlp[0], dict(mlp[0], hidden_width=8)], make_split(2),
                                  [TrainContext(seed=0, n_epochs=1)] * 2)


def test_member_memory_estimates_grow_with_width_and_rows():
    small, big = make_split(2, sizes=(300, 80, 80)), make_split(2, sizes=(3000, 800, 800))
    cfg = sample_config("mlp", 0, seed=0, dataset="t", split=0)
    assert 0 < mlp_stacked.member_bytes(cfg, small) < mlp_stacked.member_bytes(cfg, big)
    assert mlp_stacked.member_bytes(cfg, small) < mlp_stacked.member_bytes(
        dict(cfg, hidden_width=1024), small)
    real = RealMLPConfig().to_params()
    assert 0 < realmlp_stacked.member_bytes(real, small) < realmlp_stacked.member_bytes(
        dict(real, hidden_sizes=[512, 512, 512]), small)


def test_realmlp_stacked_network_rejects_nothing_silently():
    """A member network's parameters all reach the stacked optimizer (a new parameter in
    RealMLPNetwork would otherwise train in the single path only)."""
    data = make_split(3, sizes=(120, 40, 40))
    from tabbench.models.realmlp.inputs import encoded_tensors
    from tabbench.models.realmlp.preprocessing import RealMLPPreprocessor

    prep = RealMLPPreprocessor(8, 3.0).fit(data.X_train)
    train = encoded_tensors(prep.transform(data.X_train), torch.device("cpu"))
    for emb in ("none", "pbld", "pl", "plr"):
        cfg = RealMLPConfig.from_params({"num_emb_type": emb})
        net, _ = realmlp_stacked.member_network(cfg, train, prep.cat_sizes, 3, 0, "cpu")
        stacked = realmlp_stacked.StackedRealMLP([net, copy.deepcopy(net)], [cfg, cfg])
        n_single = sum(p.numel() for p in net.parameters())
        n_stacked = sum(p.numel() for p in stacked.optimizer_params())
        assert n_stacked == 2 * n_single, emb
        assert isinstance(net, RealMLPNetwork)
