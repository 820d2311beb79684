"""Time per temperature-scaling fit, side by side, and per-epoch cost of the recorder's metrics.

Run:  PYTHONPATH=src python benchmarks/ts_speed.py [--quick] [--torch-threads 1]

Part 1 prints, for N×K ∈ {1K×2, 16K×2, 16K×10, 100K×10}, the seconds per fit of: ours
(``fit_temperature``), ours batched over 100 epochs (``fit_temperature_batched``, total / 100),
the paper's bisection in numpy, probmetrics' TS (if installed), a torch LBFGS TS à la Guo et
al., ours and scikit-learn's TS through their meta-estimators (``TemperatureScaledClassifier``
/ ``CalibratedClassifierCV(method="temperature")``, each on a ``FrozenEstimator`` whose
decision_function is the logits; their fit-time ratio is printed at the end), and sklearn
LogisticRegression on the logits (binary: exactly TS; K > 2: multinomial
regression on the logits = matrix scaling, more parameters, hence its lower NLL); the ratio of
each to ours; and the NLL each reaches relative to ours (equal loss = same optimum).
Part 2 prints the per-epoch cost of
``stopping_metrics_batched`` (all 8 stopping metrics incl. 6 TS fits and isotonic) and
``metrics_on_test_batched`` at recorder-like sizes, against one probmetrics TS fit.
All numbers are CPU seconds measured in this run (see ``seconds_per_call``).
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _ts_impls as impl  # noqa: E402

import tabbench.metrics as M  # noqa: E402


def logits(n: int, k: int, n_epochs: int | None = None, seed: int = 0):
    """Over-confident, noisy logits (float32, like a trainer's) with labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    base = rng.normal(size=(n, k)).astype(np.float32)
    base[np.arange(n), y] += 1.5
    if n_epochs is None:
        return 3.0 * base, y
    scales = np.linspace(0.3, 3.0, n_epochs, dtype=np.float32)
    z = np.empty((n_epochs, n, k), dtype=np.float32)
    for e in range(n_epochs):
        z[e] = scales[e] * (base + 0.3 * rng.normal(size=(n, k)).astype(np.float32))
    return z, y


def seconds_per_call(fn, min_time: float, max_repeats: int = 50) -> tuple[float, object]:
    """Median CPU seconds of repeated calls (at least 3, until ``min_time`` is spent).

    CPU time (all threads of this process), not wall time: the benchmark machine is shared
    with other jobs, and CPU time is what a fit costs the recorder.
    """
    result = fn()  # warm-up (imports, caches)
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < min_time and len(times) < max_repeats):
        t0 = time.process_time()
        result = fn()
        times.append(time.process_time() - t0)
    return float(np.median(times)), result


def part1(sizes, n_epochs: int, min_time: float) -> dict:
    print("Part 1: CPU seconds per TS fit (median), ratio to ours, NLL relative to ours")
    header = f"{'N x K':>9} | {'method':30} | {'s/fit':>9} | {'x ours':>8} | {'NLL/ours-1':>11}"
    print(header)
    print("-" * len(header))
    summary = {}
    for n, k in sizes:
        z, y = logits(n, k)
        rows = {}
        for name, fit in impl.methods().items():
            t, res = seconds_per_call(partial(fit, z, y), min_time)
            loss = nll(z, y, res)
            rows[name] = (t, loss)
        zb, yb = logits(n, k, n_epochs=n_epochs, seed=1)
        t_b, betas = seconds_per_call(partial(M.fit_temperature_batched, zb, yb), min_time, 5)
        per_epoch = t_b / n_epochs
        worst = max(
            abs(
                impl.nll(zb[e], yb, betas[e]) / impl.nll(zb[e], yb, M.fit_temperature(zb[e], yb))
                - 1
            )
            for e in range(0, n_epochs, max(1, n_epochs // 5))
        )
        t_ours, loss_ours = rows["ours (Newton)"]
        rows_out = [(name, t, loss) for name, (t, loss) in rows.items()]
        rows_out.insert(1, (f"ours batched ({n_epochs} ep.)/epoch", per_epoch, None))
        for name, t, loss in rows_out:
            rel = "" if loss is None else f"{loss / loss_ours - 1:+.2e}"
            if name.startswith("ours batched"):
                rel = f"max|.|={worst:.1e}"
            print(f"{n // 1000:>6}K x{k:<2}| {name:30} | {t:9.2e} | {t / t_ours:8.2f} | {rel:>11}")
        summary[(n, k)] = {name: t for name, t, _ in rows_out}
        print("-" * len(header))
    return summary


def nll(z, y, fitted) -> float:
    if callable(fitted):  # logistic regression on multiclass logits (not TS)
        return float(-fitted(z)[np.arange(len(y)), y].mean())
    return impl.nll(z, y, fitted)


def part2(shapes, min_time: float) -> None:
    print("\nPart 2: per-epoch cost of the recorder's batched metrics")
    for n_epochs, n, k in shapes:
        z, y = logits(n, k, n_epochs=n_epochs, seed=2)
        t_stop, out = seconds_per_call(partial(M.stopping_metrics_batched, z, y), min_time, 3)
        test_call = partial(M.metrics_on_test_batched, z, y, out["beta"], n)
        t_test, _ = seconds_per_call(test_call, min_time, 3)
        z1 = z[n_epochs // 2]
        line = (
            f"E={n_epochs} N={n} K={k}: stopping_metrics_batched {t_stop / n_epochs * 1e3:.2f} "
            f"ms/epoch, metrics_on_test_batched {t_test / n_epochs * 1e3:.2f} ms/epoch"
        )
        if impl.probmetrics_available():
            t_pm, _ = seconds_per_call(partial(impl.fit_probmetrics, z1, y), min_time)
            line += (
                f"; one probmetrics TS fit {t_pm * 1e3:.2f} ms -> all 8 stopping metrics per "
                f"epoch cost {t_stop / n_epochs / t_pm:.3f} of one probmetrics TS fit"
            )
        print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    ap.add_argument("--torch-threads", type=int, default=1, help="torch threads (numpy: 1)")
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds spent per timing")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.torch_threads)
    print(f"numpy {np.__version__}, torch {torch.__version__} ({args.torch_threads} thread(s))")
    if args.quick:
        sizes, n_epochs, shapes = [(1000, 2), (2000, 10)], 10, [(10, 3000, 2), (4, 2000, 10)]
    else:
        sizes = [(1000, 2), (16_000, 2), (16_000, 10), (100_000, 10)]
        n_epochs = 100
        shapes = [(200, 3000, 2), (200, 16_000, 2), (200, 16_000, 10)]
    summary = part1(sizes, n_epochs, args.min_time)
    if impl.probmetrics_available():
        print("\nRatios probmetrics / ours:")
        for (n, k), t in summary.items():
            ours = t["ours (Newton)"]
            batched = next(v for name, v in t.items() if name.startswith("ours batched"))
            print(
                f"  {n}x{k}: single fit {t['probmetrics TS'] / ours:.1f}x faster, "
                f"batched per epoch {t['probmetrics TS'] / batched:.1f}x faster"
            )
    print("\nRatios sklearn CalibratedClassifierCV(method='temperature') / ours, same public path"
          " (FrozenEstimator), same logits:")
    for (n, k), t in summary.items():
        sk = t["sklearn CCV temperature"]
        print(f"  {n}x{k}: {sk / t['ours TSClassifier(Frozen)']:.1f}x "
              f"(vs our bare fit_temperature: {sk / t['ours (Newton)']:.1f}x)")
    part2(shapes, args.min_time)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
