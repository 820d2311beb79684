"""What a target under a results folder may name, and the one line that refuses one that it may
not.

A results folder holds one study: its models and datasets are its settings
(``run_config.yaml``). A target that names another model or dataset (``selected/lightgbm/adult``
on a folder whose study has no LightGBM) would train it without a word, and the next drawing
would put it into the figures, the claims and the report beside the study's own:
:func:`not_in_study` says so, and how to add it on purpose. A target path that no rule makes (a
typo: ``selectd/...``, ``runs/xgbost/...``) ends in Snakemake's "No rule to produce" or an
exception several lines long: :func:`unmade_target` says which path was meant.
:func:`unmade_pattern` is the regular expression of the paths no rule makes, from the rules'
own output patterns, so that the workflow sends only those to the refusal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tabbench.core.layout import FIGURES, REPLAY, REPORT, SUMMARY, ResultsLayout, parse_runs_file
from tabbench.core.suggest import close_names, did_you_mean

#: the kinds of study member a target names
MODEL, DATASET = "model", "dataset"
#: the setting that declares each
_SETTING = {MODEL: "models", DATASET: "suite"}

#: the top-level names of a results folder that rules write (the layout's)
RESULT_FOLDERS = ("runs", "selected", REPLAY, SUMMARY, FIGURES)

#: the split wildcard's constraint (the train and replay rules')
SPLIT_PATTERN = r"\d+"

#: the rule names whose targets the regenerate job draws from what the folder holds
DRAWING_RULES = ("figures", "report", "regenerate")


@dataclass(frozen=True)
class Drawing:
    """What an invocation's targets ask of the regenerate job (the one job that draws the
    summary, claims, figures and report, workflow/rules/report.smk).

    ``from_cache``: it draws from the files the folder holds, so no data, training or
    selection job is planned for it; true when some target is drawn (a rule of
    :data:`DRAWING_RULES`, a file of the summary or figures folder, the report) and every other
    is a runs or selected file of the folder. ``rebuilt``: those runs and selected files, made
    first (``snakemake results/selected/m/d.parquet figures --forcerun train`` retrains one
    pair and redraws in one command); the other complete results are taken as they are."""

    from_cache: bool
    rebuilt: tuple[str, ...] = ()

    @property
    def trains_nothing(self) -> bool:
        """Whether no job of the invocation can train or select (it only draws)."""
        return self.from_cache and not self.rebuilt

    def may_rebuild(self, path: str) -> bool:
        """Whether a job of this invocation may write ``path`` (a runs or selected file of the
        folder): it is asked for, or it is a runs file of a pair whose selected file is (whose
        train jobs ``--forcerun train`` reruns)."""
        path = os.path.normpath(path)
        selected = {p[1:] for r in self.rebuilt if (p := _pair(r)) and p[0] == "selected"}
        pair = _pair(path)
        return path in self.rebuilt or (pair is not None and pair[1:] in selected)


def _pair(path: str) -> tuple[str, str, str] | None:
    """("runs" or "selected", model, dataset) of a runs or selected file's path, or None."""
    runs = parse_runs_file(path)
    if runs is not None:
        return "runs", runs[0], runs[1]
    parts = os.path.normpath(path).split(os.sep)
    if len(parts) >= 3 and parts[-3] == "selected" and parts[-1].endswith(".parquet"):
        return "selected", parts[-2], parts[-1].removesuffix(".parquet")
    return None


def plan_drawing(targets: Sequence[str], results: str) -> Drawing:
    """:class:`Drawing` of the targets of one invocation on the results folder ``results``
    (empty: the default target, the study, which draws after its last training)."""
    layout = ResultsLayout(results)
    summary, figures, runs, selected = (os.path.normpath(f) for f in (
        layout.summary_dir, layout.figures_dir, layout.runs_dir,
        os.path.join(results, "selected")))
    drawn, rebuilt = False, []
    for target in targets:
        path = os.path.normpath(target)
        if (target in DRAWING_RULES or path == os.path.normpath(layout.report)
                or path.startswith(summary + os.sep) or os.path.dirname(path) == figures):
            drawn = True
        elif ((path.startswith(runs + os.sep) and parse_runs_file(path) is not None)
              or (os.path.dirname(os.path.dirname(path)) == selected
                  and path.endswith(".parquet"))):
            rebuilt.append(path)
        else:
            return Drawing(False)
    return Drawing(drawn, tuple(rebuilt) if drawn else ())


def not_in_study(kind: str, name: str, declared: Sequence[str], results: str,
                 run_config: str | None, known: Sequence[str] | None = None) -> str | None:
    """Why a target naming the ``kind`` (:data:`MODEL`, :data:`DATASET`) ``name`` is refused
    on the results folder ``results`` whose study declares ``declared``, in one line; None
    when it is declared. ``run_config``: the folder's settings file, or None for a folder
    without one (its study is then config.yaml's and the command line's), which says where to
    add it on purpose. ``known``: the names that could be added (the registered models); a
    name outside them is a typo, and the line says which declared or known name is close."""
    if name in declared:
        return None
    setting = _SETTING[kind]
    listed = ", ".join(declared) if len(declared) <= 12 else f"{len(declared)} of them"
    if known is not None and name not in known:
        return (f"{name!r} is not a {kind} of the study in {results}/ nor a known one"
                f"{did_you_mean(name, [*declared, *known])}; its {setting}: {listed}")
    head = (f"{name!r} is not a {kind} of the study in {results}/"
            f"{did_you_mean(name, declared)}; its {setting}: {listed}")
    if kind == MODEL:
        where = (f"add it to `models` in {run_config} (the next `snakemake` trains it on every "
                 "dataset of the study)" if run_config else
                 f"run with --config models=[{','.join([*declared, name])}]")
    else:
        where = (f"list it in `suite` (and not in `exclude`) in {run_config}" if run_config
                 else "run with --config suite=[...] naming it beside the study's datasets")
    return (f"{head}. Its results would join this folder's figures, claims and report: to add "
            f"it on purpose, {where}; or give it a results folder of its own "
            "(--config results_dir=DIR)")


def pattern_regex(pattern: str, constraints: Mapping[str, str] | None = None) -> str:
    """The regular expression of a Snakemake output pattern (``runs/{model}/{dataset}/...``):
    each ``{wildcard}`` becomes its constraint (Snakemake's default ``.+`` where it has
    none), the rest matches literally."""
    constraints = constraints or {}
    out, pos = [], 0
    for m in re.finditer(r"\{(\w+)\}", pattern):
        out.append(re.escape(pattern[pos:m.start()]))
        out.append(f"(?:{constraints.get(m.group(1), '.+')})")
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    return "".join(out)


def unmade_pattern(results: str, made: Iterable[str]) -> str:
    """The regular expression (a Snakemake wildcard constraint) of the paths relative to
    ``results`` that match none of ``made`` (regular expressions of whole paths under
    ``results``, e.g. from :func:`pattern_regex`): what a catch-all rule may be asked for."""
    prefix = re.escape(f"{results}/")
    alternatives = []
    for regex in made:
        if not regex.startswith(prefix):
            raise ValueError(f"{regex!r} is not under {results}/")
        alternatives.append(regex[len(prefix):])
    return f"(?!(?:{'|'.join(alternatives)})$).+"


def unmade_target(path: str, results: str, models: Sequence[str],
                  rules: Sequence[str]) -> str:
    """Why no rule makes ``path`` (a target under ``results``), in one line with the path that
    was meant where one is close: a misspelt folder (``selectd/``), a model that is not
    registered (``runs/xgbost/``); and the targets there are. ``models``: the registered
    models; ``rules``: the targets that are rule names (``figures``, ``report``...)."""
    parts = os.path.relpath(path, results).split("/")
    meant = None
    if parts[0] not in (*RESULT_FOLDERS, REPORT):
        close = close_names(parts[0], [*RESULT_FOLDERS, REPORT], n=1)
        meant = close and [close[0], *parts[1:]]
    elif parts[0] in ("runs", REPLAY) and len(parts) > 1 and parts[1] not in models:
        close = close_names(parts[1], models, n=1)
        meant = close and [parts[0], close[0], *parts[2:]]
    hint = f" (did you mean {'/'.join([results, *meant])!r}?)" if meant else ""
    layout = (f"{results}/runs/MODEL/DATASET/splitI.parquet, "
              f"{results}/selected/MODEL/DATASET.parquet, {results}/{REPLAY}/MODEL/DATASET/"
              f"splitI.npz, the files of {results}/{SUMMARY}/ and {results}/{FIGURES}/, "
              f"{results}/{REPORT}")
    return (f"no rule makes {path}{hint}. Targets in {results}/ are {layout}; or one of "
            f"{', '.join(rules)}")
