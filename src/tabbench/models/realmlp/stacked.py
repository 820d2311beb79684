"""RealMLP trained as stacked groups (docs/design.md §15).

Configs are grouped by what changes tensor shapes or the shared arithmetic
(:data:`STACK_FIELDS`: hidden sizes, numerical-embedding type, batch size, preprocessing and
embedding widths, Adam's betas and ε). Within a group every member keeps its own learning rate,
weight decay, dropout rate, schedules, label smoothing, activation function and front scale,
all of them exactly:

* learning rate, weight decay and their schedules and per-group factors are the optimizer's
  per-member scalars (:mod:`~tabbench.models.stacked.adam`, with RealMLP's decay formula
  :func:`~tabbench.models.realmlp.optim.decay_multiplier`);
* dropout rates are per member and step (:class:`~tabbench.models.stacked.layers.
  MemberDropout`), label smoothing per member (:func:`~tabbench.models.stacked.loop.
  member_losses`);
* each activation function is applied to the members that use it (elementwise, so a member's
  values never depend on the others');
* a member without front scale has a scale of exactly 1 that its optimizer never moves (its
  learning rate and weight decay are 0 there): ``x · 1 = x``.

Member c starts from the network :class:`~tabbench.models.realmlp.trainer.RealMLPTrainer`
builds for config c (same generator, same data-dependent init) and shuffles with that
generator's continuation, as the single trainer does; its dropout masks come from a stream of
its own (the single trainer draws them from the same generator as the shuffling, which members
of a group cannot share). With ``p_drop = 0`` a member therefore follows the single trainer's
computation up to batched instead of plain matmuls.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from tabbench.models.base import GroupChunk, SplitData, TrainContext
from tabbench.models.realmlp.config import RealMLPConfig
from tabbench.models.realmlp.inputs import check_data, concat_encoded, encoded_tensors
from tabbench.models.realmlp.layers import ACTIVATION_FUNCTIONS
from tabbench.models.realmlp.network import RealMLPNetwork
from tabbench.models.realmlp.optim import decay_multiplier
from tabbench.models.realmlp.preprocessing import RealMLPPreprocessor
from tabbench.models.realmlp.schedules import get_schedule
from tabbench.models.stacked.layers import StackedLinear
from tabbench.models.stacked.loop import (
    GroupSpec,
    StackedNetwork,
    StepTables,
    check_contexts,
    derived_seed,
    torch_threads,
    train_group,
)

#: the config fields that must agree within a group (shapes, preprocessing, shared arithmetic)
STACK_FIELDS = ("hidden_sizes", "num_emb_type", "batch_size", "use_parametric_act",
                "plr_hidden_1", "plr_hidden_2", "embedding_size", "max_one_hot_cats",
                "smooth_clip_max_abs", "mom", "sq_mom", "opt_eps")
#: the parameter groups of :meth:`RealMLPNetwork.param_groups` and the config fields of their
#: lr and wd factors (None: factor 1; 0.0: never decayed)
_GROUP_FACTORS = {
    "weights": (None, None),
    "biases": ("bias_lr_factor", 0.0),
    "front_scale": ("scale_lr_factor", None),
    "act_alpha": ("act_lr_factor", None),
    "num_emb": ("plr_lr_factor", None),
    "cat_emb": (None, None),
}


def stack_key(params: Mapping[str, Any]) -> Hashable:
    cfg = RealMLPConfig.from_params(params)
    return tuple(tuple(v) if isinstance(v, list) else v
                 for v in (getattr(cfg, f) for f in STACK_FIELDS))


def _members(p: torch.Tensor, sl: slice | None) -> torch.Tensor:
    """``p`` for all members (no slicing: a slice would add a copy to the backward pass), or the
    members ``sl``."""
    return p if sl is None else p[sl]


def _stack(tensors: Sequence[torch.Tensor]) -> nn.Parameter:
    return nn.Parameter(torch.stack([t.detach() for t in tensors]).contiguous())


class StackedRealMLP(StackedNetwork):
    """The members' RealMLP networks, parameter by parameter stacked (``[M, ...]``).

    Built from the members' initialised :class:`RealMLPNetwork` s (all with the same shapes).
    :attr:`param_names` names each optimizer tensor's parameter group, for its factors.
    """

    def __init__(self, nets: Sequence[RealMLPNetwork], cfgs: Sequence[RealMLPConfig]) -> None:
        super().__init__()
        first = nets[0]
        self.n_members = M = len(nets)
        self.n_num, self.n_onehot = first.n_num, first.n_onehot
        self.kind = first.num_emb.kind if first.num_emb is not None else None
        self.params_by_group: dict[str, list[nn.Parameter]] = {g: [] for g in _GROUP_FACTORS}
        if first.num_emb is not None:
            embs = [n.num_emb for n in nets]
            self.emb_w1 = _stack([e.weight_1 for e in embs])
            self.emb_b1 = _stack([e.bias_1 for e in embs]) if self.kind == "pbld" else None
            self.emb_w2 = _stack([e.weight_2 for e in embs])
            self.emb_b2 = _stack([e.bias_2 for e in embs])
            self.params_by_group["num_emb"] += [p for p in (
                self.emb_w1, self.emb_b1, self.emb_w2, self.emb_b2) if p is not None]
        self.cat_table = None
        if first.cat_emb is not None:
            self.register_buffer("cat_offsets", first.cat_emb.offsets.clone())
            self.cat_table = _stack([n.cat_emb.table for n in nets])
            self.params_by_group["cat_emb"].append(self.cat_table)
        # a member without front scale gets a scale of ones its optimizer never moves
        self.has_front_scale = [n.front_scale is not None for n in nets]
        self.front_scale: nn.Parameter | None = None
        if any(self.has_front_scale):
            ones = torch.ones(first.in_features, device=first.linears[0].weight.device)
            self.front_scale = nn.Parameter(torch.stack([
                n.front_scale.scale.detach() if n.front_scale is not None else ones
                for n in nets]).unsqueeze(1).contiguous())
            self.params_by_group["front_scale"].append(self.front_scale)
        self.linears = nn.ModuleList(
            StackedLinear.from_members([n.linears[i].weight for n in nets],
                                       [n.linears[i].bias for n in nets],
                                       alpha=first.linears[i].factor)
            for i in range(len(first.linears)))
        self.params_by_group["weights"] += [lin.weight for lin in self.linears]
        self.params_by_group["biases"] += [lin.bias for lin in self.linears]
        self.alphas = nn.ParameterList()
        if first.acts and first.acts[0].alpha is not None:
            for i in range(len(first.acts)):
                self.alphas.append(nn.Parameter(
                    torch.stack([n.acts[i].alpha.detach() for n in nets]).unsqueeze(1)))
            self.params_by_group["act_alpha"] += list(self.alphas)
        self.n_hidden = len(first.acts)
        # members per activation function (ordered by first use)
        names = [c.act for c in cfgs]
        self.act_members: list[tuple[Callable[[torch.Tensor], torch.Tensor], list[int]]] = []
        for name in dict.fromkeys(names):
            members = [m for m, a in enumerate(names) if a == name]
            self.act_members.append((ACTIVATION_FUNCTIONS[name], members))
        device = first.linears[0].weight.device
        self._act_index = [torch.as_tensor(ms, dtype=torch.long, device=device)
                           for _, ms in self.act_members]
        self.act_of = [ACTIVATION_FUNCTIONS[a] for a in names]
        self.param_names = [g for g, ps in self.params_by_group.items() for _ in ps]
        self._M = M

    def optimizer_params(self) -> list[torch.Tensor]:
        return [p for ps in self.params_by_group.values() for p in ps]

    # ---- forward --------------------------------------------------------------------------
    def _embed(self, x_num, x_onehot, x_cat, sl: slice | None) -> torch.Tensor:
        parts = []
        M, B = x_num.shape[0], x_num.shape[1]
        if self.n_num > 0:
            if self.kind is None:
                parts.append(x_num)
            else:
                parts.append(self._num_emb(x_num, sl))
        if self.n_onehot > 0:
            parts.append(x_onehot)
        if self.cat_table is not None:
            table = _members(self.cat_table, sl)
            rows = table.shape[1]
            idx = (x_cat + self.cat_offsets) + (torch.arange(M, device=x_cat.device) * rows).view(
                M, 1, 1)
            parts.append(table.reshape(M * rows, -1).index_select(0, idx.reshape(-1))
                         .view(M, B, -1))
        x = parts[0] if len(parts) == 1 else torch.cat(parts, dim=2)
        return x if self.front_scale is None else x * _members(self.front_scale, sl)

    def _num_emb(self, x: torch.Tensor, sl: slice | None) -> torch.Tensor:
        M, B, n = x.shape
        phase = (2 * math.pi) * x.unsqueeze(-1) * _members(self.emb_w1, sl).unsqueeze(1)
        if self.kind == "pbld":  # phase: [M, B, n, F]
            h = torch.cos(phase + _members(self.emb_b1, sl).unsqueeze(1))
        else:
            h = torch.cat([torch.cos(phase), torch.sin(phase)], dim=-1)
        w2, b2 = _members(self.emb_w2, sl), _members(self.emb_b2, sl)
        F_, O = w2.shape[2], w2.shape[3]
        o = torch.baddbmm(b2.reshape(M * n, 1, O), h.transpose(1, 2).reshape(M * n, B, F_),
                          w2.reshape(M * n, F_, O))
        if self.kind == "plr":
            o = torch.relu(o)
        o = o.view(M, n, B, O).transpose(1, 2).reshape(M, B, n * O)
        return torch.cat([o, x], dim=2) if self.kind == "pbld" else o

    def _act(self, i: int, h: torch.Tensor, sl: slice | None) -> torch.Tensor:
        if sl is not None:
            fx = self.act_of[sl.start](h)
        elif len(self.act_members) == 1:
            fx = self.act_members[0][0](h)
        else:
            fx = torch.empty_like(h)
            for (f, _), idx in zip(self.act_members, self._act_index, strict=True):
                fx.index_copy_(0, idx, f(h.index_select(0, idx)))
        if not len(self.alphas):
            return fx
        return torch.lerp(h, fx, _members(self.alphas[i], sl))

    def _forward(self, inputs, dropout, sl: slice | None) -> torch.Tensor:
        h = self._embed(*inputs, sl)
        for i, linear in enumerate(self.linears):
            h = torch.baddbmm(_members(linear.bias, sl), h, _members(linear.weight, sl),
                              alpha=linear.alpha)
            if i < self.n_hidden:
                h = self._act(i, h, sl)
                if dropout is not None:
                    h = dropout(i, h)
        return h

    def forward(self, inputs, dropout=None) -> torch.Tensor:
        return self._forward(inputs, dropout, None)

    def predict_member(self, m: int, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return self._forward(tuple(t.unsqueeze(0) for t in inputs), None, slice(m, m + 1))[0]


def member_network(cfg: RealMLPConfig, train: tuple[torch.Tensor, ...], cat_sizes: list[int],
                   n_classes: int, seed: int, device: torch.device
                   ) -> tuple[RealMLPNetwork, torch.Generator]:
    """Config ``cfg``'s network initialised as :class:`RealMLPTrainer` initialises it, and its
    generator after the init (what that trainer shuffles with)."""
    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed))
    net = RealMLPNetwork(n_num=train[0].shape[1], n_onehot=train[1].shape[1],
                         cat_sizes=cat_sizes, n_classes=n_classes, cfg=cfg,
                         generator=generator, device=device)
    net.init_from_data(*train, generator=generator)
    return net, generator


def member_bytes(params: Mapping[str, Any], data: SplitData) -> int:
    """Device memory of one member (float32, an upper estimate): weights with gradient and
    Adam moments, and a batch's activations forward and backward, embeddings included."""
    cfg = RealMLPConfig.from_params(params)
    n_num = len(data.num_columns)
    n_cat = len(data.cat_columns)
    per_feature = cfg.plr_hidden_1 + cfg.plr_hidden_2 if cfg.num_emb_type != "none" else 1
    d = n_num * (cfg.plr_hidden_2 if cfg.num_emb_type != "none" else 1) + n_cat * max(
        cfg.embedding_size, cfg.max_one_hot_cats)
    sizes = [d, *cfg.hidden_sizes, int(data.n_classes)]
    n_params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    n_params += n_num * cfg.plr_hidden_1 * (cfg.plr_hidden_2 + 2) + d + sum(cfg.hidden_sizes)
    B = min(cfg.batch_size, max(1, len(data.y_train)))
    activations = B * (n_num * per_feature * 3 + d * 2 + 5 * sum(cfg.hidden_sizes)) * 2
    rows = len(data.y_val) + len(data.y_test)
    return 4 * (4 * n_params + activations + rows * int(data.n_classes))


def _schedules(cfgs: Sequence[RealMLPConfig], names: Sequence[str], has_front: Sequence[bool],
               total_steps: int) -> Callable[[np.ndarray], StepTables]:
    """The members' per-step optimizer and dropout scalars (as ScheduledAdam and the single
    trainer's dropout compute them, in float64)."""
    M = len(cfgs)
    lr = np.array([c.lr for c in cfgs])
    wd = np.array([c.wd for c in cfgs])
    p_drop = np.array([c.p_drop for c in cfgs])
    squared = [c.wd_squared_factors for c in cfgs]
    lr_factor = np.ones((len(names), M))
    wd_factor = np.ones((len(names), M))
    for j, group in enumerate(names):
        lr_key, wd_value = _GROUP_FACTORS[group]
        for m, c in enumerate(cfgs):
            if lr_key is not None:
                lr_factor[j, m] = getattr(c, lr_key)
            if wd_value is not None:
                wd_factor[j, m] = wd_value
            if group == "front_scale" and not has_front[m]:
                lr_factor[j, m] = wd_factor[j, m] = 0.0  # the fixed scale of ones

    def values(name_of: Callable[[RealMLPConfig], str], steps: np.ndarray) -> np.ndarray:
        cache: dict[str, np.ndarray] = {}
        out = np.empty((len(steps), M))
        for m, c in enumerate(cfgs):
            name = name_of(c)
            if name not in cache:
                f = get_schedule(name)
                cache[name] = np.array([f(int(s) / total_steps) for s in steps])
            out[:, m] = cache[name]
        return out

    def schedule(steps: np.ndarray) -> StepTables:
        lr_t = lr * values(lambda c: c.lr_sched, steps)  # (S, M)
        wd_t = wd * values(lambda c: c.wd_sched, steps)
        p_t = p_drop * values(lambda c: c.p_drop_sched, steps)
        lr_tab = lr_t[:, None, :] * lr_factor[None]
        decay = np.empty_like(lr_tab)
        for m in range(M):
            decay[:, :, m] = decay_multiplier(lr_t[:, None, m], wd_t[:, None, m],
                                              lr_factor[None, :, m], wd_factor[None, :, m],
                                              squared[m])
        return StepTables(lr=lr_tab, decay=decay, keep=1.0 - p_t)

    return schedule


def train_members(
    params: Sequence[Mapping[str, Any]],
    data: SplitData,
    ctxs: Sequence[TrainContext],
    *,
    chunk_epochs: int = 16,
    max_chunk_bytes: int = 256 * 2**20,
    graph: bool | None = None,
) -> Iterator[GroupChunk]:
    """Train the RealMLP configs ``params`` (one group: equal :func:`stack_key`) together.
    Errors in the arguments are raised here, before any training."""
    cfgs = [RealMLPConfig.from_params(p) for p in params]
    keys = {stack_key(c.to_params()) for c in cfgs}
    if len(keys) != 1:
        raise ValueError(f"the configs of one stacked group must share {STACK_FIELDS}")
    check_data(data)
    ctx0 = check_contexts(ctxs, len(cfgs))
    device = torch.device(ctx0.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {ctx0.device!r} requested but CUDA is not available")
    return _train(cfgs, data, ctxs, ctx0, device, chunk_epochs, max_chunk_bytes, graph)


def _train(cfgs, data, ctxs, ctx0, device, chunk_epochs, max_chunk_bytes, graph):
    cuda_ctx = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    with torch_threads(ctx0.threads), cuda_ctx:
        spec = build_group(cfgs, data, ctxs, chunk_epochs=chunk_epochs,
                           max_chunk_bytes=max_chunk_bytes, graph=graph)
        yield from train_group(spec, device)


def build_group(
    params: Sequence[Mapping[str, Any] | RealMLPConfig],
    data: SplitData,
    ctxs: Sequence[TrainContext],
    *,
    chunk_epochs: int = 16,
    max_chunk_bytes: int = 256 * 2**20,
    graph: bool | None = None,
) -> GroupSpec:
    """The :class:`~tabbench.models.stacked.loop.GroupSpec` of one group: members initialised,
    inputs preprocessed and on the device (what :func:`train_members` trains)."""
    cfgs = [p if isinstance(p, RealMLPConfig) else RealMLPConfig.from_params(p) for p in params]
    ctx0 = ctxs[0]
    device = torch.device(ctx0.device)
    cfg0 = cfgs[0]
    prep = RealMLPPreprocessor(cfg0.max_one_hot_cats, cfg0.smooth_clip_max_abs).fit(data.X_train)
    train = encoded_tensors(prep.transform(data.X_train), device)
    evalset = encoded_tensors(
        concat_encoded(prep.transform(data.X_val), prep.transform(data.X_test)), device)
    seeds = [int(c.seed) for c in ctxs]
    built = [member_network(c, train, prep.cat_sizes, data.n_classes, s, device)
             for c, s in zip(cfgs, seeds, strict=True)]
    net = StackedRealMLP([b[0] for b in built], cfgs)
    n_train = train[0].shape[0]
    batch = min(cfg0.batch_size, n_train)
    total_steps = (n_train // batch) * int(ctx0.n_epochs)
    return GroupSpec(
        net=net,
        train_inputs=tuple(t.unsqueeze(0) for t in train),
        eval_inputs=tuple(t.unsqueeze(0) for t in evalset),
        source=[0] * len(cfgs),
        y_train=torch.as_tensor(np.array(data.y_train, dtype=np.int64), device=device),
        n_val=len(data.X_val),
        n_classes=int(data.n_classes),
        batch_size=cfg0.batch_size,
        n_epochs=int(ctx0.n_epochs),
        schedule=_schedules(cfgs, net.param_names, net.has_front_scale, total_steps),
        betas=(cfg0.mom, cfg0.sq_mom),
        eps=cfg0.opt_eps,
        shuffle_generators=[b[1] for b in built],
        dropout_generators=[
            torch.Generator(device=device).manual_seed(derived_seed(s, "dropout"))
            if c.p_drop > 0 else None for c, s in zip(cfgs, seeds, strict=True)],
        dropout_widths=list(cfg0.hidden_sizes),
        label_smoothing=[c.ls_eps for c in cfgs],
        first_epoch_must_be_finite=False,
        fit_includes_eval=False,
        chunk_epochs=chunk_epochs,
        max_chunk_bytes=max_chunk_bytes,
        graph=graph,
    )
