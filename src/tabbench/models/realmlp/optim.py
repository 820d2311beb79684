"""Adam with RealMLP's per-step schedules, per-group factors and decoupled weight decay.

Before every step, at progress ``t = step / total_steps``:

* lr of group g: ``lr_g = lr · lr_sched(t) · lr_factor_g``;
* weight decay: ``p ← p · (1 − lr·lr_sched(t) · wd·wd_sched(t) · (lr_factor_g · wd_factor_g)²)``
  — the factors enter *squared*, a quirk of the reference (pytabkit issue #40, docs/design.md §10)
  kept for fidelity; ``wd_squared_factors=False`` gives the textbook ``lr_g · wd_g``.
  Groups with wd factor 0 (biases) are never decayed.

Then a plain Adam step (Kingma & Ba; betas (0.9, 0.95), eps 1e-8, bias-corrected, no coupled
L2), the same arithmetic as ``torch.optim.Adam``. It is written with ``torch._foreach_*`` over
*all* parameters at once, with per-tensor step sizes, instead of one ``torch.optim.Adam`` group
per factor: on small tabular networks the step is launch-bound, and one pass is several times
fewer kernel launches. Moments are per entry, so grouping changes nothing numerically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from tabbench.models.realmlp.network import ParamGroup
from tabbench.models.realmlp.schedules import Schedule


def decay_multiplier(lr_t: Any, wd_t: Any, lr_factor: Any, wd_factor: Any, squared: bool) -> Any:
    """RealMLP's decoupled weight decay multiplier (module docstring), for floats or numpy
    arrays alike (the stacked trainer evaluates it for every step and member at once with the
    same float64 operations). It is exactly 1 where ``wd_t`` or ``wd_factor`` is 0."""
    if squared:
        return 1.0 - lr_t * wd_t * (lr_factor * wd_factor) ** 2
    return 1.0 - lr_t * lr_factor * wd_t * wd_factor


@dataclass(frozen=True)
class Scheduled:
    """A base rate and its schedule over training (``t`` from 0 to 1)."""

    base: float
    schedule: Schedule

    def at(self, t: float) -> float:
        return self.base * self.schedule(t)


class ScheduledAdam:
    def __init__(
        self,
        groups: list[ParamGroup],
        *,
        lr: Scheduled,
        wd: Scheduled,
        betas: tuple[float, float],
        eps: float,
        total_steps: int,
        wd_squared_factors: bool = True,
    ) -> None:
        if total_steps < 1:
            raise ValueError(f"total_steps must be >= 1, got {total_steps}")
        self.groups = [g for g in groups if g.params]
        self.params: list[torch.Tensor] = [p for g in self.groups for p in g.params]
        self._group_of = [i for i, g in enumerate(self.groups) for _ in g.params]
        self.lr = lr
        self.wd = wd
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.total_steps = total_steps
        self.wd_squared_factors = wd_squared_factors
        with torch.no_grad():
            self.exp_avg = [torch.zeros_like(p) for p in self.params]
            self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.n_updates = 0

    def hyperparameters(self, step: int) -> tuple[float, float]:
        """Scheduled base ``(lr_t, wd_t)`` before step ``step`` (0-based)."""
        t = step / self.total_steps
        return self.lr.at(t), self.wd.at(t)

    def decay_multiplier(self, group: ParamGroup, lr_t: float, wd_t: float) -> float:
        """The factor each parameter of ``group`` is multiplied by before the Adam step."""
        if wd_t == 0.0 or group.wd_factor == 0.0:
            return 1.0
        return decay_multiplier(lr_t, wd_t, group.lr_factor, group.wd_factor,
                                self.wd_squared_factors)

    @torch.no_grad()
    def step(self, step: int) -> None:
        """Weight decay, then one Adam update of every parameter, at schedule position ``step``."""
        lr_t, wd_t = self.hyperparameters(step)
        grads = [p.grad for p in self.params]
        if any(g is None for g in grads):
            raise RuntimeError("ScheduledAdam.step: a parameter has no gradient")
        mults = [self.decay_multiplier(g, lr_t, wd_t) for g in self.groups]
        if any(m != 1.0 for m in mults):
            torch._foreach_mul_(self.params, [mults[i] for i in self._group_of])

        self.n_updates += 1
        b1, b2 = self.beta1, self.beta2
        torch._foreach_lerp_(self.exp_avg, grads, 1.0 - b1)
        torch._foreach_mul_(self.exp_avg_sq, b2)
        torch._foreach_addcmul_(self.exp_avg_sq, grads, grads, value=1.0 - b2)
        bias_correction1 = 1.0 - b1**self.n_updates
        bias_correction2 = 1.0 - b2**self.n_updates
        denom = torch._foreach_sqrt(self.exp_avg_sq)
        torch._foreach_div_(denom, math.sqrt(bias_correction2))
        torch._foreach_add_(denom, self.eps)
        step_sizes = [-lr_t * g.lr_factor / bias_correction1 for g in self.groups]
        torch._foreach_addcdiv_(
            self.params, self.exp_avg, denom, [step_sizes[i] for i in self._group_of]
        )

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None
