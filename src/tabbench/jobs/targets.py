"""The catch-all rule for a target under the results folder that no rule makes (a misspelt
folder or model: ``results/selectd/...``, ``results/runs/xgbost/...``): one line naming the path
that was meant, while the DAG is built (workflow/rules/targets.smk)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from tabbench.jobs.refusal import Refused
from tabbench.models.registry import model_names
from tabbench.study.targets import SPLIT_PATTERN, pattern_regex, unmade_pattern, unmade_target

#: the targets that are names of rules
TARGET_RULES = ("figures", "report", "data", "replay", "diagnostics", "restop")


def unmade_in_results(results: str, runs: Iterable[str], selected: str,
                      replays: Iterable[str], drawn: Iterable[str], model_pattern: str) -> str:
    """The catch-all's wildcard: the paths under ``results`` that none of the rules writing
    there makes (its train rule's ``runs`` patterns, the selection's, the replay's and the
    ``drawn`` files), with the constraints of their wildcards (Snakemake's ``.+`` where none is
    set); it is no candidate for any other path, so it costs the DAG nothing."""
    split = {"model": model_pattern, "split": SPLIT_PATTERN}
    made = [*(pattern_regex(p, split) for p in runs),
            pattern_regex(selected, {"model": "[^/]+", "dataset": "[^/]+"}),
            *(pattern_regex(p, split) for p in replays), *(pattern_regex(p) for p in drawn)]
    return unmade_pattern(results, made)


def refuse_unmade(target: str, requested: Iterable[str], results: str, data: str) -> list[str]:
    """A requested target under the results folder that nothing makes (a typo) is refused in
    one line with the path that was meant, instead of Snakemake's message that it cannot
    produce it. A path that is not a target of this invocation (a file some job would read) is
    left to Snakemake (``ValueError``: it drops this candidate for it)."""
    path = f"{results}/{target}"
    asked = {os.path.normpath(t) for t in requested}
    if os.path.normpath(path) not in asked or path.startswith(f"{data}/"):
        raise ValueError(f"{path} is made by no job")
    raise Refused(str(unmade_target(path, results, sorted(model_names()), TARGET_RULES)))
