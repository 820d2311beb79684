"""The RealMLP network: embeddings → front scale → [NTK linear → act → dropout]×L → NTK linear.

Layer order per block is the reference's ``w-b-a-d`` (weight, bias, activation, dropout); the
first block is preceded by the front scale, the last block is ``w-b`` only and outputs one logit
per class (K = 2 for binary, trained with softmax cross-entropy as in the reference).

:meth:`RealMLPNetwork.param_groups` attaches RealMLP's per-parameter-group learning-rate and
weight-decay factors (App. A; docs/design.md §10):

==================  =========  =========
group               lr factor  wd factor
==================  =========  =========
front scale         6          1
weights             1          1
biases              0.1        0
activation α        0.1        1
num. embeddings     0.1        1
cat. embeddings     1          1
==================  =========  =========
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from tabbench.models.realmlp.config import RealMLPConfig
from tabbench.models.realmlp.embeddings import CategoricalEmbedding, PeriodicNumEmbedding
from tabbench.models.realmlp.layers import (
    FrontScale,
    NTKLinear,
    ParametricActivation,
    ScheduledDropout,
)


@dataclass
class ParamGroup:
    """Parameters sharing lr/wd factors (relative to the scheduled base lr and wd)."""

    name: str
    params: list[nn.Parameter]
    lr_factor: float
    wd_factor: float


class RealMLPNetwork(nn.Module):
    def __init__(
        self,
        n_num: int,
        n_onehot: int,
        cat_sizes: list[int],
        n_classes: int,
        cfg: RealMLPConfig,
        generator: torch.Generator,
        device: torch.device,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.n_num = n_num
        self.n_onehot = n_onehot
        if n_classes < 2:
            raise ValueError(f"RealMLP needs at least 2 classes, got {n_classes}")
        g = generator
        self.num_emb: PeriodicNumEmbedding | None = None
        d_in = n_num
        if cfg.num_emb_type != "none" and n_num > 0:
            self.num_emb = PeriodicNumEmbedding(
                n_num,
                cfg.num_emb_type,
                cfg.plr_sigma,
                cfg.plr_hidden_1,
                cfg.plr_hidden_2,
                g,
                device,
            )
            d_in = self.num_emb.out_features
        d_in += n_onehot
        self.cat_emb: CategoricalEmbedding | None = None
        if cat_sizes:
            self.cat_emb = CategoricalEmbedding(cat_sizes, cfg.embedding_size, g, device)
            d_in += self.cat_emb.out_features
        if d_in == 0:
            raise ValueError("no usable input features (all columns constant-missing or empty)")
        self.in_features = d_in
        self.front_scale = FrontScale(d_in, device) if cfg.add_front_scale else None
        sizes = [d_in, *cfg.hidden_sizes, n_classes]
        self.linears = nn.ModuleList(
            NTKLinear(a, b, device) for a, b in zip(sizes[:-1], sizes[1:], strict=True)
        )
        self.acts = nn.ModuleList(
            ParametricActivation(cfg.act, h, cfg.use_parametric_act, device)
            for h in cfg.hidden_sizes
        )
        self.dropout = ScheduledDropout(generator)

    # ---- forward ---------------------------------------------------------------------------
    def embed(
        self, x_num: torch.Tensor, x_onehot: torch.Tensor, x_cat: torch.Tensor
    ) -> torch.Tensor:
        parts = []
        if self.n_num > 0:
            parts.append(self.num_emb(x_num) if self.num_emb is not None else x_num)
        if self.n_onehot > 0:
            parts.append(x_onehot)
        if self.cat_emb is not None:
            parts.append(self.cat_emb(x_cat))
        x = parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
        if self.front_scale is not None:
            x = self.front_scale(x)
        return x

    def forward(
        self, x_num: torch.Tensor, x_onehot: torch.Tensor, x_cat: torch.Tensor
    ) -> torch.Tensor:
        h = self.embed(x_num, x_onehot, x_cat)
        n_hidden = len(self.acts)
        for i, linear in enumerate(self.linears):
            h = linear(h)
            if i < n_hidden:
                h = self.dropout(self.acts[i](h))
        return h

    # ---- init ------------------------------------------------------------------------------
    @torch.no_grad()
    def init_from_data(
        self,
        x_num: torch.Tensor,
        x_onehot: torch.Tensor,
        x_cat: torch.Tensor,
        generator: torch.Generator,
    ) -> None:
        """Data-dependent init of every linear layer, layer by layer, on the training rows.

        Runs in eval mode (no dropout), as the reference's fitters do.
        """
        was_training = self.training
        self.eval()
        h = self.embed(x_num, x_onehot, x_cat)
        for i, linear in enumerate(self.linears):
            h = linear.init_from_data(h, generator)
            if i < len(self.acts):
                h = self.acts[i](h)
        self.train(was_training)

    # ---- optimiser groups -------------------------------------------------------------------
    def param_groups(self) -> list[ParamGroup]:
        cfg = self.cfg
        groups = [
            ParamGroup("weights", [lin.weight for lin in self.linears], 1.0, 1.0),
            ParamGroup("biases", [lin.bias for lin in self.linears], cfg.bias_lr_factor, 0.0),
        ]
        if self.front_scale is not None:
            groups.append(
                ParamGroup("front_scale", [self.front_scale.scale], cfg.scale_lr_factor, 1.0)
            )
        alphas = [a.alpha for a in self.acts if a.alpha is not None]
        if alphas:
            groups.append(ParamGroup("act_alpha", alphas, cfg.act_lr_factor, 1.0))
        if self.num_emb is not None:
            groups.append(
                ParamGroup("num_emb", list(self.num_emb.parameters()), cfg.plr_lr_factor, 1.0)
            )
        if self.cat_emb is not None:
            groups.append(ParamGroup("cat_emb", [self.cat_emb.table], 1.0, 1.0))
        n_grouped = sum(len(g.params) for g in groups)
        n_params = sum(1 for _ in self.parameters())
        if n_grouped != n_params:  # a new parameter must get explicit factors
            raise RuntimeError(f"{n_params - n_grouped} parameter(s) missing from param_groups()")
        return groups
