"""tabbench publish --onto: a published copy extended with another study folder's pairs gives
the summary, claims, diagnostics and provenance one folder holding all of them would give."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fixtures.synthetic import DEMO_DATASETS, write_synthetic_results

from tabbench import cli
from tabbench.diagnostics.tables import read_diagnostics
from tabbench.report.page_tables import progress_table
from tabbench.report.publish import PublishError, publish, read_manifest
from tabbench.report.publish_merge import Take, merge_published
from tabbench.report.redraw import Redraw, regenerate
from tabbench.summary.aggregate import read_summary
from tabbench.summary.select import write_selected

MODELS = ("xgboost", "mlp")
DATASETS = [d for d in DEMO_DATASETS if d.name in ("adult", "segment")]  # a large, a small
SETTINGS = {"preset": "demo", "seed": 0, "n_splits": 2, "models": list(MODELS),
            "train_threads": 1}


def _finish(folder: Path, settings: dict) -> Path:
    """Selected files, run_config.yaml, summary and diagnostics, as a finished study has."""
    for runs_dir in sorted((folder / "runs").glob("*/*")):
        model, dataset = runs_dir.parent.name, runs_dir.name
        write_selected(sorted(runs_dir.glob("split*.parquet")),
                       folder / "selected" / model / f"{dataset}.parquet")
    (folder / "run_config.yaml").write_text(yaml.safe_dump(settings))
    regenerate(folder, folder, Redraw(large_rows=10_000), jobs=1, draw=False)  # none is shipped
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """The whole study, and the same runs split by model into two study folders."""
    root = tmp_path_factory.mktemp("merge")
    whole = root / "whole"
    write_synthetic_results(whole, DATASETS, MODELS, n_splits=2, n_configs=2,
                            epochs={"xgboost": (8, 10), "mlp": (6, 6)})
    parts = {}
    for model in MODELS:
        part = root / f"only_{model}"
        (part / "runs").mkdir(parents=True)
        shutil.copytree(whole / "runs" / model, part / "runs" / model)
        parts[model] = _finish(part, SETTINGS)
    _finish(whole, SETTINGS)
    return {"whole": whole, **parts}


def test_the_merged_copy_gives_what_one_folder_of_all_pairs_gives(folders, tmp_path):
    first = tmp_path / "first"
    publish(folders["xgboost"], first)
    publish(folders["mlp"], tmp_path / "second")
    whole = tmp_path / "whole_copy"
    publish(folders["whole"], whole)
    manifest = merge_published(first, tmp_path / "second", tmp_path / "merged")
    merged = tmp_path / "merged"
    want, got = read_summary(whole / "summary"), read_summary(merged / "summary")
    for key in ("relative", "summary", "ranks", "claims", "best_epochs", "curve", "dataset_means",
                "heterogeneity", "heterogeneity_fit", "low_signal"):
        pd.testing.assert_frame_equal(got[key], want[key], obj=key)
    assert got["claims_markdown"] == want["claims_markdown"]
    for key in ("n_runs_files", "versions", "mixed_versions", "failures", "curve_run"):
        assert got["meta"][key] == want["meta"][key], key
    diag_want = read_diagnostics(whole / "summary" / "diagnostics")
    diag_got = read_diagnostics(merged / "summary" / "diagnostics")
    for key in ("selection", "curve", "curve_summary", "regret", "optimism",
                "selection_datasets"):
        pd.testing.assert_frame_equal(
            diag_got[key].sort_values(list(diag_got[key].columns[:4])).reset_index(drop=True),
            diag_want[key].sort_values(list(diag_want[key].columns[:4])).reset_index(drop=True),
            obj=key)
    assert diag_got["meta"]["n_splits"] == diag_want["meta"]["n_splits"] == 8
    # only the Fig. 1 analogue's run is shipped, and the manifest lists what is there
    runs = sorted(str(p.relative_to(merged)) for p in (merged / "runs").rglob("*.parquet"))
    assert runs == [f"runs/{want['meta']['curve_run']}"]
    assert sorted(manifest["files"]) == sorted(
        str(p.relative_to(merged)) for p in merged.rglob("*")
        if p.is_file() and p.name != "PUBLISHED.json")
    assert [s["source"] for s in manifest["sources"]] == ["only_xgboost", "only_mlp"]
    # no shipped text names the temporary folders the copy was made in
    for f in merged.rglob("*"):
        if f.suffix in (".json", ".md", ".rst", ".html", ".yaml"):
            assert "merge.tmp" not in f.read_text() and "/tmp/tmp" not in f.read_text(), f
    # and it redraws like any copy
    out = tmp_path / "redrawn"
    assert cli.main(["figures", "--results", str(merged), "--out", str(out), "--jobs", "1"]) == 0
    assert (out / "fig1_curves.png").exists()


def test_versions_that_differ_between_the_copies_are_listed_as_mixed(folders, tmp_path):
    versions = {"a": ({"commit": "c1", "torch": "2.13.0", "device": ["cpu", "cuda"]},
                      ["device"]),
                "b": ({"commit": "c2", "torch": "2.13.0", "device": "cpu"}, [])}
    for name, (v, mixed) in versions.items():
        publish(folders["xgboost" if name == "a" else "mlp"], tmp_path / name)
        meta_path = tmp_path / name / "summary" / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps({**meta, "versions": v, "mixed_versions": mixed}))
    merge_published(tmp_path / "a", tmp_path / "b", tmp_path / "m")
    got = json.loads((tmp_path / "m" / "summary" / "meta.json").read_text())
    assert got["mixed_versions"] == ["commit", "device"]
    assert got["versions"] == {"commit": ["c1", "c2"], "device": ["cpu", "cuda"],
                               "torch": "2.13.0"}


def test_overlapping_pairs_or_other_settings_are_refused(folders, tmp_path):
    publish(folders["xgboost"], tmp_path / "a")
    publish(folders["whole"], tmp_path / "w")
    with pytest.raises(PublishError, match="pairs in both copies: selected/xgboost/adult"):
        merge_published(tmp_path / "a", tmp_path / "w", tmp_path / "m")
    other = tmp_path / "other"
    shutil.copytree(folders["mlp"], other)
    (other / "run_config.yaml").write_text(yaml.safe_dump({**SETTINGS, "seed": 1,
                                                           "train_threads": 4}))
    publish(other, tmp_path / "o")
    with pytest.raises(PublishError, match=r"different settings \(seed: 0 vs 1\)"):
        merge_published(tmp_path / "a", tmp_path / "o", tmp_path / "m")
    # a copy whose run_config.yaml has no epoch_ties was selected with the first-of-ties rule
    (other / "run_config.yaml").write_text(yaml.safe_dump({**SETTINGS, "epoch_ties": "last"}))
    publish(other, tmp_path / "t")
    with pytest.raises(PublishError, match=r"different settings \(epoch_ties: 'first' vs "
                                           r"'last'\)"):
        merge_published(tmp_path / "a", tmp_path / "t", tmp_path / "m")
    with pytest.raises(PublishError, match="not a published copy"):
        merge_published(tmp_path / "a", folders["mlp"], tmp_path / "m")
    publish(folders["mlp"], tmp_path / "b")
    with pytest.raises(PublishError, match="over the budget of 0 MB"):
        merge_published(tmp_path / "a", tmp_path / "b", tmp_path / "m", max_bytes=1000)
    assert not (tmp_path / "m").exists() and not list(tmp_path.glob(".*tmp"))


def test_the_command_extends_a_copy_in_place_and_keeps_each_sources_progress(folders,
                                                                            tmp_path):
    copy = tmp_path / "copy"
    publish(folders["xgboost"], copy)
    first = read_manifest(copy)
    rc = cli.main(["publish", "--results", str(folders["mlp"]), "--onto", str(copy),
                   "--out", str(copy)])
    assert rc == 0
    manifest = read_manifest(copy)
    assert manifest["sources"][0]["published"] == first["published"]
    assert {p.parent.name for p in (copy / "selected").rglob("*.parquet")} == set(MODELS)
    table = progress_table(manifest)
    assert table.count("| model | train jobs done of planned") == 2
    assert "Source 1: `only_xgboost`" in table and "Source 2: `only_mlp`" in table
    assert not list(tmp_path.glob(".*tmp"))  # nothing left beside the copy


def test_a_merged_copy_extended_again_lists_every_study_once(folders, tmp_path):
    """A copy merged from two studies, extended with a third: its sources are the three
    studies in the order they were joined (flat), and the progress table numbers them 1-3."""
    studies = {}
    for dataset in ("adult", "segment"):
        study = tmp_path / f"mlp_{dataset}"
        (study / "runs" / "mlp").mkdir(parents=True)
        shutil.copytree(folders["mlp"] / "runs" / "mlp" / dataset,
                        study / "runs" / "mlp" / dataset)
        studies[dataset] = _finish(study, SETTINGS)
    copy = tmp_path / "copy"
    publish(folders["xgboost"], copy)
    for dataset in ("adult", "segment"):
        assert cli.main(["publish", "--results", str(studies[dataset]), "--onto", str(copy),
                         "--out", str(copy)]) == 0
    manifest = read_manifest(copy)
    assert [s["source"] for s in manifest["sources"]] == ["only_xgboost", "mlp_adult",
                                                          "mlp_segment"]
    assert not any("sources" in s for s in manifest["sources"])
    assert manifest["source"] == "only_xgboost + mlp_adult + mlp_segment"
    table = progress_table(manifest)
    assert "Source 3: `mlp_segment`" in table and table.count("Source ") == 3



def _study(root: Path, folders: dict[str, Path], pairs: list[tuple[str, str]],
           settings: dict) -> Path:
    """A study folder holding the whole study's runs of ``pairs``, finished with
    ``settings``."""
    for model, dataset in pairs:
        shutil.copytree(folders["whole"] / "runs" / model / dataset,
                        root / "runs" / model / dataset)
    return _finish(root, settings)


def test_a_copy_of_another_scope_lends_only_the_pairs_named(folders, tmp_path):
    """The bundled study's copy lends its large datasets' pairs to the large suite's: suite,
    sources and models may differ; the pairs named join, the others stay out, and the copy
    is what one folder of exactly those pairs gives."""
    other = {**SETTINGS, "suite": "demo", "sources": ["bundled"],
             "n_configs": {"xgboost": 2, "mlp": 9}}
    large = {**SETTINGS, "preset": "large", "suite": "large", "sources": ["bundled", "pypi"],
             "n_configs": {"xgboost": 2, "mlp": 2}}
    publish(folders["whole"], tmp_path / "other_copy")
    (tmp_path / "other_copy" / "run_config.yaml").write_text(yaml.safe_dump(other))
    own = _study(tmp_path / "own", folders, [("mlp", "adult"), ("mlp", "segment")], large)
    publish(own, tmp_path / "own_copy")
    with pytest.raises(PublishError, match=r"suite: 'demo' vs 'large'.*--take-models"):
        merge_published(tmp_path / "other_copy", tmp_path / "own_copy", tmp_path / "m")
    with pytest.raises(PublishError, match=r"mlp n_configs: 9 vs 2"):
        merge_published(tmp_path / "other_copy", tmp_path / "own_copy", tmp_path / "m",
                        take=Take(("mlp", "xgboost"), ("adult",)))
    manifest = merge_published(tmp_path / "other_copy", tmp_path / "own_copy",
                               tmp_path / "m", take=Take(("xgboost",), ("adult",)))
    assert manifest["joined"] == [{"from": ["whole"], "pairs": ["xgboost/adult"],
                                   "default_regime_only": []}]
    got = sorted(p.relative_to(tmp_path / "m" / "selected").as_posix()
                 for p in (tmp_path / "m" / "selected").rglob("*.parquet"))
    assert got == ["mlp/adult.parquet", "mlp/segment.parquet", "xgboost/adult.parquet"]
    expected = _study(tmp_path / "expected", folders,
                      [("xgboost", "adult"), ("mlp", "adult"), ("mlp", "segment")], large)
    want = read_summary(expected / "summary")
    merged = read_summary(tmp_path / "m" / "summary")
    for key in ("relative", "summary", "ranks", "best_epochs", "dataset_means"):
        pd.testing.assert_frame_equal(merged[key], want[key], obj=key)
    diag = read_diagnostics(tmp_path / "m" / "summary" / "diagnostics")
    assert set(zip(diag["selection"]["model"], diag["selection"]["dataset"],
                   strict=True)) == {("xgboost", "adult"), ("mlp", "adult"), ("mlp", "segment")}
    assert diag["meta"]["n_splits"] == 6
    # a global setting that differs is refused even for the pairs named
    (tmp_path / "other_copy" / "run_config.yaml").write_text(yaml.safe_dump({**other,
                                                                              "seed": 3}))
    with pytest.raises(PublishError, match=r"seed: 3 vs 0"):
        merge_published(tmp_path / "other_copy", tmp_path / "own_copy", tmp_path / "m2",
                        take=Take(("xgboost",), ("adult",)))


def test_a_tuned_model_lends_its_default_regime_to_a_default_only_study(folders, tmp_path):
    """Config 0 is trained and selected the same whatever other configs a job trains: a study
    at the default config only (n_configs 0) takes another copy's tuned pairs' default rows,
    and nothing of their tuned regime (selected rows, diagnostics, the configs' curve)."""
    other = {**SETTINGS, "suite": "demo", "n_configs": {"xgboost": 2, "mlp": 2}}
    default = {**SETTINGS, "suite": "large", "n_configs": {"xgboost": 0, "mlp": 0}}
    publish(folders["whole"], tmp_path / "other_copy")
    (tmp_path / "other_copy" / "run_config.yaml").write_text(yaml.safe_dump(other))
    own = _study(tmp_path / "own", folders, [("xgboost", "adult")], default)
    publish(own, tmp_path / "own_copy")
    manifest = merge_published(tmp_path / "other_copy", tmp_path / "own_copy", tmp_path / "m",
                               take=Take(("mlp",), ("adult", "segment")))
    assert manifest["joined"][0]["default_regime_only"] == ["mlp"]
    for dataset in ("adult", "segment"):
        got = pd.read_parquet(tmp_path / "m" / "selected" / "mlp" / f"{dataset}.parquet")
        lent = pd.read_parquet(tmp_path / "other_copy" / "selected" / "mlp" / f"{dataset}.parquet")
        assert set(lent["regime"]) == {"default", "tuned"}
        pd.testing.assert_frame_equal(
            got, lent[lent["regime"] == "default"].reset_index(drop=True))
    diag = read_diagnostics(tmp_path / "m" / "summary" / "diagnostics")
    mlp = diag["selection"][diag["selection"]["model"] == "mlp"]
    assert len(mlp) and set(mlp["regime"]) == {"default"}
    assert not (diag["curve"]["model"] == "mlp").any() if len(diag["curve"]) else True
    summary = read_summary(tmp_path / "m" / "summary")
    assert set(summary["relative"].query("model == 'mlp'")["regime"]) == {"default"}
    # a study tuned over another number of configs is still refused
    (tmp_path / "own_copy" / "run_config.yaml").write_text(yaml.safe_dump(
        {**default, "n_configs": {"xgboost": 0, "mlp": 5}}))
    with pytest.raises(PublishError, match=r"mlp n_configs: 2 vs 5"):
        merge_published(tmp_path / "other_copy", tmp_path / "own_copy", tmp_path / "m2",
                        take=Take(("mlp",), ("adult",)))


def test_a_default_only_copy_lends_its_pairs_to_a_tuned_study(folders, tmp_path):
    """The other way round: a study tuned on some datasets takes a default-only copy's pairs
    on the others as they are; its tuned regime is judged on the datasets that have it, its
    default regime on all of them."""
    default = {**SETTINGS, "suite": "large", "n_configs": {"xgboost": 0, "mlp": 0}}
    tuned = {**SETTINGS, "suite": "large", "n_configs": {"xgboost": 2, "mlp": 0}}
    lender = _study(tmp_path / "lender", folders, [("xgboost", "segment")], default)
    for runs in (lender / "runs").rglob("split*.parquet"):  # a default-only job's records
        frame = pd.read_parquet(runs)
        frame[frame["config"] == 0].to_parquet(runs)
    _finish(lender, default)
    publish(lender, tmp_path / "lender_copy")
    own = _study(tmp_path / "own", folders, [("xgboost", "adult")], tuned)
    publish(own, tmp_path / "own_copy")
    manifest = merge_published(tmp_path / "lender_copy", tmp_path / "own_copy", tmp_path / "m",
                               take=Take(("xgboost",), ("segment",)))
    assert manifest["joined"][0]["default_regime_only"] == ["xgboost"]
    assert yaml.safe_load((tmp_path / "m" / "run_config.yaml").read_text()) == tuned
    got = pd.read_parquet(tmp_path / "m" / "selected" / "xgboost" / "segment.parquet")
    pd.testing.assert_frame_equal(
        got, pd.read_parquet(tmp_path / "lender_copy" / "selected" / "xgboost" / "segment.parquet"))
    assert set(got["regime"]) == {"default"}
    relative = read_summary(tmp_path / "m" / "summary")["relative"]
    datasets = relative.groupby("regime")["dataset"].agg(lambda d: sorted(set(d)))
    assert datasets["default"] == ["adult", "segment"] and datasets["tuned"] == ["adult"]


def test_the_command_merges_two_copies_and_lists_a_source_taken_twice_once(folders, tmp_path):
    """`--results` may be a published copy; pairs taken from one copy in two merges (one
    model's on a dataset, then another's) leave its study once in the sources."""
    other = {**SETTINGS, "suite": "demo"}
    publish(folders["whole"], tmp_path / "other_copy")
    (tmp_path / "other_copy" / "run_config.yaml").write_text(yaml.safe_dump(other))
    own = _study(tmp_path / "own", folders, [("mlp", "adult")], {**SETTINGS, "suite": "large"})
    publish(own, tmp_path / "own_copy")
    copy = tmp_path / "copy"
    assert cli.main(["publish", "--results", str(tmp_path / "own_copy"),
                     "--onto", str(tmp_path / "other_copy"), "--take-models", "xgboost",
                     "--take-datasets", "adult", "--out", str(copy)]) == 0
    assert cli.main(["publish", "--results", str(copy), "--onto", str(tmp_path / "other_copy"),
                     "--take-models", "mlp", "--take-datasets", "segment",
                     "--out", str(copy)]) == 0
    manifest = read_manifest(copy)
    assert [s["source"] for s in manifest["sources"]] == ["whole", "own"]
    assert [j["pairs"] for j in manifest["joined"]] == [["xgboost/adult"], ["mlp/segment"]]
    got = sorted(p.relative_to(copy / "selected").as_posix()
                 for p in (copy / "selected").rglob("*.parquet"))
    assert got == ["mlp/adult.parquet", "mlp/segment.parquet", "xgboost/adult.parquet"]
    # a copy is not published again on its own
    assert cli.main(["publish", "--results", str(copy), "--out", str(tmp_path / "again")]) == 2
