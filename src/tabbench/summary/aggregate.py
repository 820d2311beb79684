"""From selected rows to the summary folder of the paper's comparisons (docs/design.md §7).

A *method* (:mod:`tabbench.summary.methods`) is a (stopping metric, ±TS) pair; every method is
compared with the baseline "logloss stopping + TS" on every test metric by
:mod:`tabbench.summary.comparisons` (the same pairing of splits, relative differences and statistics
as the claims and the diagnostics):

    per (model, regime, dataset):  m̄_A = mean over the splits shared with the baseline
    relative difference:            r_A = 100 · (m̄_A / m̄_base − 1)  %, clipped to [−100, 100]

This module puts the pieces together into the files of ``results/summary/``
(:data:`SUMMARY_FILES`): the tables (:mod:`tabbench.summary.tables`), the Fig. 1 curve
(:mod:`tabbench.summary.curve`), the Markdown (:mod:`tabbench.summary.markdown`), the claims
(:mod:`tabbench.summary.claims`), when refining pays (:mod:`tabbench.summary.heterogeneity`, its
fit and its rule: :mod:`tabbench.summary.heterogeneity_fit`,
:mod:`tabbench.summary.validation_rule`), the headline without the low-signal datasets
(:mod:`tabbench.summary.low_signal`) and ``meta.json`` (settings, dropped splits and the
provenance of every runs file).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from tabbench.core.failures import failure_counts, read_failures
from tabbench.core.frames import read_frames, write_frames
from tabbench.core.io import read_parquet
from tabbench.core.layout import runs_splits
from tabbench.core.provenance import runs_files_provenance
from tabbench.settings.presets import default_value
from tabbench.summary import comparisons as cmp
from tabbench.summary.claims import (
    CLAIMS,
    check_claims,
    claims_html,
    claims_markdown,
    declared_differences,
    study_sentence,
)
from tabbench.summary.curve import choose_curve_run, extract_curve
from tabbench.summary.heterogeneity import heterogeneity_table
from tabbench.summary.heterogeneity_fit import fit_table
from tabbench.summary.low_signal import low_signal_section, low_signal_table
from tabbench.summary.markdown import markdown_summary
from tabbench.summary.methods import BASELINE
from tabbench.summary.rule_summary import rule_claims, rules_table
from tabbench.summary.select import SELECTED_COLUMNS
from tabbench.summary.stopping_rules import (
    best_rows,
    describe_rules,
    selected_choices,
    with_rule_columns,
)
from tabbench.summary.tables import (
    dataset_means,
    dropped_splits,
    mean_best_epochs,
    paired_with_baseline,
    rank_table,
    relative_differences,
    summarise,
    summarise_best_epochs,
)
from tabbench.summary.validation_rule import judge_rule, rule_claim_row
from tabbench.summary.view import LOW_SIGNAL_LEARNABILITY, SummaryView

#: the files :func:`aggregate` writes into its output folder
SUMMARY_FILES: dict[str, str] = {
    "dataset_means": "dataset_means.parquet",
    "relative": "relative.parquet",
    "summary": "summary.parquet",
    "ranks": "ranks.parquet",
    "best_epochs": "best_epochs.parquet",
    "best_epochs_summary": "best_epochs_summary.parquet",
    "curve": "curve.parquet",
    "markdown": "summary.md",
    "claims": "claims.parquet",
    "claims_markdown": "claims.md",
    "claims_html": "claims.html",
    "declared": "declared.parquet",
    "rules": "rules.parquet",
    "heterogeneity": "heterogeneity.parquet",
    "heterogeneity_fit": "heterogeneity_fit.parquet",
    "low_signal": "low_signal.parquet",
    "meta": "meta.json",
}


def load_selected(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Concatenate ``results/selected/{model}/{dataset}.parquet`` files; a file selected before
    stopping rules existed reads as the ``best`` rule's
    (:func:`tabbench.summary.stopping_rules.with_rule_columns`)."""
    frames = [with_rule_columns(read_parquet(p)) for p in paths]
    frames = [f for f in frames if len(f)]
    if not frames:
        return with_rule_columns(pd.DataFrame({c: [] for c in SELECTED_COLUMNS}))
    return pd.concat(frames, ignore_index=True)


def aggregate_frames(selected: pd.DataFrame, runs_dir: str | Path | None = None,
                     large_rows: int | None = None, rope: float = cmp.ROPE_PERCENT,
                     view: SummaryView | None = None, balance: pd.DataFrame | None = None,
                     study: Mapping[str, object] | None = None) -> dict[str, object]:
    """All summary tables (in memory) from the concatenated selected rows. ``large_rows``:
    datasets with at least this many rows are "large" (config ``figures_large_rows``; None =
    its default, :func:`tabbench.settings.presets.default_value`). ``rope``: the
    Bayesian test's region of practical equivalence in % (config ``rope_percent``); ``view``:
    the baseline, Fig. 5's methods and the declared comparisons (:mod:`tabbench.summary.view`;
    None = the paper's). The paper's tables read the ``best`` stopping rule's rows; every rule
    is in ``rules`` and in the claims re-checked per rule (:mod:`tabbench.summary.rule_summary`).
    ``balance``: the datasets' class balance (:mod:`tabbench.data.class_balance`) for the
    heterogeneity table's predictors that need it; None: unknown (NaN). ``study``: what the
    results folder says of its run (``preset``, ``scale_note``), into ``meta.json`` and the
    claims' text (:func:`tabbench.summary.claims.study_sentence`)."""

    view = view or SummaryView()
    if large_rows is None:  # 0 is a threshold (every dataset is large), not "unset"
        large_rows = int(default_value("figures_large_rows"))
    every_rule = with_rule_columns(selected)
    selected = best_rows(every_rule)
    means = dataset_means(selected)
    pairs = paired_with_baseline(selected, baseline=view.baseline)
    rel = relative_differences(selected, baseline=view.baseline, large_rows=large_rows,
                               pairs=pairs)
    summary = summarise(rel, pairs, rope, baseline=view.baseline)
    ranks = rank_table(selected, large_rows)
    epochs = mean_best_epochs(selected)
    curve_run = choose_curve_run(selected, runs_dir)
    claims = check_claims(selected, large_rows, claims=CLAIMS + view.declared, rope=rope)
    by_rule = rule_claims(every_rule, large_rows, rope)
    if len(by_rule):
        claims = pd.concat([claims, by_rule], ignore_index=True)
    declared = declared_differences(selected, view.declared, large_rows)
    heterogeneity = heterogeneity_table(selected, large_rows, balance)
    rule = judge_rule(heterogeneity, rope)
    low_signal = low_signal_table(selected, claims, heterogeneity, large_rows, rope,
                                  view.low_signal)
    if len(heterogeneity):
        claims = pd.concat([claims, pd.DataFrame([rule_claim_row(rule)])], ignore_index=True)
    failures = folder_failures(selected, runs_dir)
    meta = {
        "large_rows": int(large_rows),
        "rope_percent": float(rope),
        "models": sorted(selected["model"].unique().tolist()),
        "n_datasets": int(selected["dataset"].nunique()),
        "n_large_datasets": int(selected.loc[selected["n_rows"] >= large_rows,
                                             "dataset"].nunique()),
        # relative to the runs folder: the same on every machine and in a published copy
        "curve_run": (None if curve_run is None
                      else curve_run.relative_to(Path(runs_dir)).as_posix()),
        **view.as_meta(),
        "stopping_rules": {str(m): describe_rules(selected_choices(g))
                           for m, g in every_rule.groupby("model", sort=True)},
        "validation_rule": rule.as_meta(),
        "dropped_splits": dropped_splits(selected, baseline=view.baseline, pairs=pairs),
        "failures": failures,
        **runs_files_provenance(selected, runs_dir),
        **dict(study or {}),
    }
    frames = {
        "dataset_means": means,
        "relative": rel,
        "summary": summary,
        "ranks": ranks,
        "best_epochs": epochs,
        "best_epochs_summary": summarise_best_epochs(epochs),
        "curve": extract_curve(curve_run),
        "claims": claims,
        "declared": declared,
        "rules": rules_table(every_rule, large_rows, view.baseline),
        "heterogeneity": heterogeneity,
        "heterogeneity_fit": fit_table(heterogeneity),
        "low_signal": low_signal,
        "meta": meta,
    }
    return render_texts(frames)


def render_texts(frames: dict[str, object]) -> dict[str, object]:
    """``summary.md``, ``claims.md`` (the claims, then the headline without the low-signal
    datasets where ``frames`` has that table) and ``claims.html`` from the tables and
    ``meta.json`` of ``frames`` (set into it, which is returned): rendered again when ``meta``
    changes (a published copy takes its failure counts from the study's)."""

    meta = frames["meta"]
    large, rope, failures = meta["large_rows"], meta["rope_percent"], meta.get("failures")
    frames["markdown"] = markdown_summary(frames["summary"], large, frames["ranks"], failures,
                                          meta.get("baseline") or BASELINE)
    study = study_sentence(meta)
    frames["claims_markdown"] = claims_markdown(frames["claims"], large, rope, failures, study)
    if "low_signal" in frames and not frames["claims"].empty:
        threshold = meta.get("low_signal_learnability", LOW_SIGNAL_LEARNABILITY)
        frames["claims_markdown"] += "\n" + low_signal_section(frames["low_signal"], threshold)
    frames["claims_html"] = claims_html(frames["claims"], large, rope, failures, study)
    return frames


def folder_failures(selected: pd.DataFrame, runs_dir: str | Path | None) -> dict[str, object]:
    """The failed configs of every split of the (model, dataset)s behind ``selected`` that has a
    runs file (:mod:`tabbench.core.failures`); none without ``runs_dir``."""

    if runs_dir is None or selected.empty:
        return {"configs": 0, "by": []}
    pairs = selected[["model", "dataset"]].drop_duplicates().itertuples(index=False)
    splits = [(str(m), str(d), s) for m, d in pairs for s in runs_splits(runs_dir, m, d)]
    recorded = {(str(m), str(d), int(s)) for m, d, s in
                selected[["model", "dataset", "split"]].drop_duplicates().itertuples(index=False)}
    return failure_counts(read_failures(runs_dir, splits), recorded)


def write_summary(frames: dict[str, object], out_dir: str | Path) -> dict[str, Path]:
    """Write the tables of :func:`aggregate_frames` into ``out_dir`` (names
    :data:`SUMMARY_FILES`), atomically."""
    return write_frames(frames, SUMMARY_FILES, out_dir)


#: summary files an older tabbench's summary lacks (read as absent, drawn as such)
LATER_SUMMARY_FILES = ("rules", "heterogeneity", "heterogeneity_fit", "low_signal")


def read_summary(summary_dir: str | Path) -> dict[str, object]:
    """Read back what :func:`write_summary` wrote (the plots' only input); a file of
    :data:`LATER_SUMMARY_FILES` that an older summary lacks is left out."""
    files = {k: v for k, v in SUMMARY_FILES.items()
             if k not in LATER_SUMMARY_FILES or (Path(summary_dir) / v).is_file()}
    return read_frames(files, summary_dir)


def aggregate(selected_paths: Iterable[str | Path], out_dir: str | Path,
              runs_dir: str | Path | None = None, large_rows: int | None = None,
              rope: float = cmp.ROPE_PERCENT, view: SummaryView | None = None
              ) -> dict[str, object]:
    """Load selected files, build every summary table (:func:`aggregate_frames`), write them
    to ``out_dir``."""
    frames = aggregate_frames(load_selected(selected_paths), runs_dir, large_rows, rope, view)
    write_summary(frames, out_dir)
    return frames
