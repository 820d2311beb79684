"""The MLP trained as a stacked group (docs/design.md §15).

The MLP's random search varies only learning rate, dropout and weight decay, so every config of
a job has one architecture and one batch size: the whole job is one group of
:class:`StackedMLP` members. Member c is config c exactly as :class:`~tabbench.models.mlp.
MLPTrainer` trains it, except where the two paths cannot be the same algorithm bit for bit:

* its initial weights are those ``MLPTrainer`` builds for config c (``build_mlp`` after seeding
  torch's CPU generator with the config's seed), and its preprocessing is the one that trainer
  fits (the quantile transform's subsample is seeded per config too);
* its shuffling generator is the same (a CPU generator seeded with the config's seed);
* its dropout masks come from its own stream (a generator seeded from the config's seed), not
  from torch's global generator, which a group of members cannot share without coupling them;
* its layers are batched matmuls (``baddbmm``) instead of ``nn.Linear``'s ``addmm``: equal
  within float32 rounding, not bit for bit.

So with dropout off a member reproduces ``MLPTrainer``'s logits within float32 noise, and with
dropout on it is the same distribution of trainings (tested); in any case its records do not
depend on the other members of its group.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from tabbench.models.base import GroupChunk, SplitData, TrainContext
from tabbench.models.mlp_config import MAX_ONE_HOT_LEVELS, complete_params
from tabbench.models.mlp_parts import MLPPreprocessor, build_mlp
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

#: the params that set a member's tensor shapes: configs equal in these share a group
STACK_FIELDS = ("n_hidden_layers", "hidden_width", "batch_size")
#: AdamW's defaults, which the MLP uses (docs/design.md §5)
BETAS = (0.9, 0.999)
EPS = 1e-8


def stack_key(params: Mapping[str, Any]) -> Hashable:
    cfg = complete_params(params)
    return tuple(int(cfg[k]) for k in STACK_FIELDS)


class StackedMLP(StackedNetwork):
    """ReLU MLP members: ``linears[i]`` holds every member's layer i; dropout after each hidden
    activation (site i)."""

    def __init__(self, linears: Sequence[StackedLinear]) -> None:
        super().__init__()
        self.linears = nn.ModuleList(linears)
        self.n_members = self.linears[0].n_members

    def forward(self, inputs: tuple[torch.Tensor, ...],
                dropout: Callable[[int, torch.Tensor], torch.Tensor] | None) -> torch.Tensor:
        h = inputs[0]
        last = len(self.linears) - 1
        for i, linear in enumerate(self.linears):
            h = linear(h)
            if i < last:
                h = torch.relu(h)
                if dropout is not None:
                    h = dropout(i, h)
        return h

    def predict_member(self, m: int, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        h = inputs[0]
        last = len(self.linears) - 1
        for i, linear in enumerate(self.linears):
            h = linear.member(m, h)
            if i < last:
                h = torch.relu(h)
        return h

    def optimizer_params(self) -> list[torch.Tensor]:
        return [p for lin in self.linears for p in (lin.weight, lin.bias)]


def member_network(cfg: Mapping[str, Any], n_in: int, n_out: int, seed: int) -> nn.Sequential:
    """Config ``cfg``'s network with the initial weights ``MLPTrainer`` gives it: its layers
    built right after torch's CPU generator is seeded with ``seed`` (the global generator's
    state is restored afterwards)."""
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(int(seed))
        return build_mlp(n_in, n_out, cfg["n_hidden_layers"], cfg["hidden_width"], 0.0)


def _preprocessings(data: SplitData, seeds: Sequence[int], max_one_hot_levels: int | None):
    """The members' fitted preprocessors, deduplicated: (distinct preprocessors, member ->
    index). Two seeds give the same transform unless the quantile transform subsamples."""
    distinct: list[Any] = []
    source: list[int] = []
    for seed in seeds:
        pre = MLPPreprocessor(seed=seed, max_one_hot_levels=max_one_hot_levels).fit(
            data.X_train)
        for i, other in enumerate(distinct):
            if _same_transform(pre, other):
                source.append(i)
                break
        else:
            source.append(len(distinct))
            distinct.append(pre)
    return distinct, source


def _same_transform(a: Any, b: Any) -> bool:
    if a.num_columns != b.num_columns or a.cat_vocab != b.cat_vocab:
        return False
    if a.quantile is None or b.quantile is None:
        return a.quantile is None and b.quantile is None
    return bool(np.array_equal(a.quantile.quantiles_, b.quantile.quantiles_)
                and np.array_equal(a.quantile.references_, b.quantile.references_))


def estimated_features(data: SplitData, max_one_hot_levels: int | None) -> int:
    """The MLP's input width on ``data`` without fitting anything: numericals plus, per
    categorical, one column (two levels) or its levels up to the cap."""
    width = 0
    for c in data.X_train.columns:
        col = data.X_train[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            levels = int((col.value_counts(sort=False) > 0).sum())
            if max_one_hot_levels is not None:
                levels = min(levels, max_one_hot_levels)
            width += 0 if levels < 2 else 1 if levels == 2 else levels
        else:
            width += 1
    return max(width, 1)


def member_bytes(params: Mapping[str, Any], data: SplitData,
                 max_one_hot_levels: int | None = MAX_ONE_HOT_LEVELS) -> int:
    """Device memory of one member (float32): weights with gradient and Adam moments, a
    batch's activations (forward, dropout draws, backward) and, when the quantile transform
    subsamples (its fit depends on the seed), the member's own copy of the inputs."""
    cfg = complete_params(params)
    d, H, L = estimated_features(data, max_one_hot_levels), int(cfg["hidden_width"]), int(
        cfg["n_hidden_layers"])
    K = int(data.n_classes)
    B = min(int(cfg["batch_size"]), max(1, len(data.y_train)))
    n_params = d * H + H + (L - 1) * (H * H + H) + H * K + K
    activations = B * (d + 4 * L * H + 3 * K) * 2
    rows = len(data.y_train) + len(data.y_val) + len(data.y_test)
    own_inputs = rows * d if len(data.y_train) > 10_000 else 0
    return 4 * (4 * n_params + activations + own_inputs + (rows - len(data.y_train)) * K)


def train_members(
    params: Sequence[Mapping[str, Any]],
    data: SplitData,
    ctxs: Sequence[TrainContext],
    *,
    chunk_epochs: int = 32,
    max_chunk_bytes: int = 256 * 2**20,
    max_one_hot_levels: int | None = MAX_ONE_HOT_LEVELS,
    graph: bool | None = None,
) -> Iterator[GroupChunk]:
    """Train the MLP configs ``params`` as one stacked group (module docstring). Errors in the
    arguments are raised here, before any training."""
    cfgs = [complete_params(p) for p in params]
    keys = {stack_key(c) for c in cfgs}
    if len(keys) != 1:
        raise ValueError(f"the configs of one stacked group must share {STACK_FIELDS}; got "
                         f"{sorted(keys)}")
    for c in cfgs:
        if not 0.0 <= float(c["dropout"]) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {c['dropout']!r}")
    ctx0 = check_contexts(ctxs, len(cfgs))
    return _train(cfgs, data, ctxs, ctx0, chunk_epochs, max_chunk_bytes, max_one_hot_levels,
                  graph)


def _train(cfgs, data, ctxs, ctx0, chunk_epochs, max_chunk_bytes, max_one_hot_levels, graph):
    with torch_threads(ctx0.threads):
        spec = build_group(cfgs, data, ctxs, chunk_epochs=chunk_epochs,
                           max_chunk_bytes=max_chunk_bytes,
                           max_one_hot_levels=max_one_hot_levels, graph=graph)
        yield from train_group(spec, torch.device(ctx0.device))


def build_group(
    params: Sequence[Mapping[str, Any]],
    data: SplitData,
    ctxs: Sequence[TrainContext],
    *,
    chunk_epochs: int = 32,
    max_chunk_bytes: int = 256 * 2**20,
    max_one_hot_levels: int | None = MAX_ONE_HOT_LEVELS,
    graph: bool | None = None,
) -> GroupSpec:
    """The :class:`~tabbench.models.stacked.loop.GroupSpec` of the configs ``params``: members
    initialised, inputs preprocessed and on the device (what :func:`train_members` trains)."""
    cfgs = [complete_params(p) for p in params]
    ctx0 = ctxs[0]
    device = torch.device(ctx0.device)
    seeds = [int(c.seed) for c in ctxs]
    pres, source = _preprocessings(data, seeds, max_one_hot_levels)
    x_eval = [np.concatenate([p.transform(data.X_val), p.transform(data.X_test)])
              for p in pres]
    train = torch.as_tensor(np.stack([p.transform(data.X_train) for p in pres])).to(device)
    evals = torch.as_tensor(np.stack(x_eval)).to(device)
    n_in, K = int(train.shape[2]), int(data.n_classes)
    nets = [[m for m in member_network(c, n_in, K, s) if isinstance(m, nn.Linear)]
            for c, s in zip(cfgs, seeds, strict=True)]
    net = StackedMLP([
        StackedLinear.from_members([layer[i].weight.t() for layer in nets],
                                   [layer[i].bias for layer in nets]).to(device)
        for i in range(len(nets[0]))])
    lr = np.array([float(c["lr"]) for c in cfgs])
    wd = np.array([float(c["weight_decay"]) for c in cfgs])
    p_drop = np.array([float(c["dropout"]) for c in cfgs])
    n_param_tensors = len(net.optimizer_params())

    def schedule(steps: np.ndarray) -> StepTables:
        shape = (len(steps), n_param_tensors, len(cfgs))
        keep = np.broadcast_to(1.0 - p_drop, (len(steps), len(cfgs)))
        # AdamW: p·(1 − lr·wd), constant lr (docs/design.md §5)
        return StepTables(lr=np.broadcast_to(lr, shape).copy(),
                          decay=np.broadcast_to(1.0 - lr * wd, shape).copy(),
                          keep=keep.copy())

    spec = GroupSpec(
        net=net,
        train_inputs=(train,),
        eval_inputs=(evals,),
        source=source,
        y_train=torch.as_tensor(np.array(data.y_train, dtype=np.int64)).to(device),
        n_val=len(data.y_val),
        n_classes=K,
        batch_size=int(cfgs[0]["batch_size"]),
        n_epochs=int(ctx0.n_epochs),
        schedule=schedule,
        betas=BETAS,
        eps=EPS,
        shuffle_generators=[torch.Generator().manual_seed(s) for s in seeds],
        dropout_generators=[
            torch.Generator(device=device).manual_seed(derived_seed(s, "dropout"))
            if p > 0 else None for s, p in zip(seeds, p_drop, strict=True)],
        dropout_widths=[int(cfgs[0]["hidden_width"])] * int(cfgs[0]["n_hidden_layers"]),
        label_smoothing=[0.0] * len(cfgs),
        first_epoch_must_be_finite=True,
        fit_includes_eval=True,
        chunk_epochs=chunk_epochs,
        max_chunk_bytes=max_chunk_bytes,
        graph=graph,
    )
    return spec
