"""Re-stopping a finished study (tabbench.study.restop, docs/design.md §16): a stopping metric
registered after training gets exactly the column a train job with it registered records,
from what the jobs kept; nothing else in a runs file changes; a second re-stop is a no-op; a
file with nothing kept is reported and left alone, and so is one whose artefact is damaged or
another file's."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from fixtures.data_fixtures import write_toy_data_folder
from fixtures.jobs import train_job
from fixtures.plugin_dists import METRIC_GROUP, METRIC_ID, install_example_plugin

from tabbench.cli import main as cli_main
from tabbench.core.layout import DataLayout, ResultsLayout, restop_artefact, restop_sidecar
from tabbench.metrics.registry import reload_registry, stopping_metrics_batched
from tabbench.models.runs_schema import val_column
from tabbench.study import restop

EPOCHS = {"xgboost_default": 6, "xgboost_tuned": 8, "lightgbm_default": 6,
          "lightgbm_tuned": 8, "mlp": 3}
#: (model, split, keep_for_restop) of the finished folder
JOBS = [("xgboost", 1, True), ("lightgbm", 1, True), ("mlp", 1, True), ("xgboost", 0, False)]


def _data(root: Path) -> DataLayout:
    """A data folder in the study's layout (what kept boosters predict on)."""
    return write_toy_data_folder(root, n=500, n_classes=3, n_splits=2)


def _train(data: DataLayout, results: Path, model: str, split: int, keep: bool) -> Path:
    out = Path(ResultsLayout(results).runs(model, "toy", split))
    train_job(model, "toy", split, data.processed("toy"), data.splits("toy"), out,
              n_configs=1, epochs=EPOCHS, seed=0, keep_for_restop=keep,
              progress=io.StringIO())
    return out


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished folder trained with the built-in metrics only, and its data folder."""
    root = tmp_path_factory.mktemp("study")
    data = _data(root / "data")
    for model, split, keep in JOBS:
        _train(data, root / "results", model, split, keep)
    return root


@pytest.fixture
def study(finished, tmp_path):
    shutil.copytree(finished, tmp_path / "study")
    return tmp_path / "study"


def _file(study: Path, model: str, split: int) -> Path:
    return Path(ResultsLayout(study / "results").runs(model, "toy", split))


def test_a_metric_installed_after_training_gets_the_column_training_would_have_recorded(
        study, site, tmp_path):
    before = {(m, s): (_file(study, m, s).read_bytes(), pq.read_table(_file(study, m, s)))
              for m, s, _ in JOBS}
    install_example_plugin(site, [METRIC_GROUP])
    reload_registry()
    out = io.StringIO()
    report = restop.restop_folder(study / "results", study / "data", progress=out)
    assert report["counts"] == {restop.ADDED: 3, restop.UP_TO_DATE: 0, restop.NOT_RESTOPPED: 1}
    col = val_column(METRIC_ID)
    for model, split, keep in JOBS:
        path = _file(study, model, split)
        if not keep:  # reported, and not touched
            assert path.read_bytes() == before[(model, split)][0]
            continue
        # what a train job with the metric registered records
        ref = pd.read_parquet(_train(DataLayout(study / "data"), tmp_path / "ref", model,
                                     split, False))
        got, old = pq.read_table(path), before[(model, split)][1]
        assert got.column_names == list(ref.columns)  # the new column where training puts it
        np.testing.assert_allclose(got.column(col).to_numpy(), ref[col].to_numpy(), rtol=1e-6)
        assert got.drop([col]).equals(old)  # every existing column as it was
        assert got.schema.metadata[b"tabbench.core.provenance"] == \
            old.schema.metadata[b"tabbench.core.provenance"]
        assert pd.read_parquet(path)[col].notna().all()
    text = out.getvalue()
    assert f"[xgboost/toy/split1] added {col}" in text
    assert ("[xgboost/toy/split0] NOT re-stopped: nothing was kept for re-stopping (trained "
            "with keep_for_restop false") in text
    assert "only retraining adds the columns to" in text
    saved = json.loads(Path(ResultsLayout(study / "results").restop_report).read_text())
    assert saved["counts"] == report["counts"] and METRIC_ID in saved["metrics"]

    # a second re-stop is a no-op
    now = {(m, s): _file(study, m, s).read_bytes() for m, s, _ in JOBS}
    again = restop.restop_folder(study / "results", study / "data", progress=io.StringIO())
    assert again["counts"] == {restop.ADDED: 0, restop.UP_TO_DATE: 3, restop.NOT_RESTOPPED: 1}
    assert {(m, s): _file(study, m, s).read_bytes() for m, s, _ in JOBS} == now


@pytest.mark.parametrize("model", ["xgboost", "lightgbm", "mlp"])
def test_a_builtin_column_missing_from_an_older_file_comes_back_equal(study, model):
    """The fused built-ins (the TS fit included) take the same path as a plugin's metric."""
    path = _file(study, model, 1)
    table = pq.read_table(path)
    col = val_column("ts_ref_cv5")
    pq.write_table(table.drop([col]), path)  # as if written without the metric registered
    outcome = restop.restop_runs_file(path, study / "data")
    assert outcome.status == restop.ADDED and outcome.added == [col]
    assert outcome.check_rel_diff <= 1e-6
    got = pq.read_table(path)
    assert got.column_names == table.column_names
    np.testing.assert_allclose(got.column(col).to_numpy(), table.column(col).to_numpy(),
                               rtol=1e-6)
    assert got.drop([col]).equals(table.drop([col]))


def _drop(path: Path, column: str) -> bytes:
    pq.write_table(pq.read_table(path).drop([column]), path)
    return path.read_bytes()


def _damage_logits(study: Path) -> Path:
    path = _file(study, "mlp", 1)
    artefact = restop_artefact(path)
    with np.load(artefact) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["config0.logits"] = arrays["config0.logits"] * np.float32(1.5)
    with open(artefact, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def _truncate(study: Path) -> Path:
    path = _file(study, "xgboost", 1)
    artefact = restop_artefact(path)
    artefact.write_bytes(artefact.read_bytes()[:200])
    return path


def _swap(study: Path) -> Path:
    """lightgbm's artefact in place of xgboost's (its config 0 has the same params)."""
    path, other = _file(study, "xgboost", 1), _file(study, "lightgbm", 1)
    shutil.copy(restop_artefact(other), restop_artefact(path))
    shutil.copy(restop_sidecar(other), restop_sidecar(path))
    return path


@pytest.mark.parametrize(("damage", "message"), [
    (_damage_logits, "self-check failed: config 0, epoch "),
    (_truncate, "split1.restop.npz is unreadable or not this file's"),
    (_swap, "split1.restop.json is of lightgbm/toy/1, not of xgboost/toy/1"),
])
def test_a_damaged_or_foreign_artefact_fails_and_the_file_is_left_alone(study, damage,
                                                                         message):
    path = damage(study)
    bytes_before = _drop(path, val_column("brier"))
    outcome = restop.restop_runs_file(path, study / "data")
    assert outcome.status == restop.NOT_RESTOPPED
    assert message in outcome.reason
    assert path.read_bytes() == bytes_before


def test_the_command_line(study, capsys):
    path = _file(study, "lightgbm", 1)
    _drop(path, val_column("auroc"))
    results = study / "results"
    assert cli_main(["restop", "--results", str(results), "--data", str(study / "data"),
                     "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "[lightgbm/toy/split1] added val_auroc" in out
    assert "tabbench restop: 1 runs files gained columns, 3 were up to date, 0 could not" in out
    assert "0 selected files written again" in out
    assert val_column("auroc") in pq.read_schema(path).names
    assert json.loads(Path(ResultsLayout(results).restop_report).read_text())["counts"][
        restop.ADDED] == 1
    (study / "empty").mkdir()
    assert cli_main(["restop", "--results", str(study / "empty")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_selected_file_of_a_restopped_pair_is_written_again(study):
    """A re-stop changes runs files in place: the selected file of their (model, dataset) is
    written again, with the new column's method, so selected/ never lags behind the runs files
    (nor does the next snakemake plan a select job for it)."""
    from tabbench.settings.folder import ResultsFolder
    from tabbench.summary.select import write_selected

    results = study / "results"
    _drop(_file(study, "xgboost", 1), val_column("auroc"))
    selected = Path(ResultsLayout(results).selected("xgboost", "toy"))
    selected.parent.mkdir(parents=True)
    runs = [_file(study, "xgboost", s) for s in (0, 1)]
    def split1_methods() -> set[str]:
        df = pd.read_parquet(selected)
        return set(df.loc[df["split"] == 1, "stopping"])

    write_selected(runs, selected)
    assert "auroc" not in split1_methods()
    report = restop.restop_folder(results, study / "data", progress=io.StringIO())
    assert report["counts"][restop.ADDED] == 1 and report["reselected"] == 1
    assert "auroc" in split1_methods()
    pair = next(r for r in ResultsFolder.open(results).complete_results()
                if r.model == "xgboost")
    assert pair.selected == selected and pair.selected_is_fresh()
    # nothing changed: nothing written
    again = restop.restop_folder(results, study / "data", progress=io.StringIO())
    assert again["reselected"] == 0


def test_only_computes_the_named_metrics_and_refuses_unknown_ones():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(4, 50, 3)).astype(np.float32)
    y = rng.integers(0, 3, 50)
    full = stopping_metrics_batched(z, y)
    some = stopping_metrics_batched(z, y, only=["brier", "error"])
    assert set(some) == {"brier", "error", "beta"}
    for m in ("brier", "error"):
        np.testing.assert_array_equal(some[m], full[m])
    with pytest.raises(ValueError, match=r"unknown stopping metrics \['nope'\]"):
        stopping_metrics_batched(z, y, only=["nope"])
