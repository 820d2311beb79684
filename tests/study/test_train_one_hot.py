"""The MLP's one-hot cap (config mlp_max_one_hot_levels) reaches the preprocessor through
``tabbench train --mlp-max-one-hot-levels`` and ``train_job(trainer_options=...)``, is
checked before anything runs, and is part of the job identity a resume checks."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from fixtures.jobs import train_job

from tabbench.cli import main as cli_main
from tabbench.core.layout import part_dir
from tabbench.data.dataset import LABEL_COLUMN
from tabbench.models.mlp import MLPPreprocessor, MLPTrainer
from tabbench.models.mlp_config import MAX_ONE_HOT_LEVELS as MLP_MAX_ONE_HOT_LEVELS
from tabbench.models.recorder import check_records

N_LEVELS = 30


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """600 rows: one numerical, one categorical with 30 levels (each ~20 times, so every level
    is in train), binary label; split 0 = 64/16/20."""
    rng = np.random.default_rng(0)
    n = 600
    levels = np.array([f"L{i}" for i in range(N_LEVELS)], dtype=object)
    cat = levels[rng.permutation(np.arange(n) % N_LEVELS)]
    df = pd.DataFrame({"a": rng.normal(size=n), "c": pd.Categorical(cat)})
    df[LABEL_COLUMN] = ((df["a"] + (df["c"].cat.codes % 2)) > 0.5).astype(np.int64)
    perm = rng.permutation(n)
    roles = ["test"] * 120 + ["val"] * 96 + ["train"] * (n - 216)
    folder = tmp_path_factory.mktemp("onehot")
    df.to_parquet(folder / "toy.parquet", index=False)
    pd.DataFrame({"split": 0, "row": perm, "role": roles}).to_parquet(
        folder / "toy.splits.parquet", index=False
    )
    return folder / "toy.parquet", folder / "toy.splits.parquet"


@pytest.fixture
def fitted(monkeypatch):
    """(cap, n_features) of every MLPPreprocessor fitted during the test."""
    seen = []
    fit = MLPPreprocessor.fit

    def spy(self, X):
        out = fit(self, X)
        seen.append((self.max_one_hot_levels, self.n_features))
        return out

    monkeypatch.setattr(MLPPreprocessor, "fit", spy)
    return seen


def _argv(dataset, out, model="mlp"):
    processed, splits = dataset
    return ["train", "--model", model, "--dataset", "toy", "--split", "0",
            "--processed", str(processed), "--splits", str(splits), "--out", str(out),
            "--n-configs", "0", "--epochs", "mlp=1", "xgboost_default=2", "xgboost_tuned=2",
            "--seed", "0"]


@pytest.mark.parametrize(
    ("flag", "cap", "width"),
    [(["--mlp-max-one-hot-levels", "5"], 5, 1 + 5),
     (["--mlp-max-one-hot-levels", "none"], None, 1 + N_LEVELS),
     (["--mlp-max-one-hot-levels", "None"], None, 1 + N_LEVELS),  # how Snakemake renders null
     ([], MLP_MAX_ONE_HOT_LEVELS, 1 + N_LEVELS)],
)
def test_cli_cap_reaches_the_preprocessor(dataset, tmp_path, fitted, capsys, flag, cap, width):
    out = tmp_path / "split0.parquet"
    assert cli_main([*_argv(dataset, out), *flag]) == 0
    assert fitted == [(cap, width)]
    check_records(pd.read_parquet(out), {0: 1})
    err = capsys.readouterr().err
    assert f"max_one_hot_levels={cap}" in err  # the job's log says which cap it used
    capped = f"has {N_LEVELS} categories in train; one-hot encoding only the 5 most frequent"
    assert (capped in err) == (cap == 5), err


@pytest.mark.parametrize("value", ["1", "-3", "abc", "2.5"])
def test_cli_rejects_a_bad_cap(dataset, tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exc:
        cli_main([*_argv(dataset, tmp_path / "x.parquet"), "--mlp-max-one-hot-levels", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--mlp-max-one-hot-levels" in err and "must be an integer >= 2 or None" in err, err


def test_cli_cap_for_another_model_is_an_error(dataset, tmp_path, capsys):
    out = tmp_path / "xgb.parquet"
    rc = cli_main([*_argv(dataset, out, model="xgboost"), "--mlp-max-one-hot-levels", "5"])
    assert rc == 2
    assert "applies to model mlp only, not xgboost" in capsys.readouterr().err
    assert not out.exists() and not part_dir(out).exists()


def test_job_checks_options_before_anything_runs(dataset, tmp_path):
    out = tmp_path / "bad.parquet"
    with pytest.raises(ValueError, match=r"model 'xgboost' takes no trainer option"):
        train_job("xgboost", "toy", 0, *dataset, out, n_configs=0, epochs={"xgboost_default":
                  2}, seed=0, trainer_options={"max_one_hot_levels": 5})
    with pytest.raises(ValueError, match="mlp_max_one_hot_levels.*integer >= 2"):
        train_job("mlp", "toy", 0, *dataset, out, n_configs=0, epochs={"mlp": 1}, seed=0,
                  trainer_options={"max_one_hot_levels": 1})
    assert not part_dir(out).exists()


class _Killed(KeyboardInterrupt):
    """Stands for a SIGKILL: not an Exception, so the job does not record it as a failure."""


class _KilledAtStart:
    def train(self, params, data, ctx):
        raise _Killed


@pytest.mark.parametrize(("rerun_cap", "config0_retrained"),
                         [(MLP_MAX_ONE_HOT_LEVELS, False), (5, True)])
def test_resume_keeps_parts_only_for_the_same_cap(dataset, tmp_path, fitted, rerun_cap,
                                                  config0_retrained):
    out = tmp_path / "r.parquet"
    kw = dict(n_configs=1, epochs={"mlp": 1}, seed=0, progress=io.StringIO())
    calls = []

    def killed_at_config_1(name, **options):
        calls.append(options)
        return MLPTrainer(**options) if len(calls) == 1 else _KilledAtStart()

    # first run at the default cap, killed when config 1 starts: config 0's part file stays
    with pytest.raises(_Killed):
        train_job("mlp", "toy", 0, *dataset, out, trainer_factory=killed_at_config_1, **kw)
    assert (part_dir(out) / "config0.parquet").exists()
    assert "trainer_options" not in json.loads((part_dir(out) / "job.json").read_text())
    fitted.clear()
    train_job("mlp", "toy", 0, *dataset, out, **kw,
              trainer_options={"max_one_hot_levels": rerun_cap})
    # same cap: only config 1 is trained; another cap: config 0 is retrained as well
    assert len(fitted) == (2 if config0_retrained else 1), fitted
    assert all(cap == rerun_cap for cap, _ in fitted)
