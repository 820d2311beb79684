"""benchmarks/study_cost.py: the presets' datasets and every measured model costed (the log parser
and the fit it imports are tested in test_cost_model.py)."""

from pathlib import Path

import pandas as pd
from fixtures.scripts import load_script

REPO = Path(__file__).resolve().parents[2]
study_cost = load_script("benchmarks/study_cost.py")


def test_paper_datasets_drop_what_the_paper_drops():
    data = study_cost.paper_datasets()
    assert len(data) == 195
    assert "Pima_Indians_Diabetes_Database" not in set(data["dataset"])
    assert data["n_train"].max() == int(100_000 * 0.64)


def test_bundled_datasets_are_the_shipped_ones_at_full_size():
    data = study_cost.bundled_datasets()
    manifest = pd.read_csv(REPO / "data" / "demo" / "MANIFEST.csv")
    assert sorted(data["dataset"]) == sorted(manifest["name"])
    adult = data.set_index("dataset").loc["adult"]
    rows = int(manifest.set_index("name").loc["adult", "rows"])
    assert adult["n_train"] == int(min(rows, 100_000) * 0.64)  # no demo cap
    assert (data["n_classes"] >= 2).all() and (data["n_features"] >= 1).all()


def _runs(folder, model, dataset, n_train, epochs=3, seconds=0.5):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / "runs" / model / dataset / "split0.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"config": c, "epoch": e, "fit_seconds": seconds * e * n_train / 1000,
             "n_train": n_train,
             "n_val": 250, "n_test": 300, "n_classes": 2}
            for c in (0, 1) for e in range(1, epochs + 1)]
    pq.write_table(pa.Table.from_pylist(rows), path)


def test_every_measured_model_is_costed_or_named_as_not_costed(tmp_path, capsys):
    """LightGBM runs are costed (epochs from its registration, no KeyError); a model measured
    but not of the preset, or not registered here (a plugin), gets one line, not a
    traceback."""
    for dataset, n_train in (("kc1", 1300), ("segment", 1500), ("pc1", 700)):
        for model in ("xgboost", "lightgbm", "someones_plugin"):
            _runs(tmp_path, model, dataset, n_train)
    assert study_cost.main(["--results", str(tmp_path), "--preset", "bundled"]) == 0
    out = capsys.readouterr().out
    assert "lightgbm: measured" in out and "not one of the bundled preset's models" in out
    assert "someones_plugin: measured" in out and "not registered here" in out
    assert "(not in " in out and "mlp" in out  # the preset's networks, not measured
    coefs = study_cost.fit_costs(study_cost.measurements(tmp_path))
    pred = study_cost.predict(coefs, study_cost.bundled_datasets(), study_cost.GPU_MS_PER_BATCH,
                              models=["xgboost", "lightgbm"])
    assert set(pred["model"]) == {"xgboost", "lightgbm"}
    assert (pred["cpu_core_hours"] > 0).all() and pred["gpu_hours"].isna().all()


def test_a_machine_without_a_gpu_gets_the_cpu_only_wall_and_no_gpu_line(tmp_path, capsys):
    for dataset, n_train in (("kc1", 1300), ("segment", 1500), ("pc1", 700)):
        _runs(tmp_path, "xgboost", dataset, n_train)
    assert study_cost.main(["--results", str(tmp_path), "--preset", "bundled", "--cores", "8",
                            "--gpus", "0"]) == 0
    out = capsys.readouterr().out
    assert "on 8 cores without a GPU" in out
    assert "GPU part" not in out and "GPUs:" not in out
