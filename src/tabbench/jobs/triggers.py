"""Which params of a workflow rule are rerun triggers, derived from the settings table.

Snakemake reruns a finished job when the set of its params changes (one of the rerun triggers,
docs/design.md §6); it records only params of builtin types. A setting is a trigger of a rule
where its :class:`~tabbench.settings.table.Effect` is among what that rule's outputs depend on
(:data:`TRIGGERING_EFFECTS`) and its value is not one of its :attr:`Setting.untracked` ones;
every other value a job is given goes to it as a :class:`NotARerunTrigger`, which Snakemake
passes to the command as text and never compares.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from tabbench.settings.table import Effect, Setting, all_settings

_STUDY = frozenset({Effect.STUDY})
_STUDY_AND_REDRAW = frozenset({Effect.STUDY, Effect.REDRAW})

#: per rule, the effects of the settings that change its outputs: the data, split and train
#: jobs record the study; a selection also follows the patiences, a drawing every redraw
#: setting; a replay is determined by its runs file (whose change reruns it), so none
TRIGGERING_EFFECTS: Mapping[str, frozenset[Effect]] = {
    "fetch_dataset": _STUDY,
    "filter_dataset": _STUDY,
    "split_dataset": _STUDY,
    "train": _STUDY,
    "select": _STUDY_AND_REDRAW,
    "regenerate": _STUDY_AND_REDRAW,
    "replay_split": frozenset(),
}


class NotARerunTrigger:
    """Text a job is given that is not one of its rerun triggers: not a builtin type, so
    Snakemake's params trigger does not record it, while the command gets its text (``str``).
    For what does not change a job's outputs (how a GPU is claimed, where the fetch jobs share
    OpenML's reachability, a run setting), so that changing it on a finished folder reruns
    nothing."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"NotARerunTrigger({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NotARerunTrigger) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


@functools.cache
def _settings() -> Mapping[str, Setting]:
    return all_settings()


def _is_untracked(setting: Setting, value: Any) -> bool:
    return any(type(value) is type(u) and value == u for u in setting.untracked)


def is_trigger(rule: str, key: str, value: Any) -> bool:
    """Whether setting ``key`` at ``value`` is a rerun trigger of ``rule``'s jobs."""
    setting = _settings()[key]
    return setting.effect in TRIGGERING_EFFECTS[rule] and not _is_untracked(setting, value)


def classified(rule: str, value: Any, keys: Iterable[str], config: Mapping[str, Any]) -> Any:
    """``value`` (what a job of ``rule`` is given for the settings ``keys``) as it is where one
    of them is a trigger at its configured value, else its text as a :class:`NotARerunTrigger`.
    """
    if any(is_trigger(rule, k, config[k]) for k in keys):
        return value
    return NotARerunTrigger(str(value))


def flag(key: str, value: Any) -> str:
    """`` --flag value`` of a setting (its flag in the settings table); empty for null, which
    the command's default already means."""
    if value is None:
        return ""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f" {_settings()[key].cli_flag} {shlex.quote(text)}"


def split_flags(rule: str, flags: Mapping[str, str], config: Mapping[str, Any]
                ) -> tuple[str, NotARerunTrigger]:
    """Setting key -> flag text, as the flags of the triggers (plain text: changing one reruns
    the job) and those of the others (a :class:`NotARerunTrigger`)."""
    def text(trigger: bool) -> str:
        return "".join(t for k, t in flags.items() if is_trigger(rule, k, config.get(k)) == trigger)

    return text(True), NotARerunTrigger(text(False))
