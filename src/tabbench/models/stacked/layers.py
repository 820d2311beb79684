"""Layers over members: a linear layer per member as one batched matmul, and dropout masks from
each member's own random stream.

Shapes: activations are ``[M, B, features]`` (members, rows, features); member m's slice is
its own network's activation. Nothing here reduces over the member dimension.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class StackedLinear(nn.Module):
    """M independent linear layers ``y_m = alpha · x_m W_m + b_m``: ``weight`` is ``[M, in,
    out]`` and ``bias`` ``[M, 1, out]``. ``alpha`` is the NTK factor 1/√in of RealMLP's layers
    (1 for plain layers)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, alpha: float = 1.0) -> None:
        super().__init__()
        if weight.dim() != 3 or bias.shape != (weight.shape[0], weight.shape[2]):
            raise ValueError(f"weight [M, in, out] and bias [M, out] expected, got "
                             f"{tuple(weight.shape)} and {tuple(bias.shape)}")
        self.weight = nn.Parameter(weight.contiguous())
        self.bias = nn.Parameter(bias.unsqueeze(1).contiguous())
        self.alpha = float(alpha)

    @classmethod
    def from_members(
        cls, weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor], alpha: float = 1.0
    ) -> StackedLinear:
        """Stack the members' ``[in, out]`` weights and ``[out]`` biases (copies)."""
        return cls(torch.stack([w.detach() for w in weights]),
                   torch.stack([b.detach() for b in biases]), alpha)

    @property
    def n_members(self) -> int:
        return int(self.weight.shape[0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``[M, B, in]`` → ``[M, B, out]``."""
        return torch.baddbmm(self.bias, x, self.weight, alpha=self.alpha)

    def member(self, m: int, x: torch.Tensor) -> torch.Tensor:
        """Member ``m`` alone on ``x`` ``[N, in]`` → ``[N, out]`` (evaluation on the CPU: one
        plain matmul per block of rows keeps a block's activations in cache)."""
        return torch.addmm(self.bias[m, 0], x, self.weight[m], alpha=self.alpha)


class MemberDropout:
    """Inverted dropout whose masks come from each member's own generator.

    ``widths``: the features of each dropout site (one per hidden layer). A member with a
    generator draws, for every step, one uniform ``[B, width]`` array per site from its own
    stream, in site order; a member without one (no dropout in its config) draws nothing and is
    never dropped. So member m's masks depend on its generator alone. Masks are made ``block``
    steps ahead into a buffer (:meth:`refill`, outside the step), which a step reads by a
    counter on the device (:meth:`apply`): no host synchronisation and no random-number call
    inside the step, so it can be captured in a CUDA graph.

    At a step with keep probability ``keep`` (1 − rate) member m's mask is ``(u < keep) ·
    (1/keep)``, as :class:`~tabbench.models.realmlp.layers.ScheduledDropout` computes it; keep
    = 1 gives exactly 1.
    """

    def __init__(
        self,
        generators: Sequence[torch.Generator | None],
        batch: int,
        widths: Sequence[int],
        block: int,
        device: torch.device,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.generators = list(generators)
        self.n_members = len(self.generators)
        self.block = int(block)
        self.active = [m for m, g in enumerate(self.generators) if g is not None]
        self.offsets = [0]
        for w in widths:
            self.offsets.append(self.offsets[-1] + int(w))
        shape = (self.n_members, self.block, batch, self.offsets[-1])
        # uniforms [M, block, B, all sites' widths]: member m's draws for a block are one
        # contiguous slice, drawn by one call of its own generator (what it gives does not
        # depend on where its slice lies); a member without dropout holds 0, which u < keep
        # (its keep is 1) always keeps
        self.uniform = torch.zeros(shape, device=device, dtype=dtype)
        self.masks = torch.ones(shape, device=device, dtype=dtype)

    @property
    def any_active(self) -> bool:
        return bool(self.active)

    def refill(self, keep: torch.Tensor, scale: torch.Tensor) -> None:
        """Draw the masks of the next steps: ``keep`` and ``scale`` (= 1/keep) are ``[S, M]``
        for those steps (S ≤ ``block``; the rest of the block is unused). One random-number
        call per member with dropout, then a few operations for all members."""
        for m in self.active:
            self.uniform[m].uniform_(0.0, 1.0, generator=self.generators[m])
        S = int(keep.shape[0])
        k = keep.t().reshape(self.n_members, S, 1, 1)
        sc = scale.t().reshape(self.n_members, S, 1, 1)
        torch.mul(self.uniform[:, :S] < k, sc, out=self.masks[:, :S])

    def apply(self, site: int, h: torch.Tensor, slot: torch.Tensor) -> torch.Tensor:
        """``h`` ``[M, B, width]`` times each member's mask of this step at dropout site
        ``site`` (``slot``: a 1-element long tensor, the step's position in the block)."""
        a, b = self.offsets[site], self.offsets[site + 1]
        return h * self.masks.index_select(1, slot).squeeze(1)[..., a:b]
