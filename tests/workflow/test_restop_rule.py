"""`snakemake restop` (workflow/rules/restop.smk, docs/design.md §16) and the train rule's
re-stopping settings.

- keep_for_restop, restop_max_mb and retry_failed reach every train command but are not rerun
  triggers: changing them on a finished folder plans no train job (a changed epochs setting,
  the control, does). Slow: the same, piece by piece, in tests/jobs/.

`snakemake restop` itself runs on the finished smoke study: tests/workflow/test_smoke_dag.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_train_rules import (  # noqa: E402
    _jobs,
    _stand_in_for_training,
    make_project,
    snakemake,
)


@pytest.mark.slow
def test_the_restop_settings_reach_the_train_command_and_retrain_nothing(tmp_path):
    """Slow (a run and four plans); in the fast suite: a train job's flags carry them as no
    rerun trigger (tests/jobs/test_train.py::test_a_train_jobs_params_on_the_cpu), changing
    them changes nothing Snakemake records (tests/jobs/test_triggers.py::
    test_each_rules_params_trigger_exactly_as_the_table_says), and a setting that changes
    records retrains under the profile's triggers (tests/workflow/test_train_rules.py::
    test_the_rerun_policy_retrains_for_settings_never_for_a_changed_rule)."""
    project = make_project(tmp_path / "p", models=["xgboost"], n_splits=1)
    profile = REPO / "profiles" / "default" / "config.yaml"
    triggers = yaml.safe_load(profile.read_text())["rerun-triggers"]
    res = snakemake(project, "-n", "-p")
    cmds = [cmd for _, cmd in _jobs(res)]
    assert len(cmds) == 2 and all(
        " --keep-for-restop true --restop-max-mb 512 --retry-failed false" in c for c in cmds)
    _stand_in_for_training(project)
    assert snakemake(project).returncode == 0

    def planned(*config):
        res = snakemake(project, "-n", "-p", "--rerun-triggers", *triggers,
                        *(["--config", *config] if config else []))
        assert res.returncode == 0, res.stderr + res.stdout
        return [cmd for _, cmd in _jobs(res)]

    assert planned("keep_for_restop=False", "restop_max_mb=1", "retry_failed=True") == []
    stored = project / "results" / "run_config.yaml"
    cfg = yaml.safe_load(stored.read_text())
    stored.write_text(yaml.safe_dump({**cfg, "keep_for_restop": False, "restop_max_mb": 2}))
    assert planned() == []
    stored.write_text(yaml.safe_dump({**cfg, "epochs": {**cfg["epochs"], "xgboost_tuned": 7}}))
    assert len(planned()) == 2  # the control: a setting that changes records retrains
