"""The full-study walk-through (docs/full-study.md) cannot drift: its commands, taken from the
page itself (the ```bash blocks after each ``<!-- full-study-walkthrough -->`` marker), run in
order in a temporary copy of the workflow in which the demo has already left its
``results/run_config.yaml``, as on a reader's clone.

The walk runs as the page gives it, in one bash process (so its ``STUDY`` variable carries
from command to command), with only these changes, each checked to still apply:

- :data:`SUBSTITUTIONS`: the smoke preset's two bundled datasets stand in for the Ye et al. suite,
  and numbers that only a GPU measures get a value;
- :data:`DROPPED`: the one command that needs a GPU;
- every ``snakemake`` except the data step is a dry run (``-n``: training is far too long), so
  the calibration's folder gets a few synthetic finished XGBoost jobs for ``study_cost.py`` to
  fit (:func:`plant_calibration_jobs`); ``benchmarks/`` is the checkout's.

A renamed key, a setting that a later command contradicts (the folder refuses it), a command the
CLI does not take, a wrong path to the data summary: each fails the walk here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml
from fixtures.synthetic import DEMO_DATASETS, write_synthetic_results
from workspace import REPO, Workspace, job_stats

from tabbench.data.manifest import demo_manifest
from tabbench.settings.folder import ResultsFolder
from tabbench.settings.presets import PRESETS, resolve_config

PAGE = REPO / "docs" / "full-study.md"
MARK = "<!-- full-study-walkthrough -->"

#: the page's text -> what the walk runs instead, and why
SUBSTITUTIONS = {
    "preset=paper": "preset=smoke",  # 2 bundled datasets instead of the 200-dataset suite
    "mlp=MLP_MS realmlp=REALMLP_MS": "mlp=1.0 realmlp=1.0",  # measured on a GPU by the reader
}
#: the page's commands the walk leaves out: they need a GPU (here it exits 2, "no CUDA device")
DROPPED = ("python benchmarks/network_batching.py --device cuda --gpu",)

#: every snakemake is a dry run, except the data step (cheap on the smoke data); each one's
#: output goes to $WALK_LOGS/<n>.txt, in order
PRELUDE = r"""set -euo pipefail
n=0
snakemake() {
    n=$((n + 1))
    local dry=-n a
    for a in "$@"; do [ "$a" = data ] && dry=; done
    "$PYTHON" -m snakemake $dry "$@" > "$WALK_LOGS/$n.txt" 2>&1 \
        || { cat "$WALK_LOGS/$n.txt"; echo "walk: failed: snakemake $*"; return 1; }
}
python() { "$PYTHON" "$@"; }
"""


def remember(results, config) -> bool:
    """Write the folder's settings as the workflow's start hook does."""
    return ResultsFolder.open(results).remember(config)


def walkthrough_blocks(text: str) -> list[str]:
    """The ```bash block right after each walk-through marker, in page order."""
    blocks = re.findall(re.escape(MARK) + r"\s*```bash\n(.*?)```", text, flags=re.S)
    assert blocks, f"docs/full-study.md has no ```bash block after {MARK}"
    return blocks


def walk_script(blocks: list[str]) -> str:
    """The blocks as one script: the first is the walk; each other one (the GPU variant) opens
    with its own ``STUDY=`` line (its step 0), which goes in right after the walk's, and the
    rest of it after the walk."""
    first, *variants = blocks
    head, rest = _split_at_study(first, after=True)
    zero, tails = [], []
    for block in variants:
        before, after = _split_at_study(block, after=False)
        line, _, tail = after.partition("\n")
        zero.append(line)
        tails.append(before + tail)
    script = "\n".join([head, *zero, rest, *tails])
    for old, new in SUBSTITUTIONS.items():
        script = script.replace(old, new)
    for command in DROPPED:
        script = script.replace(command, ": dropped: needs a GPU")
    return script


def _split_at_study(block: str, after: bool) -> tuple[str, str]:
    """``block`` cut before (or after) its ``STUDY=`` line."""
    lines = block.splitlines(keepends=True)
    k = next((i for i, line in enumerate(lines) if line.startswith("STUDY=")), None)
    assert k is not None, f"a walk-through block without its STUDY= line:\n{block}"
    k += int(after)
    return "".join(lines[:k]), "".join(lines[k:])


def plant_calibration_jobs(results: Path) -> None:
    """A few finished XGBoost jobs (synthetic records of the bundled datasets' real sizes) where
    the walk's calibration would have trained them: what ``study_cost.py`` fits on."""
    write_synthetic_results(results, DEMO_DATASETS[:4], models=["xgboost"], n_splits=1,
                            n_configs=2)


def _workspace(root: Path) -> Workspace:
    """A workflow copy holding every bundled dataset (the calibration's preset plans them all),
    the checkout's benchmarks, and the demo's folder as the quick start leaves it."""
    ws = Workspace(root, demo=None)
    (ws.root / "benchmarks").symlink_to(REPO / "benchmarks")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    assert remember(ws.root / "results", resolve_config({**config, "preset": "demo"}))
    return ws


def _run(ws: Workspace, script: str, logs: Path) -> subprocess.CompletedProcess:
    logs.mkdir()
    env = {**ws.env, "PYTHON": sys.executable, "WALK_LOGS": str(logs)}
    return subprocess.run(["bash", "-c", PRELUDE + script], cwd=ws.root, env=env,
                          capture_output=True, text=True, timeout=900)


def test_every_change_the_walk_makes_still_applies():
    """An edit of the page that removes what a substitution or a dropped command names fails
    here, rather than leaving the walk to run something else than the page says."""
    text = "\n".join(walkthrough_blocks(PAGE.read_text()))
    for old in (*SUBSTITUTIONS, *DROPPED):
        assert old in text, f"the walk-through does not say {old!r}: update the test"


def test_the_demo_folder_refuses_the_full_study_so_the_walk_needs_its_own_folders(tmp_path):
    """The failure the walk-through avoids: on the demo's folder a bare full-study command with
    TALENT's folder is refused (the folder remembers the demo's settings)."""
    ws = _workspace(tmp_path / "wf")
    res = ws.snakemake("-n", "--cores", "1", "--config", "talent_dir=/path/to/TALENT/data")
    assert res.returncode != 0
    assert "disagrees with results/run_config.yaml" in res.stdout + res.stderr


def test_the_full_study_walkthrough_runs_top_to_bottom(tmp_path):
    """The walk with its GPU variant (one line more at step 0, and a GPU step 4 run after the
    walk's own step 4): every command of both blocks, in one walk."""
    blocks = walkthrough_blocks(PAGE.read_text())
    assert len(blocks) == 2, "the walk-through and its GPU variant"
    script = walk_script(blocks)
    ws = _workspace(tmp_path / "wf")
    demo_settings = (ws.root / "results" / "run_config.yaml").read_text()
    plant_calibration_jobs(ws.root / "results_calib")
    logs = tmp_path / "logs"
    res = _run(ws, script, logs)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]

    # the study's own folders, with its settings; the demo's folder untouched
    assert (ws.root / "results" / "run_config.yaml").read_text() == demo_settings
    study = yaml.safe_load((ws.root / "results_full" / "run_config.yaml").read_text())
    assert study["preset"] == "smoke" and study["data_dir"] == "data_full"
    assert study["talent_dir"] == "/path/to/TALENT/data"
    assert study["device"] == "cuda"  # the GPU variant's step 0, kept from the first command
    # step 2: the summary line and the kept datasets, from the study's data folder
    smoke = PRESETS["smoke"]
    assert "data: 2 datasets: 2 kept, 0 dropped by filtering" in out
    assert re.search(r"^\s*2$", res.stdout, flags=re.M), "wc -l of kept.txt"
    # the snakemake commands in order: data (real), calibration, study, GPU study (dry runs)
    runs = [(logs / f"{i}.txt").read_text() for i in range(1, len(list(logs.iterdir())) + 1)]
    assert len(runs) == 4
    calibration, *studies = (job_stats(text) for text in runs[1:])
    assert calibration["fetch_dataset"] == len(demo_manifest(REPO / "data" / "demo"))
    for stats in studies:  # the data is reused; every (model, dataset, split) trains
        assert "fetch_dataset" not in stats and "split_dataset" not in stats, stats
        assert stats["train"] == len(smoke["models"]) * len(smoke["suite"]) * smoke["n_splits"]
    # step 3 and 5: the cost predicted from the calibration's jobs, the study's status
    assert "paper preset: " in out and "xgboost" in out
    assert "results_full: preset smoke" in out
