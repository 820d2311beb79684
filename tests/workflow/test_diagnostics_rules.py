"""The diagnostics rules: `figures` draws the diagnostic figures from what results/
holds and never plans a replay; `replay`/`diagnostics` plan one replay per split; fresh replay
files are used (slow here; the counts in tests/diagnostics/), stale ones neither used nor
replayed; and (slow) the whole thing end to end on the smoke preset: `snakemake replay
diagnostics` retrains, passes the self-check and writes every diagnostic figure and table.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from fixtures.replay_fixtures import write_fake_replay
from test_results_rules import (  # noqa: F401  (workspace is a fixture)
    DATASETS,
    MODELS,
    N_SPLITS,
    RULES,
    _planned_jobs,
    _snakemake,
    workspace,
)
from workspace import Workspace

from tabbench.core.layout import ResultsLayout, replay_sidecar
from tabbench.diagnostics.paths import DIAGNOSTIC_FIGURE_STEMS
from tabbench.settings.presets import PRESETS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def diag_workspace(workspace: Path) -> Path:  # noqa: F811
    """test_results_rules' cached-results workspace (synthetic runs, no data/), whose wrapper
    includes the diagnostics rules as the Snakefile does."""
    assert f'include: "{RULES}/diagnostics.smk"' in (workspace / "Snakefile").read_text()
    return workspace


def _meta(ws: Path) -> dict:
    return json.loads((ws / "results" / "summary" / "diagnostics" / "meta.json").read_text())


def test_figures_never_plan_a_replay_and_the_replay_targets_plan_one_per_split(
        diag_workspace: Path):
    """What `figures` draws of the diagnostics (every figure and table, every replay missing)
    is checked on its one regenerate job in
    test_results_rules.py::test_figures_from_cache_run_only_the_regenerate_job."""
    ws = diag_workspace
    planned = _planned_jobs(ws, "figures")
    assert "replay_split" not in planned
    assert planned == {"regenerate": 1, "report": 1, "figures": 1}  # diagnostics drawn there
    # the replay targets do plan one replay per split
    n = len(MODELS) * len(DATASETS) * N_SPLITS
    assert _planned_jobs(ws, "replay")["replay_split"] == n
    assert _planned_jobs(ws, "diagnostics")["replay_split"] == n


def test_replay_files_are_drawn_from_never_replayed_under_figures(diag_workspace: Path):
    """Fresh replay files of a pair: `figures` plans the regenerate job and no replay; once
    split 0 is retrained (its runs file newer than its replay), still no replay or training.
    That the job uses the fresh ones and leaves out stale ones:
    tests/diagnostics/test_tables_and_figures.py::
    test_the_regenerate_job_reads_and_uses_the_replays_a_folder_holds and
    test_stale_and_missing_replays_are_left_out (through Snakemake, slow:
    test_fresh_replays_are_used_stale_ones_neither_used_nor_replayed)."""
    ws = diag_workspace
    results, model, dataset = _with_fresh_replays(ws)
    _retrain_split_0(results, model, dataset)
    planned = _planned_jobs(ws, "figures")
    assert "replay_split" not in planned and "train" not in planned
    assert Path(ResultsLayout(results).replay(model, dataset, 0)).exists()


def _with_fresh_replays(ws: Path) -> tuple[Path, str, str]:
    """Fresh replay files for every split of the first pair; `figures` then plans the
    regenerate job and no replay. Returns the results folder and the pair."""
    results = ws / "results"
    model, dataset = MODELS[0], DATASETS[0].name
    for split in range(N_SPLITS):
        write_fake_replay(results, model, dataset, split)
    planned = _planned_jobs(ws, "figures")
    assert "replay_split" not in planned and planned["regenerate"] == 1
    return results, model, dataset


def _retrain_split_0(results: Path, model: str, dataset: str) -> None:
    """Split 0's runs file made newer than its replay, as a retraining leaves it."""
    runs = ResultsLayout(results).runs(model, dataset, 0)
    later = time.time() + 5
    os.utime(runs, (later, later))


@pytest.mark.slow
def test_fresh_replays_are_used_stale_ones_neither_used_nor_replayed(diag_workspace: Path):
    """Slow (a regenerate job); in the fast suite:
    test_replay_files_are_drawn_from_never_replayed_under_figures (the plans) and
    tests/diagnostics/test_tables_and_figures.py::
    test_the_regenerate_job_reads_and_uses_the_replays_a_folder_holds (the counts)."""
    ws = diag_workspace
    results, model, dataset = _with_fresh_replays(ws)
    _snakemake(ws, "figures")
    assert _meta(ws)["replay"]["used"] == N_SPLITS

    # split 0 is retrained (its runs file is newer than its replay): the stale replay is not
    # an input any more and `figures` does not replay it
    _retrain_split_0(results, model, dataset)
    planned = _planned_jobs(ws, "figures")
    assert "replay_split" not in planned and "train" not in planned
    assert Path(ResultsLayout(results).replay(model, dataset, 0)).exists()


@pytest.mark.slow
def test_smoke_replay_and_diagnostics_end_to_end(tmp_path: Path):
    """The issue's acceptance command on the smoke preset (bundled segment and kc1)."""
    ws = Workspace(tmp_path / "wf", demo=["segment", "kc1"])
    proc = ws.snakemake("--cores", "2", "replay", "diagnostics", "--config", "preset=smoke",
                        timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = ws.root / "results"
    n = 0
    for model in PRESETS["smoke"]["models"]:
        for dataset in PRESETS["smoke"]["suite"]:
            npz = Path(ResultsLayout(results).replay(model, dataset, 0))
            side = json.loads(replay_sidecar(npz).read_text())
            assert len(side["selections"]) == 16  # 2 regimes x 8 stopping metrics
            for entry in side["selections"].values():  # the self-check's numbers
                assert abs(entry["val_logloss_replayed"] - entry["val_logloss_recorded"]) <= (
                    1e-5 * abs(entry["val_logloss_recorded"]))
            n += 1
    for stem in DIAGNOSTIC_FIGURE_STEMS:
        assert (results / "figures" / f"{stem}.png").stat().st_size > 1000
    meta = json.loads((results / "summary" / "diagnostics" / "meta.json").read_text())
    assert meta["replay"] == {"used": n, "stale": 0, "missing": 0}
    # from now on the figures come from the cache: nothing is retrained or replayed
    proc = ws.snakemake("--cores", "2", "-n", "figures", "--config", "preset=smoke")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "replay_split" not in text and "rule train" not in text
    # and the HTML report shows every diagnostic figure with its caption
    proc = ws.snakemake("--cores", "2", "report", "--config", "preset=smoke", timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = (results / "report.html").read_text()
    for stem in DIAGNOSTIC_FIGURE_STEMS:
        assert f"filename={stem}.png;base64," in html, stem
        caption = (REPO / "workflow" / "report" / f"{stem}.rst").read_text()
        first_words = re.sub(r"[*_`]", "", caption.split("\n", 1)[0])[:40]
        assert first_words in html, (stem, first_words)


def test_replay_commands_follow_the_runs_file_not_the_training_path_flags(diag_workspace):
    """With network_members set the train command carries --members (a plain param); the
    replay's takes the trainer options only (the path comes from the runs file's provenance),
    so it parses."""
    import yaml

    cfg_file = diag_workspace / "config.yaml"
    cfg = yaml.safe_load(cfg_file.read_text())
    cfg["network_members"] = 4
    cfg_file.write_text(yaml.safe_dump(cfg))
    proc = _snakemake(diag_workspace, "-n", "-p", "replay")
    text = proc.stdout + proc.stderr
    cmds = [line.strip() for line in text.splitlines() if "tabbench replay" in line]
    assert cmds and all("--members" not in c for c in cmds), text[-3000:]
    assert any("--model" not in c and "--mlp-max-one-hot-levels" in c for c in cmds)
