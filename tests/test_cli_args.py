from __future__ import annotations

import argparse

import pytest

from tabbench.cli import main
from tabbench.cli.args import boolean, optional_str, results_folder


@pytest.mark.parametrize(
    ("text", "value"), [("True", True), ("yes", True), ("0", False), ("false", False)]
)
def test_boolean_accepts_what_snakemake_renders(text: str, value: bool) -> None:
    assert boolean(text) is value


def test_boolean_rejects_other_text() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected true/false"):
        boolean("maybe")


def test_null_config_values_become_none() -> None:
    assert optional_str("None") is None and optional_str("") is None
    assert optional_str("/tmp/locks") == "/tmp/locks"


def test_results_folder_refuses_a_missing_folder(tmp_path) -> None:
    assert results_folder(str(tmp_path)) == tmp_path
    with pytest.raises(argparse.ArgumentTypeError, match="no such results folder"):
        results_folder(str(tmp_path / "typo"))


@pytest.mark.parametrize("command", [
    ["claims-table", "--page", "PAGE"], ["figures", "--out", "OUT"], ["publish", "--out", "OUT"],
    ["status"], ["diagnose", "--out", "OUT"],
])
def test_a_mistyped_results_folder_is_refused_before_anything_is_written(
        tmp_path, capsys, command) -> None:
    # a missing --results once read as an empty study: claims-table --page rewrote every table
    # of the page as "no pairs" and exited 0
    page = tmp_path / "page.md"
    page.write_text("<!-- generated table: claims; -->\n| a |\n"
                    "<!-- end of generated table: claims -->\n")
    before = page.read_text()
    argv = [str(page) if a == "PAGE" else str(tmp_path / "out") if a == "OUT" else a
            for a in command] + ["--results", str(tmp_path / "typo")]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "no such results folder" in capsys.readouterr().err
    assert page.read_text() == before and not (tmp_path / "out").exists()
