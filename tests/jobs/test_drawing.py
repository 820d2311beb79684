"""The drawing rules (:mod:`tabbench.jobs.drawing`): the regenerate job's files, outputs,
command and inputs under each kind of invocation, and the HTML report's build."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tabbench.jobs.drawing import DrawingJobs, build_report
from tabbench.jobs.refusal import Refused
from tabbench.study.targets import Drawing


def test_an_unknown_method_is_refused_at_once(settled):
    with pytest.raises(Refused, match="^tabbench: invalid configuration: .*nosuch"):
        DrawingJobs(settled(figures_baseline="nosuch"))


def test_files_and_outputs(config):
    drawing = DrawingJobs(config)
    files = drawing.files
    assert files[-1] == drawing.description and len(set(files)) == len(files)
    captioned = dict(drawing.captioned_outputs())
    assert list(captioned) == files[:-1]
    claims = [p for p, e in captioned.items() if e and e["labels"] == {"table": "claims"}]
    assert len(claims) == 1 and claims[0].endswith(".html")
    figures = [e for e in captioned.values() if e and "figure" in e["labels"]]
    assert figures and all(e["caption"] == f"../report/{e['labels']['figure']}.rst"
                           for e in figures)
    marked = drawing.outputs(lambda p: ("kept", p), lambda p, **e: ("entry", p, e))
    assert len(marked) == len(files) - 1
    assert [m[0] for m in marked] == ["entry" if e else "kept" for e in captioned.values()]


def test_the_command_carries_the_redraw_settings(settled):
    config = settled(rope_percent=2.5, patience=[4], figures_methods=["Logloss", "Brier+TS"],
                     figures_baseline="TS-Ref.+TS")
    root = config["results_dir"]
    command = DrawingJobs(config).command()
    assert command.startswith(f"tabbench figures --results {root} --out {root}"
                              f" --figures-dir {root}/figures --large-rows 1500 --rope 2.5")
    assert " --figures-baseline TS-Ref.+TS " in command
    assert command.endswith(" --figures-methods Logloss Brier+TS --low-signal-learnability 0.9"
                            " --patience 4")


def _holds(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")


def test_drawn_from_the_cache_or_after_the_study(config):
    drawing = DrawingJobs(config)
    results = config["results_dir"]
    as_is = "as is: {}".format
    with pytest.raises(Refused, match="^tabbench: "):  # nothing to draw from
        drawing.regenerate_input(Drawing(from_cache=True), list, as_is)
    # the study waits for its files, and takes what else the folder holds as it is
    study = [f"{results}/runs/mlp/kc1/split0.parquet", f"{results}/selected/mlp/kc1.parquet"]
    assert drawing.regenerate_input(Drawing(from_cache=False), lambda: study * 2,
                                    as_is) == study


def test_a_damaged_file_stops_a_drawing_from_the_cache(config):
    results = Path(config["results_dir"])
    _holds(results, "runs/mlp/kc1/split0.parquet", "selected/mlp/kc1.parquet")
    with pytest.raises(Refused, match="Nothing was redrawn"):
        DrawingJobs(config).regenerate_input(Drawing(from_cache=True), list, str)


def test_the_report_is_built_atomically_with_the_invocations_settings(tmp_path):
    html = tmp_path / "out" / "report.html"
    html.parent.mkdir()
    seen = {}

    def command(config_file, out):
        seen["config"] = yaml.safe_load(Path(config_file).read_text())
        return ["sh", "-c", f"echo built > {out}; echo said"]

    build_report(str(html), str(tmp_path / "log"), {"seed": 3}, command)
    assert html.read_text() == "built\n" and seen["config"] == {"seed": 3}
    assert (tmp_path / "log").read_text() == "said\n"
    assert os.listdir(html.parent) == ["report.html"]
