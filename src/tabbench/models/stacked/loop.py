"""The training loop of a stacked group, shared by the MLP and RealMLP.

A model describes its group as a :class:`GroupSpec` (the stacked network, the inputs, each
member's generators and schedules); :func:`train_group` trains it and yields
:class:`~tabbench.models.base.GroupChunk` s of every member's validation and test logits.

One step (:meth:`GroupRun.step`) reads everything that changes from step to step from device
tensors indexed by a step counter on the device — the rows of the members' permutations, the
optimizer's scalars (:mod:`~tabbench.models.stacked.adam`), the dropout draws
(:class:`~tabbench.models.stacked.layers.MemberDropout`) — and never reads a value back to the
host. The same function therefore runs eagerly (CPU, tests) and, on CUDA, captured once in a CUDA
graph and replayed for every step (``graph=True``, the default there): one launch per step
instead of one per kernel. Capture needs warm-up steps, which change the state: it is saved
before and restored after, so the captured run is the eager one. Where capture fails the run
falls back to eager steps with a logged warning.

Timing: a member's ``fit_seconds`` is the group's cumulative time divided by the number of
members (the group's work is shared equally; a member's share is what it would be charged on
a machine that trains the group), training and, where the model's single-config trainer counts
it (the MLP), the evaluation forward pass; never the recording's metrics.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tabbench.models.base import EpochChunk, GroupChunk, TrainContext
from tabbench.models.recorder import chunk_length
from tabbench.models.stacked.adam import StackedAdam, step_scalars
from tabbench.models.stacked.layers import MemberDropout

log = logging.getLogger(__name__)

#: rows per evaluation block: on the CPU one member at a time in cache-sized blocks (as the
#: single-config MLP trainer), on a GPU all members at once in large blocks (few launches)
CPU_EVAL_ROWS = 512
GPU_EVAL_ELEMENTS = 2**26
#: dropout draws made ahead (steps): 1 on the CPU; on CUDA a block per refill keeps random-number
#: calls out of the captured step. A constant per device type, never per group, so a member's
#: stream is consumed the same way whatever its group.
DROPOUT_BLOCK = {"cpu": 1, "cuda": 8}
#: steps run before a CUDA graph is captured (then undone)
GRAPH_WARMUP_STEPS = 3


@dataclass(frozen=True)
class StepTables:
    """Host-side scalars of a run of steps, float64: ``lr`` and ``decay`` ``(S, P, M)`` (per
    step, parameter tensor and member; see :mod:`~tabbench.models.stacked.adam`), ``keep``
    ``(S, M)`` the dropout keep probability (None: no dropout in the group)."""

    lr: np.ndarray
    decay: np.ndarray
    keep: np.ndarray | None = None


#: 0-based global step indices -> their tables
Schedule = Callable[[np.ndarray], StepTables]


class StackedNetwork(nn.Module):
    """What a model's stacked network provides to the loop."""

    n_members: int

    def forward(self, inputs: tuple[torch.Tensor, ...],
                dropout: Callable[[int, torch.Tensor], torch.Tensor] | None) -> torch.Tensor:
        """Inputs ``[M, B, ...]`` each → logits ``[M, B, K]``; ``dropout(site, h)`` applies the
        members' masks at dropout site ``site`` (None in evaluation)."""
        raise NotImplementedError

    def predict_member(self, m: int, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Member ``m`` alone, evaluation mode: inputs ``[N, ...]`` → logits ``[N, K]``."""
        raise NotImplementedError

    def optimizer_params(self) -> list[torch.Tensor]:
        """The stacked parameters in the order of the schedule's ``P`` axis."""
        raise NotImplementedError


@dataclass
class GroupSpec:
    """One group, as its model prepared it.

    ``train_inputs`` / ``eval_inputs``: tuples of tensors ``[U, n, ...]`` / ``[U, N_val +
    N_test, ...]`` on the device, U distinct preprocessings of the data; member m reads
    ``source[m]``. ``shuffle_generators``: one per member, drawing its permutation of the
    training rows every epoch (on the generator's own device); ``dropout_generators``: one per
    member with dropout, else None, for ``dropout_widths`` sites. ``label_smoothing``: ε per
    member. ``first_epoch_must_be_finite``: a member whose training loss is not finite in the
    first epoch fails (the MLP's rule); else it goes on and reports non-finite logits.
    """

    net: StackedNetwork
    train_inputs: tuple[torch.Tensor, ...]
    eval_inputs: tuple[torch.Tensor, ...]
    source: Sequence[int]
    y_train: torch.Tensor
    n_val: int
    n_classes: int
    batch_size: int
    n_epochs: int
    schedule: Schedule
    betas: tuple[float, float]
    eps: float
    shuffle_generators: Sequence[torch.Generator]
    dropout_generators: Sequence[torch.Generator | None]
    dropout_widths: Sequence[int]
    label_smoothing: Sequence[float]
    first_epoch_must_be_finite: bool
    fit_includes_eval: bool
    chunk_epochs: int = 32
    max_chunk_bytes: int = 256 * 2**20
    graph: bool | None = None  # None: on CUDA


def derived_seed(seed: int, purpose: str) -> int:
    """A seed for one of a member's own random streams (e.g. ``"dropout"``), from its config's
    training seed only: a SHA-256, so streams of different purposes are unrelated."""
    digest = hashlib.sha256(f"{int(seed)}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def check_contexts(ctxs: Sequence[TrainContext], n_members: int) -> TrainContext:
    """The members' contexts must agree on everything but the seed (one group trains on one
    device for one number of epochs); returns the first."""
    if len(ctxs) != n_members or n_members < 1:
        raise ValueError(f"{len(ctxs)} training contexts for {n_members} members")
    first = ctxs[0]
    for c in ctxs[1:]:
        if (c.n_epochs, c.device, c.threads) != (first.n_epochs, first.device, first.threads):
            raise ValueError("the members of a group must share n_epochs, device and threads; "
                             f"got {first} and {c}")
    if first.n_epochs < 1:
        raise ValueError(f"n_epochs must be >= 1, got {first.n_epochs}")
    return first


def member_losses(logits: torch.Tensor, y: torch.Tensor,
                  smoothing: torch.Tensor | None) -> torch.Tensor:
    """Each member's mean softmax cross-entropy over its batch, ``[M]``: logits ``[M, B, K]``,
    labels ``[M, B]``, label smoothing ε ``[M]`` (None: no member smooths); per row ``(1 − ε)·nll
    + ε·mean_k(−log p_k)`` (``F.cross_entropy``'s label smoothing). With ε = 0 the formula gives
    the plain log loss and its gradient exactly (the ε-term adds exact zeros), so a member's
    values never depend on whether a neighbour smooths (tested bit for bit)."""
    if smoothing is None:
        K = logits.shape[-1]
        rows = F.cross_entropy(logits.reshape(-1, K), y.reshape(-1), reduction="none")
        return rows.view(y.shape).mean(dim=1)
    lp = torch.log_softmax(logits, dim=-1)
    nll = -lp.gather(-1, y.unsqueeze(-1)).squeeze(-1)
    smooth = -lp.mean(dim=-1)
    eps = smoothing.view(-1, 1)
    return ((1.0 - eps) * nll + eps * smooth).mean(dim=1)


def train_group(spec: GroupSpec, device: torch.device) -> Iterator[GroupChunk]:
    """Train ``spec``'s members for ``spec.n_epochs`` epochs; yield their logits in chunks."""
    with no_tf32(device):
        yield from GroupRun(spec, device).run()


class GroupRun:
    """The state of one group's training: built from a :class:`GroupSpec`; :meth:`run` trains
    it. Its per-epoch parts (:meth:`load_epoch`, :meth:`train_epoch`, :meth:`evaluate`) are
    public so that a benchmark can time training and evaluation apart."""

    #: evaluate all members at once (True), one by one (False), or as suits the device (None:
    #: one by one on the CPU, together on a GPU); the values are the same either way up to
    #: float rounding. A benchmark counting a GPU's operators on the CPU sets True.
    eval_together: bool | None = None

    def __init__(self, spec: GroupSpec, device: torch.device) -> None:
        self.spec, self.device = spec, device
        net = spec.net
        M = self.M = int(net.n_members)
        for name, n_items in (("source", len(spec.source)),
                              ("shuffle_generators", len(spec.shuffle_generators)),
                              ("dropout_generators", len(spec.dropout_generators)),
                              ("label_smoothing", len(spec.label_smoothing))):
            if n_items != M:
                raise ValueError(f"GroupSpec.{name} has {n_items} entries for {M} members")
        self.n = n = int(spec.y_train.shape[0])
        if n < 1:
            raise ValueError("empty training set")
        self.B = B = min(int(spec.batch_size), n)
        self.n_batches = n // B
        self.total_steps = self.n_batches * int(spec.n_epochs)
        self.params = net.optimizer_params()
        self.P = len(self.params)
        self.opt = StackedAdam(self.params, spec.betas, spec.eps)
        dtype = self.params[0].dtype
        self.dtype = dtype

        long = dict(dtype=torch.long, device=device)
        self.train_flat = tuple(t.reshape(t.shape[0] * t.shape[1], *t.shape[2:])
                                for t in spec.train_inputs)
        for t in spec.train_inputs:
            if t.shape[1] != n:
                raise ValueError(f"train input has {t.shape[1]} rows, labels {n}")
        self.source = torch.as_tensor(list(spec.source), **long)
        self.src_offset = (self.source * n).view(M, 1)
        self.perm_buf = torch.zeros((M, self.n_batches * B), **long)
        self.cols = torch.arange(B, **long)
        self.pos = torch.zeros(1, **long)
        self.bad = torch.zeros(M, dtype=torch.bool, device=device)
        self.smoothing = (torch.as_tensor(list(spec.label_smoothing), dtype=dtype).to(device)
                          if any(e > 0 for e in spec.label_smoothing) else None)
        S = self.n_batches
        self.decay_buf = torch.ones((S, self.P, M), dtype=dtype, device=device)
        self.neg_step_buf = torch.zeros((S, self.P, M), dtype=dtype, device=device)
        self.bc2_buf = torch.ones(S, dtype=dtype, device=device)
        self.dropout: MemberDropout | None = None
        if any(g is not None for g in spec.dropout_generators):
            self.drop_block = DROPOUT_BLOCK.get(device.type, DROPOUT_BLOCK["cuda"])
            self.dropout = MemberDropout(spec.dropout_generators, B, spec.dropout_widths,
                                         self.drop_block, device, dtype)
            self.keep_buf = torch.ones((S, M), dtype=dtype, device=device)
            self.scale_buf = torch.ones((S, M), dtype=dtype, device=device)
        self.graph_step: Callable[[], None] | None = None

    # ---- one step: device-side only (captured in a CUDA graph on GPUs) -----------------------
    def step(self) -> None:
        M, B, pos = self.M, self.B, self.pos
        idx = self.perm_buf.index_select(1, pos * B + self.cols)  # [M, B] rows of the step
        flat = (idx + self.src_offset).view(-1)
        xs = tuple(t.index_select(0, flat).view(M, B, *t.shape[1:]) for t in self.train_flat)
        yb = self.spec.y_train.index_select(0, idx.view(-1)).view(M, B)
        drop = None
        if self.dropout is not None:
            slot = pos.remainder(self.drop_block)
            dropout = self.dropout

            def drop(site: int, h: torch.Tensor) -> torch.Tensor:
                return dropout.apply(site, h, slot)

        losses = member_losses(self.spec.net(xs, drop), yb, self.smoothing)
        if self.spec.first_epoch_must_be_finite:
            self.bad.logical_or_(~torch.isfinite(losses))
        self.opt.zero_grad()
        losses.sum().backward()
        self.opt.step(self.decay_buf.index_select(0, pos).squeeze(0),
                      self.neg_step_buf.index_select(0, pos).squeeze(0),
                      self.bc2_buf.index_select(0, pos))
        pos.add_(1)

    def eager_step(self) -> None:
        self.step()

    # ---- per epoch: host work ---------------------------------------------------------------
    def load_epoch(self, epoch: int) -> None:
        """The members' permutations and the epoch's optimizer and dropout scalars."""
        spec, n_used = self.spec, self.n_batches * self.B
        perms = [torch.randperm(self.n, generator=g, device=g.device)[:n_used]
                 for g in spec.shuffle_generators]
        self.perm_buf.copy_(torch.stack(perms).to(self.device))
        first = (epoch - 1) * self.n_batches
        tables = spec.schedule(np.arange(first, first + self.n_batches, dtype=np.int64))
        want = (self.n_batches, self.P, self.M)
        if tables.lr.shape != want or tables.decay.shape != want:
            raise ValueError(f"schedule tables {tables.lr.shape}/{tables.decay.shape}, "
                             f"expected {want}")
        decay, neg, bc2 = step_scalars(tables.lr, tables.decay, first + 1, spec.betas,
                                       self.dtype, self.device)
        self.decay_buf.copy_(decay)
        self.neg_step_buf.copy_(neg)
        self.bc2_buf.copy_(bc2)
        if self.dropout is not None:
            keep = np.ones((self.n_batches, self.M)) if tables.keep is None else tables.keep
            self.keep_buf.copy_(torch.as_tensor(keep, dtype=self.dtype))
            self.scale_buf.copy_(torch.as_tensor(1.0 / keep, dtype=self.dtype))
        self.pos.zero_()

    def train_epoch(self) -> None:
        drop = self.dropout
        step = self.graph_step or self.eager_step
        for b in range(self.n_batches):
            if drop is not None and b % self.drop_block == 0:
                rows = slice(b, b + self.drop_block)
                drop.refill(self.keep_buf[rows], self.scale_buf[rows])
            step()

    def weights_finite(self) -> torch.Tensor:
        return self.opt.members_finite()

    @torch.no_grad()
    def evaluate(self, out: torch.Tensor) -> None:
        """Every member's logits on the evaluation rows into ``out`` ``[M, N, K]``."""
        spec, net = self.spec, self.spec.net
        N = int(spec.eval_inputs[0].shape[1])
        together = self.eval_together
        if together is None:
            together = self.device.type != "cpu"
        if not together:
            for m in range(self.M):
                u = int(spec.source[m])
                for i in range(0, N, CPU_EVAL_ROWS):
                    xs = tuple(t[u, i:i + CPU_EVAL_ROWS] for t in spec.eval_inputs)
                    out[m, i:i + CPU_EVAL_ROWS] = net.predict_member(m, xs)
            return
        width = max(int(np.prod(t.shape[2:], dtype=np.int64)) for t in spec.eval_inputs)
        rows = max(1, GPU_EVAL_ELEMENTS // max(1, self.M * max(width, 256)))
        for i in range(0, N, rows):
            xs = tuple(t[:, i:i + rows].index_select(0, self.source) for t in spec.eval_inputs)
            out[:, i:i + rows] = net(xs, None)

    def capture(self) -> None:
        """Capture :meth:`step` in a CUDA graph (after warm-up steps that are undone). The
        gradients live in the optimizer's static buffer, so the captured backward writes where
        the captured optimizer step reads."""
        state = [*self.opt.state_tensors(), self.pos, self.bad]
        saved = [t.detach().clone() for t in state]
        stream = torch.cuda.Stream(device=self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            for _ in range(GRAPH_WARMUP_STEPS):
                self.eager_step()
        torch.cuda.current_stream(self.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.step()
        with torch.no_grad():
            for t, s in zip(state, saved, strict=True):
                t.copy_(s)
        self.graph_step = graph.replay

    def run(self) -> Iterator[GroupChunk]:
        spec, M = self.spec, self.M
        K = int(spec.n_classes)
        N = int(spec.eval_inputs[0].shape[1])
        chunk = chunk_length(spec.chunk_epochs, M * N * K * 4, spec.max_chunk_bytes)
        host = np.empty((M, chunk, N, K), dtype=np.float32)
        times = np.empty(chunk)
        out = torch.empty((M, N, K), dtype=self.dtype, device=self.device)
        failed: dict[int, BaseException] = {}
        reported: set[int] = set()
        diverged = np.zeros(M, dtype=bool)
        want_graph = spec.graph if spec.graph is not None else self.device.type == "cuda"
        fit = 0.0
        first, j = 1, 0
        for epoch in range(1, int(spec.n_epochs) + 1):
            t0 = time.perf_counter()
            self.load_epoch(epoch)
            if epoch == 1 and want_graph:
                try:  # (the warm-up steps read an unfilled dropout block: they are undone)
                    self.capture()
                except Exception as err:  # capture unavailable: the same steps, eagerly
                    log.warning("CUDA graph capture failed (%s: %s); training eagerly",
                                type(err).__name__, err)
                    self.graph_step = None
            self.train_epoch()
            bad = self.bad.cpu().numpy()
            diverged |= ~self.weights_finite().cpu().numpy()
            _sync(self.device)
            t_train = time.perf_counter()
            if epoch == 1 and spec.first_epoch_must_be_finite:
                for m in np.flatnonzero(bad):
                    failed[int(m)] = FloatingPointError(
                        "training loss is not finite in the first epoch")
                if len(failed) == M:  # nothing left to train
                    yield GroupChunk(members=(None,) * M, failures=dict(failed))
                    return
            self.evaluate(out)
            host[:, j] = out.float().cpu().numpy()
            host[diverged, j] = np.nan
            t_end = time.perf_counter()
            fit += ((t_end if spec.fit_includes_eval else t_train) - t0) / M
            times[j] = fit
            j += 1
            if j == chunk or epoch == spec.n_epochs:
                members = tuple(
                    None if m in failed else EpochChunk(
                        first_epoch=first,
                        val_logits=host[m, :j, :spec.n_val].copy(),
                        test_logits=host[m, :j, spec.n_val:].copy(),
                        fit_seconds=times[:j].copy())
                    for m in range(M))
                new = {m: e for m, e in failed.items() if m not in reported}
                reported.update(new)
                yield GroupChunk(members=members, failures=new)
                first, j = first + j, 0
                if len(failed) == M:
                    return


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def no_tf32(device: torch.device) -> Iterator[None]:
    """No TF32 matmuls while a group trains: its float32 members must compute as the
    single-config trainers do (and as each other, whatever the group)."""
    if device.type != "cuda":
        yield
        return
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Use ``threads`` intra-op threads while training, restoring the previous setting."""
    previous = torch.get_num_threads()
    if threads and threads > 0 and threads != previous:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)
