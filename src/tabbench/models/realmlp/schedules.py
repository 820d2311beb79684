"""Hyperparameter schedules of RealMLP (Holzmüller et al. 2024, App. A; docs/design.md §10).

A schedule maps training progress ``t ∈ [0, 1]`` to a multiplier of a base value. RealMLP
updates every scheduled hyperparameter before *every optimisation step* with
``t = step / total_steps`` (step counted from 0), so the first step runs at ``t = 0`` — with
``coslog4`` that first step has learning rate 0, exactly as in the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable

Schedule = Callable[[float], float]


def constant(t: float) -> float:
    """No schedule: the base value throughout."""
    return 1.0


def coslog(n_cycles: int) -> Schedule:
    """``½(1 − cos(2π·log2(1 + (2^n − 1)·t)))``: n cosine cycles, each twice as long as the last.

    With ``n = 4`` ("coslog4") the multiplier is 0 at t = 0, 1/15, 3/15, 7/15 and 1 — the
    learning rate restarts three times, the restarts getting rarer as training proceeds.
    """
    if n_cycles < 1:
        raise ValueError(f"coslog needs at least one cycle, got {n_cycles}")
    scale = 2.0**n_cycles - 1.0

    def f(t: float) -> float:
        return 0.5 * (1.0 - math.cos(2.0 * math.pi * math.log2(1.0 + scale * t)))

    return f


def flat_cos(t: float) -> float:
    """1 for the first half of training, then a half cosine down to 0 at t = 1.

    ``f(t) = 1`` for ``t < ½``, else ``½(1 + cos(π(2t − 1)))``. Used for dropout and weight decay
    so that both regularisers fade out while the network converges.
    """
    if t < 0.5:
        return 1.0
    return 0.5 * (1.0 + math.cos(math.pi * (2.0 * t - 1.0)))


def cos(t: float) -> float:
    """Plain cosine decay from 1 to 0 (``½(1 + cos(πt))``), offered as an lr option."""
    return 0.5 * (1.0 + math.cos(math.pi * t))


def get_schedule(name: str) -> Schedule:
    """The schedule called ``name``: ``constant``, ``flat_cos``, ``cos`` or ``coslog<n>``."""
    if name == "constant":
        return constant
    if name == "flat_cos":
        return flat_cos
    if name == "cos":
        return cos
    if name.startswith("coslog") and name[len("coslog") :].isdigit():
        return coslog(int(name[len("coslog") :]))
    raise ValueError(
        f"unknown schedule {name!r}; known: constant, flat_cos, cos, coslog<n> (e.g. coslog4)"
    )
