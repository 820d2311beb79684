"""Failed configs retried (config retry_failed, tabbench.study.retry): a resumed job retrains its
recorded failures when asked and keeps them as failed otherwise; a finished job reopened by
`tabbench retry-failed` retrains its failed configs only, its recorded ones kept bit for bit."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fixtures.data_fixtures import write_processed_toy
from fixtures.jobs import train_job

from tabbench.cli import main as cli_main
from tabbench.core.layout import ResultsLayout, failures_path, part_dir, part_failure
from tabbench.models.registry import get_trainer
from tabbench.study import restop_store
from tabbench.study.retry import reopen_failed

EPOCHS = {"xgboost_default": 4, "xgboost_tuned": 5}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_processed_toy(tmp_path_factory.mktemp("data"), n=400, n_classes=3)


class Flaky:
    """XGBoost whose ``fail``-th training (1-based) fails, and one more raises
    KeyboardInterrupt as a kill would (``kill``)."""

    name = "xgboost"

    def __init__(self, state: dict) -> None:
        self.state = state

    def train(self, params, data, ctx):
        self.state["calls"] = self.state.get("calls", 0) + 1
        if self.state["calls"] == self.state.get("kill"):
            raise KeyboardInterrupt
        if self.state["calls"] == self.state.get("fail"):
            raise MemoryError("out of memory (simulated)")
        yield from get_trainer("xgboost").train(params, data, ctx)


def job(dataset, out, factory=None, **kw):
    processed, splits = dataset
    log = io.StringIO()
    records = train_job("xgboost", "toy", 0, processed, splits, out, n_configs=2,
                        epochs=EPOCHS, seed=0, progress=log, trainer_factory=factory, **kw)
    return records, log.getvalue()


@pytest.mark.parametrize("retry", [False, True])
def test_a_resumed_job_retrains_its_recorded_failures_only_when_asked(dataset, tmp_path, retry):
    out = tmp_path / "split0.parquet"
    state = {"fail": 2, "kill": 3}  # config 1 fails, the job is killed in config 2
    with pytest.raises(KeyboardInterrupt):
        job(dataset, out, lambda name, **kw: Flaky(state))
    assert part_failure(part_dir(out), 1).exists()
    records, log = job(dataset, out, retry_failed=retry)
    failures = json.loads(failures_path(out).read_text())
    if retry:
        assert sorted(records["config"].unique()) == [0, 1, 2] and failures == []
        assert "config 1 (2/3) failed before (MemoryError): trained again (retry_failed)" in log
    else:
        assert sorted(records["config"].unique()) == [0, 2]
        assert [f["config"] for f in failures] == [1]
    assert "config 0 (1/3) already done (part file), not retrained" in log


def test_retry_failed_reopens_a_finished_job_and_retrains_its_failures_only(dataset, tmp_path):
    results = tmp_path / "results"
    layout = ResultsLayout(results)
    out = Path(layout.runs("xgboost", "toy", 0))
    state = {"fail": 3}  # config 2 fails
    first, _ = job(dataset, out, lambda name, **kw: Flaky(state), keep_for_restop=True)
    assert sorted(first["config"].unique()) == [0, 1]
    ok = Path(layout.runs("xgboost", "toy", 1))  # a finished job without failures
    job(dataset, ok)
    ok_bytes = ok.read_bytes()
    Path(layout.run_config).write_text(yaml.safe_dump({"seed": 0, "preset": "smoke"}))

    reopened = reopen_failed(results, progress=io.StringIO())
    assert [(j.runs, j.failed_configs, j.recorded_configs) for j in reopened] == [
        (str(out), [2], [0, 1])]
    assert "config 2: MemoryError: out of memory (simulated)" in reopened[0].errors[0]
    assert not out.exists() and not failures_path(out).exists()  # snakemake now plans it
    assert ok.read_bytes() == ok_bytes  # nothing to retry there
    assert json.loads(Path(layout.retry_report).read_text())[0]["failed_configs"] == [2]
    assert reopen_failed(results, progress=io.StringIO()) == []  # nothing left to reopen

    calls = []
    records, log = job(dataset, out, lambda name, **kw: calls.append(1) or get_trainer(name),
                       keep_for_restop=True)
    assert len(calls) == 2  # the keeping probe, and config 2: configs 0 and 1 not retrained
    assert "config 0 (1/3) already done (part file), not retrained" in log
    assert json.loads(failures_path(out).read_text()) == []
    pd.testing.assert_frame_equal(records[records["config"] < 2].reset_index(drop=True),
                                  first.reset_index(drop=True))
    k = restop_store.read_restop_store(out)
    assert k is not None and k.kept and sorted(k.configs) == [0, 1, 2]  # still kept whole


def test_the_command_line_says_what_it_reopened(dataset, tmp_path, capsys):
    results = tmp_path / "results"
    Path(results).mkdir(parents=True, exist_ok=True)
    assert cli_main(["retry-failed", "--results", str(results)]) == 2
    assert "run_config.yaml is missing" in capsys.readouterr().err
    Path(ResultsLayout(results).run_config).write_text(yaml.safe_dump({"seed": 0}))
    assert cli_main(["retry-failed", "--results", str(results)]) == 0
    assert "no finished job has a failed config" in capsys.readouterr().out
