"""How two methods are compared, written once for the summary, the claims and the diagnostics
(docs/design.md §7, §12).

From the selected rows (one per model, dataset, split, regime and stopping metric):

1. :func:`method_values` — one test metric (or the chosen epoch) per (model, regime, dataset,
   split, method);
2. :func:`paired_splits` — a method beside the method it is compared with, split by split, and
   whether both are finite there (only such splits are used, so that a method averaged over
   splits 0–4 is never compared with a baseline averaged over splits 0–2);
3. :func:`dataset_differences` — per dataset, both averaged over their shared splits and the
   relative difference ``r = 100 · (m̄_A / m̄_B − 1)`` % clipped to [−100, 100]
   (:func:`relative_difference`; a ratio of means, as in the paper's code) — or, for the paper's
   per-(dataset, split) plots, :func:`split_differences`;
4. statistics of the r over datasets: :func:`describe` (the box of the figures), the Wilcoxon
   signed-rank p (:func:`wilcoxon_p`, the paper's test), the Bayesian signed-rank test with a
   region of practical equivalence (:func:`bayesian_signed_rank`, Benavoli et al. 2017,
   ``baycomp``'s sampler in one matrix product: :func:`signed_rank_probs`; its probabilities
   come with their Monte Carlo standard errors, and more draws where one is near a verdict's
   threshold: :func:`signed_rank_adaptive`), a bootstrap
   interval of the median (:func:`bootstrap_median_interval`,
   resampling datasets and, inside each, its splits), a one-sided Mann–Whitney test between two
   groups of datasets (:func:`mannwhitney_less_p`), and the mean ranks of many methods with
   Friedman's test and Nemenyi's critical difference (:func:`mean_ranks`, via ``autorank``).

Lower is better for every recorded metric, so r < 0 means the method beats its comparison.
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tabbench.models.runs_schema import column_on_test
from tabbench.settings.table import default
from tabbench.summary.methods import methods

CLIP = 100.0
#: fewer datasets than this and no test is run (a claim is then *inconclusive*)
N_MIN = 5
#: region of practical equivalence of the Bayesian test, in % relative difference (config
#: ``rope_percent``)
ROPE_PERCENT = float(default("rope_percent"))
#: posterior samples the Bayesian signed-rank test draws first (its probabilities are then
#: known to a Monte Carlo standard error of 0.005 at most; a summary runs hundreds of tests) and
#: the seed that makes them reproducible
BAYES_SAMPLES = 10_000
BAYES_SEED = 0
#: a posterior probability at least this high decides a claim, one at most 1 − this rules it
#: out (the claims' verdict rule, :mod:`tabbench.summary.claims.judge`)
DECIDE_PROB = 0.95
#: the thresholds those verdicts compare a probability with
THRESHOLDS = (round(1.0 - DECIDE_PROB, 10), DECIDE_PROB)
#: a probability closer to a threshold than this many Monte Carlo standard errors is not
#: decided by the draws (:func:`near_threshold`): a seed could put it on either side. At 3, a
#: probability the draws put on the wrong side of a threshold by more than that happens once in
#: about 700 looks (one-sided normal tail beyond 3 s.e.)
MC_BAND = 3.0
#: the most samples the test draws: where the probability a verdict rests on is near a
#: threshold after :data:`BAYES_SAMPLES`, the draws are doubled until it is not or this many
#: are spent (10,000 · 2^10; 3 s.e. is then 0.0002 at 0.05 or 0.95, and a probability 0.001
#: from a threshold is decided by about 430,000 draws)
BAYES_MAX_SAMPLES = 10_240_000
#: the draws are made in chunks of at most this many rows (memory: rows × (n + 1) floats)
_CHUNK = 50_000
#: bootstrap resamples of the median and the interval's coverage
BOOTSTRAP_SAMPLES = 2_000
BOOTSTRAP_LEVEL = 0.95

_KEYS = ["model", "regime", "dataset"]
VALUE_COLUMNS = ["model", "regime", "dataset", "split", "method", "value", "n_rows"]
PAIR_COLUMNS = ["model", "regime", "dataset", "method", "split", "value", "other", "n_rows",
                "paired"]
DIFF_COLUMNS = ["model", "regime", "dataset", "method", "value", "other", "n_splits", "n_rows",
                "rel_diff"]


def method_values(selected: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One test metric — or, for ``metric="epoch"``, the chosen epoch — of every method whose
    stopping metric the selected rows hold: columns :data:`VALUE_COLUMNS`."""
    parts = []
    for m in methods():
        sub = selected[selected["stopping"] == m.stopping]
        if sub.empty:
            continue
        col = "epoch" if metric == "epoch" else column_on_test(metric, m.ts)
        if col not in sub:
            continue
        parts.append(pd.DataFrame({
            "model": sub["model"].to_numpy(), "regime": sub["regime"].to_numpy(),
            "dataset": sub["dataset"].to_numpy(), "split": sub["split"].to_numpy(),
            "method": m.name, "value": sub[col].to_numpy(dtype=float),
            "n_rows": sub["n_rows"].to_numpy(),
        }))
    if not parts:
        return pd.DataFrame(columns=VALUE_COLUMNS)
    return pd.concat(parts, ignore_index=True)[VALUE_COLUMNS]


def paired_splits(values: pd.DataFrame, versus: str,
                  compared: Sequence[str] | None = None) -> pd.DataFrame:
    """Every method of ``compared`` (None: all in ``values``) beside ``versus``: one row per
    (model, regime, dataset, method) and every split that the method *or* ``versus`` has, with
    both values (``value``, ``other``; NaN where missing) and ``paired`` = both finite."""
    if values.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    base = (values[values["method"] == versus][[*_KEYS, "split", "value"]]
            .rename(columns={"value": "other"}))
    vals = values if compared is None else values[values["method"].isin(list(compared))]
    groups = vals[[*_KEYS, "method"]].drop_duplicates()
    base_splits = groups.merge(base[[*_KEYS, "split"]], on=_KEYS)
    keys = (pd.concat([vals[[*_KEYS, "method", "split"]], base_splits], ignore_index=True)
            .drop_duplicates())
    sizes = values.groupby(["model", "dataset"], sort=False)["n_rows"].max().rename("n_rows")
    out = (keys.merge(vals.drop(columns="n_rows"), on=[*_KEYS, "method", "split"], how="left")
           .merge(base, on=[*_KEYS, "split"], how="left")
           .merge(sizes.reset_index(), on=["model", "dataset"], how="left"))
    out["paired"] = (np.isfinite(out["value"].astype(float))
                     & np.isfinite(out["other"].astype(float)))
    return out[PAIR_COLUMNS]


def relative_difference(value: np.ndarray, base: np.ndarray, clip: float = CLIP) -> np.ndarray:
    """``100·(value/base − 1)`` clipped to [−clip, clip]; exactly 0 where value == base (also
    when both are 0), ±clip where base == 0 < |value|, NaN where either is NaN."""
    value = np.asarray(value, dtype=float)
    base = np.asarray(base, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100.0 * (value / base - 1.0)
        rel = np.where(value == base, 0.0, rel)
        rel = np.where((base == 0) & (value != 0), np.sign(value) * np.inf, rel)
    return np.clip(rel, -clip, clip)


def dataset_differences(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per (model, regime, dataset, method): the method and its comparison averaged over their
    shared splits, ``n_splits`` of them, and the relative difference; a dataset without a shared
    split has no row. Columns :data:`DIFF_COLUMNS`."""
    pairs = pairs[pairs["paired"].astype(bool)]
    if pairs.empty:
        return pd.DataFrame(columns=DIFF_COLUMNS)
    g = pairs.groupby([*_KEYS, "method"], sort=False)
    out = g[["value", "other"]].mean()
    out["n_splits"] = g.size()
    out["n_rows"] = g["n_rows"].max()
    out = out.reset_index()
    out["rel_diff"] = relative_difference(out["value"], out["other"])
    return out[np.isfinite(out["rel_diff"])][DIFF_COLUMNS].reset_index(drop=True)


def split_differences(pairs: pd.DataFrame) -> pd.DataFrame:
    """The relative difference of every shared (dataset, split) on its own, the unit the paper's
    Fig. G.5 plots: :data:`DIFF_COLUMNS` with ``split`` instead of ``n_splits``."""
    pairs = pairs[pairs["paired"].astype(bool)].copy()
    pairs["rel_diff"] = relative_difference(pairs["value"], pairs["other"])
    cols = [*_KEYS, "method", "split", "value", "other", "n_rows", "rel_diff"]
    return pairs[np.isfinite(pairs["rel_diff"])][cols].reset_index(drop=True)


def describe(values: np.ndarray) -> dict[str, float]:
    """The finite ``values``' count, mean, standard error of the mean, and the quantiles a box
    of the figures shows: whiskers at 10 %/90 %, box at the quartiles (linear interpolation, as
    numpy and matplotlib compute them)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return {"n": 0, **{k: np.nan for k in ("median", "mean", "sem", "q10", "q25", "q75",
                                                "q90")}}
    q10, q25, q50, q75, q90 = np.quantile(v, [0.1, 0.25, 0.5, 0.75, 0.9])
    sem = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else np.nan
    return {"n": int(len(v)), "median": float(q50), "mean": float(v.mean()), "sem": sem,
            "q10": float(q10), "q25": float(q25), "q75": float(q75), "q90": float(q90)}


def wilcoxon_p(rel: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p of the relative differences against 0 (zeros dropped,
    scipy's default): the paper's test. On relative rather than raw differences, so that
    datasets with large losses do not dominate the ranks. NaN when no difference is non-zero."""
    rel = np.asarray(rel, dtype=float)
    nz = rel[rel != 0]
    return _wilcoxon_nonzero(tuple(nz.tolist())) if len(nz) else float("nan")


@functools.lru_cache(maxsize=4096)
def _wilcoxon_nonzero(nz: tuple[float, ...]) -> float:
    """The test itself, memoised: the claims ask again for the differences the summary has
    tested (half of a suite-large claims table's calls)."""
    # lazy: scipy.stats, ~0.4 s that the workflow's parse and the CLI's start would pay
    from scipy.stats import wilcoxon

    return float(wilcoxon(np.array(nz)).pvalue)


def mannwhitney_less_p(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided Mann–Whitney p that the values of ``a`` tend to be lower than those of ``b``
    (two independent groups of datasets, e.g. large and small ones)."""
    # lazy: scipy.stats, ~0.4 s that the workflow's parse and the CLI's start would pay
    from scipy.stats import mannwhitneyu

    if len(a) == 0 or len(b) == 0:
        return float("nan")
    return float(mannwhitneyu(a, b, alternative="less").pvalue)


@dataclass(frozen=True)
class Posterior:
    """The Bayesian signed-rank test's probabilities that the method is better (relative
    difference below −ROPE), practically equivalent (within ±ROPE) or worse (above +ROPE),
    estimated from ``draws`` posterior samples (None: exact, no Monte Carlo error)."""

    p_better: float
    p_equivalent: float
    p_worse: float
    draws: int | None = None

    @classmethod
    def unknown(cls) -> Posterior:
        return cls(np.nan, np.nan, np.nan)

    def standard_error(self, p: float) -> float:
        """The Monte Carlo standard error of one of its probabilities ``p``
        (:func:`mc_standard_error`)."""
        return mc_standard_error(p, self.draws)

    @property
    def se_better(self) -> float:
        return self.standard_error(self.p_better)

    @property
    def se_equivalent(self) -> float:
        return self.standard_error(self.p_equivalent)

    @property
    def se_worse(self) -> float:
        return self.standard_error(self.p_worse)


def mc_standard_error(p: float, draws: int | None) -> float:
    """Monte Carlo standard error of a probability ``p`` estimated as the share of ``draws``
    independent posterior samples in which an event holds: the binomial ``sqrt(p(1 − p)/draws)``
    (each sample is a Bernoulli trial of the event; the estimate's exact standard deviation,
    with the estimate in place of the unknown probability). 0 for an exact probability
    (``draws`` None), NaN for an unknown one."""
    if not np.isfinite(p):
        return float("nan")
    if draws is None:
        return 0.0
    if draws <= 0:
        raise ValueError(f"a probability from draws needs at least one draw, got {draws}")
    return float(np.sqrt(max(p * (1.0 - p), 0.0) / draws))


def near_threshold(p: float, se: float, thresholds: Sequence[float] = THRESHOLDS,
                   band: float = MC_BAND) -> bool:
    """Whether the probability ``p`` lies within ``band`` Monte Carlo standard errors ``se``
    of one of ``thresholds`` (|p − t| < band · se): then the draws do not tell on which side of
    ``t`` the probability is, and a verdict that compares it with ``t`` is *borderline*. A
    probability exactly at a threshold is near it whenever it has a Monte Carlo error; an exact
    one (``se`` 0) is near none; an unknown one (NaN) neither."""
    if not (np.isfinite(p) and np.isfinite(se)):
        return False
    return any(abs(p - t) < band * se for t in thresholds)


#: the three probabilities of a :class:`Posterior`, by name
PROBABILITIES = ("p_better", "p_equivalent", "p_worse")


def bayesian_signed_rank(rel: np.ndarray, rope: float = ROPE_PERCENT,
                         nsamples: int = BAYES_SAMPLES, seed: int = BAYES_SEED,
                         decides: str | None = None,
                         max_samples: int = BAYES_MAX_SAMPLES) -> Posterior:
    """The Bayesian signed-rank test (Benavoli et al., ICML 2014 / JMLR 2017; ``baycomp``'s
    implementation) of the relative differences ``rel`` (%, one per dataset) against 0, with a
    region of practical equivalence of ±``rope`` %. Each probability is that of its region being
    the most probable one under the Dirichlet-process posterior (``baycomp``'s ``probs``),
    seeded, so a table recomputes to the same numbers. ``nsamples`` posterior samples; where a
    verdict rests on one of the probabilities (``decides``: one of :data:`PROBABILITIES`), more
    while it is near a threshold, up to ``max_samples`` (:func:`signed_rank_adaptive`). The
    posterior says how many it drew. Unknown (NaN) for fewer than 2 values."""
    rel = np.asarray(rel, dtype=float)
    rel = rel[np.isfinite(rel)]
    if len(rel) < 2:
        return Posterior.unknown()
    if decides is not None and decides not in PROBABILITIES:
        raise ValueError(f"decides must be one of {PROBABILITIES} or None, got {decides!r}")
    watched = -1 if decides is None else PROBABILITIES.index(decides)
    return _signed_rank(tuple(rel.tolist()), float(rope), int(nsamples), int(seed), watched,
                        int(max_samples))


@functools.lru_cache(maxsize=4096)
def _signed_rank(rel: tuple[float, ...], rope: float, nsamples: int, seed: int, watched: int,
                 max_samples: int) -> Posterior:
    """The test itself, memoised: the claims ask again for comparisons the summary has
    computed (the same differences give the same seeded posterior)."""
    if watched < 0:
        return Posterior(*signed_rank_probs(np.array(rel), rope, nsamples, seed), nsamples)
    probs, draws = signed_rank_adaptive(np.array(rel), rope, seed, watched, nsamples,
                                        max_samples)
    return Posterior(*probs, draws)


def signed_rank_probs(diff: np.ndarray, rope: float, nsamples: int, seed: int,
                      prior: float = 0.5) -> tuple[float, float, float]:
    """``baycomp.SignedRankTest.probs(zeros, diff, rope=rope, nsamples=nsamples,
    random_state=seed)`` for a ``rope`` > 0: the share of posterior samples in which "below
    −rope", "within ±rope" or "above +rope" is the most probable region. The same draws (one
    ``RandomState(seed).dirichlet`` stream) and the same per-sample sums as baycomp, computed
    for all samples in one matrix product instead of one ``np.outer`` per sample in Python: that
    loop took three quarters of a summary's time (tests/summary/test_comparisons.py checks the
    two give the same probabilities; benchmarks/signed_rank_speed.py times them)."""
    sampler = _SignedRankSampler(diff, rope, seed, prior)
    counts = sampler.draw(nsamples)
    return _shares(counts, nsamples)


def signed_rank_adaptive(diff: np.ndarray, rope: float, seed: int, watched: int,
                         nsamples: int = BAYES_SAMPLES, max_samples: int = BAYES_MAX_SAMPLES,
                         thresholds: Sequence[float] = THRESHOLDS,
                         band: float = MC_BAND) -> tuple[tuple[float, float, float], int]:
    """:func:`signed_rank_probs` with as many samples as a verdict on the probability of index
    ``watched`` (0 better, 1 equivalent, 2 worse) needs: ``nsamples`` first; then, while it is
    within ``band`` Monte Carlo standard errors of one of ``thresholds``
    (:func:`near_threshold`), as many again (the draws double), until it is not or
    ``max_samples`` are drawn. The samples continue one ``RandomState(seed)`` stream, so the
    probabilities are baycomp's at the number of samples drawn, which is returned with them. A
    probability still near a threshold at ``max_samples`` is one that no affordable number of
    draws places on either side of it: its verdict is *borderline*. The prior is baycomp's
    default, as in the claims."""
    sampler = _SignedRankSampler(diff, rope, seed)
    counts = sampler.draw(nsamples)
    drawn = nsamples

    def near() -> bool:
        p = counts[watched] / drawn
        return near_threshold(p, mc_standard_error(p, drawn), thresholds, band)

    while drawn < max_samples and near():
        more = min(drawn, max_samples - drawn)
        counts = counts + sampler.draw(more)
        drawn += more
    return _shares(counts, drawn), drawn


def _shares(counts: np.ndarray, n: int) -> tuple[float, float, float]:
    probs = counts / n
    return float(probs[0]), float(probs[1]), float(probs[2])


class _SignedRankSampler:
    """The posterior samples of the signed-rank test drawn in chunks from one seeded stream:
    how many of them fall in each region (below, within, above the ROPE)."""

    def __init__(self, diff: np.ndarray, rope: float, seed: int, prior: float = 0.5) -> None:
        if not rope > 0:
            raise ValueError(f"the ROPE must be positive (rope_percent), got {rope}")
        z = np.concatenate(([0.0], np.asarray(diff, dtype=float)))  # the prior's pseudo-obs.
        sums = z[:, None] + z[None, :]  # the Walsh averages, doubled
        self._below = _heaviside(-sums, 2 * rope)
        self._above = _heaviside(sums, 2 * rope)
        self._weights = np.ones(len(z))
        self._weights[0] = prior
        self._rng = np.random.RandomState(seed)

    def draw(self, n: int) -> np.ndarray:
        """Counts of ``n`` more samples per region (below, within, above)."""
        counts = np.zeros(3, dtype=np.int64)
        while n > 0:
            k = min(n, _CHUNK)
            draws = self._rng.dirichlet(self._weights, k)

            def mass(region: np.ndarray, draws=draws) -> np.ndarray:
                return ((draws @ region) * draws).sum(axis=1)

            samples = np.zeros((k, 3))
            samples[:, 0] = mass(self._below)
            samples[:, 2] = mass(self._above)
            samples[:, 1] = -samples[:, 0] - samples[:, 2] + 1
            counts += np.bincount(np.argmax(samples, axis=1), minlength=3)
            n -= k
        return counts


def _heaviside(a: np.ndarray, threshold: float) -> np.ndarray:
    """1 above ``threshold``, ½ at it, 0 below (baycomp's step)."""
    return (a > threshold).astype(float) + 0.5 * (a == threshold).astype(float)


def bootstrap_median_interval(pairs: pd.DataFrame, level: float = BOOTSTRAP_LEVEL,
                              n_boot: int = BOOTSTRAP_SAMPLES, seed: int = BAYES_SEED,
                              unit: str = "dataset") -> tuple[float, float]:
    """Percentile interval of the median relative difference, by a two-level bootstrap of one
    comparison's paired splits (:func:`paired_splits` rows of one model, regime and method):
    datasets are resampled with replacement and, inside each drawn dataset, its shared splits.
    ``unit="dataset"``: each draw recomputes the per-dataset means, their relative difference
    and the median over datasets; ``"split"``: the median of the drawn points' own relative
    differences. (NaN, NaN) without a shared split."""
    if unit not in ("dataset", "split"):
        raise ValueError(f"unit must be 'dataset' or 'split', got {unit!r}")
    pairs = pairs[pairs["paired"].astype(bool)]
    if pairs.empty:
        return float("nan"), float("nan")
    padded, sizes = _padded_groups(pairs)
    return _interval(padded.tobytes(), padded.shape, tuple(sizes.tolist()), float(level),
                     int(n_boot), int(seed), unit)


@functools.lru_cache(maxsize=4096)
def _interval(padded_bytes: bytes, shape: tuple[int, ...], group_sizes: tuple[int, ...],
              level: float, n_boot: int, seed: int, unit: str) -> tuple[float, float]:
    """The bootstrap itself, memoised: the claims ask again for intervals the summary has
    computed (the same rows give the same seeded interval)."""
    padded = np.frombuffer(padded_bytes, dtype=float).reshape(shape)
    sizes = np.array(group_sizes)
    n, s_max = shape[0], shape[1]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(n_boot, n))  # datasets of each draw
    # each drawn dataset resamples its own splits: uniform indices below its split count
    counts = sizes[picks]  # (B, n)
    idx = np.floor(rng.random((n_boot, n, s_max)) * counts[..., None]).astype(np.int64)
    used = np.arange(s_max) < counts[..., None]  # (B, n, s_max)
    rows = padded[picks[..., None], idx]  # (B, n, s_max, 2)
    if unit == "dataset":
        means = (rows * used[..., None]).sum(axis=2) / counts[..., None]
        medians = np.median(relative_difference(means[..., 0], means[..., 1]), axis=1)
    else:
        points = np.where(used, relative_difference(rows[..., 0], rows[..., 1]), np.nan)
        medians = np.nanmedian(points.reshape(n_boot, -1), axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(medians, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def _padded_groups(pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The (value, other) rows of each dataset (sorted by name, rows in their order), padded
    with zeros to the largest group: an array (datasets, max splits, 2) and each group's size.
    Built with one stable sort rather than a sub-frame per dataset (the pandas overhead of
    which was most of a summary's bootstrap time)."""
    codes = pd.factorize(pairs["dataset"], sort=True)[0]
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    values = pairs[["value", "other"]].to_numpy(dtype=float)[order]
    sizes = np.bincount(codes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    padded = np.zeros((len(sizes), int(sizes.max()), 2))
    padded[codes, np.arange(len(codes)) - starts[codes]] = values
    return padded, sizes


@dataclass(frozen=True)
class Ranking:
    """Mean ranks of methods over datasets (rank 1 = lowest metric), Friedman's p and Nemenyi's
    critical difference: two mean ranks further apart than ``cd`` differ at level ``alpha``."""

    mean_ranks: pd.Series
    p_friedman: float
    cd: float
    alpha: float
    result: object  # autorank's result (what its plot_stats draws)


def mean_ranks(table: pd.DataFrame, alpha: float = 0.05) -> Ranking | None:
    """Ranks of the methods (columns) over datasets (rows; e.g. test logloss after TS, mean over
    splits), lower is better, by ``autorank`` with Friedman's test and Nemenyi's post-hoc test
    forced (``force_mode="nonparametric"``, the comparison of many classifiers over datasets of
    Demšar 2006; autorank would otherwise choose a parametric test when the data look normal).
    Rows with a missing method are dropped. None for fewer than 5 datasets or 2 methods (what
    autorank needs)."""
    from autorank import autorank  # lazy: ~0.5 s; the workflow's parse imports this module

    data = table.dropna(axis=0, how="any")
    if data.shape[0] < 5 or data.shape[1] < 2:
        return None
    # autorank prints its choice of tests and warns about small samples: we report n ourselves
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        result = autorank(data, alpha=alpha, order="ascending", force_mode="nonparametric",
                          verbose=False)
    ranks = result.rankdf["meanrank"].reindex(data.columns)
    return Ranking(mean_ranks=ranks.astype(float), p_friedman=float(result.pvalue),
                   cd=float(result.cd) if result.cd is not None else float("nan"),
                   alpha=float(alpha), result=result)


def relative_regret(got: np.ndarray | float, oracle: np.ndarray | float) -> np.ndarray:
    """The regret as a percentage of the oracle, ``100·(got − oracle)/oracle`` (NaN where the
    oracle is not positive): the selection-bias diagnostic's ``rel_regret_<t>``, and the regret
    of each
    stopping rule in the summary (:mod:`tabbench.summary.rule_summary`)."""
    got = np.asarray(got, dtype=np.float64)
    o = np.asarray(oracle, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(o > 0, 100.0 * (got - o) / np.where(o > 0, o, 1.0), np.nan)
