"""Stacked training of the networks against one config at a time, side by side in one run.

    python benchmarks/network_batching.py                      # CPU, MagicTelescope, a few minutes
    python benchmarks/network_batching.py --models mlp --ks 1 8 31
    python benchmarks/network_batching.py --device cuda --gpu  # the GPU measurements (below)

For the MLP and RealMLP, on one bundled dataset (``--dataset``, split 0 of the 64/16/20 split
with seed 0), the default config and the first ``max(--ks)`` random configs of the job are
trained through both paths of :mod:`tabbench.models.stacked.plan`:

* **today** — one config at a time through the trainer's ``train`` (``network_members: 1``);
* **stacked, k** — the same configs in groups of at most k members through ``train_members``
  (RealMLP's configs form several groups: only configs with the same shapes stack).

Each set of configs is trained twice. The first training runs two epochs: the first warms up
(and holds the one-off work: preprocessing, init), the second is run under a dispatch counter
(every ATen operator call, forward, backward and optimizer, evaluation included: a proxy for
GPU kernel launches, which is what bounds these networks on a GPU; counted with the evaluation
a GPU run takes — the MLP trainer's 16,384-row blocks, the stacked members all at once — since
on the CPU both paths evaluate in small cache-sized blocks, and with the dropout masks drawn in
a GPU's blocks of steps, ``stacked.loop.DROPOUT_BLOCK["cuda"]``). The second training, with
this device's defaults, runs a warm-up epoch and ``--epochs`` timed ones (process CPU time:
with one thread it is the work done, whatever else the machine runs; evaluation, the val+test
forward pass after every epoch, timed apart). Printed per model and path: ops per member-step,
ms per member-epoch of training, of evaluation and together, and the ratio today / stacked of
the same configs (> 1: stacked is faster). The last line reads
``ops per member-step ratio (k=31): R`` for the MLP's random configs.

``--gpu`` (with ``--device cuda``) adds what only a GPU can tell: ms per training step of one
model, of k = 31 and k = 155 stacked members (155 = five splits' configs), eager and with the
step captured in a CUDA graph; the same with 4 processes sharing the GPU; and one job end to
end (train + every epoch's metrics recorded) stacked vs today. Without a GPU those lines are not
printed: no GPU figure is ever estimated here.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import multiprocessing as mp
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recording_overhead import load_bundled  # noqa: E402

from tabbench.models.base import SplitData, TrainContext  # noqa: E402
from tabbench.models.registry import get_trainer  # noqa: E402
from tabbench.models.stacked import loop as stacked_loop  # noqa: E402
from tabbench.models.stacked.plan import plan_groups  # noqa: E402
from tabbench.search import sample_config  # noqa: E402
from tabbench.study.train_job import train_seed  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: the module whose build_group makes a model's stacked group
GROUP_BUILDERS = {"mlp": "tabbench.models.mlp_stacked",
                  "realmlp": "tabbench.models.realmlp.stacked"}


class OpCounter(TorchDispatchMode):
    """Counts every ATen operator dispatched inside the block (autograd's backward included)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def gpu_like_evaluation(trainer: Any) -> Iterator[None]:
    """Inside the block both paths evaluate as they do on a GPU: the MLP trainer in blocks of
    16,384 rows (its GPU default), the stacked loop all members at once."""
    before = getattr(trainer, "eval_batch", None), stacked_loop.GroupRun.eval_together
    if hasattr(trainer, "eval_batch"):
        trainer.eval_batch = 16384
    stacked_loop.GroupRun.eval_together = True
    try:
        yield
    finally:
        if hasattr(trainer, "eval_batch"):
            trainer.eval_batch = before[0]
        stacked_loop.GroupRun.eval_together = before[1]


@contextlib.contextmanager
def gpu_dropout_block() -> Iterator[None]:
    """Stacked runs started inside the block draw dropout masks in a GPU's blocks of steps."""
    blocks = stacked_loop.DROPOUT_BLOCK
    before = blocks["cpu"]
    blocks["cpu"] = blocks["cuda"]
    try:
        yield
    finally:
        blocks["cpu"] = before


@contextlib.contextmanager
def timing(owner: Any, name: str, acc: list[float]) -> Iterator[None]:
    """Accumulate the process CPU time spent in ``owner.name`` (the evaluation) into ``acc``."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            acc[0] += time.process_time() - t

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def evaluation_patch(model: str, trainer: Any, stacked: bool, acc: list[float]):
    """Where each path evaluates: the MLP trainer's ``_predict`` method, RealMLP's module
    function ``_predict``, the stacked loop's ``GroupRun.evaluate``."""
    if stacked:
        return timing(stacked_loop.GroupRun, "evaluate", acc)
    if model == "mlp":
        return timing(trainer, "_predict", acc)
    from tabbench.models.realmlp import trainer as realmlp_trainer

    return timing(realmlp_trainer, "_predict", acc)


def measure(model: str, data: SplitData, params: list[dict], ctxs: list[TrainContext],
            stacked: bool, epochs: int) -> dict[str, float]:
    """Train ``params`` (one group if ``stacked``, else one by one): the ATen ops of one epoch
    as a GPU run takes it (second epoch of a run with the GPU's evaluation and dropout blocks),
    and, in a run with this device's defaults, the CPU time of ``epochs`` epochs after a
    warm-up epoch (total and evaluation)."""
    trainer = get_trainer(model)
    trainer.chunk_epochs = 1  # one chunk per epoch: epochs can be measured apart

    def runs() -> list[Callable[[], Iterator[Any]]]:
        if stacked:
            return [lambda: trainer.train_members(params, data, ctxs)]
        return [lambda p=p, c=c: trainer.train(p, data, c)
                for p, c in zip(params, ctxs, strict=True)]

    ops = total = 0.0
    evaluation = [0.0]
    for make in runs():
        with gpu_dropout_block():  # (read when the group is built, at the first epoch)
            it = make()
            next(it)  # epoch 1: warm-up, preprocessing and init
        counter = OpCounter()
        with counter, gpu_like_evaluation(trainer):
            next(it)
        ops += counter.count
        it.close()
    for make in runs():
        it = make()
        next(it)
        with evaluation_patch(model, trainer, stacked, evaluation):
            t = time.process_time()
            for _ in range(epochs):
                next(it)
            total += time.process_time() - t
        it.close()
    return {"ops": ops, "total": total, "eval": evaluation[0]}


def n_steps(data: SplitData, params: dict) -> int:
    batch = int(params.get("batch_size", 256))
    n = len(data.y_train)
    return n // min(batch, n)


def row(label: str, k: int, groups: int, m: dict, n_members: int, steps: int, epochs: int,
        base: dict | None) -> str:
    per_epoch = 1000 / (n_members * epochs)
    train = (m["total"] - m["eval"]) * per_epoch
    ev = m["eval"] * per_epoch
    ops = m["ops"] / (steps * n_members)
    text = (f"  {label:10s} k={k:<3d} groups={groups:<3d} ops/member-step {ops:7.1f}  "
            f"ms/member-epoch train {train:7.1f} eval {ev:6.1f} total {train + ev:7.1f}")
    if base is not None:
        b_train = (base["total"] - base["eval"]) * per_epoch
        b_total = base["total"] * per_epoch
        text += (f"  today/stacked: ops {base['ops'] / m['ops']:5.2f} train "
                 f"{b_train / max(train, 1e-9):4.2f} total {b_total / max(train + ev, 1e-9):4.2f}")
    return text


def cpu_section(args: argparse.Namespace, data: SplitData) -> float | None:
    ratio_31 = None
    for model in args.models:
        cfgs = [sample_config(model, c, seed=0, dataset=args.dataset, split=0)
                for c in range(max(args.ks) + 1)]
        ctxs = [TrainContext(seed=train_seed(0, args.dataset, 0, model, c),
                             n_epochs=2 + args.epochs, threads=args.threads, device="cpu")
                for c in range(len(cfgs))]
        steps = n_steps(data, cfgs[0])
        print(f"\n{model}: {len(data.y_train)} train rows, {steps} steps per epoch, "
              f"{args.epochs} timed epochs, {args.threads} thread(s)")
        # the default config alone, both paths
        today0 = measure(model, data, cfgs[:1], ctxs[:1], False, args.epochs)
        print("  default config")
        print(row("today", 1, 1, today0, 1, steps, args.epochs, None))
        print(row("stacked", 1, 1, measure(model, data, cfgs[:1], ctxs[:1], True, args.epochs),
                  1, steps, args.epochs, today0))
        # random configs 1..k, both paths, for each k
        today_each = [measure(model, data, [p], [c], False, args.epochs)
                      for p, c in zip(cfgs[1:], ctxs[1:], strict=True)]
        print("  random configs")
        for k in args.ks:
            base = {key: sum(t[key] for t in today_each[:k]) for key in ("ops", "total", "eval")}
            print(row("today", k, k, base, k, steps, args.epochs, None))
            trainer = get_trainer(model)
            members = list(range(1, k + 1))
            keys = {c: trainer.stack_key(cfgs[c]) for c in members}
            groups = plan_groups(members, keys, {}, k, None)
            got = [measure(model, data, [cfgs[c] for c in g], [ctxs[c] for c in g], True,
                           args.epochs) for g in groups]
            stacked = {key: sum(g[key] for g in got) for key in ("ops", "total", "eval")}
            print(row("stacked", k, len(groups), stacked, k, steps, args.epochs, base))
            if model == "mlp" and k == 31:
                ratio_31 = base["ops"] / stacked["ops"]
            sys.stdout.flush()
    return ratio_31


# ---- GPU ------------------------------------------------------------------------------------


def gpu_step_ms(model: str, data: SplitData, k: int, graph: bool, epochs: int,
                device: str) -> float:
    """ms per training step of k stacked members (random configs of one stack key), eager or
    graphed, after one warm-up epoch."""
    trainer = get_trainer(model)
    cfgs, c = [], 1
    key = None
    while len(cfgs) < k:
        p = sample_config(model, c, seed=0, dataset="bench", split=c // 31)
        c += 1
        if key is None:
            key = trainer.stack_key(p)
        if trainer.stack_key(p) == key:
            cfgs.append(p)
    ctxs = [TrainContext(seed=i, n_epochs=1 + epochs, device=device) for i in range(k)]
    spec = importlib.import_module(GROUP_BUILDERS[model]).build_group(cfgs, data, ctxs,
                                                                       graph=graph)
    with stacked_loop.no_tf32(torch.device(device)):
        run = stacked_loop.GroupRun(spec, torch.device(device))
        run.load_epoch(1)
        if graph:
            run.capture()
        run.train_epoch()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for e in range(epochs):
            run.load_epoch(2 + e)
            run.train_epoch()
        torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1000 / (epochs * run.n_batches)


def _gpu_worker(args: tuple) -> float:
    model, data, k, graph, epochs, device = args
    return gpu_step_ms(model, data, k, graph, epochs, device)


def gpu_section(args: argparse.Namespace, data: SplitData) -> None:
    device = args.device
    print(f"\nGPU: {torch.cuda.get_device_name(torch.device(device))}, "
          f"{len(data.y_train)} train rows")
    for model in args.models:
        for k in (1, 31, 155):
            for graph in (False, True):
                ms = gpu_step_ms(model, data, k, graph, args.epochs, device)
                print(f"  {model:8s} k={k:<4d} {'graph' if graph else 'eager'}: "
                      f"{ms:7.3f} ms per step, {ms / k:7.4f} ms per member-step", flush=True)
        ctx = mp.get_context("spawn")
        with ctx.Pool(4) as pool:
            t = time.perf_counter()
            got = pool.map(_gpu_worker, [(model, data, 31, True, args.epochs, device)] * 4)
            wall = time.perf_counter() - t
        print(f"  {model:8s} 4 processes x k=31 graphed: {statistics.mean(got):7.3f} ms per "
              f"step each ({statistics.mean(got) / 31 / 4:.4f} ms per member-step for the GPU; "
              f"{wall:.1f} s wall incl. start-up)", flush=True)
    end_to_end(args, data)


def end_to_end(args: argparse.Namespace, data: SplitData) -> None:
    """One job, train + the recorder's metrics at every epoch, stacked vs today, wall time."""
    from tabbench.models.recorder import EpochRecorder, Labels, RunKey

    for model in args.models:
        cfgs = [sample_config(model, c, seed=0, dataset=args.dataset, split=0) for c in range(32)]
        ctxs = [TrainContext(seed=train_seed(0, args.dataset, 0, model, c),
                             n_epochs=args.e2e_epochs, device=args.device) for c in range(32)]
        trainer = get_trainer(model)

        def recorder(c: int, model: str = model, cfgs: list = cfgs) -> EpochRecorder:
            return EpochRecorder(RunKey(model, args.dataset, 0, c), cfgs[c], Labels.of(data),
                                 args.e2e_epochs)

        t = time.perf_counter()
        for c in range(32):
            rec = recorder(c)
            for chunk in trainer.train(cfgs[c], data, ctxs[c]):
                rec.add(chunk)
        today = time.perf_counter() - t
        t = time.perf_counter()
        keys = {c: trainer.stack_key(cfgs[c]) for c in range(32)}
        for g in plan_groups(list(range(32)), keys, {}, 32, None):
            recs = {c: recorder(c) for c in g}
            for group in trainer.train_members([cfgs[c] for c in g], data, [ctxs[c] for c in g]):
                for i, c in enumerate(g):
                    if group.members[i] is not None:
                        recs[c].add(group.members[i])
        stacked = time.perf_counter() - t
        print(f"  {model:8s} job end to end (32 configs x {args.e2e_epochs} epochs, records "
              f"included): today {today:.1f} s, stacked {stacked:.1f} s, "
              f"ratio {today / stacked:.2f}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(REPO / "data" / "demo"))
    ap.add_argument("--dataset", default="MagicTelescope")
    ap.add_argument("--models", nargs="+", default=["mlp", "realmlp"])
    ap.add_argument("--ks", nargs="+", type=int, default=[1, 8, 31])
    ap.add_argument("--epochs", type=int, default=1, help="timed epochs per training")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-train", type=int, default=None,
                    help="use at most this many training rows (a quicker run)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--gpu", action="store_true", help="the GPU measurements (--device cuda)")
    ap.add_argument("--e2e-epochs", type=int, default=32)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = load_bundled(args.data_dir, args.dataset)
    if args.max_train is not None and args.max_train < len(data.y_train):
        data = SplitData(data.X_train.iloc[:args.max_train], data.y_train[:args.max_train],
                         data.X_val, data.y_val, data.X_test, data.y_test, data.n_classes)
    if args.gpu:
        if not torch.cuda.is_available():
            print("--gpu: no CUDA device here; nothing measured", file=sys.stderr)
            return 2
        gpu_section(args, data)
        return 0
    ratio = cpu_section(args, data)
    if ratio is not None:
        print(f"\nops per member-step ratio (k=31): {ratio:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
