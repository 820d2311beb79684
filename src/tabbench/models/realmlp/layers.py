"""Building blocks of the RealMLP network (Holzmüller et al. 2024, §3 and App. A;
docs/design.md §10).

* :class:`NTKLinear` — ``y = x·W/√fan_in + b``. The 1/√fan_in lives in the forward pass (NTK
  parametrisation), so W is O(1) and Adam's steps, which are O(lr) per entry regardless of scale,
  move every layer at a comparable relative speed.
* Data-dependent init (:meth:`NTKLinear.init_from_data`): ``W ~ N(0, 1)``, then every output
  column is divided by the std of its pre-activation on the training data, so each neuron starts
  with unit-variance pre-activations. Bias "he+5": for each neuron pick 5 random training rows
  and Dirichlet(1) weights ``w`` and set ``b = −Σ w·preact``, which puts the neuron's kink
  (ReLU/SELU/Mish) inside the data — at a random point of the convex hull of 5 samples.
* :class:`ParametricActivation` — ``x + α(f(x) − x)``, α per neuron initialised to 1, so the
  network can learn to linearise a unit (lr × 0.1).
* :class:`ScheduledDropout` — dropout whose rate the trainer sets every step (flat_cos) and whose
  mask comes from the trainer's own generator, so runs do not depend on the global torch RNG.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATION_FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "selu": torch.selu,
    "relu": torch.relu,
    "mish": F.mish,
}

N_HE_PLUS_SAMPLES = 5


class FrontScale(nn.Module):
    """Learnable per-input multiplier (init 1): a soft feature selection that trains fast
    (lr × 6) — the paper's "diagonal weight layer" in front of the first linear layer."""

    def __init__(self, n_features: int, device: torch.device) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(n_features, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class NTKLinear(nn.Module):
    """``y = x·W/√in_features + b`` with W (in × out) and data-dependent init."""

    def __init__(self, in_features: int, out_features: int, device: torch.device) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.factor = 1.0 / math.sqrt(in_features) if in_features > 0 else 1.0
        self.weight = nn.Parameter(torch.zeros(in_features, out_features, device=device))
        self.bias = nn.Parameter(torch.zeros(out_features, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x, self.weight, alpha=self.factor)

    @torch.no_grad()
    def init_from_data(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Initialise W and b from the layer's training-set input ``x`` (n × in).

        Returns the initialised layer's output on ``x`` so the caller can feed the next layer.
        A column whose pre-activation has zero (or non-finite) std on the data — only possible
        for degenerate inputs, where the reference would divide by 0 — keeps its N(0, 1) draw.
        """
        w = torch.randn(self.in_features, self.out_features, generator=generator, device=x.device)
        pre = (x @ w) * self.factor
        # two-pass population std; ~4x faster than Tensor.std over dim 0 on CPU
        std = (pre - pre.mean(dim=0)).square_().mean(dim=0).sqrt_()
        std = torch.where(torch.isfinite(std) & (std > 0), std, torch.ones_like(std))
        w /= std
        pre /= std
        self.weight.copy_(w)
        self.bias.copy_(he_plus_bias(pre, N_HE_PLUS_SAMPLES, generator))
        return pre + self.bias


def he_plus_bias(pre: torch.Tensor, n_samples: int, generator: torch.Generator) -> torch.Tensor:
    """Bias ``b_j = −Σ_i w_ij · pre[r_ij, j]``: random rows ``r_ij`` (with replacement), weights
    ``w_·j ~ Dirichlet(1, …, 1)`` (normalised Exp(1) draws), one independent draw per neuron j."""
    n, d = pre.shape
    if n == 0:
        return torch.zeros(d, device=pre.device, dtype=pre.dtype)
    rows = torch.randint(0, n, (d, n_samples), generator=generator, device=pre.device)
    weights = torch.empty(d, n_samples, device=pre.device, dtype=pre.dtype)
    weights.exponential_(1.0, generator=generator)
    weights /= weights.sum(dim=1, keepdim=True)
    cols = torch.arange(d, device=pre.device).unsqueeze(1)
    return -(pre[rows, cols] * weights).sum(dim=1)


class ParametricActivation(nn.Module):
    """``x + α(f(x) − x)`` with a learnable α per neuron (init 1 ⇒ starts as plain f)."""

    def __init__(self, name: str, n_features: int, parametric: bool, device: torch.device) -> None:
        super().__init__()
        try:
            self.f = ACTIVATION_FUNCTIONS[name]
        except KeyError:
            raise ValueError(
                f"unknown activation {name!r}; known: {sorted(ACTIVATION_FUNCTIONS)}"
            ) from None
        if parametric:
            self.alpha = nn.Parameter(torch.ones(n_features, device=device))
        else:
            self.register_parameter("alpha", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fx = self.f(x)
        if self.alpha is None:
            return fx
        return torch.lerp(x, fx, self.alpha)  # x + α(f(x) − x) in one kernel


class ScheduledDropout(nn.Module):
    """Inverted dropout with an externally set rate ``p`` and an explicit RNG."""

    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        self.p = 0.0
        self.generator = generator

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p <= 0.0:
            return x
        keep = 1.0 - self.p
        # In-place float ops on one uniform draw: no bool->float copies (rand + lt_ beats
        # bernoulli_ on CPU), and the same Bernoulli(keep)/keep mask as inverted dropout.
        mask = torch.rand(x.shape, generator=self.generator, device=x.device, dtype=x.dtype)
        return x * mask.lt_(keep).mul_(1.0 / keep)
