"""Fetching across sources: order of preference, and the report when no source has a dataset."""

from __future__ import annotations

import pandas as pd
import pytest

from tabbench.data.sources import SourceOptions, fetch


def test_first_source_that_has_it_wins(fx, tmp_path):
    fx.make_talent_folder(tmp_path / "talent", "toy")
    fx.make_demo_dir(tmp_path / "demo", {"toy": fx.synthetic_frame(300)})
    opts = SourceOptions(talent_dir=tmp_path / "talent", demo_dir=tmp_path / "demo")
    assert fetch("toy", ["talent", "bundled"], opts).source == "talent"
    assert fetch("toy", ["bundled", "talent"], opts).source == "bundled"


def test_falls_through_to_next_source_with_reasons(fx, tmp_path):
    fx.make_demo_dir(tmp_path / "demo", {"toy": fx.synthetic_frame(300)})
    opts = SourceOptions(talent_dir=tmp_path / "talent", demo_dir=tmp_path / "demo")
    (tmp_path / "talent").mkdir()
    r = fetch("toy", ["talent", "bundled"], opts)
    assert r.source == "bundled" and r.raw.n_rows == 300
    assert [a["ok"] for a in r.attempts] == [False, True]
    assert "no folder 'toy'" in r.attempts[0]["reason"]


def test_unavailable_message_names_dataset_and_every_source(fx, tmp_path):
    opts = SourceOptions(
        talent_dir=None,
        openml_cache_dir=tmp_path,
        demo_dir=tmp_path,
        openml_server=fx.CLOSED_SERVER,
    )
    r = fetch("golf_play_dataset_extended", ["talent", "openml", "bundled"], opts)
    assert r.raw is None
    msg = r.message()
    assert msg.startswith("golf_play_dataset_extended: unavailable")
    for src, why in (
        ("talent", "no talent_dir"),
        ("openml", "no OpenML id"),
        ("bundled", "no manifest"),
    ):
        assert f"{src}: {why}" in msg


def test_a_bug_in_a_source_fails_loudly_instead_of_marking_the_dataset_unavailable(
    fx, tmp_path, monkeypatch
):
    """An unexpected exception is a bug (or an incompatible dependency): falling back to the
    next source would hide it behind a dataset quietly recorded as unavailable."""
    from tabbench.data.sources import talent

    def boom(name, options):
        raise KeyError("bug in a source")

    monkeypatch.setattr(talent, "load", boom)
    fx.make_demo_dir(tmp_path, {"toy": fx.synthetic_frame(300)})
    with pytest.raises(KeyError, match="bug in a source") as info:
        fetch("toy", ["talent", "bundled"], SourceOptions(demo_dir=tmp_path))
    assert "unexpected error in source 'talent' while fetching 'toy'" in str(info.value.__notes__)


def test_suite_names(fx, tmp_path):
    from tabbench.data.manifest import suite_names

    fx.make_demo_dir(tmp_path, {"b": fx.synthetic_frame(10), "a": fx.synthetic_frame(10)})
    assert suite_names("demo", tmp_path) == ["b", "a"]
    names = suite_names("ye2024", tmp_path)
    assert len(names) == 200 and len(set(names)) == 200
    assert suite_names(["x", "y", "x"], tmp_path) == ["x", "y"]
    assert isinstance(pd.read_csv(tmp_path / "MANIFEST.csv"), pd.DataFrame)
