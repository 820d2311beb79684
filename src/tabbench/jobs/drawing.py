"""The drawing rules (workflow/rules/report.smk): the regenerate job, the one job that draws
the summary, claims, figures and report's opening page from what a results folder holds
(``tabbench figures --results``, :func:`tabbench.report.redraw.regenerate`), and the
HTML report built on it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from tabbench.core.io import UnreadableFileError, check_parquet
from tabbench.core.layout import ResultsLayout
from tabbench.diagnostics.paths import (
    DIAGNOSTIC_FIGURE_STEMS,
    DIAGNOSTIC_OTHER_FILES,
    DIAGNOSTIC_TABLE_FILES,
)
from tabbench.jobs.refusal import Refused
from tabbench.jobs.triggers import classified
from tabbench.plots import FIGURE_STEMS
from tabbench.report.drawing_state import nothing_to_draw, regenerate_inputs, stale_drawing
from tabbench.report.study_description import (
    CLAIMS_CATEGORY,
    DESCRIPTION_FILE,
    DIAGNOSTICS_CATEGORY,
    FIGURES_CATEGORY,
)
from tabbench.settings.table import VIEW_KEYS
from tabbench.study.targets import Drawing
from tabbench.summary.aggregate import SUMMARY_FILES
from tabbench.summary.patience_words import patience_argument
from tabbench.summary.view import ViewError, view_from_config

#: the settings of the regenerate command: what is large, the equivalence region, the
#: patiences and what the summary compares
DRAWING_KEYS = ("figures_large_rows", "rope_percent", "patience", *VIEW_KEYS)


def view_flags(config: Mapping[str, Any]) -> str:
    """What the summary compares (:mod:`tabbench.summary.view`) as the flags of ``tabbench
    figures``; empty where the paper's."""
    flags = ""
    for key in VIEW_KEYS:
        value = config.get(key)
        if value is None or value == []:
            continue
        flag = "--" + key.replace("_", "-")
        if key == "figures_methods":
            flags += f" {flag} " + " ".join(shlex.quote(str(m)) for m in value)
        elif key == "comparisons":
            flags += f" {flag} {shlex.quote(json.dumps(value))}"
        else:
            flags += f" {flag} {shlex.quote(str(value))}"
    return flags


class DrawingJobs:
    """The drawing of one run's results folder under its settled ``config``.

    Refuses (:class:`~tabbench.jobs.refusal.Refused`) a method name the registry does not know
    (``figures_methods``, ``figures_baseline``, ``comparisons``) at once, before any job: not
    after the study, in the regenerate job's log."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config
        self.results = config["results_dir"]
        self.layout = ResultsLayout(self.results)
        try:
            view_from_config(config)
        except ViewError as e:
            raise Refused(f"invalid configuration: {e}") from None
        #: the report's opening page (Snakemake's global ``report:`` description)
        self.description = self.layout.summary(DESCRIPTION_FILE)
        self._said: set[str] = set()

    def _figure_files(self, stems: tuple[str, ...] | list[str]) -> list[str]:
        return [self.layout.figure(s, ext) for s in stems for ext in ("pdf", "png")]

    @property
    def files(self) -> list[str]:
        """Every file the regenerate job writes, as plain paths (the description last): what
        ``figures`` and ``report`` require."""
        layout = self.layout
        return ([layout.summary(name) for name in SUMMARY_FILES.values()]
                + [f"{layout.diagnostics_dir}/{name}"
                   for name in {**DIAGNOSTIC_TABLE_FILES, **DIAGNOSTIC_OTHER_FILES}.values()]
                + self._figure_files(FIGURE_STEMS) + self._figure_files(DIAGNOSTIC_FIGURE_STEMS)
                + [self.description])

    def captioned_outputs(self) -> list[tuple[str, dict[str, Any] | None]]:
        """The regenerate job's outputs but the description, each with the report entry it
        carries (None: a plain output): the claims table and each figure's png, with the
        caption workflow/report/{name}.rst, under the categories the opening page links to
        (:mod:`tabbench.report.study_description`)."""
        captions = {self.layout.summary(SUMMARY_FILES["claims_html"]): ("claims",
                                                                          CLAIMS_CATEGORY)}
        for stems, category in ((FIGURE_STEMS, FIGURES_CATEGORY),
                                (DIAGNOSTIC_FIGURE_STEMS, DIAGNOSTICS_CATEGORY)):
            captions.update({self.layout.figure(s, "png"): (s, category) for s in stems})
        out: list[tuple[str, dict[str, Any] | None]] = []
        for path in self.files[:-1]:
            if path not in captions:
                out.append((path, None))
                continue
            name, category = captions[path]
            label = {"table": name} if category == CLAIMS_CATEGORY else {"figure": name}
            out.append((path, {"caption": f"../report/{name}.rst", "category": category,
                               "labels": label}))
        return out

    def outputs(self, kept: Callable[[str], Any], entry: Callable[..., Any]) -> list[Any]:
        """The regenerate job's outputs but the description: each marked ``kept`` (left as it
        was when the job fails), and those of :meth:`captioned_outputs` marked ``entry`` with
        their report entry."""
        return [entry(kept(path), **e) if e else kept(path)
                for path, e in self.captioned_outputs()]

    def command(self) -> str:
        """The regenerate job's command (``tabbench figures``, without --jobs and its log
        redirection): the folder redrawn in place, its figures into its figures folder, with
        this invocation's redraw settings. The regenerate rule and ``restop`` run this one
        command; a param of the rule, so that a changed setting redraws."""
        c = self.config
        root = os.path.dirname(os.path.dirname(self.description))
        figures = ResultsLayout(root).figures_dir
        text = (f"tabbench figures --results {shlex.quote(root)} --out {shlex.quote(root)}"
                f" --figures-dir {shlex.quote(figures)}"
                f" --large-rows {int(c['figures_large_rows'])}"
                f" --rope {float(c['rope_percent'])}{view_flags(c)}"
                f" {patience_argument(c.get('patience'))}")
        return classified("regenerate", text, DRAWING_KEYS, c)

    def regenerate_input(self, plan: Drawing, study: Callable[[], list[str]],
                         as_is: Callable[[str], Any]) -> list[Any]:
        """What the regenerate job reads and waits for; the one branch of the workflow on what
        the invocation asked for (``plan``, :func:`tabbench.study.targets.plan_drawing`).
        ``as_is`` marks a file to be used as it is (no job is looked for that makes it).

        * Drawn from the cache (``figures``, ``report``, their files): the files the folder
          holds for its complete results (:func:`~tabbench.report.drawing_state.
          regenerate_inputs`), used as they are: no data, training or selection job can be
          planned whatever preceded, and the job reruns when one of them changed or the set
          did. Runs or selected files asked for beside them are plain inputs, made first. A
          damaged file (not one this invocation may write again) is refused in one line.
        * Otherwise (the study; ``diagnostics``): ``study()``, every runs and selected file of
          the study and what else it waits for, so the figures come after the last training;
          plus, used as they are, the other files the folder holds. On a finished study both
          lists are the same files, so going from ``snakemake`` to ``snakemake figures`` and
          back reruns nothing (Snakemake's input trigger compares the sets)."""
        results = self.results
        cached = [f"{results}/{os.path.relpath(p, results)}" for p in regenerate_inputs(results)]
        if plan.from_cache:
            made = list(plan.rebuilt)
            if not cached and not made:
                raise Refused(str(nothing_to_draw(results)))
            try:
                check_parquet(p for p in cached
                              if p.endswith(".parquet") and not plan.may_rebuild(p))
            except UnreadableFileError as e:
                raise Refused(f"{e}. Nothing was redrawn: the summary, figures and report in "
                              f"{results}/ are those drawn before") from None
            self._say_cached(len(cached), made)
        else:
            made = list(dict.fromkeys(study()))
        known = set(map(os.path.normpath, made))
        return made + [as_is(p) for p in cached if os.path.normpath(p) not in known]

    def _say_cached(self, n: int, rebuilt: list[str]) -> None:
        if "cache" in self._said:
            return
        self._said.add("cache")
        made = (f" after making {', '.join(rebuilt)}" if rebuilt
                else " (cached results only: nothing is trained)")
        print(f"tabbench: figures from the {n} files of the complete (model, dataset) results "
              f"in {self.results}/{made}. Snakemake redraws only when they changed; to redraw "
              "an up-to-date folder anyway, add --forcerun regenerate", file=sys.stderr)

    def say_when_stale(self, log: Any, success: bool) -> None:
        """End hook: a run that left the folder's summary, claims, figures or report older
        than its results (one pair retrained) says so last, with the command that redraws
        them; a run that drew them says nothing."""
        why = stale_drawing(self.results) if success else None
        if why is not None:
            print(f"tabbench: {why}", file=sys.stderr, flush=True)


def build_report(html_out: str, log_path: str, config: Mapping[str, Any],
                 command: Callable[[str, str], list[str]]) -> None:
    """Build the HTML report into ``html_out`` with ``command(config_file, html)`` (the
    workflow's report invocation on itself), ``config`` (the invocation's own overrides)
    handed over as a config file so that it settles the same configuration and builds the
    same DAG; its output goes to ``log_path``. The HTML is written next to the target and
    renamed (atomic)."""
    out_dir = os.path.dirname(os.path.abspath(html_out))
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        config_file = os.path.join(tmp, "config.yaml")
        with open(config_file, "w") as fh:
            yaml.safe_dump(dict(config), fh)
        html = os.path.join(tmp, "report.html")
        with open(log_path, "w") as fh:
            subprocess.run(command(config_file, html), check=True, stdout=fh,
                           stderr=subprocess.STDOUT)
        shutil.move(html, html_out)
