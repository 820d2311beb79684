"""Config faults (issue 7): a configuration that violates workflow/schemas/config.schema.yaml
is rejected before any job starts, with a message naming the offending key.

Each case is a real run (not a dry run) in a temporary copy of the workflow, so "no job ran"
is checked on disk: no data/, results/ or logs/ folder, and no Snakemake job metadata.
"""

from __future__ import annotations

import pytest
from workspace import Workspace

CASES = {
    # --config value, what the error must say (the key, and why)
    "n_splits": (["n_splits=0"], ["instance['n_splits']", "0 is less than the minimum of 1"]),
    "typo_key": (["typo_key=1"], ["'typo_key' was unexpected"]),
    "models": (["models=[]"], ["instance['models']", "[] is not valid"]),
    "sources": (["sources=[openml,s3]"], ["instance['sources']", "['openml', 's3']"]),
    "device": (["device=gpu"], ["instance['device']", "'gpu' is not one of ['cpu', 'cuda']"]),
    "one_hot_1": (["mlp_max_one_hot_levels=1"],
                  ["instance['mlp_max_one_hot_levels']", "1 is less than the minimum of 2"]),
    "one_hot_-3": (["mlp_max_one_hot_levels=-3"],
                   ["instance['mlp_max_one_hot_levels']", "-3 is less than the minimum of 2"]),
    "one_hot_abc": (
        ["mlp_max_one_hot_levels=abc"],
        ["instance['mlp_max_one_hot_levels']", "'abc' is not of type 'integer', 'null'"],
    ),
}


def _no_job_ran(ws: Workspace) -> None:
    for folder in ("data", "results", "logs"):
        assert not (ws.root / folder).exists(), f"{folder}/ was created"
    metadata = ws.root / ".snakemake" / "metadata"
    assert not metadata.exists() or not any(metadata.iterdir())


@pytest.mark.parametrize("key", sorted(CASES))
def test_schema_violation_is_rejected_before_any_job(tmp_path, key):
    ws = Workspace(tmp_path / "wf")
    config, messages = CASES[key]
    res = ws.snakemake("--cores", "1", "--config", *config)
    text = res.stdout + res.stderr
    assert res.returncode != 0, text[-3000:]
    assert "Error validating config file" in text, text[-3000:]
    for message in messages:
        assert message in text, text[-3000:]
    assert "rule " not in text  # no job was even scheduled
    _no_job_ran(ws)


#: names the schema cannot know (packages may register models): checked against the registry
REGISTRY_CASES = {
    # how the bad value is given, what the error must say (the key, the value, what is allowed)
    "models": (["--config", "models=[xgboost,catboost]"],
               ["config key 'models'", "'catboost'", "xgboost, mlp, realmlp"]),
    "n_configs": (["--config", "n_configs={catboost: 3}"],
                  ["config key 'n_configs'", "'catboost'", "xgboost, mlp, realmlp"]),
    "epochs": (["--configfile", "mine.yaml"],
               ["config key 'epochs'", "'lgbm'", "xgboost_default, xgboost_tuned, mlp, realmlp"]),
}


@pytest.mark.parametrize("key", sorted(REGISTRY_CASES))
def test_unregistered_names_are_rejected_before_any_job(tmp_path, key):
    ws = Workspace(tmp_path / "wf")
    (ws.root / "mine.yaml").write_text("epochs: {mlp: 8, lgbm: 3}\n")
    args, messages = REGISTRY_CASES[key]
    res = ws.snakemake("--cores", "1", *args)
    text = res.stdout + res.stderr
    assert res.returncode != 0, text[-3000:]
    for message in messages:
        assert message in text, text[-3000:]
    assert "rule " not in text
    _no_job_ran(ws)


def test_nested_epochs_override_on_the_command_line(tmp_path):
    ws = Workspace(tmp_path / "wf")
    res = ws.snakemake("-n", "--cores", "1", "--config", "preset=smoke", "epochs={mlp: 8}")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]


@pytest.mark.parametrize("value", ["null", "5"])
def test_one_hot_cap_on_the_command_line_is_accepted(tmp_path, value):
    """``mlp_max_one_hot_levels=null`` (no cap) arrives as the string 'null'; it must mean null."""
    ws = Workspace(tmp_path / "wf")
    res = ws.snakemake("-n", "--cores", "1", "--config", "preset=smoke",
                       f"mlp_max_one_hot_levels={value}")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
