"""The train job: records schema and size, test metrics equal a fresh evaluation of that epoch's
model, determinism, failed configs in the sidecar, and kill-and-resume."""

import copy
import io
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import torch
import xgboost as xgb
from fixtures.data_fixtures import write_dataset
from fixtures.jobs import train_job
from fixtures.signals import interruptible

import tabbench
from tabbench import metrics
from tabbench.cli import main as cli_main
from tabbench.core.layout import failures_path, part_dir
from tabbench.data.dataset import load_split_data
from tabbench.metrics import losses
from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.mlp import MLPTrainer
from tabbench.models.recorder import check_records
from tabbench.models.registry import get_trainer
from tabbench.models.runs_schema import TEST_METRIC_IDS, column_on_test, val_column
from tabbench.models.xgboost import XGBoostTrainer, positional, to_logits
from tabbench.study.signals import TrainInterrupted, stop_on_signals

SRC = os.path.dirname(os.path.dirname(tabbench.__file__))
EPOCHS = {"xgboost_default": 6, "xgboost_tuned": 9, "mlp": 4}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_dataset(tmp_path_factory.mktemp("data"))


def run(model, dataset, out, n_configs=2, seed=0, epochs=EPOCHS, **kw):
    processed, splits = dataset
    kw.setdefault("progress", io.StringIO())
    return train_job(model, "toy", 1, processed, splits, out, n_configs=n_configs,
                     epochs=epochs, seed=seed, **kw)


def _metric_cols():
    cols = [val_column(m) for m in stopping_metric_ids()] + ["beta"]
    for m in TEST_METRIC_IDS:
        cols += [column_on_test(m), column_on_test(m, True)]
    return cols


@pytest.mark.parametrize("model", ["xgboost", "mlp"])
def test_records_schema_and_rows_per_config(model, dataset, tmp_path):
    out = tmp_path / "runs" / f"{model}.parquet"
    df = run(model, dataset, out)
    on_disk = pd.read_parquet(out)
    expected = {0: 6, 1: 9, 2: 9} if model == "xgboost" else {0: 4, 1: 4, 2: 4}
    check_records(on_disk, expected)
    pd.testing.assert_frame_equal(on_disk, df, check_dtype=False)
    assert json.loads(failures_path(out).read_text()) == []
    assert not part_dir(out).exists()
    assert np.isfinite(on_disk[_metric_cols()].to_numpy()).all()
    assert on_disk["params"].nunique() == 3


def _fresh(val_logits, test_logits, data):
    """Metrics of one epoch from scratch with the single-epoch definitions of tabbench.metrics
    (not the batched fast path the recorder uses): an independent check of the whole chain."""
    out = {val_column(m): v for m, v in metrics.stopping_metrics(val_logits, data.y_val).items()}
    out["beta"] = metrics.fit_temperature(val_logits, data.y_val)
    y = data.y_test
    out.update({
        "test_logloss": metrics.logloss(test_logits, y),
        "test_brier": metrics.brier(test_logits, y),
        "test_error": metrics.error(test_logits, y),
        "test_auroc": metrics.one_minus_auroc(test_logits, y),
        "test_ece": metrics.ece(test_logits, y),
    })
    p = metrics.TemperatureScaling().fit(val_logits, data.y_val).predict_proba(test_logits)
    out.update({
        "test_logloss_ts": losses.logloss_proba(p, y),
        "test_brier_ts": losses.brier_proba(p, y),
        "test_error_ts": float(np.mean(p.argmax(axis=1) != y)),
        "test_auroc_ts": 1.0 - losses.auroc_scores(p, y),
        "test_ece_ts": losses.ece_proba(p, y),
    })
    return out


def _assert_row_matches(row, fresh):
    for col in _metric_cols():
        np.testing.assert_allclose(row[col], fresh[col], rtol=1e-5, atol=1e-7, err_msg=col)


def test_xgboost_metrics_equal_fresh_evaluation_of_that_round(dataset, tmp_path):
    trainers = []

    def factory(name):
        trainers.append(XGBoostTrainer(chunk_rounds=4))
        return trainers[-1]

    df = run("xgboost", dataset, tmp_path / "x.parquet", n_configs=1, trainer_factory=factory)
    data = load_split_data(*dataset, 1)
    bst = trainers[-1].booster  # config 1, the last trained
    dval, dtest = (xgb.DMatrix(positional(X), enable_categorical=True)
                   for X in (data.X_val, data.X_test))
    for r in (1, 5, 9):
        logits = [to_logits(bst.predict(d, iteration_range=(0, r), output_margin=True), 3)
                  for d in (dval, dtest)]
        row = df[(df["config"] == 1) & (df["epoch"] == r)].iloc[0]
        _assert_row_matches(row, _fresh(*logits, data))


def test_mlp_metrics_equal_fresh_evaluation_of_that_epoch(dataset, tmp_path):
    snaps = {}

    def factory(name):
        def hook(epoch, net, pre):
            if epoch in (1, 3, 4):
                snaps[epoch] = (copy.deepcopy(net), pre)
        return MLPTrainer(chunk_epochs=3, epoch_hook=hook)

    df = run("mlp", dataset, tmp_path / "m.parquet", n_configs=0, trainer_factory=factory)
    data = load_split_data(*dataset, 1)
    for epoch, (net, pre) in snaps.items():
        net.eval()
        with torch.no_grad():
            logits = [net(torch.as_tensor(pre.transform(X))).numpy()
                      for X in (data.X_val, data.X_test)]
        _assert_row_matches(df[df["epoch"] == epoch].iloc[0], _fresh(*logits, data))


@pytest.mark.parametrize("model", ["xgboost", "mlp"])
def test_same_job_twice_gives_identical_records(model, dataset, tmp_path):
    a = run(model, dataset, tmp_path / "a.parquet").drop(columns="fit_seconds")
    b = run(model, dataset, tmp_path / "b.parquet").drop(columns="fit_seconds")
    pd.testing.assert_frame_equal(a, b)
    c = run(model, dataset, tmp_path / "c.parquet", seed=1).drop(columns="fit_seconds")
    assert not a[_metric_cols()].equals(c[_metric_cols()])


def test_failed_config_goes_to_the_sidecar_and_the_job_goes_on(dataset, tmp_path):
    calls = []

    class Failing:
        name = "mlp"

        def train(self, params, data, ctx):
            yield from MLPTrainer(chunk_epochs=1).train(params, data, ctx)
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")

    def factory(name):
        calls.append(name)
        return Failing() if len(calls) == 2 else get_trainer(name)

    out = tmp_path / "f.parquet"
    log = io.StringIO()
    df = run("mlp", dataset, out, progress=log, trainer_factory=factory)
    assert sorted(df["config"].unique()) == [0, 2]
    fails = json.loads(failures_path(out).read_text())
    assert [(f["config"], f["error_type"], f["epochs_done"]) for f in fails] == [
        (1, "OutOfMemoryError", 4)]
    assert "out of memory" in fails[0]["message"] and fails[0]["params"]["lr"] > 0
    assert "config 1 (2/3) FAILED: OutOfMemoryError" in log.getvalue()


def test_first_epoch_nan_is_a_failure_not_a_crash(dataset, tmp_path):
    class Exploding(MLPTrainer):
        def train(self, params, data, ctx):
            return super().train({**params, "lr": 1e30, "batch_size": 16}, data, ctx)

    out = tmp_path / "nan.parquet"
    df = run("mlp", dataset, out, n_configs=1, trainer_factory=lambda name: Exploding())
    assert df.empty
    check_records(df)
    fails = json.loads(failures_path(out).read_text())
    assert [f["error_type"] for f in fails] == ["FloatingPointError"] * 2


def test_progress_lines(dataset, tmp_path):
    log = io.StringIO()
    run("xgboost", dataset, tmp_path / "p.parquet", n_configs=1, progress=log)
    lines = log.getvalue().splitlines()
    assert any("config 1 (2/2) epoch 9/9 elapsed" in line and "eta" in line for line in lines)
    assert lines[-1].startswith("[xgboost/toy/split1] done: 2 configs recorded, 0 failed")


def test_stale_parts_of_another_job_are_discarded(dataset, tmp_path):
    out = tmp_path / "s.parquet"
    parts = part_dir(out)
    parts.mkdir()
    (parts / "job.json").write_text(json.dumps({"model": "xgboost", "seed": 99}))
    (parts / "config0.parquet").write_text("garbage")
    df = run("xgboost", dataset, out, n_configs=0)
    check_records(df, {0: 6})


def test_cli_runs_a_job(dataset, tmp_path):
    processed, splits = dataset
    out = tmp_path / "cli" / "split0.parquet"
    rc = cli_main(["train", "--model", "xgboost", "--dataset", "toy", "--split", "0",
                   "--processed", str(processed), "--splits", str(splits), "--out", str(out),
                   "--n-configs", "1", "--epochs", "xgboost_default=3", "xgboost_tuned=5",
                   "--seed", "0", "--threads", "1"])
    assert rc == 0
    check_records(pd.read_parquet(out), {0: 3, 1: 5})


def test_killed_job_resumes_and_redoes_at_most_one_config(tmp_path):
    processed, splits = write_dataset(tmp_path / "data", n=2500, n_classes=2)
    args = ["train", "--model", "xgboost", "--dataset", "toy", "--split", "0",
            "--processed", str(processed), "--splits", str(splits), "--n-configs", "4",
            "--epochs", "xgboost_default=60", "xgboost_tuned=60", "--seed", "0"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    killed = tmp_path / "killed" / "split0.parquet"
    parts = part_dir(killed)
    log1 = tmp_path / "run1.log"
    with open(log1, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "tabbench.cli", *args,
                                 "--out", str(killed)], stderr=err, env=env)
        deadline = time.time() + 120
        while not (parts / "config0.parquet").exists():
            assert proc.poll() is None, log1.read_text()
            assert time.time() < deadline
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not killed.exists()
    done = {int(p.stem.removeprefix("config")) for p in parts.glob("config*.parquet")}
    assert 0 in done and len(done) < 5
    started1 = {c for c in range(5) if f"config {c} ({c + 1}/5) training" in log1.read_text()}
    assert len(started1 - done) <= 1  # at most the config in flight is lost
    mtimes = {c: (parts / f"config{c}.parquet").stat().st_mtime_ns for c in done}

    log2 = io.StringIO()
    resumed = train_job(
        "xgboost", "toy", 0, processed, splits, killed, n_configs=4,
        epochs={"xgboost_default": 60, "xgboost_tuned": 60}, seed=0, progress=log2,
        metrics=_MtimeProbe(parts, mtimes),
    )
    text = log2.getvalue()
    for c in range(5):
        retrained = f"config {c} ({c + 1}/5) training" in text
        assert retrained == (c not in done), text
        assert (f"config {c} ({c + 1}/5) already done" in text) == (c in done)
    assert not parts.exists()

    fresh = train_job("xgboost", "toy", 0, processed, splits, tmp_path / "fresh.parquet",
                      n_configs=4, epochs={"xgboost_default": 60, "xgboost_tuned": 60},
                      seed=0, progress=io.StringIO())
    pd.testing.assert_frame_equal(resumed.drop(columns="fit_seconds"),
                                  fresh.drop(columns="fit_seconds"))


def _wait_for(proc, log, text, timeout=300):
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"no {text!r} after {timeout} s: {log.read_text()}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("model", "epochs", "sig", "wait_for", "kept"),
    [
        # XGBoost: config 0 (20 rounds) finishes, config 1 (5,000 rounds) is interrupted
        ("xgboost", ["xgboost_default=20", "xgboost_tuned=5000"], signal.SIGINT,
         "config 1 (2/4) epoch", [0]),
        # the torch loop: interrupted in config 0, nothing to keep
        ("mlp", ["mlp=2000"], signal.SIGTERM, "config 0 (1/4) epoch", []),
    ],
    ids=["xgboost-SIGINT", "mlp-SIGTERM"],
)
def test_signal_stops_the_job_promptly_and_keeps_finished_configs(
    tmp_path, model, epochs, sig, wait_for, kept
):
    """Ctrl-C (SIGINT) or SIGTERM: the job stops within the current boosting round or
    mini-batch, says what it kept and how to go on, and exits 128 + signal number (not a
    traceback); a rerun resumes from the part files."""
    processed, splits = write_dataset(tmp_path / "data", n=2500, n_classes=2)
    out = tmp_path / "runs" / "split0.parquet"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    log = tmp_path / "train.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tabbench.cli", "train", "--model", model, "--dataset", "toy",
             "--split", "0", "--processed", str(processed), "--splits", str(splits),
             "--out", str(out), "--n-configs", "3", "--epochs", *epochs, "--seed", "0"],
            stderr=err, env=env, preexec_fn=interruptible,
        )  # fmt: skip
        try:
            _wait_for(proc, log, wait_for)
            sent = time.monotonic()
            proc.send_signal(sig)
            rc = proc.wait(timeout=60)  # generous: the job reacts within a round or a batch
        finally:
            proc.kill()
    reaction = time.monotonic() - sent
    text = log.read_text()
    print(f"{model}: exit {rc} {reaction:.2f} s after {sig.name}")
    assert rc == 128 + sig, text[-3000:]
    assert f"tabbench train: stopped by {sig.name}" in text
    assert "Traceback" not in text
    assert f"({len(kept)} of 4)" in text and f"config {len(kept)} was in progress" in text
    parts = part_dir(out)
    assert sorted(p.name for p in parts.glob("config*.parquet")) == [f"config{c}.parquet"
                                                          for c in kept]
    assert not list(parts.glob(".*.tmp")) and not out.exists()
    if kept:  # resumed: the kept config is not trained again
        resumed = io.StringIO()
        train_job(model, "toy", 0, processed, splits, out, n_configs=3,
                  epochs={"xgboost_default": 20, "xgboost_tuned": 5},
                  seed=0, progress=resumed)  # fmt: skip
        assert "config 0 (1/4) already done (part file)" in resumed.getvalue()
        assert out.exists() and not parts.exists()


def test_a_signal_ignored_at_start_stays_ignored():
    """A job started with SIGINT ignored (a non-interactive shell starts ``snakemake &`` so, and
    that Snakemake ignores Ctrl-C) keeps ignoring it: stopping alone, it would be a failed job
    that Snakemake retries or goes on without. SIGTERM, not ignored, still stops it, and the
    ignore is back after the block."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(TrainInterrupted) as stopped, stop_on_signals():
            signal.raise_signal(signal.SIGINT)  # ignored: the block goes on
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            signal.raise_signal(signal.SIGTERM)
            time.sleep(1)  # the handler runs at the next instruction; not reached
        assert stopped.value.signum == signal.SIGTERM
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


class _MtimeProbe:
    """The real metrics, plus a check (each time metrics run) that part files finished before
    the kill were not rewritten by the resumed job."""

    def __init__(self, parts, mtimes):
        self.parts, self.mtimes = parts, mtimes

    def _check(self):
        for c, t in self.mtimes.items():
            assert (self.parts / f"config{c}.parquet").stat().st_mtime_ns == t

    def stopping_metrics_batched(self, *a):
        self._check()
        return metrics.stopping_metrics_batched(*a)

    def metrics_on_test_batched(self, *a):
        return metrics.metrics_on_test_batched(*a)


# --- device: tabbench.core.gpu.acquire_device held around the loop ---------------------

@pytest.fixture
def no_cuda(monkeypatch):
    """A machine without CUDA, whatever torch build runs the tests."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)


def test_cuda_without_cuda_falls_back_to_cpu_with_a_warning(dataset, tmp_path, no_cuda, caplog):
    log = io.StringIO()
    with caplog.at_level("WARNING", logger="tabbench.core.gpu"):
        df = run("mlp", dataset, tmp_path / "fb.parquet", n_configs=0, device="cuda",
                 allow_cpu_fallback=True, gpu_lock_dir=tmp_path / "locks", progress=log)
    check_records(df, {0: EPOCHS["mlp"]})
    assert "device=cpu" in log.getvalue().splitlines()[0]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("falling back to CPU" in m and "allow_cpu_fallback" in m for m in warned), warned


def test_cuda_without_cuda_and_no_fallback_fails_before_training(dataset, tmp_path, no_cuda):
    from tabbench.core.gpu import GpuUnavailableError

    out = tmp_path / "nofb.parquet"
    with pytest.raises(GpuUnavailableError, match="allow_cpu_fallback"):
        run("mlp", dataset, out, n_configs=0, device="cuda", allow_cpu_fallback=False)
    assert not out.exists() and not part_dir(out).exists()


def test_cli_names_the_config_key_when_cuda_is_missing(dataset, tmp_path, no_cuda, capsys):
    processed, splits = dataset
    out = tmp_path / "cli" / "split0.parquet"
    argv = ["train", "--model", "mlp", "--dataset", "toy", "--split", "0",
            "--processed", str(processed), "--splits", str(splits), "--out", str(out),
            "--n-configs", "0", "--epochs", "mlp=2", "--seed", "0", "--device", "cuda"]
    assert cli_main([*argv, "--allow-cpu-fallback", "false"]) == 2
    err = capsys.readouterr().err
    assert "tabbench train: error:" in err and "allow_cpu_fallback: true" in err, err
    assert "Traceback" not in err and not out.exists()
    assert cli_main([*argv, "--allow-cpu-fallback", "true"]) == 0
    err = capsys.readouterr().err
    assert "WARNING tabbench.core.gpu" in err and "falling back to CPU" in err, err
    check_records(pd.read_parquet(out), {0: 2})


def test_xgboost_ignores_the_nn_device(dataset, tmp_path, no_cuda):
    df = run("xgboost", dataset, tmp_path / "x.parquet", n_configs=0, device="cuda",
             allow_cpu_fallback=False)
    check_records(df, {0: EPOCHS["xgboost_default"]})


def test_claimed_gpu_is_held_for_the_whole_loop(dataset, tmp_path, monkeypatch):
    """With CUDA present, plain `cuda` claims a GPU slot by file lock before the first config
    and keeps it until the last one finished; each config trains on the claimed device."""
    import fcntl

    from tabbench.models.base import TrainContext

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a machine with 2 GPUs
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    locks = tmp_path / "locks"
    # another job holds GPU 0: this job must claim GPU 1
    other = os.open(locks.mkdir() or locks / "gpu-0.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    seen = []

    def lock_is_held(path):
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    class OnCpu:  # the real MLP, run on the CPU, noting the device it was given
        def train(self, params, data, ctx):
            seen.append((ctx.device, lock_is_held(locks / "gpu-1.lock")))
            cpu = TrainContext(seed=ctx.seed, n_epochs=ctx.n_epochs, threads=ctx.threads)
            return get_trainer("mlp").train(params, data, cpu)

    try:
        run("mlp", dataset, tmp_path / "g.parquet", n_configs=1, device="cuda",
            gpu_lock_dir=locks, trainer_factory=lambda name: OnCpu())
    finally:
        os.close(other)
    assert seen == [("cuda:1", True), ("cuda:1", True)]
    assert not lock_is_held(locks / "gpu-1.lock")  # released when the job ends
