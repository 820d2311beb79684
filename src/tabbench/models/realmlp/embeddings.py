"""Input embeddings of RealMLP: periodic numerical embeddings (PL, PLR, PBLD) and learned
embeddings for high-cardinality categoricals.

Numerical embeddings follow Gorishniy et al. (2022) with RealMLP's PBLD variant (Holzmüller et
al. 2024, §3; docs/design.md §10). Every feature has its own small network:

* PBLD — per feature: ``h = cos(2π·w1·x + b1)`` with ``w1 ∈ R^16 ~ N(0, σ²)``,
  ``b1 ~ U[−π, π]``; ``o = h·W2 + b2`` with ``W2 ∈ R^{16×3}``, ``b2`` ~ U[−¼, ¼]; the output is
  ``[o, x]`` — three learned values plus the raw value ("densenet" connection), which keeps the
  plain linear path open so the embedding can only add to what the MLP would see without it.
* PL / PLR — ``h = [cos(2π·w1·x), sin(2π·w1·x)]`` with ``w1 ∈ R^8``; ``o = h·W2 + b2``
  (W2 16×4), followed by a ReLU for PLR; no raw value.

``W2`` and ``b2`` use PyTorch's ``nn.Linear`` default ``U[−1/√16, 1/√16]``. All these
parameters train with lr × 0.1 (``plr_lr_factor``).
"""

from __future__ import annotations

import math

import torch
from torch import nn


class PeriodicNumEmbedding(nn.Module):
    """Per-feature periodic embedding of ``n_features`` numericals (kinds ``pl``/``plr``/``pbld``).

    Output layout: for PBLD ``[o_1 … o_n (each plr_hidden_2 − 1 wide), x_1 … x_n]``, for PL/PLR
    ``[o_1 … o_n]`` (each ``plr_hidden_2`` wide) — the reference's order.
    """

    def __init__(
        self,
        n_features: int,
        kind: str,
        sigma: float,
        hidden_1: int,
        hidden_2: int,
        generator: torch.Generator,
        device: torch.device,
    ) -> None:
        super().__init__()
        if kind not in ("pl", "plr", "pbld"):
            raise ValueError(f"unknown periodic embedding kind {kind!r}")
        self.kind = kind
        self.n_features = n_features
        n_freq = hidden_1 if kind == "pbld" else hidden_1 // 2
        n_out = hidden_2 - 1 if kind == "pbld" else hidden_2
        g, dev = generator, device
        self.weight_1 = nn.Parameter(
            sigma * torch.randn(n_features, n_freq, generator=g, device=dev)
        )
        if kind == "pbld":
            self.bias_1 = nn.Parameter(
                math.pi * (2 * torch.rand(n_features, n_freq, generator=g, device=dev) - 1)
            )
        else:
            self.register_parameter("bias_1", None)
        bound = 1.0 / math.sqrt(hidden_1)
        self.weight_2 = nn.Parameter(
            bound * (2 * torch.rand(n_features, hidden_1, n_out, generator=g, device=dev) - 1)
        )
        self.bias_2 = nn.Parameter(
            bound * (2 * torch.rand(n_features, n_out, generator=g, device=dev) - 1)
        )
        self.out_per_feature = n_out

    @property
    def out_features(self) -> int:
        extra = self.n_features if self.kind == "pbld" else 0
        return self.n_features * self.out_per_feature + extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B, n). Phase per (row, feature, frequency).
        phase = (2 * math.pi) * x.unsqueeze(-1) * self.weight_1  # (B, n, F)
        if self.kind == "pbld":
            h = torch.cos(phase + self.bias_1)
        else:
            h = torch.cat([torch.cos(phase), torch.sin(phase)], dim=-1)
        # Per-feature linear map, batched over features: (n, B, H) @ (n, H, O) -> (n, B, O).
        o = torch.baddbmm(self.bias_2.unsqueeze(1), h.transpose(0, 1), self.weight_2)
        if self.kind == "plr":
            o = torch.relu(o)
        o = o.transpose(0, 1).reshape(x.shape[0], -1)  # (B, n·O), feature-major
        if self.kind == "pbld":
            return torch.cat([o, x], dim=1)
        return o


class CategoricalEmbedding(nn.Module):
    """One learned ``embedding_size``-vector per category (slot 0 = missing/unknown), N(0, 1)
    initialised as in the reference. All columns share one table with offsets, so a batch is a
    single ``index_select``.
    """

    def __init__(
        self,
        cat_sizes: list[int],
        embedding_size: int,
        generator: torch.Generator,
        device: torch.device,
    ) -> None:
        super().__init__()
        self.embedding_size = embedding_size
        self.n_columns = len(cat_sizes)
        offsets = [0]
        for size in cat_sizes[:-1]:
            offsets.append(offsets[-1] + size)
        self.register_buffer("offsets", torch.tensor(offsets, dtype=torch.long, device=device))
        self.table = nn.Parameter(
            torch.randn(sum(cat_sizes), embedding_size, generator=generator, device=device)
        )

    @property
    def out_features(self) -> int:
        return self.n_columns * self.embedding_size

    def forward(self, x_cat: torch.Tensor) -> torch.Tensor:
        idx = (x_cat + self.offsets).reshape(-1)
        return self.table.index_select(0, idx).reshape(x_cat.shape[0], -1)
