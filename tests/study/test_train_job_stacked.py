"""The train job on the stacked path (docs/design.md §15): every epoch of every config recorded,
the path in the part folder's identity and the provenance, a member's failure recorded alone, a
kill mid-group losing only that group and a resume equal to an uninterrupted run, the replay
reproducing stacked records; and the grouping rules."""

import io
import json

import numpy as np
import pandas as pd
import pytest
from fixtures.data_fixtures import write_processed_toy
from fixtures.jobs import replay_job, train_job

from tabbench.cli import main as cli_main
from tabbench.core.layout import failures_path, part_dir
from tabbench.core.provenance import read_runs_provenance
from tabbench.models.base import GroupChunk
from tabbench.models.recorder import check_records
from tabbench.models.registry import get_trainer
from tabbench.models.stacked import plan
from tabbench.study.signals import TrainInterrupted

EPOCHS = {"mlp": 3, "realmlp": 3}
#: what changes from run to run (times), not what a run computes
TIMES = ["fit_seconds"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_processed_toy(tmp_path_factory.mktemp("data"), n=700, n_classes=3, n_splits=1)


def run(model, dataset, out, n_configs=4, epochs=EPOCHS, **kw):
    processed, splits = dataset
    kw.setdefault("progress", io.StringIO())
    return train_job(model, "toy", 0, processed, splits, out, n_configs=n_configs,
                     epochs=epochs, seed=0, **kw)


def _values(df):
    return df.drop(columns=TIMES).sort_values(["config", "epoch"]).reset_index(drop=True)


@pytest.mark.parametrize("model", ["mlp", "realmlp"])
def test_stacked_job_records_every_epoch_of_every_config_whatever_the_grouping(
        model, dataset, tmp_path):
    log = io.StringIO()
    grouped = run(model, dataset, tmp_path / "a.parquet", members=3, progress=log)
    check_records(grouped, {c: 3 for c in range(5)})
    assert json.loads(failures_path(tmp_path / "a.parquet").read_text()) == []
    assert "training=stacked members<=3" in log.getvalue()
    assert "members) epoch 3/3" in log.getvalue()
    prov = read_runs_provenance(tmp_path / "a.parquet")
    assert prov["training"] == "stacked" and prov["members"] == 3
    # the same records with groups of 5 and of 1: a member does not depend on its group
    together = run(model, dataset, tmp_path / "b.parquet", members=5)
    alone = run(model, dataset, tmp_path / "c.parquet", members=1)  # the sequential path
    pd.testing.assert_frame_equal(_values(grouped), _values(together))
    assert read_runs_provenance(tmp_path / "c.parquet")["training"] == "sequential"
    # fit_seconds: the group's time shared by its members, cumulative per config
    assert (grouped.groupby("config")["fit_seconds"].diff().dropna() >= 0).all()
    if model == "mlp":  # the default MLP has no dropout: equal to the sequential trainer
        seq, stk = _values(alone), _values(grouped)
        pd.testing.assert_frame_equal(seq[seq.config == 0], stk[stk.config == 0],
                                      check_exact=False, rtol=1e-5, atol=1e-6)


def test_auto_is_sequential_on_the_cpu_and_members_apply_to_networks_only(dataset, tmp_path):
    assert plan.training_path("cpu", None, True) == (
        "stacked" if plan.AUTO_CPU_MEMBERS > 1 else "sequential")
    assert plan.training_path("cuda", None, True) == "stacked"
    assert plan.training_path("cuda:1", 1, True) == "sequential"
    assert plan.training_path("cuda", 8, False) == "sequential"
    with pytest.raises(ValueError, match="one config at a time"):
        run("xgboost", dataset, tmp_path / "x.parquet", n_configs=1, members=4,
            epochs={"xgboost_default": 2, "xgboost_tuned": 2})
    with pytest.raises(ValueError, match="network_memory_gb"):
        run("mlp", dataset, tmp_path / "m.parquet", members=2, memory_gb=0)


def test_the_path_is_part_of_the_job_identity(dataset, tmp_path):
    """A part folder of the sequential path is not reused by a stacked rerun (nor the
    reverse): the two paths agree within float rounding, not bit for bit."""
    out = tmp_path / "s.parquet"

    class StopAfterFirst:
        def __init__(self):
            self.calls = 0

        def __call__(self, name, **options):
            self.calls += 1
            trainer = get_trainer(name, **options)
            if self.calls > 1:
                raise TrainInterrupted(2)
            return trainer

    with pytest.raises(TrainInterrupted):
        run("mlp", dataset, out, members=1, trainer_factory=StopAfterFirst())
    assert [p.name for p in part_dir(out).glob("config*")] == ["config0.parquet"]
    assert "training" not in json.loads((part_dir(out) / "job.json").read_text())
    log = io.StringIO()
    run("mlp", dataset, out, members=5, progress=log)
    assert "already done" not in log.getvalue()


class _KillInSecondGroup:
    """The real trainer; its second stacked group is interrupted after its first chunk."""

    def __init__(self):
        self.groups = 0

    def __call__(self, name, **options):
        outer = self
        trainer = get_trainer(name, **options)

        class Wrapped:
            def __getattr__(self, attr):
                return getattr(trainer, attr)

            def train_members(self, params, data, ctxs):
                outer.groups += 1
                chunks = trainer.train_members(params, data, ctxs)
                if outer.groups < 2:
                    return chunks

                def killed():
                    yield next(chunks)
                    raise TrainInterrupted(15)

                return killed()

        return Wrapped()


def test_a_kill_mid_group_loses_that_group_only_and_the_resume_equals_a_clean_run(
        dataset, tmp_path):
    out = tmp_path / "k.parquet"
    kill = _KillInSecondGroup()
    with pytest.raises(TrainInterrupted):  # after the second group's chunk reached the job
        run("mlp", dataset, out, members=2, trainer_factory=kill)
    kept = sorted(p.name for p in part_dir(out).glob("config*"))
    assert kept == ["config0.parquet", "config1.parquet"]
    log = io.StringIO()
    resumed = run("mlp", dataset, out, members=2, progress=log)
    assert "config 0 (1/5) already done" in log.getvalue()
    clean = run("mlp", dataset, tmp_path / "clean.parquet", members=2)
    pd.testing.assert_frame_equal(_values(resumed), _values(clean))


def test_a_failing_member_is_recorded_and_the_others_are_trained(dataset, tmp_path):
    calls = []

    def factory(name, **options):
        trainer = get_trainer(name, **options)

        class OneFails:
            def __getattr__(self, attr):
                return getattr(trainer, attr)

            def train_members(self, params, data, ctxs):
                calls.append(len(params))
                for group in trainer.train_members(params, data, ctxs):
                    yield GroupChunk(
                        members=(None,) + group.members[1:],
                        failures={0: MemoryError("simulated")} if group.members[0] else {})

        return OneFails()

    out = tmp_path / "f.parquet"
    log = io.StringIO()
    df = run("mlp", dataset, out, members=5, trainer_factory=factory, progress=log)
    assert calls == [5]
    assert sorted(df["config"].unique()) == [1, 2, 3, 4]
    failures = json.loads(failures_path(out).read_text())
    assert [f["config"] for f in failures] == [0] and failures[0]["error_type"] == "MemoryError"
    assert "config 0 (1/5) FAILED: MemoryError: simulated" in log.getvalue()


def test_an_error_of_the_whole_group_fails_its_members_only(dataset, tmp_path):
    def factory(name, **options):
        trainer = get_trainer(name, **options)

        class Broken:
            def __getattr__(self, attr):
                return getattr(trainer, attr)

            def train_members(self, params, data, ctxs):
                if len(params) == 3:  # the first group (configs 0-2) fails as a whole
                    raise RuntimeError("CUDA out of memory (simulated)")
                return trainer.train_members(params, data, ctxs)

        return Broken()

    out = tmp_path / "g.parquet"
    df = run("mlp", dataset, out, members=3, trainer_factory=factory)
    assert sorted(df["config"].unique()) == [3, 4]
    assert [f["config"] for f in json.loads(failures_path(out).read_text())] == [0, 1, 2]


def test_plan_groups_by_key_limit_and_memory():
    keys = {0: "a", 1: "a", 2: "b", 3: "a", 4: "a", 5: "b"}
    sizes = dict.fromkeys(keys, 10)
    assert plan.plan_groups(list(keys), keys, sizes, 3, None) == [[0, 1, 3], [2, 5], [4]]
    assert plan.plan_groups(list(keys), keys, sizes, 8, 25) == [[0, 1], [2, 5], [3, 4]]
    assert plan.plan_groups([0], keys, {0: 99}, 8, 25) == [[0]]  # alone, even when too big
    with pytest.raises(ValueError):
        plan.plan_groups([0], keys, sizes, 0, None)
    assert plan.max_members("cuda:0", None, 31) == 31
    assert plan.max_members("cpu", None, 31) == plan.AUTO_CPU_MEMBERS
    assert plan.max_members("cpu", 8, 31) == 8
    assert plan.parse_members("auto") is None and plan.parse_members(" 4 ") == 4
    for bad in (0, -1, 2.5, True, "many"):
        with pytest.raises(ValueError, match="positive integer"):
            plan.parse_members(bad)


def test_cli_members_flag(dataset, tmp_path, capsys):
    processed, splits = dataset
    out = tmp_path / "cli.parquet"
    rc = cli_main(["train", "--model", "mlp", "--dataset", "toy", "--split", "0",
                   "--processed", str(processed), "--splits", str(splits), "--out", str(out),
                   "--n-configs", "2", "--epochs", "mlp=2", "--seed", "0", "--members", "3"])
    assert rc == 0
    assert read_runs_provenance(out)["training"] == "stacked"
    assert "training=stacked members<=3" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main(["train", "--model", "mlp", "--dataset", "toy", "--split", "0",
                  "--processed", str(processed), "--splits", str(splits), "--out", str(out),
                  "--n-configs", "2", "--epochs", "mlp=2", "--seed", "0", "--members", "0"])
    assert "positive integer" in capsys.readouterr().err


def test_replay_of_a_stacked_job_reproduces_its_records(dataset, tmp_path):

    processed, splits = dataset
    runs = tmp_path / "r.parquet"
    run("mlp", dataset, runs, n_configs=3, members=4)
    result = replay_job(runs, processed, splits, tmp_path / "r.npz", seed=0,
                        progress=io.StringIO())
    assert result.sidecar["trained_with"]["training"] == "stacked"
    for entry in result.sidecar["selections"].values():
        assert entry["val_logloss_replayed"] == pytest.approx(entry["val_logloss_recorded"],
                                                              rel=1e-5)
    # replayed through the sequential trainer instead, a config with dropout does not match
    from tabbench.diagnostics.replay import ReplayMismatchError, ReplaySpec, replay_split
    from tabbench.summary.select import read_records

    records = read_records(runs).to_pandas()
    from tabbench.data.dataset import load_split_data

    data = load_split_data(processed, splits, 0)
    with_dropout = [c for c, p in records.groupby("config")["params"].first().items()
                    if json.loads(p)["dropout"] > 0]
    assert with_dropout  # the seed's configs 1-3 draw some dropout
    sub = records[records["config"].isin(with_dropout)]
    with pytest.raises(ReplayMismatchError):
        replay_split(sub, data, ReplaySpec(seed=0), progress=io.StringIO(), stacked=False)
    assert np.isfinite(records["val_logloss"]).all()
