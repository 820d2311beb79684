"""What a train job keeps for re-stopping (tabbench.study.restop_store, docs/design.md §16): the
boosters'
kept models give back every round's validation logits bit for bit; the networks' float32
logits are the trainer's own, float16 within its rounding; over the cap nothing is kept and the
sidecar says why; keeping never changes a record."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from fixtures.data_fixtures import write_processed_toy
from fixtures.jobs import train_job

from tabbench.core.layout import restop_artefact, restop_sidecar
from tabbench.data.dataset import load_split_data
from tabbench.models.base import ModelKeepingTrainer, TrainContext
from tabbench.models.lightgbm import LightGBMTrainer
from tabbench.models.mlp import MLPTrainer
from tabbench.models.registry import get_trainer
from tabbench.models.xgboost import XGBoostTrainer
from tabbench.search import sample_config
from tabbench.study import restop_store

EPOCHS = {"xgboost_default": 7, "xgboost_tuned": 9, "lightgbm_default": 7,
          "lightgbm_tuned": 9, "mlp": 3}


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "3 classes"])
def dataset(request, tmp_path_factory):
    return write_processed_toy(tmp_path_factory.mktemp("data"), n=500,
                               n_classes=request.param, n_splits=2)


def job(model, dataset, out, **kw):
    processed, splits = dataset
    kw.setdefault("progress", io.StringIO())
    return train_job(model, "toy", 1, processed, splits, out, n_configs=2, epochs=EPOCHS,
                     seed=0, **kw)


def _yielded(trainer, params, data, ctx) -> np.ndarray:
    return np.concatenate([c.val_logits for c in trainer.train(params, data, ctx)])


@pytest.mark.parametrize("make", [lambda: XGBoostTrainer(chunk_rounds=3),
                                  lambda: LightGBMTrainer(chunk_rounds=3)],
                         ids=["xgboost", "lightgbm"])
def test_a_kept_booster_gives_back_every_rounds_val_logits_bit_for_bit(make, dataset):
    data = load_split_data(*dataset, 1)
    name = make().name
    for c in range(3):  # the default config and two draws of the search space
        params = sample_config(name, c, seed=0, dataset="toy", split=1)
        ctx = TrainContext(seed=c, n_epochs=8, threads=1)
        trainer = make()
        assert isinstance(trainer, ModelKeepingTrainer)
        recorded = _yielded(trainer, params, data, ctx)
        blob = trainer.kept_model()
        chunks = list(make().kept_val_logits(blob, data, ctx))
        assert [first for first, _ in chunks] == [1, 4, 7]
        back = np.concatenate([z for _, z in chunks])
        assert back.dtype == np.float32 and back.shape == recorded.shape
        assert np.array_equal(back, recorded), (name, c)
        bound = trainer.kept_model_bound(params, data, ctx.n_epochs)
        assert len(blob) <= bound  # the estimate logged before training is an upper bound


def test_a_kept_booster_with_other_rounds_is_refused(dataset):
    data = load_split_data(*dataset, 1)
    trainer = XGBoostTrainer()
    params = sample_config("xgboost", 0, seed=0, dataset="toy", split=1)
    _yielded(trainer, params, data, TrainContext(seed=0, n_epochs=5))
    with pytest.raises(ValueError, match="5 rounds, the records 6"):
        list(trainer.kept_val_logits(trainer.kept_model(), data,
                                     TrainContext(seed=0, n_epochs=6)))


class Capturing(MLPTrainer):
    """The MLP, remembering every validation logit it yielded (config by config)."""

    seen: list[np.ndarray] = []

    def train(self, params, data, ctx):
        chunks = []
        Capturing.seen.append(chunks)
        for chunk in super().train(params, data, ctx):
            chunks.append(np.array(chunk.val_logits, copy=True))
            yield chunk


def _kept_logits(out, config):
    k = restop_store.read_restop_store(out)
    assert k is not None and k.kept, k and k.reason
    kind, z = k.config_array(config)
    assert kind == restop_store.LOGITS
    return z


def test_network_logits_are_kept_as_float32_exactly_and_change_no_record(dataset, tmp_path):
    Capturing.seen = []
    out = tmp_path / "runs" / "mlp" / "toy" / "split1.parquet"
    df = job("mlp", dataset, out, keep_for_restop=True,
             trainer_factory=lambda name, **kw: Capturing(chunk_epochs=2))
    for c, chunks in enumerate(Capturing.seen[-3:]):
        z = _kept_logits(out, c)
        assert z.dtype == np.float32
        assert np.array_equal(z, np.concatenate(chunks))
    sidecar = json.loads(restop_sidecar(out).read_text())
    assert sidecar["kept"] and sidecar["n_val"] == len(load_split_data(*dataset, 1).y_val)
    plain = job("mlp", dataset, tmp_path / "plain.parquet", keep_for_restop=False)
    pd.testing.assert_frame_equal(df.drop(columns="fit_seconds"),
                                  plain.drop(columns="fit_seconds"))
    assert not restop_sidecar(tmp_path / "plain.parquet").exists()  # off: nothing written


def test_float16_when_float32_is_over_the_cap_and_nothing_over_both(dataset, tmp_path):
    data = load_split_data(*dataset, 1)
    values = len(data.y_val) * data.n_classes * EPOCHS["mlp"] * 3  # 3 configs
    besides = len(data.y_val) * 8 + restop_store.FILE_OVERHEAD * 3  # labels, headers
    # over float32's bytes (4), float16's fit (2)
    between = (values * 3 + besides) / restop_store.MB
    Capturing.seen = []
    out = tmp_path / "f16" / "split1.parquet"
    log = io.StringIO()
    job("mlp", dataset, out, keep_for_restop=True, restop_max_mb=between, progress=log,
        trainer_factory=lambda name, **kw: Capturing())
    assert "validation logits as float16" in log.getvalue()
    for c, chunks in enumerate(Capturing.seen[-3:]):
        z = _kept_logits(out, c)
        exact = np.concatenate(chunks)
        assert z.dtype == np.float16
        np.testing.assert_allclose(z.astype(np.float32), exact, rtol=2 ** -11, atol=1e-7)

    tiny = tmp_path / "none" / "split1.parquet"
    log = io.StringIO()
    job("mlp", dataset, tiny, keep_for_restop=True,
        restop_max_mb=(values * 1.5 + besides) / restop_store.MB, progress=log)
    assert not restop_artefact(tiny).exists()
    sidecar = json.loads(restop_sidecar(tiny).read_text())
    assert not sidecar["kept"] and "even as float16" in sidecar["reason"]
    assert "restop_max_mb" in sidecar["reason"] and "keeping nothing" in log.getvalue()


def test_boosters_over_the_cap_as_they_finish_keep_nothing_and_say_so(dataset, tmp_path):
    out = tmp_path / "x" / "split1.parquet"
    log = io.StringIO()
    records = job("xgboost", dataset, out, keep_for_restop=True, restop_max_mb=0.001,
                  progress=log)
    assert not restop_artefact(out).exists()
    reason = json.loads(restop_sidecar(out).read_text())["reason"]
    assert "over the cap" in reason and "restop_max_mb" in reason
    assert sorted(records["config"].unique()) == [0, 1, 2]  # every record written all the same


def test_a_resumed_job_whose_configs_kept_nothing_keeps_nothing(dataset, tmp_path):
    """Configs finished with keeping off cannot be re-stopped: the job says so rather than
    keeping a partial artefact (a runs file gains a column whole)."""
    out = tmp_path / "r" / "split1.parquet"
    calls = []

    class StopAfterTwo:
        name = "xgboost"

        def train(self, params, data, ctx):
            calls.append(1)
            if len(calls) == 3:
                raise KeyboardInterrupt  # the job is killed in config 2
            yield from get_trainer("xgboost").train(params, data, ctx)

    with pytest.raises(KeyboardInterrupt):
        job("xgboost", dataset, out, keep_for_restop=False,
            trainer_factory=lambda name, **kw: StopAfterTwo())
    job("xgboost", dataset, out, keep_for_restop=True)
    sidecar = json.loads(restop_sidecar(out).read_text())
    assert not sidecar["kept"] and "configs [0, 1]" in sidecar["reason"]
    assert not restop_artefact(out).exists()
