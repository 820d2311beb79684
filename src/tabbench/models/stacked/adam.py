"""Adam with decoupled weight decay for parameters stacked over members (``[M, ...]``).

One step of :class:`StackedAdam` is, for every member m and parameter tensor j, exactly the
arithmetic of ``torch.optim.AdamW`` (and of RealMLP's :class:`~tabbench.models.realmlp.optim.
ScheduledAdam`, which differs only in its scalars)::

    p ← p · decay[j, m]                      (decoupled weight decay; 1 = none)
    m ← lerp(m, g, 1 − β1);  v ← β2 v + (1 − β2) g²
    p ← p + (−lr[j, m] / (1 − β1^t)) · m / (√v / √(1 − β2^t) + ε)

The per-step, per-member scalars (``decay``, ``lr``) are computed on the host in float64, as
the single-config optimizers compute theirs in Python floats, and cast to the parameters' dtype
once (:func:`step_scalars`); the device reads them from a table by a step counter on the device,
so the step has no host synchronisation and can be captured in a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def step_scalars(
    lr: np.ndarray,
    decay: np.ndarray,
    first_update: int,
    betas: tuple[float, float],
    dtype: torch.dtype,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The device tables of a run of consecutive steps.

    ``lr`` and ``decay``: ``(S, P, M)`` float64, the learning rate (schedule and per-group factor
    applied) and the decay multiplier of each step, parameter tensor and member.
    ``first_update``: Adam's 1-based update count of the first of these steps (bias correction).
    Returns ``(decay, neg_step, bc2_sqrt)``: ``(S, P, M)``, ``(S, P, M)`` and ``(S,)`` in
    ``dtype`` on ``device``, where ``neg_step = −lr / (1 − β1^t)`` and ``bc2_sqrt =
    (1 − β2^t)^½`` — Python floats, as in ``torch.optim.AdamW``.
    """
    b1, b2 = betas
    steps = range(int(first_update), int(first_update) + lr.shape[0])
    bc1 = np.array([1.0 - b1 ** float(t) for t in steps], dtype=np.float64)
    bc2_sqrt = np.array([(1.0 - b2 ** float(t)) ** 0.5 for t in steps], dtype=np.float64)
    neg_step = -(lr / bc1[:, None, None])
    return tuple(torch.tensor(np.ascontiguousarray(a), dtype=dtype).to(device)
                 for a in (decay, neg_step, bc2_sqrt))


class StackedAdam:
    """Adam state and step for a list of stacked parameters (each ``[M, ...]``).

    The parameters and their gradients are moved into one flat buffer each (every parameter
    becomes a view of its contiguous block, its ``.grad`` a view of the gradient buffer), so a
    step is about ten operations whatever the number of parameter tensors: few kernel launches
    on a GPU. Member m of parameter j is updated with ``decay[j, m]`` and ``neg_step[j, m]``
    only (gathered to every element of its block), so members never see each other's values.
    """

    def __init__(
        self, params: Sequence[torch.Tensor], betas: tuple[float, float], eps: float
    ) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("StackedAdam needs at least one parameter")
        M = self.n_members = int(self.params[0].shape[0])
        if any(int(p.shape[0]) != M for p in self.params):
            raise ValueError("every stacked parameter must have the members as its first dim")
        self.beta1, self.beta2 = float(betas[0]), float(betas[1])
        self.eps = float(eps)
        first = self.params[0]
        total = sum(p.numel() for p in self.params)
        with torch.no_grad():
            self.flat = torch.empty(total, dtype=first.dtype, device=first.device)
            self.grad = torch.zeros_like(self.flat)
            index = []
            offset = 0
            for j, p in enumerate(self.params):
                n = p.numel()
                self.flat[offset:offset + n].copy_(p.detach().reshape(-1))
                p.data = self.flat[offset:offset + n].view(p.shape)
                p.grad = self.grad[offset:offset + n].view(p.shape)
                # element -> row j·M + m of the (P, M) scalar tables (member-major in a block)
                index.append(torch.arange(M, device=first.device).repeat_interleave(n // M)
                             + j * M)
                offset += n
            self.scalar_index = torch.cat(index)
            self.member_of = self.scalar_index.remainder(M)
            self.exp_avg = torch.zeros_like(self.flat)
            self.exp_avg_sq = torch.zeros_like(self.flat)

    def state_tensors(self) -> list[torch.Tensor]:
        """Every tensor a step changes (parameters, gradients and moments): what a CUDA-graph
        warm-up must restore."""
        return [self.flat, self.grad, self.exp_avg, self.exp_avg_sq]

    def zero_grad(self) -> None:
        """Zero the gradient buffer (backward accumulates into the parameters' ``.grad``
        views of it)."""
        self.grad.zero_()

    def members_finite(self) -> torch.Tensor:
        """``[M]`` bool: whether every weight of member m is finite."""
        bad = torch.zeros(self.n_members, dtype=self.flat.dtype, device=self.flat.device)
        bad.index_add_(0, self.member_of, (~torch.isfinite(self.flat)).to(self.flat.dtype))
        return bad == 0

    @torch.no_grad()
    def step(self, decay: torch.Tensor, neg_step: torch.Tensor, bc2_sqrt: torch.Tensor) -> None:
        """One update. ``decay`` and ``neg_step``: ``(P, M)``; ``bc2_sqrt``: a 0-dim or 1-element
        tensor. Gradients are those accumulated since :meth:`zero_grad`."""
        d = decay.reshape(-1).index_select(0, self.scalar_index)
        s = neg_step.reshape(-1).index_select(0, self.scalar_index)
        p, g, m, v = self.flat, self.grad, self.exp_avg, self.exp_avg_sq
        p.mul_(d)
        m.lerp_(g, 1.0 - self.beta1)
        v.mul_(self.beta2).addcmul_(g, g, value=1.0 - self.beta2)
        denom = (v.sqrt() / bc2_sqrt).add_(self.eps)
        # p + (s·m)/denom: the order of torch's addcdiv with value=s
        p.addcdiv_(m * s, denom)
