"""What re-stopping costs (docs/design.md §16, docs/performance.md): per train job, the disk it
keeps for ``tabbench restop`` and the training time keeping adds, and the time ``restop`` takes
to add one stopping metric's column, next to that job's training time (the target:
adding one metric costs <= 20 % of the training).

For each (model, dataset) of a processed data folder: the same job (split 0, demo-like configs
and epochs) is trained with keeping off, then on (side by side in one run; walls of the whole
``run_train_job``, recording included); the kept job's runs file then loses one metric's column
(as a file written before that metric was registered) and ``restop_runs_file`` adds it back.
Two metrics, each re-stopped alone: ``brier`` (cheap, like most plugin metrics) and ``ts_ref_cv5``
(the costliest built-in: five TS fits per epoch), bracketing what a new metric costs.

    snakemake --cores 2 data --config preset=demo data_dir=/tmp/rb/data results_dir=/tmp/rb/r
    python benchmarks/restop_cost.py --data /tmp/rb/data --datasets letter adult kc1 \
        --models xgboost lightgbm mlp realmlp --float16

Times are this process's CPU seconds (one thread: the work done), which a shared machine
disturbs less than walls; read the ratios, not the seconds. The overhead of keeping is small
next to the noise of one job: the sum over jobs says more than a row.
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from tabbench.core.layout import DataLayout, restop_artefact
from tabbench.data.pipeline import read_kept
from tabbench.models.runs_schema import val_column
from tabbench.settings.presets import PRESETS, resolve_config
from tabbench.study.restop import restop_runs_file
from tabbench.study.specs import Hardware, JobFiles, Keeping, TrainTarget
from tabbench.study.train_job import run_train_job


def _cpu() -> float:
    """This process's CPU time (children's included): with one thread, the work done; less
    noisy than walls on a shared machine."""
    return time.process_time()


def _train(model: str, dataset: str, data: DataLayout, out: Path, keep: bool,
           n_configs: int, epochs: dict[str, int], threads: int) -> float:
    t0 = _cpu()
    run_train_job(TrainTarget(model, dataset, 0, n_configs, epochs, seed=0),
                  JobFiles(data.processed(dataset), data.splits(dataset), out),
                  Hardware(threads=threads), Keeping(for_restop=keep), progress=io.StringIO())
    return _cpu() - t0


def _restop(out: Path, metric: str, data: DataLayout, threads: int) -> float:
    """CPU seconds of re-stopping ``metric`` alone into the runs file ``out`` (its column
    dropped first, as in a file written before the metric was registered)."""
    col = val_column(metric)
    pq.write_table(pq.read_table(out).drop([col]), out)
    t0 = _cpu()
    outcome = restop_runs_file(out, data.root, threads=threads)
    seconds = _cpu() - t0
    if outcome.added != [col]:
        raise SystemExit(f"{out}: {metric} not re-stopped: {outcome.reason}")
    return seconds


def _float16_differences(model: str, ds: str, data: DataLayout, tmp: Path, n_configs: int,
                         epochs: dict[str, int], threads: int) -> dict[str, float]:
    """A network job kept as float16 (restop_max_mb just under its float32 logits): every
    stopping metric re-stopped from them, against the recorded one (largest relative
    difference over the scored epochs)."""
    import numpy as np

    from tabbench.data.dataset import load_split_data
    from tabbench.metrics.registry import stopping_metric_ids
    from tabbench.models.registry import n_epochs_for

    split = load_split_data(data.processed(ds), data.splits(ds), 0)
    n_ep = sum(n_epochs_for(model, c, epochs) for c in range(n_configs + 1))
    float32_mb = n_ep * len(split.y_val) * split.n_classes * 4 / 2**20
    out = tmp / "f16" / model / ds / "split0.parquet"
    run_train_job(TrainTarget(model, ds, 0, n_configs, epochs, seed=0),
                  JobFiles(data.processed(ds), data.splits(ds), out), Hardware(threads=threads),
                  Keeping(for_restop=True, restop_max_mb=float32_mb * 0.9),
                  progress=io.StringIO())
    recorded = pq.read_table(out)
    metrics = [m for m in stopping_metric_ids() if m != "logloss"]  # the self-check's own
    pq.write_table(recorded.drop([val_column(m) for m in metrics]), out)
    outcome = restop_runs_file(out, data.root, threads=threads)
    if "logits float16" not in outcome.kept:
        raise SystemExit(f"{model}/{ds}: expected float16 logits, got {outcome.kept}")
    back = pq.read_table(out)
    diffs = {"logloss (self-check)": float(outcome.check_rel_diff)}
    for m in metrics:
        a = recorded.column(val_column(m)).to_numpy()
        b = back.column(val_column(m)).to_numpy()
        ok = np.isfinite(a) & (np.abs(a) > 0)
        diffs[m] = float(np.max(np.abs(a[ok] - b[ok]) / np.abs(a[ok]))) if ok.any() else 0.0
    return diffs


def _plan_study(data: DataLayout, datasets: list[str], n_configs: dict[str, int],
                epochs: dict[str, int], n_splits: int, max_mb: float) -> None:
    """What keeping plans for every job of a study (``plan_keep``, as each train job logs
    before training): exact for logits, a bound for boosters. Split 0's sizes stand for
    every split (the splits' sizes differ by a row at most)."""
    from tabbench.data.dataset import load_split_data
    from tabbench.models.registry import get_trainer
    from tabbench.study.restop_store import plan_keep
    from tabbench.study.train_job import config_plan

    print(f"planned keeping, {n_splits} splits, restop_max_mb {max_mb:g} "
          "(models: a bound; logits: exact):")
    splits = {ds: load_split_data(data.processed(ds), data.splits(ds), 0) for ds in datasets}
    for model, n in n_configs.items():
        trainer = get_trainer(model)
        total, kinds = 0, {}
        for ds, split in splits.items():
            plan = config_plan(TrainTarget(model, ds, 0, n, epochs, seed=0))
            keep = plan_keep(True, max_mb, trainer, plan, split)
            kind = f"{keep.kind} {keep.dtype or ''}".strip() if keep.keeps else "nothing"
            kinds.setdefault(kind, []).append(ds)
            total += keep.estimate_bytes * n_splits if keep.keeps else 0
        print(f"  {model} ({n + 1} configs): {total / 2**30:.1f} GB ({total} bytes) over "
              f"{len(datasets) * n_splits} jobs; "
              + "; ".join(f"{k}: {', '.join(v)}" for k, v in kinds.items()), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="a processed data folder "
                    "(kept.txt, processed/, splits/)")
    ap.add_argument("--datasets", nargs="+", default=None, help="default: the first 3 kept")
    ap.add_argument("--models", nargs="+", default=["xgboost", "mlp", "realmlp"])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="demo",
                    help="whose configs and epochs the jobs train (default: demo; bundled: "
                         "the paper's epochs)")
    ap.add_argument("--n-configs", type=int, default=None,
                    help="random configs besides the default (default: the preset's)")
    ap.add_argument("--keep-only", action="store_true",
                    help="train each job with keeping only (skip the job without it, whose "
                         "overhead is measured at the demo scale): half the time")
    ap.add_argument("--metrics", nargs="+", default=["brier", "ts_ref_cv5"],
                    help="each re-stopped alone (a cheap one and the costliest built-in)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--float16", action="store_true",
                    help="also: the networks' jobs kept as float16, every metric re-stopped "
                         "against the recorded one")
    ap.add_argument("--plan", nargs="+", metavar="MODEL=N", default=None,
                    help="train nothing: print what keeping plans for a study of these "
                         "models with N random configs each, on --datasets (default: all "
                         "kept) x the preset's splits")
    ap.add_argument("--max-mb", type=float, default=512, help="restop_max_mb (with --plan)")
    args = ap.parse_args()
    data = DataLayout(args.data)
    preset = PRESETS[args.preset]
    epochs = resolve_config({"preset": args.preset})["epochs"]  # as the workflow has them
    if args.plan:
        _plan_study(data, args.datasets or read_kept(data.kept),
                    {m: int(n) for m, n in (x.split("=", 1) for x in args.plan)}, epochs,
                    int(preset["n_splits"]), args.max_mb)
        return
    datasets = args.datasets or read_kept(data.kept)[:3]
    if args.n_configs is None:
        args.n_configs = int(preset["n_configs"])
    tmp = Path(tempfile.mkdtemp(prefix="restop_cost_"))
    print(f"CPU seconds per job (split 0, {args.preset} epochs, default + {args.n_configs} "
          "random configs):")
    print(f"{'model':<9} {'dataset':<16} {'train off':>9} {'train on':>9} {'overhead':>8} "
          f"{'kept':>9}" + "".join(f" {'restop ' + m:>18}" for m in args.metrics))
    totals = {"off": 0.0, "train": 0.0, "kept": 0, **{m: 0.0 for m in args.metrics}}
    try:
        for model in args.models:
            for ds in datasets:
                out = tmp / "on" / model / ds / "split0.parquet"
                on = _train(model, ds, data, out, True, args.n_configs, epochs, args.threads)
                off = on if args.keep_only else _train(
                    model, ds, data, tmp / "off" / model / ds / "split0.parquet", False,
                    args.n_configs, epochs, args.threads)
                kept = restop_artefact(out).stat().st_size if restop_artefact(out).exists() \
                    else 0
                restops = {m: _restop(out, m, data, args.threads) for m in args.metrics}
                totals["train"] += on
                totals["off"] += off
                totals["kept"] += kept
                for m, t in restops.items():
                    totals[m] += t
                overhead = "–" if args.keep_only else f"{on / off - 1:+.1%}"
                off_s = "–" if args.keep_only else f"{off:.1f}s"
                print(f"{model:<9} {ds:<16} {off_s:>9} {on:>8.1f}s {overhead:>8} "
                      f"{kept / 2**20:>7.2f}MB"
                      + "".join(f" {t:>9.2f}s {t / on:>6.1%}" for t in restops.values()),
                      flush=True)
        if args.float16:
            from tabbench.models.registry import is_network

            print("float16-kept networks, largest relative difference to the recorded value:")
            for model in [m for m in args.models if is_network(m)]:
                for ds in datasets:
                    diffs = _float16_differences(model, ds, data, tmp, args.n_configs, epochs,
                                                 args.threads)
                    print(f"  {model}/{ds}: " + ", ".join(f"{m} {d:.1e}"
                                                          for m, d in diffs.items()),
                          flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.keep_only:
        training = f"{totals['train']:.1f}s with keeping (none without: --keep-only)"
    else:
        training = (f"{totals['off']:.1f}s without keeping, {totals['train']:.1f}s with "
                    f"({totals['train'] / totals['off'] - 1:+.1%})")
    print(f"all jobs (CPU seconds): training {training}; kept {totals['kept'] / 2**20:.1f} MB "
          "in all")
    for m in args.metrics:
        print(f"  re-stop of {m}: {totals[m]:.1f}s = {totals[m] / totals['train']:.1%} of the "
              "training")


if __name__ == "__main__":
    main()
