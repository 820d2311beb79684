"""Which training path a network job takes, and which of its configs train together.

The path is one of two, chosen per job from the device and the ``network_members`` setting
(config key; ``tabbench train --members``) by :func:`training_path`:

* ``sequential`` — one config at a time through the trainer's ``train`` (``network_members:
  1``; XGBoost-like models always);
* ``stacked`` — groups of configs as members of one stacked model through its
  ``train_members`` (:class:`~tabbench.models.base.StackingTrainer`), at most ``members`` per
  group (``auto``: every config of the job on a GPU, :data:`AUTO_CPU_MEMBERS` on the CPU),
  fewer where the members' estimated memory exceeds ``network_memory_gb``.

A member's records do not depend on its group, so the grouping is free to change between a
killed job and its resume; the path is not (the two paths agree within float32 rounding, not bit
for bit, and dropout draws differ), so it is part of the job's identity and provenance.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

#: ``network_members`` of ``auto`` (config ``null``) on the CPU: measured in
#: benchmarks/network_batching.py (docs/performance.md, "Stacked training")
AUTO_CPU_MEMBERS = 1
SEQUENTIAL, STACKED = "sequential", "stacked"
AUTO = "auto"


def parse_members(value: object) -> int | None:
    """``network_members`` / ``--members``: a positive integer, or None/``auto`` (the device's
    default). Raises ValueError otherwise."""
    if value is None or (isinstance(value, str) and value.strip().lower() in (AUTO, "null",
                                                                                "none", "")):
        return None
    if isinstance(value, bool):
        raise ValueError(f"network_members must be a positive integer or auto, got {value!r}")
    try:
        n = int(str(value).strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise ValueError(f"network_members must be a positive integer or auto, got "
                         f"{value!r}") from None
    if n < 1 or (not isinstance(value, str) and n != value):
        raise ValueError(f"network_members must be a positive integer or auto, got {value!r}")
    return n


def device_type(device: str) -> str:
    """``cpu`` or ``cuda`` (``cuda:<i>`` included)."""
    return "cuda" if str(device).strip().lower().startswith("cuda") else "cpu"


def max_members(device: str, members: int | None, n_configs: int) -> int:
    """The most members of one group on ``device`` for ``members`` (None = auto)."""
    if members is not None:
        return int(members)
    if device_type(device) == "cuda":
        return max(1, int(n_configs))
    return AUTO_CPU_MEMBERS


def training_path(device: str, members: int | None, can_stack: bool) -> str:
    """:data:`STACKED` or :data:`SEQUENTIAL` for a job (module docstring). ``can_stack``:
    whether the model's trainer is a :class:`~tabbench.models.base.StackingTrainer`."""
    if not can_stack:
        return SEQUENTIAL
    if members is None:
        return STACKED if device_type(device) == "cuda" or AUTO_CPU_MEMBERS > 1 else SEQUENTIAL
    return STACKED if members > 1 else SEQUENTIAL


def plan_groups(
    configs: Sequence[int],
    keys: Mapping[int, Hashable],
    member_bytes: Mapping[int, int],
    limit: int,
    budget_bytes: float | None,
) -> list[list[int]]:
    """Groups of ``configs``: equal ``keys`` (shapes and epochs) only, at most ``limit``
    members, and at most ``budget_bytes`` of estimated memory (a member alone may exceed it:
    then it trains alone). Within a key configs keep their order; groups are ordered by their
    first config."""
    if limit < 1:
        raise ValueError(f"at most {limit} members per group: must be >= 1")
    by_key: dict[Hashable, list[list[int]]] = {}
    used: dict[Hashable, float] = {}
    for c in configs:
        groups = by_key.setdefault(keys[c], [])
        need = float(member_bytes.get(c, 0))
        if (groups and len(groups[-1]) < limit
                and (budget_bytes is None or used[keys[c]] + need <= budget_bytes)):
            groups[-1].append(c)
            used[keys[c]] += need
        else:
            groups.append([c])
            used[keys[c]] = need
    return sorted((g for gs in by_key.values() for g in gs), key=lambda g: g[0])
