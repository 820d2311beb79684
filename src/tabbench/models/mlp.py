"""MLP trainer (docs/design.md §5): the Gorishniy et al.-style baseline, every epoch's logits.

Preprocessing, fit on the training part only:
- numericals: sklearn ``QuantileTransformer`` with normal output,
  ``n_quantiles = min(1000, n_train)``;
- categoricals: one-hot over the categories seen in train; a column with exactly two train
  categories becomes one ±1 column; missing or unseen values are all zeros; a column with a
  single train category carries no information for training and is dropped.
- high cardinality (not in the paper, which does not discuss it; a documented deviation from
  docs/design.md §5's one column per category): a column with more than ``max_one_hot_levels`` train
  categories (config key ``mlp_max_one_hot_levels``, default :data:`MAX_ONE_HOT_LEVELS` = 1000)
  is one-hot encoded over its ``max_one_hot_levels`` most frequent train categories only (ties:
  category order); the rarer ones are encoded like an unseen value (all zeros), with a logged
  warning. Without the cap an ID-like column makes the input dense n × levels: a 10,000-level
  column on 50,000 rows took 3 GB and 4.5× the time for two epochs (measured), and the paper's
  100,000-row cap would need about 6 GB. ``None`` (config ``null``) lifts the cap: docs/design.md's
  literal rule. RealMLP embeds such columns and XGBoost splits on them natively, so neither
  needs a cap.

Network: ``n_hidden_layers`` × ``hidden_width`` ReLU layers (default 3 × 256) + a linear output
of K logits (binary: K = 2, softmax cross-entropy), PyTorch's default initialisation, dropout
after each hidden activation. AdamW with constant lr and decoupled weight decay; mini-batches
of ``batch_size`` (shuffled each epoch, last incomplete batch dropped; capped at ``n_train`` for
tiny training sets so that every epoch takes at least one step).

After every epoch the network is evaluated (eval mode, no grad) on val and test; the logits are
yielded in chunks. A non-finite training loss in the first epoch makes the config fail
(``FloatingPointError``); a later divergence keeps going with non-finite logits (the recorder
turns them into non-finite metrics) — once the weights themselves are non-finite, the remaining
epochs are not trained any more, only reported as NaN.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from tabbench.models import mlp_stacked
from tabbench.models.base import EpochChunk, GroupChunk, SplitData, TrainContext
from tabbench.models.mlp_config import (
    MAX_ONE_HOT_LEVELS,
    check_max_one_hot_levels,
    complete_params,
)

# the preprocessing and the network are shared with the stacked path (mlp_stacked); importable
# from here as before
from tabbench.models.mlp_parts import MLPPreprocessor, build_mlp
from tabbench.models.recorder import chunk_length

log = logging.getLogger(__name__)

#: (epoch, network, features) after every epoch: lets tests snapshot the model of an epoch.
EpochHook = Callable[[int, nn.Module, "MLPPreprocessor"], None]


class MLPRun:
    """One config's training state: preprocessed tensors on the device, network, optimiser.

    :meth:`train_epoch` is one pass over the shuffled training set; :class:`MLPTrainer` adds the
    per-epoch evaluation. Split this way so that a benchmark can run exactly the same training
    without any recording.
    """

    def __init__(
        self,
        params: Mapping[str, Any],
        data: SplitData,
        ctx: TrainContext,
        max_one_hot_levels: int | None = MAX_ONE_HOT_LEVELS,
    ) -> None:
        cfg = complete_params(params)
        torch.set_num_threads(int(ctx.threads))
        torch.manual_seed(int(ctx.seed))
        self.device = torch.device(ctx.device)
        self.pre = MLPPreprocessor(seed=ctx.seed, max_one_hot_levels=max_one_hot_levels).fit(
            data.X_train
        )
        self.X_train = torch.as_tensor(self.pre.transform(data.X_train), device=self.device)
        self.y_train = torch.tensor(np.array(data.y_train, dtype=np.int64), device=self.device)
        self.net = build_mlp(self.pre.n_features, data.n_classes, cfg["n_hidden_layers"],
                             cfg["hidden_width"], cfg["dropout"]).to(self.device)
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=float(cfg["lr"]),
                                     weight_decay=float(cfg["weight_decay"]))
        self.loss_fn = nn.CrossEntropyLoss()
        self.batch_size = min(int(cfg["batch_size"]), len(self.X_train))
        # Shuffling has its own CPU generator: identical permutations on CPU and GPU.
        self.gen = torch.Generator().manual_seed(int(ctx.seed))
        self.epoch = 0

    def train_epoch(self) -> bool:
        """Train one epoch; return whether any mini-batch loss was non-finite."""
        self.net.train()
        n, bs = len(self.X_train), self.batch_size
        perm = torch.randperm(n, generator=self.gen).to(self.device)
        bad = torch.zeros((), dtype=torch.bool, device=self.device)
        for b in range(n // bs):
            idx = perm[b * bs : (b + 1) * bs]
            loss = self.loss_fn(self.net(self.X_train[idx]), self.y_train[idx])
            bad |= ~torch.isfinite(loss)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
        self.epoch += 1
        return bool(bad)

    def weights_finite(self) -> bool:
        return all(bool(torch.isfinite(p).all()) for p in self.net.parameters())


class MLPTrainer:
    """Trains one MLP config for ``ctx.n_epochs`` epochs, yielding val/test logits per epoch.

    ``max_one_hot_levels`` is the run-wide one-hot cap (config ``mlp_max_one_hot_levels``,
    ``None`` = no cap), the same for every config of a job.
    """

    name = "mlp"

    def __init__(
        self,
        chunk_epochs: int = 32,
        max_chunk_bytes: int = 256 * 2**20,
        epoch_hook: EpochHook | None = None,
        eval_batch: int | None = None,
        max_one_hot_levels: int | None = MAX_ONE_HOT_LEVELS,
    ) -> None:
        self.max_one_hot_levels = check_max_one_hot_levels(max_one_hot_levels)
        self.chunk_epochs = int(chunk_epochs)
        self.max_chunk_bytes = int(max_chunk_bytes)
        self.epoch_hook = epoch_hook
        self.eval_batch = eval_batch

    def train(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext
    ) -> Iterator[EpochChunk]:
        t0 = time.perf_counter()
        run = MLPRun(params, data, ctx, max_one_hot_levels=self.max_one_hot_levels)
        K = data.n_classes
        # val and test in one tensor: one forward pass per epoch
        X_eval = torch.as_tensor(
            np.concatenate([run.pre.transform(data.X_val), run.pre.transform(data.X_test)]),
            device=run.device,
        )
        n_val = len(data.y_val)
        chunk = chunk_length(self.chunk_epochs, len(X_eval) * K * 4, self.max_chunk_bytes)
        logits = np.empty((chunk, len(X_eval), K), dtype=np.float32)
        times = np.empty(chunk)
        fit_seconds = time.perf_counter() - t0

        diverged = False
        first, j = 1, 0
        for epoch in range(1, ctx.n_epochs + 1):
            t = time.perf_counter()
            if not diverged:
                if run.train_epoch() and epoch == 1:
                    raise FloatingPointError("training loss is not finite in the first epoch")
                diverged = not run.weights_finite()
            if diverged:
                logits[j] = np.nan
            else:
                self._predict(run.net, X_eval, out=logits[j])
            fit_seconds += time.perf_counter() - t
            times[j] = fit_seconds
            j += 1
            if self.epoch_hook is not None:
                self.epoch_hook(epoch, run.net, run.pre)
            if j == chunk or epoch == ctx.n_epochs:
                yield EpochChunk(
                    first_epoch=first,
                    val_logits=logits[:j, :n_val].copy(),
                    test_logits=logits[:j, n_val:].copy(),
                    fit_seconds=times[:j].copy(),
                )
                first, j = first + j, 0

    # ---- stacked training (tabbench.models.base.StackingTrainer; docs/design.md §15) ------
    def stack_key(self, params: Mapping[str, Any]) -> Hashable:
        """Configs with the same architecture and batch size stack (the whole random search)."""

        return mlp_stacked.stack_key(params)

    def member_bytes(self, params: Mapping[str, Any], data: SplitData) -> int:
        return mlp_stacked.member_bytes(params, data, self.max_one_hot_levels)

    def train_members(
        self, params: Sequence[Mapping[str, Any]], data: SplitData, ctxs: Sequence[TrainContext]
    ) -> Iterator[GroupChunk]:
        """Train ``params`` together as members of one stacked MLP
        (:mod:`tabbench.models.mlp_stacked`)."""
        return mlp_stacked.train_members(
            params, data, ctxs, chunk_epochs=self.chunk_epochs,
            max_chunk_bytes=self.max_chunk_bytes, max_one_hot_levels=self.max_one_hot_levels)

    def _predict(self, net: nn.Module, X: torch.Tensor, out: np.ndarray) -> None:
        """Logits of ``X`` in eval mode (no dropout, no autograd) into ``out`` (N, K).

        Blocks of ``eval_batch`` rows; default 512 on CPU, where a block's activations then
        stay in cache (measured: 18 ms instead of 32 ms per epoch for 6.8K rows in one block,
        i.e. 13% instead of 23% of a training epoch), and 16384 on GPU (fewer launches).
        """
        bs = self.eval_batch or (512 if X.device.type == "cpu" else 16384)
        net.eval()
        with torch.inference_mode():
            for i in range(0, len(X), bs):
                out[i : i + bs] = net(X[i : i + bs]).float().cpu().numpy()
