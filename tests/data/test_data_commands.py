"""The ``tabbench data`` steps end to end through the CLI parser, including bad inputs: each
gives a recorded status (or a clear error), never a crash of the whole run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tabbench import cli
from tabbench.data.dataset import LABEL_COLUMN, load_split_data
from tabbench.data.errors import DataError
from tabbench.data.pipeline import split_step


def run(*argv: str) -> int:
    """The real ``tabbench`` entry point, so a subcommand missing from it fails here too."""
    return cli.main(list(argv))


def fetch(tmp_path, name, *extra):
    return run(
        "data",
        "fetch",
        "--dataset",
        name,
        "--out-parquet",
        str(tmp_path / f"raw/{name}.parquet"),
        "--out-json",
        str(tmp_path / f"raw/{name}.json"),
        *extra,
    )


def filt(tmp_path, name, *extra):
    return run(
        "data",
        "filter",
        "--raw-parquet",
        str(tmp_path / f"raw/{name}.parquet"),
        "--raw-json",
        str(tmp_path / f"raw/{name}.json"),
        "--out-parquet",
        str(tmp_path / f"processed/{name}.parquet"),
        "--out-json",
        str(tmp_path / f"processed/{name}.json"),
        *extra,
    )


def report(tmp_path, name):
    return json.loads((tmp_path / f"processed/{name}.json").read_text())


def test_fetch_filter_split_collect(fx, tmp_path):
    fx.make_talent_folder(
        tmp_path / "talent", "toy", sizes=(900, 200, 300), num_missing=0.01, cat_missing=0.05
    )
    fx.make_talent_folder(tmp_path / "talent", "tiny", sizes=(300, 100, 100))
    for name in ("toy", "tiny", "golf_play_dataset_extended"):
        assert (
            fetch(
                tmp_path,
                name,
                "--sources",
                "talent",
                "bundled",
                "--talent-dir",
                str(tmp_path / "talent"),
                "--demo-dir",
                str(tmp_path),
            )
            == 0
        )
        assert filt(tmp_path, name) == 0
    assert report(tmp_path, "toy")["status"] == "kept"
    assert report(tmp_path, "tiny")["status"] == "dropped"
    assert "500 rows < min_rows 1000" in report(tmp_path, "tiny")["reason"]
    golf = report(tmp_path, "golf_play_dataset_extended")
    assert golf["status"] == "unavailable" and "talent: no folder" in golf["reason"]
    assert pd.read_parquet(tmp_path / "processed/tiny.parquet").empty  # placeholder

    names = ["toy", "tiny", "golf_play_dataset_extended"]
    assert (
        run(
            "data",
            "collect",
            "--processed-json",
            *[str(tmp_path / f"processed/{n}.json") for n in names],
            "--raw-json",
            *[str(tmp_path / f"raw/{n}.json") for n in names],
            "--out-kept",
            str(tmp_path / "kept.txt"),
            "--out-summary",
            str(tmp_path / "datasets.csv"),
            "--out-unavailable",
            str(tmp_path / "unavailable.csv"),
        )
        == 0
    )
    assert (tmp_path / "kept.txt").read_text() == "toy\n"
    unav = pd.read_csv(tmp_path / "unavailable.csv")
    assert unav["dataset"].tolist() == ["golf_play_dataset_extended"]
    assert unav["sources_tried"].tolist() == ["talent;bundled"]
    summary = pd.read_csv(tmp_path / "datasets.csv")
    assert summary["status"].tolist() == ["kept", "dropped", "unavailable"]

    assert (
        run(
            "data",
            "split",
            "--processed",
            str(tmp_path / "processed/toy.parquet"),
            "--out",
            str(tmp_path / "splits/toy.parquet"),
            "--n-splits",
            "2",
            "--stratify",
            "false",
        )
        == 0
    )
    sd = load_split_data(tmp_path / "processed/toy.parquet", tmp_path / "splits/toy.parquet", 1)
    n = report(tmp_path, "toy")["rows_final"]
    assert len(sd.y_train) + len(sd.y_val) + len(sd.y_test) == n
    assert sd.cat_columns == ["C0", "C1"]


def write_raw(fx, tmp_path, name, df):
    (tmp_path / "raw").mkdir(exist_ok=True)
    fx.write_raw_frame(
        tmp_path / f"raw/{name}.parquet", tmp_path / f"raw/{name}.json", df, "y", name
    )


@pytest.mark.parametrize(
    "name,frame,reason",
    [
        (
            "empty",
            pd.DataFrame({"x": pd.Series([], dtype=float), "y": pd.Series([], dtype=int)}),
            "empty: no rows",
        ),
        ("single", pd.DataFrame({"x": np.zeros(1500), "y": np.ones(1500, int)}), "1 class(es)"),
        (
            "many",
            pd.DataFrame({"x": np.zeros(2020), "y": np.arange(2020) % 101}),
            "101 classes > max_classes 100",
        ),
        (
            "allnan",
            pd.DataFrame({"x": np.full(1200, np.nan), "y": np.arange(1200) % 2}),
            "empty: no feature columns left",
        ),
    ],
)
def test_bad_inputs_are_recorded_drops(fx, tmp_path, name, frame, reason):
    write_raw(fx, tmp_path, name, frame)
    assert filt(tmp_path, name) == 0
    r = report(tmp_path, name)
    assert r["status"] == "dropped" and reason in r["reason"]


def test_inf_and_string_labels_through_the_cli(fx, tmp_path):
    n = 1200
    x = np.arange(n, dtype=float)
    x[:100] = np.inf
    y = np.array(["good ", "bad"] * (n // 2), dtype=object)
    write_raw(fx, tmp_path, "d", pd.DataFrame({"x": x, "y": y}))
    assert filt(tmp_path, "d") == 0
    r = report(tmp_path, "d")
    assert r["kept"] and r["n_rows_with_inf"] == 100 and r["rows_final"] == 1100
    assert r["class_names"] == ["bad", "good"]


@pytest.mark.parametrize("damage", ["truncate", "empty"])
def test_corrupted_raw_parquet_is_a_recorded_drop(fx, tmp_path, damage):
    write_raw(fx, tmp_path, "d", pd.DataFrame({"x": np.zeros(1200), "y": np.arange(1200) % 2}))
    path = tmp_path / "raw/d.parquet"
    path.write_bytes(path.read_bytes()[:100] if damage == "truncate" else b"")
    assert filt(tmp_path, "d") == 0
    r = report(tmp_path, "d")
    assert r["status"] == "dropped" and r["reason"].startswith("unusable data: d: cannot read raw")


def test_bad_numeric_column_from_talent_is_reported(fx, tmp_path):
    folder = fx.make_talent_folder(tmp_path / "talent", "bad")
    N = np.load(folder / "N_train.npy").astype(object)
    N[0, 0] = "abc"
    np.save(folder / "N_train.npy", N, allow_pickle=True)
    assert (
        fetch(tmp_path, "bad", "--sources", "talent", "--talent-dir", str(tmp_path / "talent")) == 0
    )
    meta = json.loads((tmp_path / "raw/bad.json").read_text())
    assert meta["status"] == "unavailable"
    assert "numerical column 'N0' has 1 non-numeric value(s), e.g. 'abc'" in meta["message"]


def test_split_of_a_dropped_dataset_is_a_clear_error(fx, tmp_path, capsys):
    write_raw(fx, tmp_path, "d", pd.DataFrame({"x": np.zeros(10), "y": np.arange(10) % 2}))
    filt(tmp_path, "d")
    capsys.readouterr()  # what the filter said
    args = ["data", "split", "--processed", str(tmp_path / "processed/d.parquet"), "--out",
            str(tmp_path / "s.parquet"), "--n-splits", "1"]
    with pytest.raises(DataError, match=r"d was not kept \(the filter dropped it: "):
        split_step(tmp_path / "processed/d.parquet", tmp_path / "s.parquet", 1)
    # the command says so in one line (no traceback) and exits 2
    assert run(*args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tabbench data: error: d was not kept (the filter dropped it: ")
    assert len(err.splitlines()) == 1 and not (tmp_path / "s.parquet").exists()


def test_processed_label_column_contract(fx, tmp_path):
    write_raw(fx, tmp_path, "d", pd.DataFrame({"x": np.zeros(1200), "y": np.arange(1200) % 3}))
    filt(tmp_path, "d")
    df = pd.read_parquet(tmp_path / "processed/d.parquet")
    assert df[LABEL_COLUMN].dtype == np.int64 and set(df[LABEL_COLUMN]) == {0, 1, 2}


def test_suite_command_lists_names(fx, tmp_path, capsys):
    fx.make_demo_dir(tmp_path, {"one": fx.synthetic_frame(10), "two": fx.synthetic_frame(10)})
    assert run("data", "suite", "demo", "--demo-dir", str(tmp_path)) == 0
    assert capsys.readouterr().out.split() == ["one", "two"]
    assert run("data", "suite", "ye2024") == 0
    assert len(capsys.readouterr().out.split()) == 200
    assert run("data", "suite", "a", "b") == 0
    assert capsys.readouterr().out.split() == ["a", "b"]


def test_fetch_message_lists_failed_sources_before_the_winner(fx, tmp_path, capsys):
    fx.make_demo_dir(tmp_path / "demo", {"toy": fx.synthetic_frame(300)})
    assert fetch(tmp_path, "toy", "--sources", "talent", "bundled", "--demo-dir",
                 str(tmp_path / "demo")) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "toy: from bundled (300 rows) after talent: no talent_dir configured" in err


def _leaky_frames() -> dict[str, pd.DataFrame]:
    """An honest dataset, one whose label is the parity of a code, one with a 1 %-noisy copy
    of a 3-class label (a near miss)."""
    rng = np.random.default_rng(0)
    n = 20_000
    x = rng.normal(size=n)
    code = rng.integers(0, 30, size=n)
    three = rng.integers(0, 3, size=n)
    copy = np.where(rng.uniform(size=n) < 0.01, rng.integers(0, 3, size=n), three)
    return {
        "honest": pd.DataFrame({"x": x, "z": rng.normal(size=n),
                                "y": (x + rng.normal(size=n) > 0).astype(int)}),
        "parity": pd.DataFrame({"code": code.astype(float), "x": x, "y": code % 2}),
        "noisy_copy": pd.DataFrame({"copy": copy.astype(float), "x": x, "y": three}),
    }


@pytest.mark.parametrize("mode", ["drop", "report"])
def test_flagged_datasets_and_near_misses_are_named_in_either_mode(fx, tmp_path, capsys, mode):
    frames = _leaky_frames()
    for name, frame in frames.items():
        write_raw(fx, tmp_path, name, frame)
        assert filt(tmp_path, name, "--leakage", mode) == 0
    assert report(tmp_path, "parity")["leakage"]["status"] == "flagged"
    assert report(tmp_path, "parity")["kept"] is (mode == "report")
    assert report(tmp_path, "noisy_copy")["leakage"]["status"] == "near-miss"
    assert report(tmp_path, "noisy_copy")["kept"]
    assert report(tmp_path, "honest")["leakage"]["status"] == "ok"
    filter_log = capsys.readouterr().err
    assert "noisy_copy: WARNING: leakage check near-miss: column 'copy'" in filter_log

    names = list(frames)
    assert run("data", "collect",
               "--processed-json", *[str(tmp_path / f"processed/{n}.json") for n in names],
               "--raw-json", *[str(tmp_path / f"raw/{n}.json") for n in names],
               "--out-kept", str(tmp_path / "kept.txt"),
               "--out-summary", str(tmp_path / "datasets.csv"),
               "--out-unavailable", str(tmp_path / "unavailable.csv"),
               "--out-summary-line", str(tmp_path / "summary.txt")) == 0
    lines = (tmp_path / "summary.txt").read_text().splitlines()
    assert len(lines) == 2 and lines[0].startswith("data: 3 datasets: ")
    leak = lines[1]
    assert leak.startswith("WARNING: the leakage check"), leak
    group = "dropped: parity" if mode == "drop" else "flagged, kept (leakage: report): parity"
    assert f"{group} (column 'code', 1.0000 held out)" in leak, leak
    assert "near misses (>= 99 %, kept): noisy_copy (column 'copy', 0.99" in leak, leak
    assert "honest" not in leak
    summary = pd.read_csv(tmp_path / "datasets.csv").set_index("dataset")
    assert summary.loc["noisy_copy", "leakage"] == "near-miss"
    assert summary.loc["parity", ["leakage", "leak_column", "leak_rule"]].tolist() == [
        "flagged", "code", "values"]


def test_nothing_found_adds_no_leakage_line(fx, tmp_path):
    write_raw(fx, tmp_path, "honest", _leaky_frames()["honest"])
    assert filt(tmp_path, "honest") == 0
    assert run("data", "collect", "--processed-json", str(tmp_path / "processed/honest.json"),
               "--raw-json", str(tmp_path / "raw/honest.json"),
               "--out-kept", str(tmp_path / "kept.txt"),
               "--out-summary", str(tmp_path / "datasets.csv"),
               "--out-unavailable", str(tmp_path / "unavailable.csv"),
               "--out-summary-line", str(tmp_path / "summary.txt")) == 0
    assert (tmp_path / "summary.txt").read_text().splitlines() == [
        "data: 1 datasets: 1 kept, 0 dropped by filtering, 0 unavailable"]


def test_max_rows_none_keeps_every_row_and_a_number_caps(fx, tmp_path):
    """The filter command as the data rule gives it the row cap: ``--max-rows None`` (config
    ``max_rows: unlimited``) keeps every row, a number subsamples to it."""
    fx.make_demo_dir(tmp_path / "demo", {"big": fx.synthetic_frame(2_000)})
    assert fetch(tmp_path, "big", "--sources", "bundled", "--demo-dir",
                 str(tmp_path / "demo")) == 0
    for cap, rows in (("None", 2_000), ("1500", 1_500)):
        assert filt(tmp_path, "big", "--max-rows", cap, "--min-rows", "500") == 0
        assert len(pd.read_parquet(tmp_path / "processed/big.parquet")) == rows, cap
