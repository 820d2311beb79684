"""What a drawing reads from a results folder (tabbench.report.redraw), without drawing: the
pairs it summarises and what it leaves on disk."""

from __future__ import annotations

from pathlib import Path

from fixtures.synthetic import SyntheticDataset, write_synthetic_results

from tabbench.report.redraw import collect_selected, summary_frames
from tabbench.summary.select import write_selected

MODELS = ["xgboost", "mlp"]
EPOCHS = {"xgboost": (10, 20), "mlp": (8, 8)}


def _mtimes(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_runs_without_a_selected_file_are_summarised_and_an_incomplete_pair_left_out(tmp_path):
    """Mid-study: a pair whose runs are complete but whose select job has not run is selected
    in memory for the summary (no selected file is written: the select job's output stays the
    select job's); a pair with fewer splits than the others (a killed training) is left out;
    nothing in runs/ or selected/ changes."""
    results = tmp_path / "results"
    study = [SyntheticDataset("small_a", 1_500, 2), SyntheticDataset("large_c", 12_000, 2)]
    write_synthetic_results(results, study, MODELS, 2, n_configs=2, epochs=EPOCHS)
    for model in MODELS:
        for ds in study:
            runs = sorted((results / "runs" / model / ds.name).glob("split*.parquet"))
            write_selected(runs, results / "selected" / model / f"{ds.name}.parquet")
    write_synthetic_results(results, [SyntheticDataset("extra_d", 2_000, 2)], ["mlp"], 2,
                            n_configs=2, epochs=EPOCHS)
    write_synthetic_results(results, [SyntheticDataset("partial_e", 2_000, 2)], ["mlp"], 1,
                            n_configs=2, epochs=EPOCHS)
    before = _mtimes(results)

    selected, counts = collect_selected(results, jobs=1)
    frames, _ = summary_frames(results, selected)

    assert counts == {"pairs": len(MODELS) * len(study) + 1, "reused": len(MODELS) * len(study),
                      "recomputed": 1}
    assert set(frames["dataset_means"]["dataset"]) == {"small_a", "large_c", "extra_d"}
    assert _mtimes(results) == before
    assert not (results / "selected" / "mlp" / "extra_d.parquet").exists()
