from __future__ import annotations

import argparse

import pytest

from tabbench.cli import main
from tabbench.cli.args import boolean, non_negative_int, optional_str, results_folder
from tabbench.study.specs import TrainTarget


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
    ["status"], ["diagnose", "--out", "OUT"], ["restop"], ["retry-failed"],
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


def test_a_negative_number_of_configs_ends_in_one_line_before_anything_is_written(
        tmp_path, capsys) -> None:
    """``--n-configs -1`` would train configs 0..-1, none, and write an empty runs file."""
    out = tmp_path / "runs.parquet"
    with pytest.raises(SystemExit) as e:
        main(["train", "--model", "xgboost", "--dataset", "toy", "--split", "0",
              "--processed", str(tmp_path / "p.parquet"), "--splits", str(tmp_path / "s.parquet"),
              "--out", str(out), "--n-configs", "-1", "--epochs", "xgboost_default=2",
              "xgboost_tuned=2", "--seed", "0"])
    assert e.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == ("tabbench train: error: argument --n-configs: expected an integer >= 0, "
                    "got -1"), last
    assert list(tmp_path.iterdir()) == []


def test_non_negative_int_takes_zero_and_refuses_text() -> None:
    assert non_negative_int("0") == 0 and non_negative_int("30") == 30
    with pytest.raises(argparse.ArgumentTypeError, match="expected an integer >= 0"):
        non_negative_int("many")


def test_a_train_target_with_a_negative_number_of_configs_is_refused() -> None:
    with pytest.raises(ValueError, match="xgboost/toy/split0: n_configs must be >= 0, got -1"):
        TrainTarget("xgboost", "toy", 0, -1, {"xgboost_default": 2}, 0)
    assert TrainTarget("xgboost", "toy", 0, 0, {"xgboost_default": 2}, 0).n_configs == 0


def _subparsers(parser: argparse.ArgumentParser):
    """Every (command, parser) under ``parser``, nested ones (``data fetch``) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, deeper in _subparsers(sub):
                    yield f"{name} {inner}", deeper


def test_every_results_argument_is_the_shared_one() -> None:
    """``--results`` is declared once (cli.args.add_results): every subcommand that takes it
    refuses a missing folder alike and says the same about it."""
    from tabbench.cli import build_parser
    from tabbench.cli.args import RESULTS_HELP

    taking = {}
    for name, sub in _subparsers(build_parser()):
        for action in sub._actions:
            if "--results" in action.option_strings:
                taking[name] = action
    assert {"figures", "stopping-rules", "claims-table", "publish", "diagnose", "status",
            "restop", "retry-failed"} <= set(taking)
    for name, action in taking.items():
        assert action.type is results_folder, name
        assert action.default is None and action.metavar == "DIR", name
        assert action.help.startswith(RESULTS_HELP), name


def test_every_jobs_argument_refuses_what_is_no_number_of_workers() -> None:
    from tabbench.cli import build_parser
    from tabbench.cli.args import positive_int

    taking = {name: a for name, sub in _subparsers(build_parser()) for a in sub._actions
              if "--jobs" in a.option_strings}
    assert {"figures", "stopping-rules", "claims-table", "diagnose", "restop"} <= set(taking)
    assert all(a.type is positive_int and a.metavar == "N" for a in taking.values())


def test_only_the_known_errors_end_in_one_line(monkeypatch, capsys) -> None:
    """A damaged file, a folder's settings, a dataset or a figures setting end a command in one
    line with its exit code; any other error keeps its traceback (a bug must show where)."""
    from tabbench import cli
    from tabbench.core.io import UnreadableFileError
    from tabbench.data.errors import DataError
    from tabbench.settings.folder import FolderError
    from tabbench.summary.view import ViewError

    assert cli.one_line_exit_code(UnreadableFileError("f.parquet", "truncated")) == 1
    assert [cli.one_line_exit_code(e) for e in (FolderError("x"), DataError("x"),
                                                ViewError("x"))] == [2, 2, 2]
    assert cli.one_line_exit_code(RuntimeError("x")) is None

    def build(error: Exception) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog="tabbench")
        parser.set_defaults(command="probe", func=lambda args: (_ for _ in ()).throw(error))
        return parser

    monkeypatch.setattr(cli, "build_parser", lambda: build(FolderError("no settings here")))
    assert main([]) == 2
    assert capsys.readouterr().err == "tabbench probe: error: no settings here\n"
    monkeypatch.setattr(cli, "build_parser", lambda: build(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        main([])
