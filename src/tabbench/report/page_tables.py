"""The generated tables of a Markdown page (docs/reproduction.md): each sits between markers of
its own name and is rewritten from a results folder by ``tabbench claims-table --page``, so a
page that reports a study cannot drift from the study's shipped results; the page's prose and
everything outside the markers is left as it is.

A page names what it embeds: ``<!-- generated table: NAME; ... -->`` up to
``<!-- end of generated table: NAME -->``, with ``NAME`` one of :data:`TABLES`, computed from
the folder ``claims-table --results`` names. ``NAME from PATH`` (in both markers) computes it
from another results folder, ``PATH`` relative to the page's own folder: a page that reports
one study with a second folder beside it (docs/reproduction_large.md) keeps both in step.

* ``claims``: every claim of the paper checked (:func:`tabbench.summary.claims.reproduction_table`);
* ``progress``: per model, the train jobs done of those planned, configs recorded and failed,
  and the time left predicted, when the copy was published (``PUBLISHED.json``'s ``status``);
* ``complete_pairs``: per model of the study, the (model, dataset) pairs the folder holds
  selections of (a selection needs every split), and which of them are large: what every
  verdict of the page is computed from;
* ``all_datasets``: test logloss of a few methods relative to the baseline on all datasets, per
  (model, regime): the summary's medians, W/T/L and Bayesian probabilities;
* ``ranks``: the mean rank of each stopping method (+TS) over all datasets per (model, regime),
  with the critical difference: the numbers of the CD diagrams;
* ``regret``: each stopping metric's median regret against the best (config, epoch) on test
  (the diagnostics' ``regret_summary``, computed from the complete pairs' runs files);
* ``rope``: the paper's headline claim judged again at several regions of practical
  equivalence, beside the folder's own: how much of its verdict is the ROPE's;
* ``heterogeneity``: when refining pays: each validation-only predictor's rank correlation with
  the headline's per-dataset test gain, per model and pooled, and the validation rule judged
  leaving one dataset out (:mod:`tabbench.summary.heterogeneity_text`);
* ``low_signal``: the headline claim per (model, regime) on every large dataset and without the
  low-signal ones, side by side (:mod:`tabbench.summary.low_signal`, the section of
  ``claims.md``);
* ``stopping_rules``: per model, regime and stopping rule (the whole run; patience p), whether
  TS-Ref.+TS beats Logloss+TS under that rule and the median fraction of epochs each method
  trains (:func:`tabbench.summary.rule_summary.rules_answer`, what ``tabbench stopping-rules``
  prints).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabbench.core.io import read_parquet
from tabbench.core.layout import ResultsLayout
from tabbench.core.markdown import MISSING, cell, markdown_table
from tabbench.diagnostics.paths import DIAGNOSTIC_TABLE_FILES
from tabbench.diagnostics.selection_bias import MAIN_TARGET
from tabbench.metrics.registry import get_stopping_metrics
from tabbench.models.registry import model_label, order_models
from tabbench.report.publish import DATASET_TABLE, is_published, read_manifest
from tabbench.report.redraw import collect_selected, summary_frames
from tabbench.settings.folder import ResultsFolder
from tabbench.study.status import hours_text
from tabbench.summary.claims import CLAIMS, VERDICT_LEGEND, check_claims, reproduction_table
from tabbench.summary.heterogeneity_text import heterogeneity_markdown
from tabbench.summary.low_signal import low_signal_markdown
from tabbench.summary.markdown import rank_table_lines
from tabbench.summary.methods import BASELINE
from tabbench.summary.rule_summary import answer_markdown, paper_claims, rules_answer
from tabbench.summary.stopping_rules import best_rows

_BEGIN = "<!-- generated table: {name}; by `tabbench claims-table --page`, do not edit -->"
_END = "<!-- end of generated table: {name} -->"
#: an opening marker as a page may write it: the name, then anything up to "-->" (:func:`markers`
#: writes the default text)
_OPENING = re.compile(r"<!-- generated table: ([A-Za-z0-9_]+(?: from [^;\n]+?)?);[^\n]*?-->")
#: between a table's name and the folder it is computed from, in a marker's key
_FROM = " from "

#: the methods of the ``all_datasets`` table, each against :data:`BASELINE`: the paper's
#: recommendation, the baseline without its TS, and stopping on accuracy
ALL_DATASETS_METHODS = ("TS-Ref.+TS", "Logloss", "Accuracy+TS")


@dataclass(frozen=True)
class PageInputs:
    """What a generated table is computed from: the summary frames of a results folder
    (:func:`tabbench.report.redraw.summary_frames`), its selected rows and "large"
    threshold."""

    frames: Mapping[str, Any]
    selected: pd.DataFrame
    large_rows: int
    #: the models the study trains (its settings): those without a selection yet are listed too
    models: tuple[str, ...] = ()
    #: the diagnostics' regret summary (``summary/diagnostics/regret_summary.parquet``), if any
    regret: pd.DataFrame | None = None
    #: the manifest of a published copy (``PUBLISHED.json``: :mod:`tabbench.report.publish`), if it
    #: is one
    published: Mapping[str, Any] | None = None
    #: the results folder, opened (its settings: what each model trained)
    folder: ResultsFolder | None = None


def page_inputs(results: str | Path, jobs: int | None = None) -> PageInputs:
    """The inputs of every generated table from the results folder ``results`` (a study's or a
    published copy), read with the folder's own settings."""

    folder = ResultsFolder.open(results)  # read once: every step below asks it
    selected, _ = collect_selected(folder, jobs)
    frames, large_rows = summary_frames(folder, selected)
    selected = best_rows(selected)  # the paper's rule: what the pairs and the ROPE table read
    models = folder.models
    regret = Path(ResultsLayout(results).diagnostics_dir) / DIAGNOSTIC_TABLE_FILES["regret"]
    return PageInputs(frames, selected, large_rows, models,
                      read_parquet(regret) if regret.is_file() else None,
                      read_manifest(results) if is_published(results) else None, folder)


def markers(key: str) -> tuple[str, str]:
    """The opening and closing marker of the generated table ``key`` (``NAME`` or
    ``NAME from PATH``)."""
    return _BEGIN.format(name=key), _END.format(name=key)


def split_key(key: str) -> tuple[str, str | None]:
    """A marker's key as (table name, the folder it is computed from or None: the page's)."""
    name, _, source = key.partition(_FROM)
    return name, source or None


#: markers of earlier versions, still read (and kept as they are): a page written with
#: tabbench's first claims table is rewritten in place, not refused
LEGACY_MARKERS: dict[str, tuple[str, str]] = {
    "claims": ("<!-- claims table: generated by tabbench.summary.claims.reproduction_table; "
               "do not edit -->", "<!-- end of the generated claims table -->"),
}


def _span(page: str, name: str) -> tuple[int, int]:
    """Where the table ``name`` sits: after its opening marker (any text between the name's
    ``;`` and ``-->``, e.g. the default of :func:`markers`; or its :data:`LEGACY_MARKERS`),
    before its closing one."""
    begin = next((m for m in _OPENING.finditer(page) if m.group(1) == name), None)
    if begin is not None:
        start, end_marker = begin.end(), markers(name)[1]
    elif name in LEGACY_MARKERS and LEGACY_MARKERS[name][0] in page:
        old_begin, end_marker = LEGACY_MARKERS[name]
        start = page.index(old_begin) + len(old_begin)
    else:
        start, end_marker = -1, ""
    stop = page.find(end_marker, start) if start >= 0 else -1
    if stop < 0:
        raise ValueError(f"the page holds no generated table {name!r} (markers missing)")
    return start, stop


def embedded(page: str, name: str) -> str:
    """The generated table ``name`` as the page holds it."""
    start, stop = _span(page, name)
    return page[start:stop].strip()


def names_in(page: str) -> list[str]:
    """The generated tables ``page`` holds, in page order; an unknown name (a typo in a marker
    would leave a table unchecked) or one that appears twice is an error."""
    found = [(m.start(), m.group(1)) for m in _OPENING.finditer(page)]
    found += [(page.index(begin), name) for name, (begin, _) in LEGACY_MARKERS.items()
              if begin in page]
    names = [name for _, name in sorted(found)]
    unknown = sorted({split_key(n)[0] for n in names} - set(TABLES))
    if unknown:
        raise ValueError(f"unknown generated table(s) {unknown}; known: {sorted(TABLES)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # only the first would be rewritten, the other left stale
        raise ValueError(f"generated table(s) {twice} appear more than once in the page")
    return names


def with_tables(page: str, tables: Mapping[str, str]) -> str:
    """``page`` with each table of ``tables`` between its markers in place of what was there;
    the rest of the page unchanged. Every named table's markers must be in the page."""
    for name, table in tables.items():
        start, stop = _span(page, name)
        page = f"{page[:start]}\n{table}\n{page[stop:]}"
    return page


def regenerate_page(page: str, inputs: PageInputs,
                    other: Callable[[str], PageInputs] | None = None) -> str:
    """Every generated table of ``page`` recomputed from ``inputs``, or for a ``NAME from PATH``
    table from ``other(PATH)``; a page without any table is an error (nothing would be kept in
    step), and so is a ``from`` table without ``other``."""
    keys = names_in(page)
    if not keys:
        raise ValueError("the page holds no generated table (markers missing); known: "
                         f"{sorted(TABLES)}")
    sources: dict[str, PageInputs] = {}
    tables = {}
    for key in keys:
        name, source = split_key(key)
        if source is None:
            tables[key] = TABLES[name](inputs)
            continue
        if other is None:
            raise ValueError(f"table {key!r} is computed from another folder: no way to read it")
        if source not in sources:
            sources[source] = other(source)
        tables[key] = TABLES[name](sources[source])
    return with_tables(page, tables)


# --- the tables ---------------------------------------------------------------------------------

def _claims(inputs: PageInputs) -> str:
    return reproduction_table(paper_claims(inputs.frames["claims"]))


def _stopping_rules(inputs: PageInputs) -> str:
    frames = inputs.frames
    return answer_markdown(rules_answer(frames["claims"], frames["rules"]), inputs.large_rows,
                           frames["meta"]["rope_percent"]).strip()


def complete_pairs_table(selected: pd.DataFrame, large_rows: int,
                         models: tuple[str, ...] = ()) -> str:
    """Per model (those of ``selected`` and ``models``): how many (model, dataset) pairs have
    selections and their names, and how many (and which) of them have at least ``large_rows``
    rows; "none yet" for a model of ``models`` without any. A model tuned on some of its
    datasets only (a copy joining a default-only study's pairs) gets a second row, "tuned", with
    the pairs that have its tuned regime."""

    rows = (selected.groupby(["model", "dataset"])["n_rows"].max().reset_index()
            if not selected.empty else pd.DataFrame({"model": [], "dataset": [], "n_rows": []}))
    tuned = (set(selected.loc[selected["regime"] == "tuned", ["model", "dataset"]]
                 .itertuples(index=False, name=None)) if "regime" in selected else set())
    everyone = order_models(list(dict.fromkeys([*rows["model"], *models])))
    if not everyone:
        return "No (model, dataset) pair has selections."

    def line(label: str, mine: pd.DataFrame) -> list[str]:
        large = mine[mine["n_rows"] >= large_rows]["dataset"].tolist()
        return [label, f"{len(mine)}: {', '.join(mine['dataset'])}",
                f"{len(large)}" + (f" ({', '.join(large)})" if large else "")]

    table = []
    for model in everyone:
        mine = rows[rows["model"] == model].sort_values("dataset", key=lambda s: s.str.lower())
        if mine.empty:
            table.append([model_label(model), "none yet", MISSING])
            continue
        table.append(line(model_label(model), mine))
        has_tuned = mine["dataset"].map(lambda d, m=model: (m, d) in tuned)
        if has_tuned.any() and not has_tuned.all():
            table.append(line(f"{model_label(model)} tuned", mine[has_tuned]))
    return markdown_table(["model", "complete (model, dataset) pairs",
                           f"of them large (≥ {large_rows:,} rows)"], table)


def not_run_table(selected: pd.DataFrame, datasets: pd.DataFrame | None, large_rows: int,
                  models: tuple[str, ...] = ()) -> str:
    """Per model and regime, the large datasets the data stage kept (``datasets``: the folder's
    ``datasets.csv``) that have no selection in that regime: what the study did not get to,
    read from the folder so that a page's "what did not fit" cannot go stale. The tuned regime
    is listed for a model with a tuned selection anywhere."""
    if datasets is None:
        return "No dataset table (`datasets.csv`) for this folder: what did not run is unknown."
    kept = datasets[(datasets["status"] == "kept") & (datasets["rows_final"] >= large_rows)]
    large = set(kept["dataset"])
    regime = selected["regime"] if "regime" in selected else pd.Series("default", selected.index)
    table = []
    for model in order_models(list(dict.fromkeys([*selected.get("model", []), *models]))):
        mine = selected["model"] == model if not selected.empty else pd.Series(dtype=bool)
        regimes = ["default", *(["tuned"] if (mine & (regime == "tuned")).any() else [])]
        for name in regimes:
            have = large & set(selected.loc[mine & (regime == name), "dataset"])
            missing = sorted(large - have, key=str.lower)
            table.append([model_label(model), name, str(len(have)),
                          f"{len(missing)}: {', '.join(missing)}" if missing else "none"])
    if not table:
        return "No model in this folder."
    return markdown_table(["model", "regime", f"large datasets (≥ {large_rows:,} rows) with it",
                           "kept large datasets without it"], table, align="llrl")


def _dataset_table(i: PageInputs) -> pd.DataFrame | None:
    """The data stage's table of the folder: a published copy ships it beside its results, a
    study's is in its data folder."""
    if i.folder is None:
        return None
    path = (i.folder.root / DATASET_TABLE if i.published is not None
            else Path(i.folder.data.datasets_csv))
    return pd.read_csv(path) if path.is_file() else None


def _cell(row: pd.Series) -> str:
    cell = f"{row['median']:+.2f} %, {int(row['wins'])}/{int(row['ties'])}/{int(row['losses'])}"
    if np.isfinite(row["p_better"]):
        cell += f", {row['p_better']:.2f}/{row['p_equivalent']:.2f}/{row['p_worse']:.2f}"
    return cell.replace("-", "−")


def baseline_table(summary: pd.DataFrame, subset: str = "all", metric: str = "logloss",
                   methods: tuple[str, ...] = ALL_DATASETS_METHODS,
                   baseline: str = BASELINE) -> str:
    """``methods`` against ``baseline`` (the one the summary was computed against) in the test
    ``metric`` over the datasets of ``subset``, a column per (model, regime): median relative
    difference, W/T/L, and P(better)/P(equivalent)/P(worse) (the summary's,
    :mod:`tabbench.summary.comparisons`)."""

    rows = summary[(summary["subset"] == subset) & (summary["metric"] == metric)]
    if rows.empty:
        return f"No dataset in the subset {subset!r}."
    groups = _columns(rows)
    head = [f"method (vs {baseline})"] + [f"{model_label(m)} {reg} (n = {int(g['n'].max())})"
                                          for (m, reg), g in groups.items()]
    table = []
    for method in methods:
        cells = []
        for g in groups.values():
            hit = g[g["method"] == method]
            cells.append(MISSING if hit.empty else _cell(hit.iloc[0]))
        label = method if method.endswith("+TS") else f"{method} (no TS)"
        table.append([label, *cells])
    return markdown_table(head, table)


def _columns(frame: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """The rows of each (model, regime) of ``frame`` that has any, in figure order."""

    groups = {(m, reg): frame[(frame["model"] == m) & (frame["regime"] == reg)]
              for m in order_models(frame["model"].unique()) for reg in ("default", "tuned")}
    return {key: g for key, g in groups.items() if not g.empty}


def ranks_table(ranks: pd.DataFrame, subset: str = "all", metric: str = "logloss") -> str:
    """Mean rank of each stopping method over the datasets of ``subset`` (test ``metric``) per
    (model, regime), with the critical difference: ``summary.md``'s table
    (:func:`tabbench.summary.markdown.rank_table_lines`), models named and ordered as in the
    figures. What the CD diagrams draw."""

    rows = ranks[(ranks["subset"] == subset) & (ranks["metric"] == metric)]
    if rows.empty:
        return f"No (model, regime) has the datasets to rank in the subset {subset!r}."
    return "\n".join(rank_table_lines(rows, label=model_label, order=order_models))


def regret_table(regret: pd.DataFrame | None) -> str:
    """Median regret of each stopping metric (test logloss after TS of its selection minus the
    best (config, epoch) on test), a column per (model, regime), with the datasets it is over."""

    if regret is None:
        return "No diagnostics in this results folder (`snakemake diagnostics` writes them)."
    rows = regret[(regret["target"] == MAIN_TARGET) & (regret["kind"] == "regret")]
    groups = _columns(rows)
    if not groups:
        return "No regret was computed (no runs files were read)."
    head = ["stopping metric (median regret, in test logloss after TS)"] + [
        f"{model_label(m)} {reg} (n = {int(g['n'].max())})" for (m, reg), g in groups.items()]
    table = []
    for metric in (m for m in get_stopping_metrics().values() if m.id in set(rows["stopping"])):
        cells = []
        for g in groups.values():
            hit = g[g["stopping"] == metric.id]
            cells.append(MISSING if hit.empty else cell(hit["median"].iloc[0], ".4f"))
        table.append([metric.label, *cells])
    return markdown_table(head, table)


def progress_table(manifest: Mapping[str, Any] | None) -> str:
    """The study's progress when the copy was published (``PUBLISHED.json``'s ``status``): per
    model the train jobs done of those planned, running, configs recorded and failed, and the
    predicted job time left; then the predicted wall time left and end. A copy merged from
    several (:mod:`tabbench.report.publish_merge`) gives each source's, in order, under its name."""
    if manifest is None:
        return ("Not a published copy: no progress recorded (`tabbench status` on the study's "
                "folder gives it).")
    if "sources" not in manifest:
        return _one_progress_table(manifest)
    parts = []
    for i, source in enumerate(manifest["sources"], 1):
        commit = str(source.get("published_by_commit") or "unknown")[:7]
        name = Path(str(source.get("source"))).name  # older copies named an absolute path
        parts += [f"Source {i}: `{name}`, published {source.get('published')} "
                  f"by commit {commit}.", "", progress_table(source), ""]
    return "\n".join(parts).rstrip()


def _one_progress_table(manifest: Mapping[str, Any]) -> str:

    status = manifest.get("status") or {"error": "a copy published before progress was kept"}
    if "error" in status:
        return f"The study's progress was not recorded when it was published: {status['error']}."
    by_model = {m["model"]: m for m in status["models"]}
    table = []
    for model in order_models(list(by_model)):
        m = by_model[model]
        planned = "?" if m["planned"] is None else m["planned"]
        left = hours_text(m["seconds_left"]) if m["left"] or m["running"] else "none"
        table.append([model_label(model), f"{m['done']} of {planned}", str(m["running"]),
                      f"{m['configs_recorded']:,}", str(m["configs_failed"]), left])
    lines = [markdown_table(["model", "train jobs done of planned", "running",
                             "configs recorded", "failed", "job time left (one at a time)"],
                            table)]
    if status.get("seconds_left") is not None:
        lines += ["", f"Published {manifest['published']}: about "
                  f"{hours_text(status['seconds_left'])} of wall time left at "
                  f"{status['workers']:.1f} jobs in flight, done around {status['ends']}"
                  + (f" ({', '.join(status['not_predicted'])} not predicted: later than that)"
                     if status.get("not_predicted") else "") + "."]
    return "\n".join(lines)


def what_ran_table(selected: pd.DataFrame, large_rows: int,
                   folder: ResultsFolder | None) -> str:
    """What the folder's pairs are, per model and regime, read from its selected rows and
    settings alone (so it holds for a copy merged from several study folders as for one):
    the datasets with a selection (of them large), the splits per dataset, the configs each
    selection compared, and the epochs (rounds) each config trained (the folder's settings:
    :meth:`tabbench.settings.folder.ResultsFolder.model_run`; unknown without them)."""
    if selected.empty:
        return "No selection in this folder yet."
    table = []
    for (model, regime), rows in _model_regime_groups(selected):
        datasets = rows.groupby("dataset")
        n_rows = datasets["n_rows"].first()
        splits = datasets["split"].nunique()
        configs = rows["n_candidates"]
        run = None if folder is None else folder.model_run(model).epochs(regime)
        table.append([model_label(model), regime, str(len(n_rows)),
                      str(int((n_rows >= large_rows).sum())),
                      _span_text(splits.min(), splits.max()),
                      _span_text(configs.min(), configs.max()),
                      MISSING if run is None else str(run)])
    return markdown_table(["model", "regime", "datasets", f"of them large (≥ {large_rows:,} rows)",
                           "splits per dataset", "configs per selection",
                           "epochs (rounds) per config"], table, align="llrrrrr")


def _model_regime_groups(selected: pd.DataFrame):
    """(model, regime) groups of ``selected`` in the figures' model order, default first."""
    order = {m: i for i, m in enumerate(order_models(selected["model"].unique()))}
    keys = sorted(selected.groupby(["model", "regime"]).groups,
                  key=lambda k: (order[k[0]], k[1] != "default", k[1]))
    return [(k, selected[(selected["model"] == k[0]) & (selected["regime"] == k[1])])
            for k in keys]


def _span_text(low: Any, high: Any) -> str:
    return f"{int(low)}" if int(low) == int(high) else f"{int(low)}–{int(high)}"


def gains_table(heterogeneity: pd.DataFrame, min_gain: float = 0.0) -> str:
    """Per (model, regime, large dataset) of ``summary/heterogeneity.parquet``, the headline's
    per-dataset test gain (TS-Ref.+TS vs Logloss+TS, %) beside what validation showed: the
    validation gain, the epochs of the two choices apart (share of the run) and the fitted
    inverse temperature at logloss's choice; only rows whose |test gain| exceeds ``min_gain``
    (%), largest gain first, so a page can show where the gains are."""
    rows = heterogeneity[heterogeneity["large"] & heterogeneity["test_gain"].notna()]
    rows = rows[rows["test_gain"].abs() > min_gain].sort_values(["test_gain", "dataset"])
    if rows.empty:
        return f"No large dataset with a test gain beyond ±{min_gain:g} %."

    def number(value: float, fmt: str) -> str:
        return MISSING if not np.isfinite(value) else format(value, fmt)

    table = [[model_label(r.model), r.regime, r.dataset, str(int(r.n_classes)),
              number(r.test_gain, "+.2f"), number(r.val_gain, "+.2f"),
              number(r.epoch_gap, "+.2f"), number(r.beta_logloss, ".3g")]
             for r in rows.itertuples()]
    return markdown_table(["model", "regime", "dataset", "classes", "test gain %",
                           "validation gain %", "epoch gap (share of the run)",
                           "β at logloss's choice"], table, align="lllrrrrr")


#: the regions of practical equivalence (± %) the ``rope`` table shows, beside the folder's own
ROPE_SENSITIVITY = (0.1, 0.5, 1.0, 2.0)
#: the claim the ``rope`` table is shown for: the paper's headline (Fig. 5)
HEADLINE_CLAIM = "ts_ref_beats_logloss"


def rope_table(selected: pd.DataFrame, large_rows: int, rope: float,
               claim_id: str = HEADLINE_CLAIM,
               ropes: tuple[float, ...] = ROPE_SENSITIVITY) -> str:
    """The claim ``claim_id`` per (model, regime) judged again at each ROPE of ``ropes`` and at
    the folder's ``rope`` (marked): P(better)/P(equivalent)/P(worse) and the verdict. The rule
    and the tests are the claims table's (:func:`tabbench.summary.claims.check_claims`); only the
    region of practical equivalence changes, so the table says how much of a verdict is the
    ROPE's choice (a gain smaller than the ROPE counts as "equivalent"); the verdicts' legend
    under it."""

    claim = next((c for c in CLAIMS if c.id == claim_id), None)
    if claim is None:
        raise ValueError(f"no claim {claim_id!r}; known: {[c.id for c in CLAIMS]}")
    widths = sorted({*(float(w) for w in ropes), float(rope)})
    checked = {w: check_claims(selected, large_rows, [claim], rope=w) for w in widths}
    judged = checked[float(rope)]
    groups = _columns(judged[judged["n"] > 0])  # a (model, regime) with no dataset: no row
    if not groups:
        return f"No (model, regime) has the datasets of the claim {claim.statement!r}."
    head = ["model", "regime", "n", "median"] + [
        f"ROPE ±{w:g} %" + (" (the table's)" if w == float(rope) else "") for w in widths]
    table = []
    for (model, regime), row in groups.items():
        r = row.iloc[0]
        cells = [model_label(model), regime, str(int(r["n"])), f"{r['median']:+.2f} %"]
        for w in widths:
            c = checked[w]
            hit = c[(c["model"] == model) & (c["regime"] == regime)].iloc[0]
            probs = (MISSING if not np.isfinite(hit["p_better"]) else
                     f"{hit['p_better']:.2f}/{hit['p_equivalent']:.2f}/{hit['p_worse']:.2f}")
            cells.append(f"{probs}: **{hit['verdict']}**")
        table.append(cells)
    return (markdown_table(head, table, align="llrr" + "l" * len(widths)) + "\n\n"
            + VERDICT_LEGEND)


#: every generated table a page may hold: name -> how it is computed
TABLES: dict[str, Callable[[PageInputs], str]] = {
    "claims": _claims,
    "progress": lambda i: progress_table(i.published),
    "what_ran": lambda i: what_ran_table(i.selected, i.large_rows, i.folder),
    "gains": lambda i: gains_table(i.frames["heterogeneity"]),
    "gains_beyond_rope": lambda i: gains_table(i.frames["heterogeneity"],
                                               i.frames["meta"]["rope_percent"]),
    "complete_pairs": lambda i: complete_pairs_table(i.selected, i.large_rows, i.models),
    "not_run": lambda i: not_run_table(i.selected, _dataset_table(i), i.large_rows, i.models),
    "all_datasets": lambda i: baseline_table(i.frames["summary"],
                                             baseline=i.frames["meta"].get("baseline")
                                             or BASELINE),
    "ranks": lambda i: ranks_table(i.frames["ranks"]),
    "regret": lambda i: regret_table(i.regret),
    "rope": lambda i: rope_table(i.selected, i.large_rows, i.frames["meta"]["rope_percent"]),
    "stopping_rules": _stopping_rules,
    "heterogeneity": lambda i: heterogeneity_markdown(i.frames["heterogeneity_fit"],
                                                      i.frames["meta"].get("validation_rule")),
    "low_signal": lambda i: low_signal_markdown(i.frames["low_signal"],
                                                i.frames["meta"]["low_signal_learnability"]),
}
