"""``tabbench train``: run one training job (what the Snakemake rule ``train`` calls)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import Any

from tabbench.cli.args import boolean, field_default, non_negative_int, optional_str, positive_float
from tabbench.core.gpu import GpuUnavailableError
from tabbench.core.layout import part_dir
from tabbench.models.base import TrainContext
from tabbench.models.registry import TrainerOption, get_models
from tabbench.models.stacked.plan import parse_members
from tabbench.settings.table import default
from tabbench.study.signals import TrainInterrupted, stop_on_signals
from tabbench.study.specs import GpuClaim, Hardware, JobFiles, Keeping, TrainTarget


def _epochs_item(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=ROUNDS, got {text!r}")
    try:
        return key, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rounds must be an integer in {text!r}") from None


def option_value_type(option: TrainerOption) -> Callable[[str], Any]:
    """argparse type of a trainer option: a null spelling is None, anything else a YAML scalar
    (``1000`` is an int), then the option's own check."""

    def parse(text: str) -> Any:
        try:
            return option.parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = option.name  # argparse names the type in its "invalid value" message
    return parse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="train every config of one (model, dataset, split), recording every epoch",
        description="Train configs 0..N of a model on one split and record all metrics at "
        "every epoch (docs/design.md §6). Resumes from <out>.part/ if a previous run was killed.",
    )
    models = get_models()
    p.add_argument("--model", required=True, choices=sorted(models))
    p.add_argument("--dataset", required=True)
    p.add_argument("--split", required=True, type=int)
    p.add_argument("--processed", required=True, help="data/processed/<dataset>.parquet")
    p.add_argument("--splits", required=True, help="data/splits/<dataset>.parquet")
    p.add_argument("--out", required=True, help="results/runs/<model>/<dataset>/split<i>.parquet")
    p.add_argument("--n-configs", required=True, type=non_negative_int,
                   help="random configs besides the default config 0")
    p.add_argument("--epochs", required=True, nargs="+", type=_epochs_item, metavar="KEY=N",
                   help="e.g. xgboost_default=100 xgboost_tuned=1000 (or mlp=256)")
    p.add_argument("--seed", required=True, type=int)
    add_device_arguments(p)
    p.add_argument("--members", type=_members, default=None, metavar="K|auto",
                   help="config network_members: the most configs of a network job trained "
                        "together as one stacked model (1 = one at a time; auto = every config "
                        "on a GPU, the measured best on the CPU; docs/design.md §15)")
    p.add_argument("--network-memory-gb", type=float, default=default("network_memory_gb"),
                   metavar="GB", help="config network_memory_gb: device memory a stacked "
                   "group may use (groups are cut to fit)")
    add_trainer_option_arguments(p)
    add_restop_arguments(p)
    p.set_defaults(func=run)


def add_restop_arguments(p: argparse.ArgumentParser) -> None:
    """What the job keeps for re-stopping and whether it retries recorded failures: settings
    that never change a record (so the train rule passes them outside its rerun triggers)."""
    p.add_argument("--keep-for-restop", type=boolean, default=default("keep_for_restop"),
                   metavar="true|false",
                   help="config keep_for_restop: keep what adding a stopping metric later "
                        "needs (each booster, else every epoch's validation logits; "
                        "`tabbench restop`, docs/design.md §16)")
    p.add_argument("--restop-max-mb", type=positive_float, default=default("restop_max_mb"),
                   metavar="MB", help="config restop_max_mb: the most a job keeps (float32 "
                   "logits, else float16, else nothing)")
    p.add_argument("--retry-failed", type=boolean, default=default("retry_failed"),
                   metavar="true|false",
                   help="config retry_failed: on resume, train a config whose failure is in "
                        "the part folder again instead of keeping it as failed")


def _members(text: str) -> int | None:
    try:
        return parse_members(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_device_arguments(p: argparse.ArgumentParser) -> None:
    """Threads, device and GPU claiming: shared by ``tabbench train`` and ``tabbench replay``,
    which must train on the same kind of device."""
    p.add_argument("--threads", type=int, default=field_default(TrainContext, "threads"))
    p.add_argument("--device", default=field_default(TrainContext, "device"),
                   help="cpu, cuda (claims a free GPU with a file lock) or cuda:<i> (pinned); "
                        "XGBoost always uses the CPU")
    p.add_argument("--allow-cpu-fallback", type=boolean, default=default("allow_cpu_fallback"),
                   metavar="true|false",
                   help="config allow_cpu_fallback: with --device cuda but no CUDA, train on "
                        "the CPU with a warning (true) or fail (false)")
    p.add_argument("--gpu-lock-dir", type=optional_str, default=None,
                   help="config gpu_lock_dir: folder of the per-GPU lock files "
                        "(default <tmp>/tabbench-gpu-locks)")
    p.add_argument("--gpu-claim-timeout", type=float, default=default("gpu_claim_timeout"),
                   help="config gpu_claim_timeout: seconds to wait for a free GPU")
    p.add_argument("--gpu-jobs-per-device", type=int, default=default("gpu_jobs_per_device"),
                   metavar="N",
                   help="config gpu_jobs_per_device: jobs that may share one GPU")


def add_trainer_option_arguments(p: argparse.ArgumentParser) -> None:
    """Every registered model's trainer options as flags ``--<model>-<option>`` (config
    ``<model>_<option>``); shared by ``tabbench train`` and ``tabbench replay``, which must
    build the same trainer. SUPPRESS: absent unless given, so that giving one to another model
    is an error, not ignored."""
    for name, spec in get_models().items():
        for option in spec.options:
            p.add_argument(option.cli_flag(name), dest=_option_dest(name, option),
                           type=option_value_type(option), default=argparse.SUPPRESS,
                           metavar="VALUE",
                           help=f"config {option.config_key(name)} (--model {name} only): "
                                f"{option.help} (default "
                                f"{option.cli_text(option.default)})")


def _option_dest(model: str, option: TrainerOption) -> str:
    return f"option__{model}__{option.name}"


def given_trainer_options(args: argparse.Namespace, model: str, prog: str
                          ) -> dict[str, Any] | None:
    """The trainer options given on the command line for ``model`` (option name -> value);
    None, after printing an error, if one of another model's options was given."""
    options = {}
    for name, spec in get_models().items():
        for option in spec.options:
            dest = _option_dest(name, option)
            if not hasattr(args, dest):
                continue
            if model != name:
                print(f"{prog}: error: {option.cli_flag(name)} applies to model {name} only, "
                      f"not {model}", file=sys.stderr)
                return None
            options[option.name] = getattr(args, dest)
    return options


def _log_to_stderr() -> None:
    """tabbench's log records (the CPU-fallback warning, which GPU was claimed) go to stderr,
    i.e. into the job's log file next to the progress lines."""
    logger = logging.getLogger("tabbench")
    # a handler of an earlier call in this process is replaced, not re-pointed: setStream would
    # flush its old stream, which may be closed by now (e.g. a test's captured stderr)
    for old in [h for h in logger.handlers if getattr(h, "_tabbench_stderr", False)]:
        logger.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler._tabbench_stderr = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def hardware_from(args: argparse.Namespace) -> Hardware:
    """The device arguments (:func:`add_device_arguments`) as a job's hardware."""
    gpu = GpuClaim(args.allow_cpu_fallback, args.gpu_lock_dir, args.gpu_claim_timeout,
                   args.gpu_jobs_per_device)
    memory = getattr(args, "network_memory_gb", None)
    return Hardware(args.device, args.threads, gpu,
                    default("network_memory_gb") if memory is None else memory)


def run(args: argparse.Namespace) -> int:
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.study.train_job import run_train_job

    options = given_trainer_options(args, args.model, "tabbench train")
    if options is None:
        return 2
    _log_to_stderr()
    target = TrainTarget(args.model, args.dataset, args.split, args.n_configs,
                         dict(args.epochs), args.seed, options, args.members)
    keeping = Keeping(args.keep_for_restop, args.restop_max_mb, args.retry_failed)
    try:
        with stop_on_signals():
            run_train_job(target, JobFiles(args.processed, args.splits, args.out),
                          hardware_from(args), keeping, progress=sys.stderr)
    except GpuUnavailableError as err:  # a clear one-line error, no traceback
        print(f"tabbench train: error: {err}", file=sys.stderr)
        return 2
    except TrainInterrupted as stop:
        print(_stopped_message(stop, args), file=sys.stderr, flush=True)
        return 128 + stop.signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM
    return 0


def _stopped_message(stop, args: argparse.Namespace) -> str:
    """What was kept and how to go on, for the job's log (no traceback: nothing went wrong)."""
    # lazy: measured import cost (every job's start, docs/performance.md)
    from tabbench.study.parts import finished_configs

    done = finished_configs(args.out)
    todo = [c for c in range(args.n_configs + 1) if c not in done]
    if not todo:
        lost = ""
    elif len(todo) == 1:
        lost = f"config {todo[0]} was in progress and is lost; "
    else:  # one config was in progress, or a stacked group of several
        lost = (f"config {todo[0]} was in progress and is lost (with the rest of its stacked "
                f"group, if it had one; not yet trained: {', '.join(map(str, todo[1:]))}); ")
    kept = ", ".join(map(str, done)) or "none"
    return (
        f"tabbench train: stopped by {stop.signal_name}. Finished configs kept in "
        f"{part_dir(args.out)}: {kept} ({len(done)} of {args.n_configs + 1}); {lost}running "
        "the same command (or snakemake) again resumes from there."
    )
