"""What a *method* is: a (stopping metric, ±TS) pair (docs/design.md §7).

Stop on ``val_<stopping>``, then report the test metric raw or after temperature scaling fit on
validation (``test_<m>_ts``). The methods follow from the registry of stopping metrics
(:mod:`tabbench.metrics.registry`): ``"<label>+TS"`` for every registered metric, and
``"<label>"`` (raw) where the metric asks for it; the paper's Fig. 5 methods come first, in its
order, then the others in registry order. The paper compares every method with the baseline
"logloss stopping + TS" (Berta et al. 2025, Sec. 4, Fig. 5).
"""

from __future__ import annotations

from dataclasses import dataclass

from tabbench.metrics.registry import get_stopping_metrics


@dataclass(frozen=True)
class Method:
    """Stop on ``stopping``; report the test metric after TS if ``ts``."""

    name: str
    stopping: str
    ts: bool


BASELINE = "Logloss+TS"
#: the paper's Fig. 5: its four methods in its order (the figures show them first)
FIG5_METHODS: tuple[str, ...] = ("Logloss", "Logloss+TS", "TS-Ref.+TS", "Accuracy+TS")


def methods() -> tuple[Method, ...]:
    """Every method of the registered stopping metrics, in the order the figures show them
    (module docstring)."""
    out = []
    for metric in get_stopping_metrics().values():
        if metric.raw_method:
            out.append(Method(metric.method_name(ts=False), metric.id, False))
        out.append(Method(metric.method_name(ts=True), metric.id, True))
    rank = {name: i for i, name in enumerate(FIG5_METHODS)}
    return tuple(sorted(out, key=lambda m: rank.get(m.name, len(rank))))  # stable


def method_names() -> tuple[str, ...]:
    return tuple(m.name for m in methods())


def ts_method_names() -> tuple[str, ...]:
    """The "+TS" method of every stopping metric, in figure order: the stopping methods a
    ranking compares (each calibrated afterwards, as the paper recommends)."""
    return tuple(m.name for m in methods() if m.ts)
