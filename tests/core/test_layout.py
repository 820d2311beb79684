"""tabbench.core.layout: the paths of every artefact, and the one rule for complete cached results.

The path strings are pinned literally: every results folder the workflow wrote (a multi-hour
study) must stay valid, so the layout may not drift by a character.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pytest

from tabbench.core.layout import (
    DataLayout,
    ResultsLayout,
    complete_results,
    failures_path,
    part_dir,
    rebuild_hint,
    runs_file,
)


def test_data_paths_are_the_historical_ones():
    d = DataLayout("data")
    assert d.raw("adult") == "data/raw/adult.parquet"
    assert d.raw_json("adult") == "data/raw/adult.json"
    assert d.processed("adult") == "data/processed/adult.parquet"
    assert d.processed_json("adult") == "data/processed/adult.json"
    assert d.splits("adult") == "data/splits/adult.parquet"
    assert (d.kept, d.datasets_csv, d.unavailable_csv) == (
        "data/kept.txt", "data/datasets.csv", "data/unavailable.csv")
    assert d.log("fetch", "adult") == "data/logs/fetch/adult.log"
    assert d.log("collect_datasets") == "data/logs/collect_datasets.log"
    assert d.summary_line == "data/logs/data_summary.txt"
    assert d.openml_state_dir == "data/logs/openml"


def test_results_paths_are_the_historical_ones():
    r = ResultsLayout("results")
    assert r.runs("xgboost", "adult", 3) == "results/runs/xgboost/adult/split3.parquet"
    assert r.failures("xgboost", "adult", 3) == "results/runs/xgboost/adult/split3.failures.json"
    assert r.part("xgboost", "adult", 3) == "results/runs/xgboost/adult/split3.parquet.part"
    assert r.selected("mlp", "adult") == "results/selected/mlp/adult.parquet"
    assert r.summary("summary.parquet") == "results/summary/summary.parquet"
    assert r.figure("fig5_logloss_large", "png") == "results/figures/fig5_logloss_large.png"
    assert r.report == "results/report.html"
    assert r.run_config == "results/run_config.yaml"
    assert r.log("train", "mlp", "adult", "split0") == "results/logs/train/mlp/adult/split0.log"
    assert r.log("select", "mlp", "adult") == "results/logs/select/mlp/adult.log"
    assert r.log("aggregate") == "results/logs/aggregate.log"


def test_snakemake_patterns_come_out_of_the_same_functions():
    """The rules pass wildcards as arguments: the patterns must be the rules' old ones."""
    r, d = ResultsLayout("results"), DataLayout("data")
    assert r.runs("{model}", "{dataset}", "{split}") == (
        "results/runs/{model}/{dataset}/split{split}.parquet")
    assert r.failures("{model}", "{dataset}", "{split}") == (
        "results/runs/{model}/{dataset}/split{split}.failures.json")
    assert r.log("train", "{model}", "{dataset}", "split{split}") == (
        "results/logs/train/{model}/{dataset}/split{split}.log")
    assert d.processed("{dataset}") == "data/processed/{dataset}.parquet"


def test_sidecars_of_a_runs_file(tmp_path):
    out = tmp_path / "runs" / "mlp" / "x" / "split1.parquet"
    assert failures_path(out) == out.with_name("split1.failures.json")
    assert part_dir(out) == Path(f"{out}.part")
    assert runs_file(tmp_path / "runs", "mlp", "x", 1) == os.fspath(out)
    assert ResultsLayout(tmp_path).runs("mlp", "x", 1) == os.fspath(out)


def _touch(path: Path, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"a": [1]}).to_parquet(path)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture()
def folder(tmp_path) -> Path:
    """A results folder with every kind of (model, dataset)."""
    r = ResultsLayout(tmp_path)
    t = time.time() - 100
    for s in (0, 1):
        _touch(Path(r.runs("xgboost", "full", s)), t)  # complete, no selection yet
        _touch(Path(r.runs("mlp", "fresh", s)), t)  # complete, fresh selection
        _touch(Path(r.runs("mlp", "stale", s)), t + 50)  # complete, selection older
    _touch(Path(r.selected("mlp", "fresh")), t + 10)
    _touch(Path(r.selected("mlp", "stale")), t + 10)
    _touch(Path(r.runs("xgboost", "partial", 0)))  # split 1 missing: a training in progress
    Path(r.part("xgboost", "partial", 1)).mkdir(parents=True)
    _touch(Path(r.selected("realmlp", "shipped")))  # a folder shipped without runs/
    _touch(Path(r.runs("mlp", "redone", 1)))  # runs being redone, an older selection
    _touch(Path(r.selected("mlp", "redone")))
    Path(r.failures("xgboost", "full", 0)).write_text("[]")
    return tmp_path


def test_complete_results_is_one_rule(folder):
    got = {(c.model, c.dataset): c for c in complete_results(folder, None)}
    assert sorted(got) == [("mlp", "fresh"), ("mlp", "redone"), ("mlp", "stale"),
                           ("realmlp", "shipped"), ("xgboost", "full")]
    assert ("xgboost", "partial") not in got  # some splits only: neither trained nor shown
    assert [p.name for p in got["xgboost", "full"].runs] == ["split0.parquet", "split1.parquet"]
    assert not got["xgboost", "full"].selected_is_fresh()
    assert got["mlp", "fresh"].selected_is_fresh()
    assert not got["mlp", "stale"].selected_is_fresh()  # recomputed from its runs
    # a selected file whose runs are not all there is used as it is
    assert got["mlp", "redone"].runs == [] and got["mlp", "redone"].selected_is_fresh()
    assert got["realmlp", "shipped"].runs == [] and got["realmlp", "shipped"].selected_is_fresh()


def test_the_splits_required_are_the_callers_else_the_most_any_pair_has(folder):
    """The folder's own number (its settings) is :class:`tabbench.settings.folder.ResultsFolder`'s
    to give (tests/settings/test_folder.py); without one, the most splits any pair has (2 here)."""
    assert complete_results(folder, None) == complete_results(folder, 2)
    got = {(c.model, c.dataset) for c in complete_results(folder, 3)}
    # with 3 splits required only the selected files are complete
    assert got == {("mlp", "fresh"), ("mlp", "redone"), ("mlp", "stale"), ("realmlp", "shipped")}
    assert {(c.model, c.dataset) for c in complete_results(folder, n_splits=1)} >= {
        ("xgboost", "partial"), ("xgboost", "full")}


def test_empty_or_absent_folder(tmp_path):
    assert complete_results(tmp_path / "nothing", None) == []


def test_runs_files_and_part_files_are_named_and_parsed_in_one_place(tmp_path):
    from tabbench.core.layout import (
        PART_IDENTITY,
        ResultsLayout,
        parse_runs_file,
        part_configs,
        part_failure,
        part_records,
        runs_splits,
    )

    layout = ResultsLayout(tmp_path)
    runs = layout.runs("mlp", "adult", 3)
    assert parse_runs_file(runs) == ("mlp", "adult", 3)
    assert parse_runs_file(f"elsewhere/{runs}") == ("mlp", "adult", 3)
    for bad in ("split3.csv", "a/b/split.parquet", "a/b/fold3.parquet"):
        assert parse_runs_file(bad) is None
    for s in (0, 2, 10):
        Path(layout.runs("mlp", "adult", s)).parent.mkdir(parents=True, exist_ok=True)
        Path(layout.runs("mlp", "adult", s)).touch()
    (Path(layout.runs_dir) / "mlp" / "adult" / "split1.failures.json").touch()
    assert runs_splits(layout.runs_dir, "mlp", "adult") == [0, 2, 10]
    parts = Path(layout.part("mlp", "adult", 4))
    parts.mkdir()
    for f in (part_records(parts, 0), part_failure(parts, 3), part_records(parts, 12),
              parts / PART_IDENTITY, parts / ".config5.parquet.tmp"):
        f.touch()
    assert part_configs(parts) == [0, 3, 12]
    assert part_records(parts, 7).name == "config7.parquet"
    assert part_failure(parts, 7).name == "config7.failure.json"

    from tabbench.core.layout import part_folders, runs_files_by_pair

    Path(layout.part("mlp", "adult", 5)).touch()  # not a folder: no job's part folder
    assert part_folders(tmp_path) == {("mlp", "adult", 4): parts}
    assert sorted(runs_files_by_pair(tmp_path)[("mlp", "adult")]) == [0, 2, 10]


@pytest.mark.parametrize(("path", "hint"), [
    ("results/runs/mlp/kc1/split3.parquet",
     "`snakemake results/runs/mlp/kc1/split3.parquet --forcerun train`"),
    ("results/selected/mlp/kc1.parquet", "`snakemake results/selected/mlp/kc1.parquet"
                                         " --forcerun select`"),
    ("results/summary/relative.parquet", "`snakemake figures --forcerun regenerate`"),
    ("study/b/selected/mlp/kc1.parquet", "`snakemake study/b/selected/mlp/kc1.parquet"
                                         " --forcerun select --config results_dir=study/b`"),
    ("/abs/r/summary/summary.parquet",
     "`snakemake figures --forcerun regenerate --config results_dir=/abs/r`"),
    ("results/runs/mlp/kc1/notes.parquet", "the step that wrote it"),
    ("elsewhere.parquet", "the step that wrote it"),
])
def test_rebuild_hint_names_the_rule_that_writes_the_file(path, hint):
    assert hint in rebuild_hint(path)
