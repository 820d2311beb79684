"""The Bayesian signed-rank test: tabbench's kernel beside baycomp's own sampler.

Every summary, claims table and published page runs this test hundreds of times (one per
model, regime, compared method, stopping rule and ROPE). ``tabbench.summary.comparisons.
signed_rank_probs`` draws the same Dirichlet samples as ``baycomp.SignedRankTest.probs`` and
sums each sample's Walsh-average weights in one matrix product instead of one ``np.outer``
per sample in a Python loop. For each number of datasets this prints both times (median of
interleaved repeats, process CPU time: one thread, the less noisy clock on a shared machine),
their ratio, and whether the two gave the same probabilities.

    python benchmarks/signed_rank_speed.py
    python benchmarks/signed_rank_speed.py --datasets 6 16 65 200 --repeats 7
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from baycomp import SignedRankTest

from tabbench.summary.comparisons import BAYES_SAMPLES, ROPE_PERCENT, signed_rank_probs


def _cpu_seconds(fn, *args, **kwargs) -> tuple[float, tuple[float, ...]]:
    start = time.process_time()
    out = fn(*args, **kwargs)
    return time.process_time() - start, tuple(float(p) for p in out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, nargs="+", default=[6, 16, 65, 200])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--samples", type=int, default=BAYES_SAMPLES)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'datasets':>8}  {'baycomp s':>10}  {'tabbench s':>10}  {'ratio':>6}  same")
    for n in args.datasets:
        rel = np.round(rng.normal(-0.5, 2.0, n), 2)
        ref_times, our_times, same = [], [], True
        for seed in range(args.repeats):  # interleaved: both see the same machine load
            t_ref, ref = _cpu_seconds(SignedRankTest.probs, np.zeros(n), rel, rope=ROPE_PERCENT,
                                      nsamples=args.samples, random_state=seed)
            t_our, our = _cpu_seconds(signed_rank_probs, rel, ROPE_PERCENT, args.samples, seed)
            ref_times.append(t_ref)
            our_times.append(t_our)
            same &= ref == our
        ref_s, our_s = statistics.median(ref_times), statistics.median(our_times)
        print(f"{n:>8}  {ref_s:>10.4f}  {our_s:>10.4f}  {ref_s / our_s:>5.0f}x  {same}")


if __name__ == "__main__":
    main()
