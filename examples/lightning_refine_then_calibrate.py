"""Refine, then calibrate with PyTorch Lightning: early-stop and checkpoint an MLP on logged
validation TS-refinement, then temperature-scale the best checkpoint on the same validation set.

``tabbench.torch.TSRefinement`` is a torchmetrics metric: logged once per validation epoch, it
is what Lightning's ``EarlyStopping(monitor="val_ts_ref", mode="min")`` and
``ModelCheckpoint(monitor="val_ts_ref", mode="min")`` watch — no loop helper involved. For
comparison the same run (same seeds) is repeated monitoring validation log loss
(``RefinementMetric("logloss")``). Each best checkpoint is then temperature-scaled on its
validation logits (``tabbench.calibration.TemperatureScaling``). Needs
``pip install -e ".[lightning]"``.

    python examples/lightning_refine_then_calibrate.py            # MagicTelescope, ~1-2 min
    python examples/lightning_refine_then_calibrate.py --small    # seconds (what CI runs)
"""

from __future__ import annotations

import logging
import tempfile
import warnings
from pathlib import Path

import lightning.pytorch as L
import torch
from _demo_data import load, parse_args, report, test_row
from torch_refine_then_calibrate import preprocess

from tabbench.calibration import TemperatureScaling
from tabbench.torch import RefinementMetric, TSRefinement


class MLP(L.LightningModule):
    """Two hidden layers; logs the validation metric ``val_<kind>`` once per epoch."""

    def __init__(self, n_features: int, n_classes: int, kind: str) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(n_features, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, n_classes),
        )
        self.kind = kind
        self.val_metric = TSRefinement() if kind == "ts_ref" else RefinementMetric(kind)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.val_metric.update(self(x), y)  # accumulates the epoch's validation logits
        self.log(f"val_{self.kind}", self.val_metric, on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def train(kind: str, tensors, n_classes: int, args, root: Path) -> tuple[MLP, int]:
    """One run monitoring ``val_<kind>``: the best checkpoint and its (0-based) epoch."""
    X_train, y_train, X_val, y_val = tensors
    L.seed_everything(0, verbose=False)
    max_epochs, patience = (12, 4) if args.small else (200, 30)
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(X_train, y_train), batch_size=256, shuffle=True)
    val_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(X_val, y_val), batch_size=1024)
    monitor = f"val_{kind}"
    stop = L.callbacks.EarlyStopping(monitor=monitor, mode="min", patience=patience)
    best = L.callbacks.ModelCheckpoint(monitor=monitor, mode="min", dirpath=root / kind,
                                       filename="{epoch}")
    trainer = L.Trainer(max_epochs=max_epochs, callbacks=[stop, best], logger=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        num_sanity_val_steps=0, deterministic=True, default_root_dir=root)
    trainer.fit(MLP(X_train.shape[1], n_classes, kind), train_loader, val_loader)
    epoch = torch.load(best.best_model_path, weights_only=False)["epoch"]
    return MLP.load_from_checkpoint(best.best_model_path).cpu().eval(), int(epoch)


def main() -> None:
    args = parse_args(__doc__, dataset="MagicTelescope", small="3,000 rows, 12 epochs (CI)")
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", ".*does not have many workers.*")  # tiny tabular loaders
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)  # no banner per run
    data = load(args)
    X_train, X_val, X_test = preprocess(data)
    tensors = (X_train, torch.as_tensor(data.y_train), X_val, torch.as_tensor(data.y_val))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("logloss", "ts_ref"):
            model, epoch = train(kind, tensors, len(data.classes), args, Path(tmp))
            with torch.no_grad():
                val_logits, test_logits = model(X_val).numpy(), model(X_test).numpy()
            ts = TemperatureScaling().fit(val_logits, data.y_val)  # then calibrate
            p_raw = torch.softmax(torch.as_tensor(test_logits, dtype=torch.float64), 1).numpy()
            rows.append(test_row(kind, epoch, data, p_raw, ts.predict_proba(test_logits)))
    report(f"MLP (Lightning) on {args.dataset}", data, rows)
    print("(best round = epoch of the best checkpoint, 0-based)")


if __name__ == "__main__":
    main()
