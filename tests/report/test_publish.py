"""tabbench publish: a compact copy of a results folder redraws the same summary, claims and
diagnostics without its runs files, stays within its size budget, and says what it left out."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from fixtures.synthetic import DEMO_DATASETS, write_synthetic_results

from tabbench import cli
from tabbench.diagnostics.tables import read_diagnostics
from tabbench.report.publish import PublishError, is_published, publish, read_manifest
from tabbench.report.redraw import Redraw, regenerate
from tabbench.summary.aggregate import read_summary
from tabbench.summary.select import write_selected

MODELS = ("xgboost", "mlp")
DATASETS = [d for d in DEMO_DATASETS if d.name in ("adult", "phoneme", "segment")]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """A finished folder: runs, selected files, summary and diagnostics (as `snakemake
    figures` leaves one)."""
    root = tmp_path_factory.mktemp("study")
    write_synthetic_results(root, DATASETS, MODELS, n_splits=2, n_configs=2,
                            epochs={"xgboost": (8, 10), "mlp": (6, 6)})
    for model in MODELS:
        for ds in DATASETS:
            runs = sorted((root / "runs" / model / ds.name).glob("split*.parquet"))
            write_selected(runs, root / "selected" / model / f"{ds.name}.parquet")
    regenerate(root, root, Redraw(large_rows=10_000), jobs=1, draw=False)  # publish ships no figure
    return root


def test_a_published_copy_redraws_the_same_summary_claims_and_diagnostics(study, tmp_path):
    copy = tmp_path / "copy"
    manifest = publish(study, copy)
    assert is_published(copy) and read_manifest(copy) == manifest
    runs = sorted(str(p.relative_to(copy)) for p in (copy / "runs").rglob("*.parquet"))
    meta = json.loads((study / "summary" / "meta.json").read_text())
    assert len(runs) == 1 and runs[0] == f"runs/{meta['curve_run']}"  # only Fig. 1's run
    # the curve run is named relative to the runs folder, not by this machine's path
    assert not Path(meta["curve_run"]).is_absolute()
    assert "runs/ (all but the Fig. 1 run)" in manifest["left_out"]
    # nor the report page, which names the study's folder (redrawn from the copy)
    assert (study / "summary" / "study.rst").is_file()
    assert not (copy / "summary" / "study.rst").exists()
    assert "summary/study.rst" in manifest["left_out"]
    # the study's progress when published, as tabbench status gives it, without machine paths
    status = manifest["status"]
    assert {m["model"]: m["done"] for m in status["models"]} == {m: 6 for m in MODELS}
    assert "results" not in status and "data_dir" not in status
    # the study's summary was written with draw=False: the same tables, no figure
    assert not [f for f in study.rglob("*") if f.suffix in (".png", ".pdf")]
    out = tmp_path / "redrawn"
    assert cli.main(["figures", "--results", str(copy), "--out", str(out), "--jobs", "1"]) == 0
    want, got = read_summary(study / "summary"), read_summary(out / "summary")
    for key in ("relative", "summary", "ranks", "claims", "best_epochs", "curve"):
        pd.testing.assert_frame_equal(got[key], want[key], obj=key)
    assert got["claims_markdown"] == want["claims_markdown"]
    # provenance of every runs file of the study, not of the one shipped
    assert got["meta"]["n_runs_files"] == want["meta"]["n_runs_files"] == 12
    # the study folder by name, not by the publisher's absolute path
    assert got["meta"]["published_copy"]["source"] == study.name
    diag_want = read_diagnostics(study / "summary" / "diagnostics")
    diag_got = read_diagnostics(out / "summary" / "diagnostics")
    for key in ("selection", "curve_summary", "regret"):
        pd.testing.assert_frame_equal(diag_got[key], diag_want[key], obj=key)
    assert (out / "diag_winners_curse.png").exists() and (out / "fig1_curves.png").exists()


def test_publishing_refuses_an_unfinished_or_oversized_folder(study, tmp_path):
    with pytest.raises(PublishError, match="over the budget of 0 MB; largest: "):
        publish(study, tmp_path / "tiny", max_bytes=1000)
    assert not (tmp_path / "tiny").exists()
    bare = tmp_path / "bare"
    (bare / "runs").mkdir(parents=True)
    with pytest.raises(PublishError, match="meta.json is missing"):
        publish(bare, tmp_path / "x")
    rc = cli.main(["publish", "--results", str(study), "--out", str(tmp_path / "c"),
                   "--max-mb", "0.001"])
    assert rc == 2 and not (tmp_path / "c").exists()


def test_a_status_that_cannot_be_read_is_recorded_and_the_copy_still_made(study, tmp_path,
                                                                         monkeypatch):
    import tabbench.report.publish

    def broken(results):
        raise KeyError("n_splits")

    # where publish looks the function up (it imports it by name)
    monkeypatch.setattr(tabbench.report.publish, "study_status", broken)
    manifest = publish(study, tmp_path / "copy")
    assert manifest["status"] == {"error": "KeyError: 'n_splits'"}
    assert is_published(tmp_path / "copy")


def test_a_missing_or_stale_selection_is_computed_into_the_copy(study, tmp_path):
    """Mid-study a pair's runs can be complete before its select job ran (or newer than its
    selected file): `tabbench figures` selects it in memory for the summary, and publish puts
    that same selection into the copy instead of refusing or shipping the stale file."""
    folder = tmp_path / "study"
    shutil.copytree(study, folder)
    missing = folder / "selected" / "mlp" / "adult.parquet"
    stale = folder / "selected" / "xgboost" / "phoneme.parquet"
    want_missing, want_stale = pd.read_parquet(missing), pd.read_parquet(stale)
    missing.unlink()
    stale_rows = want_stale.assign(test_logloss=want_stale["test_logloss"] + 1.0)
    stale_rows.to_parquet(stale)
    summarised_at = (folder / "summary" / "meta.json").stat().st_mtime
    os.utime(stale, (summarised_at - 20, summarised_at - 20))  # older than its runs
    for runs in (folder / "runs" / "xgboost" / "phoneme").glob("split*.parquet"):
        os.utime(runs, (summarised_at - 10, summarised_at - 10))
    manifest = publish(folder, tmp_path / "copy")
    assert "selected/mlp/adult.parquet" in manifest["files"]
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "copy" / "selected" / "mlp" / "adult.parquet"), want_missing)
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "copy" / "selected" / "xgboost" / "phoneme.parquet"),
        want_stale)
    assert manifest["bytes"] == sum(
        p.stat().st_size for p in (tmp_path / "copy").rglob("*")
        if p.is_file() and p.name != "PUBLISHED.json")


def test_a_selection_made_for_the_copy_or_the_summary_follows_the_folders_tie_rule(study,
                                                                                 tmp_path):
    """A folder whose run_config.yaml says epoch_ties: last is selected again (for its summary
    and for the copy) with that rule, as its select rule would: not with the default."""
    from tabbench.report.redraw import collect_selected
    from tabbench.summary.select import select_files

    folder = tmp_path / "study"
    shutil.copytree(study, folder)
    (folder / "run_config.yaml").write_text("preset: demo\nn_splits: 2\nepoch_ties: last\n")
    (folder / "selected" / "mlp" / "adult.parquet").unlink()
    runs = sorted((folder / "runs" / "mlp" / "adult").glob("split*.parquet"))
    at = runs[0].stat().st_mtime
    records = pd.read_parquet(runs[0])
    records.assign(val_error=records["val_error"].round(1)).to_parquet(runs[0], index=False)
    os.utime(runs[0], (at, at))  # as trained before the summary: a tie-prone accuracy
    last, first = select_files(runs, "last"), select_files(runs, "first")
    assert not last["epoch"].equals(first["epoch"])
    publish(folder, tmp_path / "copy")
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "copy" / "selected" / "mlp" / "adult.parquet"), last)
    selected, counts = collect_selected(folder, jobs=1)
    assert counts["recomputed"] == 1
    got = selected[(selected["model"] == "mlp") & (selected["dataset"] == "adult")]
    pd.testing.assert_frame_equal(got.reset_index(drop=True), last)


def test_a_pair_changed_after_the_summary_is_refused(study, tmp_path):
    """A study still running completes pairs between the redraw and the copy: publishing then
    would ship a selection its summary and diagnostics lack."""
    folder = tmp_path / "study"
    shutil.copytree(study, folder)
    summarised_at = (folder / "summary" / "meta.json").stat().st_mtime
    runs = folder / "runs" / "mlp" / "segment" / "split0.parquet"
    os.utime(runs, (summarised_at + 60, summarised_at + 60))
    with pytest.raises(PublishError, match="mlp/segment changed after its summary was computed"):
        publish(folder, tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


def test_a_copy_ships_the_dataset_table_and_names_no_path_of_this_machine(study, tmp_path):
    """The data stage's datasets.csv travels with the copy; an absolute path in the folder's
    settings (a cache on this machine) is cut to its name, relative ones stay."""
    import yaml

    folder = tmp_path / "study"
    shutil.copytree(study, folder)
    config = folder / "run_config.yaml"
    body = yaml.safe_load(config.read_text()) if config.is_file() else {}
    body.update({"pypi_cache_dir": str(tmp_path / "deep" / "pypi_cache"),
                 "data_dir": "data_here", "data_dir_from_results": "../data_here"})
    config.write_text("# what this file is\n" + yaml.safe_dump(body))
    data = tmp_path / "data_here"
    data.mkdir()
    pd.DataFrame({"dataset": ["adult", "gone"], "status": ["kept", "dropped"]}).to_csv(
        data / "datasets.csv", index=False)
    os.utime(folder / "summary" / "meta.json")  # the copy is not newer than its summary
    copy = tmp_path / "copy"
    publish(folder, copy)
    assert pd.read_csv(copy / "datasets.csv")["status"].tolist() == ["kept", "dropped"]
    shipped = yaml.safe_load((copy / "run_config.yaml").read_text())
    assert shipped["pypi_cache_dir"] == "pypi_cache"
    assert shipped["data_dir_from_results"] == "../data_here"
    assert (copy / "run_config.yaml").read_text().startswith("# what this file is\n")
    for name in ("run_config.yaml", "PUBLISHED.json"):
        assert str(tmp_path) not in (copy / name).read_text()


def test_no_shipped_copy_names_a_path_of_the_machine_it_was_made_on():
    from tabbench.report.machine_paths import without_machine_paths

    root = Path(__file__).resolve().parents[2] / "docs" / "results"
    copies = sorted(p.parent for p in root.glob("*/PUBLISHED.json"))
    assert copies
    for copy in copies:
        for name in ("run_config.yaml", "PUBLISHED.json"):
            text = (copy / name).read_text()
            assert without_machine_paths(text) == text, f"{copy.name}/{name}"
