"""RealMLP trainer: trains one config for ``ctx.n_epochs`` epochs and yields the validation and
test logits after every epoch (the contract of :mod:`tabbench.models.base`).

Training (RealMLP-TD, Holzmüller et al. 2024; docs/design.md §5, §10): shuffled mini-batches of 256
(``min(256, n_train)``, last incomplete batch dropped as in the reference), softmax
cross-entropy (optionally label-smoothed), and before every step the schedules are evaluated at
``t = step / total_steps``: lr (coslog4), dropout and weight decay (flat_cos).

Device handling: all tensors live on ``ctx.device``. The loop never reads a value back to the
host per batch; logits of a chunk of epochs stay on the device and are copied to numpy once per
chunk. On CUDA the training time per epoch is measured with CUDA events around the training
steps, so evaluation is excluded without a synchronisation per epoch.

Randomness: one ``torch.Generator`` on the device, seeded with ``ctx.seed``, drives init,
shuffling and dropout; the global torch RNG is neither used nor changed. On CPU two runs with the
same seed give identical logits.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from tabbench.models.base import EpochChunk, GroupChunk, SplitData, TrainContext
from tabbench.models.realmlp import stacked
from tabbench.models.realmlp.config import RealMLPConfig
from tabbench.models.realmlp.inputs import check_data, concat_encoded, encoded_tensors
from tabbench.models.realmlp.network import RealMLPNetwork
from tabbench.models.realmlp.optim import Scheduled, ScheduledAdam
from tabbench.models.realmlp.preprocessing import RealMLPPreprocessor
from tabbench.models.realmlp.schedules import get_schedule
from tabbench.models.stacked.loop import torch_threads

EVAL_BATCH = 8192


class RealMLPTrainer:
    """Model family ``realmlp``. ``chunk_epochs`` sets how many epochs each yielded chunk holds."""

    name = "realmlp"

    def __init__(self, chunk_epochs: int = 16) -> None:
        if chunk_epochs < 1:
            raise ValueError(f"chunk_epochs must be >= 1, got {chunk_epochs}")
        self.chunk_epochs = chunk_epochs

    def train(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext
    ) -> Iterator[EpochChunk]:
        """Validate inputs (errors are raised here, not at the first ``next``) and return the
        iterator of per-epoch chunks."""
        cfg = RealMLPConfig.from_params(params)
        check_data(data)
        if ctx.n_epochs < 1:
            raise ValueError(f"n_epochs must be >= 1, got {ctx.n_epochs}")
        device = torch.device(ctx.device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"device {ctx.device!r} requested but CUDA is not available")
        return self._run(cfg, data, ctx, device)  # validated now, trained lazily

    # ---- stacked training (tabbench.models.base.StackingTrainer; docs/design.md §15) ------
    def stack_key(self, params: Mapping[str, Any]) -> Hashable:
        """Configs with the same shapes (hidden sizes, embedding type, ...) stack."""
        return stacked.stack_key(params)

    def member_bytes(self, params: Mapping[str, Any], data: SplitData) -> int:
        return stacked.member_bytes(params, data)

    def train_members(
        self, params: Sequence[Mapping[str, Any]], data: SplitData, ctxs: Sequence[TrainContext]
    ) -> Iterator[GroupChunk]:
        """Train ``params`` together as members of one stacked RealMLP
        (:mod:`tabbench.models.realmlp.stacked`)."""
        return stacked.train_members(params, data, ctxs, chunk_epochs=self.chunk_epochs)

    def _run(
        self, cfg: RealMLPConfig, data: SplitData, ctx: TrainContext, device: torch.device
    ) -> Iterator[EpochChunk]:
        cuda_ctx = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
        with torch_threads(ctx.threads), cuda_ctx:  # events/streams on the run's own GPU
            yield from self._train(cfg, data, ctx, device)

    def _train(
        self, cfg: RealMLPConfig, data: SplitData, ctx: TrainContext, device: torch.device
    ) -> Iterator[EpochChunk]:
        clock = _Clock(device)
        clock.start()

        prep = RealMLPPreprocessor(cfg.max_one_hot_cats, cfg.smooth_clip_max_abs).fit(data.X_train)
        train = encoded_tensors(prep.transform(data.X_train), device)
        evalset = encoded_tensors(
            concat_encoded(prep.transform(data.X_val), prep.transform(data.X_test)), device
        )
        n_val = len(data.X_val)
        y_train = torch.as_tensor(np.array(data.y_train, dtype=np.int64), device=device)

        generator = torch.Generator(device=device)
        generator.manual_seed(int(ctx.seed))
        net = RealMLPNetwork(
            n_num=train[0].shape[1],
            n_onehot=train[1].shape[1],
            cat_sizes=prep.cat_sizes,
            n_classes=data.n_classes,
            cfg=cfg,
            generator=generator,
            device=device,
        )
        net.init_from_data(*train, generator=generator)

        n_train = train[0].shape[0]
        batch_size = min(cfg.batch_size, n_train)
        n_batches = n_train // batch_size
        total_steps = n_batches * ctx.n_epochs
        opt = ScheduledAdam(
            net.param_groups(),
            lr=Scheduled(cfg.lr, get_schedule(cfg.lr_sched)),
            wd=Scheduled(cfg.wd, get_schedule(cfg.wd_sched)),
            betas=(cfg.mom, cfg.sq_mom),
            eps=cfg.opt_eps,
            total_steps=total_steps,
            wd_squared_factors=cfg.wd_squared_factors,
        )
        p_drop_sched = get_schedule(cfg.p_drop_sched)

        chunk_val: list[torch.Tensor] = []
        chunk_test: list[torch.Tensor] = []
        first_epoch = 1
        step = 0
        for epoch in range(1, ctx.n_epochs + 1):
            if epoch > 1:
                clock.start()
            net.train()
            perm = torch.randperm(n_train, generator=generator, device=device)
            for b in range(n_batches):
                idx = perm[b * batch_size : (b + 1) * batch_size]
                net.dropout.p = cfg.p_drop * p_drop_sched(step / total_steps)
                logits = net(*(t.index_select(0, idx) for t in train))
                loss = F.cross_entropy(
                    logits, y_train.index_select(0, idx), label_smoothing=cfg.ls_eps
                )
                opt.zero_grad()
                loss.backward()
                opt.step(step)
                step += 1
            clock.stop()

            out = _predict(net, evalset)
            chunk_val.append(out[:n_val])
            chunk_test.append(out[n_val:])
            if len(chunk_val) == self.chunk_epochs or epoch == ctx.n_epochs:
                fit_seconds = clock.cumulative()
                yield EpochChunk(
                    first_epoch=first_epoch,
                    val_logits=torch.stack(chunk_val).cpu().numpy(),
                    test_logits=torch.stack(chunk_test).cpu().numpy(),
                    fit_seconds=fit_seconds[first_epoch - 1 : epoch],
                )
                first_epoch = epoch + 1
                chunk_val, chunk_test = [], []


@torch.no_grad()
def _predict(net: RealMLPNetwork, data: tuple[torch.Tensor, ...]) -> torch.Tensor:
    net.eval()
    n = data[0].shape[0]
    outs = [net(*(t[i : i + EVAL_BATCH] for t in data)) for i in range(0, n, EVAL_BATCH)]
    if not outs:
        return torch.zeros(0, net.linears[-1].out_features, device=data[0].device)
    return outs[0] if len(outs) == 1 else torch.cat(outs)


class _Clock:
    """Cumulative training time over start/stop intervals, one entry per ``stop``.

    CPU: wall clock. CUDA: events recorded in the stream, read only when ``cumulative`` is
    called (once per yielded chunk), so timing adds no per-epoch host synchronisation.
    """

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.intervals: list[float] = []
        self._pending: list[tuple[Any, Any]] = []
        self._t0: Any = None

    def start(self) -> None:
        if self.cuda:
            self._t0 = torch.cuda.Event(enable_timing=True)
            self._t0.record()
        else:
            self._t0 = time.perf_counter()

    def stop(self) -> None:
        if self.cuda:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self._pending.append((self._t0, end))
        else:
            self.intervals.append(time.perf_counter() - self._t0)

    def cumulative(self) -> np.ndarray:
        if self._pending:
            self._pending[-1][1].synchronize()
            self.intervals.extend(a.elapsed_time(b) / 1000.0 for a, b in self._pending)
            self._pending = []
        return np.cumsum(np.asarray(self.intervals, dtype=np.float64))
