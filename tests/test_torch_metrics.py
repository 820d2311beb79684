"""tabbench.torch: refinement losses as torchmetrics metrics (and with Lightning's callbacks).

The metric must equal tabbench.stopping.refinement_loss of all the samples it saw: however
they were split into batches, and across processes after torchmetrics' distributed sync (a
real two-process gloo group here, with uneven shards).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from fixtures.optional import import_optional

import_optional("torchmetrics", "torch")

import tabbench.metrics as M  # noqa: E402
from tabbench.stopping import refinement_loss  # noqa: E402
from tabbench.torch import RefinementMetric, TSRefinement, TSRefinementBrier  # noqa: E402


def _logits(n: int, k: int, seed: int = 0, scale: float = 2.5):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, k, (n,), generator=g)
    z = torch.randn(n, k, generator=g)
    z[torch.arange(n), y] += 1.0
    return scale * z, y


@pytest.mark.parametrize("k", [2, 4])
def test_accumulated_batches_equal_the_loss_of_all_samples(k):
    z, y = _logits(1000, k, seed=k)
    for metric, kind in ((TSRefinement(), "ts_ref"), (TSRefinementBrier(), "ts_ref_brier"),
                         (RefinementMetric("ts_ref_cv5"), "ts_ref_cv5"),
                         (RefinementMetric("logloss"), "logloss")):
        for batch in torch.arange(1000).split(137):  # uneven last batch
            metric.update(z[batch], y[batch])
        got = metric.compute()
        assert got.dtype == torch.float32 and got.ndim == 0
        definition = getattr(M, kind)(z.double().numpy(), y.numpy())
        assert float(got) == pytest.approx(definition, rel=1e-5)
        metric.reset()
        metric.update(z[:300], y[:300])  # a reset forgets the previous epoch
        assert float(metric.compute()) == pytest.approx(
            refinement_loss(y[:300], z[:300], kind), rel=1e-6)


def test_binary_margins_probabilities_and_divergence():
    z, y = _logits(500, 2, seed=5)
    full = TSRefinement()
    full.update(z, y)
    margin = TSRefinement()
    margin.update(z[:, 1] - z[:, 0], y)
    proba = TSRefinement(scores="proba")
    proba.update(torch.softmax(z.double(), 1), y)
    assert float(margin.compute()) == pytest.approx(float(full.compute()), rel=1e-5)
    assert float(proba.compute()) == pytest.approx(float(full.compute()), rel=1e-5)
    bad = TSRefinement()
    bad.update(torch.full((4, 2), math.nan), torch.tensor([0, 1, 0, 1]))
    assert math.isnan(float(bad.compute()))
    with pytest.raises(ValueError, match="unknown kind"):
        RefinementMetric("ts-ref")
    with pytest.raises(ValueError, match="target"):
        TSRefinement().update(z, y[:10])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_on_a_cuda_device():
    z, y = _logits(600, 3, seed=6)
    metric = TSRefinement().to("cuda")
    for batch in torch.arange(600).split(200):
        metric.update(z[batch].cuda(), y[batch].cuda())
    got = metric.compute()
    assert got.device.type == "cuda"
    assert float(got) == pytest.approx(refinement_loss(y, z, "ts_ref"), rel=1e-5)


def _distributed_worker(rank: int, world: int, init: str, out: str, n: int) -> None:
    torch.distributed.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    z, y = _logits(n, 3, seed=9)
    shard = slice(0, 170) if rank == 0 else slice(170, n)  # uneven shards
    metric = TSRefinement()
    for batch in torch.arange(n)[shard].split(64):
        metric.update(z[batch], y[batch])
    value = float(metric.compute())  # syncs: gathers both processes' batches
    np.save(f"{out}/rank{rank}.npy", np.array([value]))
    torch.distributed.destroy_process_group()


def test_distributed_sync_gathers_every_process(tmp_path):
    n = 400
    init = f"file://{tmp_path / 'rendezvous'}"
    torch.multiprocessing.spawn(_distributed_worker, args=(2, init, str(tmp_path), n), nprocs=2,
                                join=True)
    z, y = _logits(n, 3, seed=9)
    expected = refinement_loss(y, z, "ts_ref")
    local = refinement_loss(y[:170], z[:170], "ts_ref")
    for rank in range(2):
        got = float(np.load(tmp_path / f"rank{rank}.npy")[0])
        assert got == pytest.approx(expected, rel=1e-5)
        assert abs(got - local) > 1e-4  # not the local shard's value


def test_lightning_callbacks_stop_and_keep_the_refinement_minimum(tmp_path):
    """EarlyStopping(monitor, mode="min") and ModelCheckpoint on the logged metric: the kept
    checkpoint is the epoch of minimal validation TS-refinement, and each logged value is the
    refinement of that epoch's validation logits."""
    L = import_optional("lightning.pytorch", "lightning")
    torch.manual_seed(0)
    n, d, k = 400, 8, 3
    X = torch.randn(n, d)
    y = (X[:, :3] + 0.8 * torch.randn(n, 3)).argmax(1)
    X_val = torch.randn(300, d)
    y_val = (X_val[:, :3] + 0.8 * torch.randn(300, 3)).argmax(1)
    seen: list[float] = []

    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(d, 64), torch.nn.ReLU(),
                                           torch.nn.Linear(64, k))
            self.val_ts_ref = TSRefinement()

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, _):
            return torch.nn.functional.cross_entropy(self(batch[0]), batch[1])

        def validation_step(self, batch, _):
            self.val_ts_ref.update(self(batch[0]), batch[1])
            self.log("val_ts_ref", self.val_ts_ref, on_epoch=True)

        def on_validation_epoch_end(self):
            with torch.no_grad():
                seen.append(refinement_loss(y_val, self(X_val), "ts_ref"))

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=3e-2)

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=64,
                                         shuffle=True)
    val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X_val, y_val),
                                      batch_size=100)
    stop = L.callbacks.EarlyStopping(monitor="val_ts_ref", mode="min", patience=3)
    best = L.callbacks.ModelCheckpoint(monitor="val_ts_ref", mode="min", dirpath=tmp_path)
    trainer = L.Trainer(max_epochs=40, callbacks=[stop, best], logger=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        num_sanity_val_steps=0, accelerator="cpu", default_root_dir=tmp_path)
    trainer.fit(Net(), loader, val)
    best_epoch = int(np.argmin(seen))
    assert trainer.current_epoch < 40 and len(seen) == best_epoch + 1 + 3  # stopped
    assert float(best.best_model_score) == pytest.approx(min(seen), rel=1e-5)
    restored = Net.load_from_checkpoint(best.best_model_path)
    with torch.no_grad():
        assert refinement_loss(y_val, restored(X_val), "ts_ref") == pytest.approx(min(seen),
                                                                                 rel=1e-5)
