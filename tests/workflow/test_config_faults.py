"""Config faults: a configuration that violates
workflow/schemas/config.schema.yaml is rejected before any job starts, with the key, the reason
and the allowed values in the last lines of the output and without the config dictionary
(Snakemake's own validate() printed the reason on line 5 of a 125-line dump); a target naming a
dataset nobody has is rejected while the DAG is built, naming the datasets that exist, and so is
one for a model or dataset the study does not declare or a path no rule makes (one line each).

Each case is a real run (not a dry run) in a temporary copy of the workflow, so "no job ran"
is checked on disk: no data/, results/ or logs/ folder, and no Snakemake job metadata. Each
message is checked without Snakemake in tests/settings/ and tests/jobs/; the fast suite runs
one case of each way a run ends in one line (a bad value, a refused target while the DAG is
built, the catch-all rule, an unwritable folder), the others are slow.
"""

from __future__ import annotations

import subprocess

import pytest
from workspace import Workspace

#: a few of the bad values of tests/settings/test_config_command_line.py (which checks each one's
#: message through the same ``settle`` call), through the real workflow: a key that is not a setting
#: and a value the schema refuses
CASES = {
    # --config value -> what the last lines must say: (key, reason, allowed values)
    "n_splits": (["n_splits=0"], ("n_splits", "0 is less than the minimum of 1",
                                  "an integer from 1 to 100 or null")),
    "typo_setting": (["n_split=2"], ("n_split", "not a setting (did you mean 'n_splits'?)",
                                     "allowed keys: preset, suite,")),
}


def _no_job_ran(ws: Workspace) -> None:
    for folder in ("data/raw", "data/processed", "data/splits", "results", "logs"):
        assert not (ws.root / folder).exists(), f"{folder}/ was created"
    metadata = ws.root / ".snakemake" / "metadata"
    assert not metadata.exists() or not any(metadata.iterdir())


def _short_error_at_the_end(text: str, key: str, reason: str, allowed: str) -> None:
    lines = text.strip().splitlines()
    tail = lines[-3:]
    assert tail[0].startswith("tabbench: invalid configuration"), text[-3000:]
    assert tail[1].startswith(f"  {key}") and reason in tail[1], text[-3000:]
    assert allowed in tail[2], text[-3000:]
    assert len(lines) <= 8, text  # no traceback, no config dump
    assert "'results_dir'" not in text and "Traceback" not in text


@pytest.mark.parametrize("key", [
    "n_splits",
    # slow: the same path as n_splits; its message in the fast suite: tests/settings/
    # test_config_command_line.py::
    # test_a_bad_value_is_three_lines_naming_key_reason_and_allowed_values
    pytest.param("typo_setting", marks=pytest.mark.slow),
])
def test_schema_violation_is_rejected_before_any_job(tmp_path, key):
    ws = Workspace(tmp_path / "wf")
    config, (name, reason, allowed) = CASES[key]
    res = ws.snakemake("--cores", "1", "--config", *config)
    text = res.stdout + res.stderr
    assert res.returncode != 0, text[-3000:]
    _short_error_at_the_end(text, name, reason, allowed)
    _no_job_ran(ws)


@pytest.mark.slow
def test_an_unregistered_name_in_a_configfile_is_rejected_before_any_job(tmp_path):
    """Names the schema cannot know (packages may register models) are checked against the
    registries (each case: tests/settings/test_config_command_line.py); here one given in a
    --configfile, through the real workflow. Slow: the same message from a --configfile
    (tests/settings/test_config_command_line.py::
    test_an_unregistered_name_is_a_short_error_naming_the_registered_ones), the same path to
    the last lines (test_schema_violation_is_rejected_before_any_job)."""
    ws = Workspace(tmp_path / "wf")
    (ws.root / "mine.yaml").write_text("epochs: {mlp: 8, lgbm: 3}\n")
    res = ws.snakemake("--cores", "1", "--configfile", "mine.yaml")
    text = res.stdout + res.stderr
    assert res.returncode != 0, text[-3000:]
    tail = "\n".join(text.strip().splitlines()[-2:])  # the header, then key and reason
    assert tail.startswith("tabbench: invalid configuration"), text[-3000:]
    for message in ("config key 'epochs'", "'lgbm'",
                    "xgboost_default, xgboost_tuned, mlp, realmlp"):
        assert message in tail, text[-3000:]
    assert "Traceback" not in text and "rule " not in text
    _no_job_ran(ws)


def test_unknown_dataset_target_fails_before_any_job_naming_known_ones(tmp_path):
    """`nosuchdata` passed the dry run, then failed at the split step with a traceback and left
    fetch/filter files behind."""
    ws = Workspace(tmp_path / "wf", demo=("segment", "kc1"))
    for args in (["-n"], []):
        res = ws.snakemake("--cores", "1", *args, "results/selected/xgboost/nosuchdata.parquet",
                           "--config", "preset=smoke")
        text = res.stdout + res.stderr
        assert res.returncode != 0, text[-3000:]
        # one line, the last (not Snakemake's dozen lines of InputFunctionException)
        last = text.strip().splitlines()[-1]
        assert last.startswith("tabbench: unknown dataset 'nosuchdata'"), text[-3000:]
        assert "sources=['bundled']" in last and "kc1, segment" in last, text[-3000:]
        assert "Exception" not in text and "Traceback" not in text, text[-3000:]
        assert "Job stats" not in text
        _no_job_ran(ws)
    # a known dataset outside the suite is refused too: its results would join the study's
    res = ws.snakemake("--cores", "1", "-n", "results/selected/xgboost/kc1.parquet",
                       "--config", "preset=smoke", "suite=[segment]")
    text = res.stdout + res.stderr
    assert res.returncode != 0, text[-3000:]
    assert text.strip().splitlines()[-1].startswith(
        "tabbench: 'kc1' is not a dataset of the study in results/; its suite: segment."), text
    # its data files are not results of the study: a source has it, they may be made
    res = ws.snakemake("--cores", "1", "-n", "data/splits/kc1.parquet", "--config",
                       "preset=smoke", "suite=[segment]")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]


#: one target per way the workflow refuses one (the select rule's, the train rule's, the
#: catch-all's); the lines for other names and paths (a misspelt model or folder):
#: tests/study/test_study_targets.py. The select and train rules' are slow: the same refusal
#: while the DAG is built as the catch-all's and test_unknown_dataset_target_fails_before_any_
#: job_naming_known_ones; their line in the fast suite: tests/study/test_study_targets.py::
#: test_an_undeclared_model_is_refused_saying_how_to_add_it_on_purpose.
@pytest.mark.parametrize(("target", "line"), [
    # a model the demo does not declare: training it would put it into Fig. 5 and the claims
    pytest.param(
        "results/selected/lightgbm/adult.parquet",
        "tabbench: 'lightgbm' is not a model of the study in results/; its models: xgboost, "
        "mlp, realmlp. Its results would join this folder's figures, claims and report: to add "
        "it on purpose, run with --config models=[xgboost,mlp,realmlp,lightgbm]; or give it a "
        "results folder of its own (--config results_dir=DIR)", marks=pytest.mark.slow),
    pytest.param("results/runs/lightgbm/adult/split0.parquet",
                 "tabbench: 'lightgbm' is not a model of the study in results/;",
                 marks=pytest.mark.slow),
    # a typo in the path that no rule's pattern takes (the catch-all rule's refusal)
    ("results/runs/xgbost/adult/split0.parquet",
     "tabbench: no rule makes results/runs/xgbost/adult/split0.parquet (did you mean "
     "'results/runs/xgboost/adult/split0.parquet'?). Targets in results/ are "),
])
def test_a_target_outside_the_study_or_made_by_no_rule_is_one_line(tmp_path, target, line):
    ws = Workspace(tmp_path / "wf", demo=("adult",))
    for args in (["-n"], []):
        res = ws.snakemake("--cores", "1", *args, target, "--config", "preset=demo")
        text = res.stdout + res.stderr
        assert res.returncode != 0, text[-3000:]
        assert text.strip().splitlines()[-1].startswith(line), text[-3000:]
        assert "Exception" not in text and "Traceback" not in text, text[-3000:]
        assert "Job stats" not in text
        _no_job_ran(ws)


@pytest.mark.slow
def test_a_dataset_the_filter_dropped_is_refused_in_one_line(tmp_path):
    """hypothyroid (bundled; the filter keeps 2 of its 3,163 rows, fewer than min_rows): after
    the data stage, asking for its selected file stops before any job with one line saying why
    (it was planned, and its split job failed with a DataError traceback). Before the data
    stage nobody knows yet: the data jobs run, and the split job fails in one line.

    Slow (two data stages); in the fast suite: the refusal (tests/jobs/test_data.py::
    test_a_dataset_the_filter_did_not_keep_is_refused_for_a_split), the split job's line
    (tests/data/test_data_commands.py), a refusal while the DAG is built ending a run in one
    line (test_unknown_dataset_target_fails_before_any_job_naming_known_ones)."""
    config = ["--config", "preset=smoke", "suite=[hypothyroid]"]
    target = "results/selected/xgboost/hypothyroid.parquet"
    fresh = Workspace(tmp_path / "fresh", demo=("hypothyroid",))
    res = fresh.snakemake("--cores", "1", target, *config)
    text = res.stdout + res.stderr
    assert res.returncode != 0, text[-3000:]
    log = (fresh.root / "data" / "logs" / "split" / "hypothyroid.log").read_text()
    assert log.strip().splitlines()[-1].startswith(
        "tabbench data: error: hypothyroid was not kept (the filter dropped it: "), log
    assert "Traceback" not in log, log
    assert not (fresh.root / "data" / "splits" / "hypothyroid.parquet").exists()

    ws = Workspace(tmp_path / "wf", demo=("hypothyroid",))
    res = ws.snakemake("--cores", "1", "data", *config)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    for args in (["-n"], [], ["--forcerun", "train"]):
        res = ws.snakemake("--cores", "1", *args, target, *config)
        text = res.stdout + res.stderr
        assert res.returncode != 0, text[-3000:]
        last = text.strip().splitlines()[-1]
        assert last.startswith("tabbench: dataset 'hypothyroid' was not kept (the filter "
                               "dropped it: "), text[-3000:]
        assert "data/processed/hypothyroid.json" in last, last
        assert "Exception" not in text and "Traceback" not in text, text[-3000:]
        assert "Job stats" not in text
        assert [p.name for p in (ws.root / "results").iterdir()] == ["run_config.yaml"]


@pytest.mark.slow
def test_the_tie_rule_reaches_the_select_and_replay_commands(tmp_path):
    """config epoch_ties is what the select and replay jobs are told (their --epoch-ties), so
    that the selected files and the replays follow the study's rule. Slow; in the fast suite:
    the select job's params and the replay's flags carry it (tests/jobs/test_train.py::
    test_the_selection_takes_the_models_patiences and
    test_the_replay_takes_the_train_jobs_options_and_triggers_nothing), and the rules' commands
    take every param (tests/jobs/test_triggers.py)."""
    ws = Workspace(tmp_path / "wf", demo=("kc1",))
    for ties in ("last", "first"):
        res = ws.snakemake("-n", "-p", "--cores", "1", "results/selected/xgboost/kc1.parquet",
                           "results/replay/xgboost/kc1/split0.npz", "--config", "preset=smoke",
                           f"epoch_ties={ties}")
        text = res.stdout + res.stderr
        assert res.returncode == 0, text[-3000:]
        commands = [line for line in text.splitlines()
                    if any(f"Shell command: tabbench {c} " in line for c in ("select", "replay"))]
        assert len(commands) == 2, text[-3000:]
        assert all(f"--epoch-ties {ties}" in c for c in commands), commands


#: Slow: the messages in the fast suite (tests/settings/test_names.py), the refusal of a run
#: about to write its settings (tests/jobs/test_data.py::
#: test_unknown_suite_names_stop_only_a_run_that_writes_its_settings), a bad configuration
#: ending a real run in one line before any job (test_schema_violation_is_rejected_before_any_job).
@pytest.mark.slow
@pytest.mark.parametrize(("name", "says"), [
    ("kc11", "no source of sources=['bundled'] has dataset 'kc11' (did you mean 'kc1'?)"),
    ("-kc1", "dataset name '-kc1' starts with '-', which the data jobs would read as an "
             "option"),
])
def test_a_bad_name_in_an_explicit_suite_is_refused_before_anything_is_saved(
        tmp_path, name, says):
    """A typo let through would be fetched, reported "1 unavailable" with exit 0 and
    remembered in run_config.yaml, which would then refuse the corrected command; a name
    starting with '-' would break the fetch job's arguments. Both stop a real run in one line,
    before any job and before run_config.yaml is written, so the corrected command runs."""
    ws = Workspace(tmp_path / "wf", demo=("segment", "kc1"))
    res = ws.snakemake("--cores", "1", "--config", "preset=smoke", f"suite=[segment,{name}]")
    text = res.stdout + res.stderr
    assert res.returncode != 0, text[-3000:]
    last = text.strip().splitlines()[-1]
    assert last == f"tabbench: invalid configuration: config key 'suite': {says}", text[-3000:]
    assert "Traceback" not in text and "Error in" not in text, text[-3000:]
    _no_job_ran(ws)
    res = ws.snakemake("-n", "--cores", "1", "--config", "preset=smoke", "suite=[segment,kc1]")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]


def _make_read_only(folder) -> bool:
    """``folder`` made unwritable, also for root (chmod does not stop root; the immutable
    attribute does, where the file system has it). False where neither works here."""
    folder.chmod(0o555)
    probe = folder / "probe"
    try:
        probe.write_text("")
    except OSError:
        return True
    probe.unlink()
    return subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0


def test_an_empty_read_only_results_folder_ends_in_one_line(tmp_path):
    ws = Workspace(tmp_path / "wf", demo=("segment", "kc1"))
    folder = ws.root / "ro"
    folder.mkdir()
    if not _make_read_only(folder):
        pytest.skip("no way to make a folder read-only for this user on this file system")
    try:
        res = ws.snakemake("--cores", "1", "--config", "preset=smoke", "results_dir=ro")
    finally:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
        folder.chmod(0o755)
    text = res.stdout + res.stderr
    assert res.returncode != 0, text[-3000:]
    last = text.strip().splitlines()[-1]
    assert last.startswith("tabbench: cannot write ro/run_config.yaml ("), text[-3000:]
    assert last.endswith("the results folder ro/ must be writable (results_dir); nothing was "
                         "run"), last
    assert "Traceback" not in text and "Error in file" not in text, text[-3000:]
    assert not (ws.root / "data" / "raw").exists() and list(folder.iterdir()) == []
