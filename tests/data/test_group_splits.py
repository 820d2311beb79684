"""Splits by groups (config ``split_by_groups``, docs/design.md §3): the rows' groups travel from
the raw data through the filter beside the features (never one of them), a split by groups puts
no group in two parts at 64/16/20 of the groups, and without the setting (or without groups)
every split is the random row split it always was, to the byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabbench.core.io import write_json_atomic
from tabbench.data.dataset import GROUP_COLUMN, LABEL_COLUMN, ROLES, load_split_data
from tabbench.data.errors import DataError
from tabbench.data.filtering import FilterParams, filter_dataset
from tabbench.data.pipeline import filter_step, report_notes, split_step
from tabbench.data.raw import make_raw, write_raw
from tabbench.data.splits import make_splits, split_sizes


def grouped_frame(n_groups: int = 120,
                  seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Features, labels and groups of unequal sizes (5 to 40 rows), rows of a group scattered
    over the table, and a label that depends on the group (as a protein's homologs do)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 41, size=n_groups)
    groups = np.repeat(np.array([f"g{k}" for k in range(n_groups)], dtype=object), sizes)
    order = rng.permutation(len(groups))
    groups = groups[order]
    effect = dict(zip([f"g{k}" for k in range(n_groups)], rng.normal(size=n_groups), strict=True))
    x = rng.normal(size=len(groups)) + np.array([effect[g] for g in groups])
    features = pd.DataFrame({"x": x, "noise": rng.normal(size=len(groups))})
    labels = (x + rng.normal(size=len(groups)) > 0).astype(int)
    return features, labels, groups


def random_row_splits(n: int, n_splits: int, seed: int) -> pd.DataFrame:
    """The random 64/16/20 row splits written out independently of tabbench.data.splits: split
    i from ``default_rng(seed + i).permutation(n)``, test first, then validation."""
    frames = []
    for i in range(n_splits):
        perm = np.random.default_rng(seed + i).permutation(n)
        n_test = int(round(0.2 * n))
        n_val = int(round(0.2 * (n - n_test)))
        parts = {"test": perm[:n_test], "val": perm[n_test:n_test + n_val],
                 "train": perm[n_test + n_val:]}
        for role in ROLES:
            rows = np.sort(parts[role]).astype(np.int64)
            frames.append(pd.DataFrame({"split": np.full(len(rows), i, dtype=np.int64),
                                        "row": rows, "role": role}))
    return pd.concat(frames, ignore_index=True)


def roles_of_groups(table: pd.DataFrame, groups: np.ndarray, split: int) -> dict[str, set]:
    mine = table[table["split"] == split]
    return {role: set(groups[mine.loc[mine["role"] == role, "row"].to_numpy()])
            for role in ROLES}


def test_no_group_is_in_two_parts_of_any_split_and_every_row_is_in_one():
    _, y, groups = grouped_frame()
    table = make_splits(y, 5, seed=0, groups=groups)
    for i in range(5):
        mine = table[table["split"] == i]
        assert sorted(mine["row"]) == list(range(len(y)))
        parts = roles_of_groups(table, groups, i)
        assert not parts["train"] & parts["val"]
        assert not parts["train"] & parts["test"]
        assert not parts["val"] & parts["test"]


def test_64_16_20_of_the_groups_and_near_it_of_the_rows():
    _, y, groups = grouped_frame(n_groups=400)
    n_groups = len(set(groups))
    table = make_splits(y, 5, seed=3, groups=groups)
    for i in range(5):
        parts = roles_of_groups(table, groups, i)
        assert tuple(len(parts[r]) for r in ROLES) == split_sizes(n_groups)
        share = table[table["split"] == i]["role"].value_counts(normalize=True)
        for role, expected in (("train", 0.64), ("val", 0.16), ("test", 0.20)):
            assert abs(share[role] - expected) < 0.03, (i, role, share[role])


def test_split_i_permutes_the_sorted_groups_with_seed_plus_i():
    _, y, groups = grouped_frame(n_groups=50)
    table = make_splits(y, 3, seed=7, groups=groups)
    ordered = np.array(sorted(set(groups)), dtype=object)
    n_train, n_val, n_test = split_sizes(len(ordered))
    for i in range(3):
        perm = ordered[np.random.default_rng(7 + i).permutation(len(ordered))]
        expected = {"test": set(perm[:n_test]), "val": set(perm[n_test:n_test + n_val]),
                    "train": set(perm[n_test + n_val:])}
        assert roles_of_groups(table, groups, i) == expected
    # the rows' order does not matter, only which group each row belongs to
    shuffled = np.random.default_rng(1).permutation(len(y))
    again = make_splits(y[shuffled], 3, seed=7, groups=groups[shuffled])
    for i in range(3):
        assert roles_of_groups(again, groups[shuffled], i) == roles_of_groups(table, groups, i)


def test_too_few_groups_and_stratified_groups_are_clear_errors():
    y = np.zeros(100)
    with pytest.raises(DataError, match="3 groups are too few"):
        make_splits(y[:75], 1, groups=np.repeat(["a", "b", "c"], 25))
    with pytest.raises(DataError, match="cannot be stratified"):
        make_splits(y, 1, stratify=True, groups=np.repeat(np.arange(20), 5))


def test_without_groups_the_splits_are_the_random_row_splits():
    y = np.zeros(1213)
    pd.testing.assert_frame_equal(make_splits(y, 4, seed=2), random_row_splits(1213, 4, 2))
    pd.testing.assert_frame_equal(make_splits(y, 4, seed=2, groups=None),
                                  random_row_splits(1213, 4, 2))


def _processed(tmp_path: Path, name: str, with_groups: bool) -> Path:
    """A synthetic grouped dataset through fetch's raw files and the filter step."""
    features, labels, groups = grouped_frame()
    features.loc[features.index[::17], "noise"] = np.nan  # rows the filter drops
    raw = make_raw(features, None, labels, name, {"source": "bundled"},
                   groups=groups if with_groups else None)
    raw_parquet, raw_json = tmp_path / f"raw_{name}.parquet", tmp_path / f"raw_{name}.json"
    write_raw(raw, raw_parquet)
    write_json_atomic({"dataset": name, "status": "ok", "source": "bundled",
                       "num_columns": raw.num_columns, "cat_columns": raw.cat_columns,
                       "origin": raw.origin}, raw_json)
    out = tmp_path / f"{name}.parquet"
    filter_step(raw_parquet, raw_json, FilterParams(), out, out.with_suffix(".json"))
    return out


def test_groups_follow_their_rows_through_the_filter_and_stay_out_of_the_features(tmp_path):
    features, labels, groups = grouped_frame()
    features.loc[features.index[::17], "noise"] = np.nan
    raw = make_raw(features, None, labels, "toy", groups=groups)
    outcome = filter_dataset(raw, FilterParams(max_rows=1500), "toy")
    kept = np.flatnonzero(features["noise"].notna().to_numpy())
    subsample = np.random.default_rng(0).permutation(len(kept))[:1500]
    assert outcome.groups.tolist() == groups[kept][subsample].tolist()
    assert GROUP_COLUMN not in outcome.frame.columns
    assert outcome.report["n_groups"] == len(set(groups[kept][subsample]))

    processed = _processed(tmp_path, "toy", with_groups=True)
    frame = pd.read_parquet(processed)
    assert list(frame.columns) == ["x", "noise", LABEL_COLUMN, GROUP_COLUMN]
    assert frame[GROUP_COLUMN].tolist() == groups[features["noise"].notna().to_numpy()].tolist()
    make_splits(frame[LABEL_COLUMN].to_numpy(), 1).to_parquet(tmp_path / "s.parquet")
    data = load_split_data(processed, tmp_path / "s.parquet", 0)
    assert list(data.X_train.columns) == ["x", "noise"]
    report = json.loads(processed.with_suffix(".json").read_text())
    assert "rows in 120 groups" in report_notes(report)


def test_a_row_without_a_group_or_a_feature_named_like_the_groups_is_a_data_error():
    features, labels, groups = grouped_frame()
    groups[3] = None
    with pytest.raises(DataError, match="group column has 1 missing value"):
        make_raw(features, None, labels, "toy", groups=groups)
    with pytest.raises(DataError, match="'__group__', a reserved column"):
        make_raw(features.rename(columns={"x": GROUP_COLUMN}), None, labels, "toy")


def test_the_leakage_check_never_sees_the_groups():
    """Groups that name the label exactly would be flagged as a leak if they were a column."""
    features, labels, _ = grouped_frame()
    groups = np.where(labels == 1, "positive", "negative").astype(object)
    outcome = filter_dataset(make_raw(features, None, labels, "toy", groups=groups),
                             FilterParams(), "toy")
    assert outcome.report["kept"] and outcome.report["leakage"]["status"] == "ok"
    assert outcome.report["leakage"]["column"] in ("x", "noise")
    as_feature = make_raw(features, pd.DataFrame({"group": groups}), labels, "toy")
    flagged = filter_dataset(as_feature, FilterParams(), "toy")
    assert flagged.report["leakage"]["status"] == "flagged"


def test_a_dataset_without_groups_is_processed_and_split_as_before(tmp_path):
    plain = _processed(tmp_path, "plain", with_groups=False)
    grouped = _processed(tmp_path, "grouped", with_groups=True)
    assert GROUP_COLUMN not in pd.read_parquet(plain).columns
    report = json.loads(plain.with_suffix(".json").read_text())
    assert "n_groups" not in report and "groups" not in report["origin"]
    assert "groups" not in report_notes(report)
    # the grouped dataset's processed data is the plain one's plus the group column
    pd.testing.assert_frame_equal(pd.read_parquet(grouped).drop(columns=GROUP_COLUMN),
                                  pd.read_parquet(plain))
    n = len(pd.read_parquet(plain))
    expected = random_row_splits(n, 3, 0)
    written = {}
    for name, path in (("plain", plain), ("grouped", grouped)):
        for by_groups in (False, True):
            if name == "grouped" and by_groups:
                continue
            out = tmp_path / f"split_{name}_{by_groups}.parquet"
            split_step(path, out, 3, seed=0, split_by_groups=by_groups)
            pd.testing.assert_frame_equal(pd.read_parquet(out), expected)
            written[name, by_groups] = out.read_bytes()
    assert len(set(written.values())) == 1  # byte for byte the same file
    out = tmp_path / "split_grouped_True.parquet"
    table = split_step(grouped, out, 3, seed=0, split_by_groups=True)
    groups = pd.read_parquet(grouped)[GROUP_COLUMN].to_numpy()
    for i in range(3):
        parts = roles_of_groups(table, groups, i)
        assert not (parts["train"] & parts["test"] or parts["val"] & parts["test"]
                    or parts["train"] & parts["val"])


def test_a_dataset_processed_before_groups_were_kept_is_not_split_by_rows_silently(tmp_path):
    """A data folder made before the groups were kept lacks them; asked to split by groups, a
    dataset whose source declares them is an error that says what to do."""
    processed = _processed(tmp_path, "old", with_groups=False)
    report = json.loads(processed.with_suffix(".json").read_text())
    report["origin"]["groups"] = "person"
    write_json_atomic(report, processed.with_suffix(".json"))
    with pytest.raises(DataError, match="'person'.*fetched before groups were kept"):
        split_step(processed, tmp_path / "s.parquet", 1, split_by_groups=True)
    split_step(processed, tmp_path / "s.parquet", 1, split_by_groups=False)


def test_the_cli_takes_the_setting(tmp_path):
    from tabbench import cli

    grouped = _processed(tmp_path, "grouped", with_groups=True)
    groups = pd.read_parquet(grouped)[GROUP_COLUMN].to_numpy()
    for flag in ("false", "true"):
        out = tmp_path / f"{flag}.parquet"
        assert cli.main(["data", "split", "--processed", str(grouped), "--out", str(out),
                         "--n-splits", "2", "--split-by-groups", flag]) == 0
        parts = roles_of_groups(pd.read_parquet(out), groups, 1)
        assert bool(parts["train"] & parts["test"]) == (flag == "false")
    default = tmp_path / "default.parquet"
    cli.main(["data", "split", "--processed", str(grouped), "--out", str(default),
              "--n-splits", "2"])
    assert default.read_bytes() == (tmp_path / "false.parquet").read_bytes()
