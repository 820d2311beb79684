"""Where every artefact of a run lives, written once; and which cached results are complete.

The Snakemake rule files and the library share these names: a rule passes Snakemake wildcards
as the arguments (``results.runs("{model}", "{dataset}", "{split}")`` is the train rule's output
pattern), the library passes values. Paths are built as ``f"{root}/..."`` strings exactly as the
rule files write them, so that every folder the workflow wrote stays valid::

    {data}/raw/{ds}.parquet, {ds}.json                  fetch: the dataset as a source gave it
    {data}/processed/{ds}.parquet, {ds}.json            filter (paper App. G.6)
    {data}/splits/{ds}.parquet                          split: n_splits 64/16/20 splits
    {data}/kept.txt, datasets.csv, unavailable.csv      collect (the one checkpoint)
    {data}/logs/{fetch,filter,split}/{ds}.log, {data}/logs/collect_datasets.log
    {data}/logs/data_summary.txt, {data}/logs/openml/   the data stage's summary line, OpenML probe
    {results}/run_config.yaml                           the settings that produced the folder
    {results}/runs/{model}/{ds}/split{i}.parquet        train: every epoch of every config
    {results}/runs/{model}/{ds}/split{i}.failures.json  train: the configs that failed
    {results}/runs/{model}/{ds}/split{i}.parquet.part/  train: finished configs of a killed job
        job.json, config{c}.parquet, config{c}.failure.json    (its identity, one file a config)
        config{c}.kept.npz, kept.json                   (what re-stopping needs, or why not)
    {results}/runs/{model}/{ds}/split{i}.restop.npz, .restop.json   train: what re-stopping
                                                        needs (tabbench.study.restop_store), not an
                                                        output
    {results}/restop.json                               restop: what it added, what it could not
    {results}/retry_failed.json                         retry-failed: the jobs it reopened
    {results}/selected/{model}/{ds}.parquet             select: best epoch/config per metric
    {results}/summary/{name}                            regenerate (names: aggregate.SUMMARY_FILES)
    {results}/summary/study.rst                         regenerate: the HTML report's first page
    {results}/figures/{stem}.{pdf,png}                  regenerate (stems: plots.FIGURE_STEMS)
    {results}/report.html                               report
    {results}/replay/{model}/{ds}/split{i}.npz, .json   replay: the chosen models' logits, sidecar
    {results}/summary/diagnostics/{name}                regenerate (names: diagnostics.paths)
    {results}/PUBLISHED.json                            a published copy's manifest (publish)
    {results}/logs/train/{model}/{ds}/split{i}.log, logs/select/{model}/{ds}.log,
    {results}/logs/{regenerate,report}.log

**Complete results** (:func:`complete_results`, the one rule; ``snakemake figures``/``report``
and ``tabbench figures --results`` both use it): a (model, dataset) is complete when

- its runs file exists for every split ``0 .. n_splits-1``, or
- its selected file exists (the select step writes it only from the runs of every split, so it
  stays a complete result while those runs are being redone or were not shipped),

where ``n_splits`` is the folder's own (``run_config.yaml``, read by
:class:`tabbench.settings.folder.ResultsFolder`) or, for a folder without it, the largest
number of splits any (model, dataset) of the folder has. A pair with only some of its splits
(a training still running, or killed) is left out: it is not trained by a figures command, and
not shown half. A runs file is complete whenever
it exists, whatever Snakemake's bookkeeping says: the train job writes it atomically, at its
very end. The selection of a complete pair is recomputed from its runs when all of them are
present and one is newer than the selected file; otherwise the selected file is used.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

PathLike = str | os.PathLike[str]

#: the file a results folder keeps its resolved settings in (read and written only by
#: tabbench.settings.folder.ResultsFolder)
RUN_CONFIG = "run_config.yaml"
SUMMARY = "summary"
FIGURES = "figures"
REPORT = "report.html"
META = "meta.json"
#: the manifest of a published (compact, shippable) copy of a results folder
#: (tabbench.report.publish)
PUBLISHED = "PUBLISHED.json"
REPLAY = "replay"
DIAGNOSTICS = "diagnostics"

_SPLIT_FILE = re.compile(r"split(\d+)\.parquet")


def runs_file(runs_dir: PathLike, model: str, dataset: str, split: int | str) -> str:
    """``{runs_dir}/{model}/{dataset}/split{split}.parquet`` (``runs_dir`` = results/runs)."""
    return f"{os.fspath(runs_dir)}/{model}/{dataset}/split{split}.parquet"


def failures_path(runs_path: PathLike) -> Path:
    """The failures sidecar of a runs file: ``.../split0.parquet`` -> ``.../split0.failures.json``
    (always written by a finished train job, possibly ``[]``)."""
    out = Path(runs_path)
    return out.with_name(out.name.removesuffix(".parquet") + ".failures.json")


def parse_runs_file(path: PathLike) -> tuple[str, str, int] | None:
    """(model, dataset, split) of a runs file ``.../{model}/{dataset}/split{i}.parquet`` (the
    inverse of :func:`runs_file`), or None for a path of another shape."""
    p = Path(path)
    m = _SPLIT_FILE.fullmatch(p.name)
    if m is None or len(p.parts) < 3:
        return None
    return p.parent.parent.name, p.parent.name, int(m.group(1))


def runs_splits(runs_dir: PathLike, model: str, dataset: str) -> list[int]:
    """The splits of (model, dataset) that have a runs file, sorted."""
    folder = Path(runs_dir) / model / dataset
    return sorted(int(m.group(1)) for p in folder.glob("split*.parquet")
                  if (m := _SPLIT_FILE.fullmatch(p.name)))


#: a train job's part folder (:func:`part_dir`): its identity, one file per finished config
PART_IDENTITY = "job.json"
_PART_FILE = re.compile(r"config(\d+)\.(parquet|failure\.json)")


def part_records(parts: PathLike, config: int) -> Path:
    """The records of finished config ``config`` in a part folder."""
    return Path(parts) / f"config{int(config)}.parquet"


def part_failure(parts: PathLike, config: int) -> Path:
    """The failure (error, traceback) of config ``config`` in a part folder."""
    return Path(parts) / f"config{int(config)}.failure.json"


def part_configs(parts: PathLike) -> list[int]:
    """The configs a part folder holds a finished file for (records or failure), sorted."""
    return sorted({int(m.group(1)) for f in Path(parts).glob("config*.*")
                   if (m := _PART_FILE.fullmatch(f.name))})


def part_kept(parts: PathLike, config: int) -> Path:
    """What config ``config`` keeps for re-stopping (:mod:`tabbench.study.restop_store`) in a
    part folder."""
    return Path(parts) / f"config{int(config)}.kept.npz"


#: a part folder's note that the job keeps nothing for re-stopping, and why
#: (tabbench.study.restop_store)
PART_NOT_KEPT = "kept.json"


def restop_artefact(runs_path: PathLike) -> Path:
    """What re-stopping a runs file needs (:mod:`tabbench.study.restop_store`):
    ``.../split0.parquet`` ->
    ``.../split0.restop.npz``. Written by the train job before its runs file, but not one of
    the train rule's outputs (docs/design.md §16)."""
    out = Path(runs_path)
    return out.with_name(out.name.removesuffix(".parquet") + ".restop.npz")


def restop_sidecar(runs_path: PathLike) -> Path:
    """The JSON sidecar of :func:`restop_artefact`: what was kept per config, or why not."""
    out = Path(runs_path)
    return out.with_name(out.name.removesuffix(".parquet") + ".restop.json")


def part_dir(runs_path: PathLike) -> Path:
    """The folder of finished configs of a train job in progress: ``<runs file>.part``."""
    return Path(f"{os.fspath(runs_path)}.part")


def replay_sidecar(npz: PathLike) -> Path:
    """The JSON sidecar of a replay file: ``.../split0.npz`` -> ``.../split0.json`` (the (config,
    epoch) of every array, the self-check's numbers and the replay's cost)."""
    return Path(npz).with_suffix(".json")


@dataclass(frozen=True)
class DataLayout:
    """The data folder (config ``data_dir``)."""

    root: str

    def __init__(self, root: PathLike) -> None:
        object.__setattr__(self, "root", os.fspath(root))

    def raw(self, dataset: str) -> str:
        return f"{self.root}/raw/{dataset}.parquet"

    def raw_json(self, dataset: str) -> str:
        return f"{self.root}/raw/{dataset}.json"

    @property
    def processed_dir(self) -> str:
        """The processed datasets and their filter reports (``<dataset>.json``)."""
        return f"{self.root}/processed"

    def processed(self, dataset: str) -> str:
        return f"{self.processed_dir}/{dataset}.parquet"

    def processed_json(self, dataset: str) -> str:
        return f"{self.processed_dir}/{dataset}.json"

    def splits(self, dataset: str) -> str:
        return f"{self.root}/splits/{dataset}.parquet"

    @property
    def kept(self) -> str:
        return f"{self.root}/kept.txt"

    @property
    def datasets_csv(self) -> str:
        return f"{self.root}/datasets.csv"

    @property
    def unavailable_csv(self) -> str:
        return f"{self.root}/unavailable.csv"

    @property
    def summary_line(self) -> str:
        """The data stage's one-line summary (kept/dropped/unavailable), printed at the end."""
        return f"{self.root}/logs/data_summary.txt"

    @property
    def openml_state_dir(self) -> str:
        """Whether OpenML answered, probed once per run and shared with the fetch jobs."""
        return f"{self.root}/logs/openml"

    def log(self, step: str, dataset: str | None = None) -> str:
        """``logs/{step}/{dataset}.log`` (fetch, filter, split) or ``logs/{step}.log``."""
        if dataset is None:
            return f"{self.root}/logs/{step}.log"
        return f"{self.root}/logs/{step}/{dataset}.log"


@dataclass(frozen=True)
class ResultsLayout:
    """A results folder (config ``results_dir``)."""

    root: str

    def __init__(self, root: PathLike) -> None:
        object.__setattr__(self, "root", os.fspath(root))

    @property
    def run_config(self) -> str:
        return f"{self.root}/{RUN_CONFIG}"

    @property
    def published(self) -> str:
        """The manifest that marks a published copy (:mod:`tabbench.report.publish`)."""
        return f"{self.root}/{PUBLISHED}"

    @property
    def runs_dir(self) -> str:
        return f"{self.root}/runs"

    def runs(self, model: str, dataset: str, split: int | str) -> str:
        return runs_file(self.runs_dir, model, dataset, split)

    def failures(self, model: str, dataset: str, split: int | str) -> str:
        return os.fspath(failures_path(self.runs(model, dataset, split)))

    def part(self, model: str, dataset: str, split: int | str) -> str:
        return os.fspath(part_dir(self.runs(model, dataset, split)))

    def restop(self, model: str, dataset: str, split: int | str) -> str:
        """What re-stopping the runs file needs (:func:`restop_artefact`)."""
        return os.fspath(restop_artefact(self.runs(model, dataset, split)))

    @property
    def restop_report(self) -> str:
        """What ``tabbench restop`` added to which runs file, and what it could not."""
        return f"{self.root}/restop.json"

    @property
    def retry_report(self) -> str:
        """The finished jobs ``tabbench retry-failed`` reopened to retrain their failures."""
        return f"{self.root}/retry_failed.json"

    def selected(self, model: str, dataset: str) -> str:
        return f"{self.root}/selected/{model}/{dataset}.parquet"

    @property
    def summary_dir(self) -> str:
        return f"{self.root}/{SUMMARY}"

    def summary(self, name: str) -> str:
        """A file of the summary folder (its names:
        ``tabbench.summary.aggregate.SUMMARY_FILES``)."""
        return f"{self.summary_dir}/{name}"

    @property
    def diagnostics_dir(self) -> str:
        """The diagnostic tables (their names: ``tabbench.diagnostics.paths``)."""
        return f"{self.summary_dir}/{DIAGNOSTICS}"

    def replay(self, model: str, dataset: str, split: int | str) -> str:
        """The replayed logits of one (model, dataset, split) (``snakemake replay``)."""
        return f"{self.root}/{REPLAY}/{model}/{dataset}/split{split}.npz"

    @property
    def figures_dir(self) -> str:
        return f"{self.root}/{FIGURES}"

    def figure(self, stem: str, ext: str) -> str:
        return f"{self.figures_dir}/{stem}.{ext}"

    @property
    def report(self) -> str:
        return f"{self.root}/{REPORT}"

    def log(self, step: str, *parts: str | int) -> str:
        """``logs/{step}.log`` or, with parts, ``logs/{step}/{a}/{b}/...{last}.log``; the train
        log of split i is ``log("train", model, dataset, "split{i}")``."""
        if not parts:
            return f"{self.root}/logs/{step}.log"
        return f"{self.root}/logs/{step}/" + "/".join(str(p) for p in parts) + ".log"


#: (folder, depth of a file below the results root, the rule that writes it) for the files
#: whose damage :func:`rebuild_hint` knows how to repair
_WRITERS: tuple[tuple[str, int, str], ...] = (
    ("runs", 4, "train"),  # runs/{model}/{ds}/split{i}.parquet: retrains that split
    ("selected", 3, "select"),  # selected/{model}/{ds}.parquet
    (SUMMARY, 2, "regenerate"),  # summary/{name}: rebuilt by the figures target
)


def rebuild_hint(path: PathLike) -> str:
    """How to rebuild a damaged file of a results folder (``tabbench.core.io.UnreadableFileError``
    ends with it): the Snakemake command that rewrites it, by where it lies in the layout
    above; with ``--config results_dir=`` for a folder other than ``results``."""
    p = Path(path)
    for folder, depth, rule in _WRITERS:
        if len(p.parts) < depth or p.parts[-depth] != folder:
            continue
        if rule == "train" and not _SPLIT_FILE.fullmatch(p.name):
            continue
        root = Path(*p.parts[:-depth]) if len(p.parts) > depth else Path("results")
        target = "figures" if folder == SUMMARY else os.fspath(path)
        other = "" if root == Path("results") else f" --config results_dir={root}"
        return f"rebuild it with `snakemake {target} --forcerun {rule}{other}`"
    return "rebuild it with the step that wrote it (docs/design.md §1), or delete it"


# --- what a results folder holds -------------------------------------------------------------


@dataclass
class CachedResult:
    """What a results folder holds for one complete (model, dataset) (module docstring)."""

    model: str
    dataset: str
    #: the runs files of splits 0..n_splits-1 when all exist, else empty
    runs: list[Path]
    selected: Path | None = None

    def selected_is_fresh(self) -> bool:
        """The selected file can be used as is: present, and no runs file is newer (or the runs
        are not all there to recompute it from)."""
        if self.selected is None:
            return False
        if not self.runs:
            return True
        newest = max(p.stat().st_mtime for p in self.runs)
        return self.selected.stat().st_mtime >= newest


def runs_files_by_pair(results: PathLike) -> dict[tuple[str, str], dict[int, Path]]:
    """Every runs file of a results folder: (model, dataset) -> split -> path."""
    found: dict[tuple[str, str], dict[int, Path]] = {}
    for p in Path(ResultsLayout(results).runs_dir).glob("*/*/split*.parquet"):
        m = _SPLIT_FILE.fullmatch(p.name)
        if m and p.is_file():
            found.setdefault((p.parent.parent.name, p.parent.name), {})[int(m.group(1))] = p
    return found


def part_folders(results: PathLike) -> dict[tuple[str, str, int], Path]:
    """Every part folder (:func:`part_dir`) of a results folder by (model, dataset, split): the
    jobs started and not finished (in progress, or killed; a finished job removes its own)."""
    out = {}
    for p in Path(ResultsLayout(results).runs_dir).glob("*/*/split*.parquet.part"):
        key = parse_runs_file(p.with_suffix(""))
        if key is not None and p.is_dir():
            out[key] = p
    return out


def complete_results(results: PathLike, n_splits: int | None) -> list[CachedResult]:
    """Every complete (model, dataset) of a results folder, sorted (the rule: module
    docstring). ``n_splits``: the splits a pair must have, the folder's own
    (:attr:`tabbench.settings.folder.ResultsFolder.n_splits`, which knows its settings; None:
    the most splits any pair has)."""
    root = Path(results)
    found = runs_files_by_pair(root)
    if n_splits is None:
        n_splits = max((max(s) + 1 for s in found.values()), default=None)
    selected = {(p.parent.name, p.stem): p
                for p in (root / "selected").glob("*/*.parquet") if p.is_file()}
    out = []
    for key in sorted(set(found) | set(selected)):
        splits = found.get(key, {})
        runs = ([splits[i] for i in range(n_splits)]
                if n_splits and all(i in splits for i in range(n_splits)) else [])
        if runs or key in selected:
            out.append(CachedResult(key[0], key[1], runs, selected.get(key)))
    return out
