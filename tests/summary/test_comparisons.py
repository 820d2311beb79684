"""tabbench.summary.comparisons: the one pairing of splits, relative differences and statistics
that the
summary, the claims and the diagnostics share, on hand-built numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from tabbench.summary import comparisons as cmp


def test_relative_difference_and_clipping():
    v = np.array([1.1, 0.5, 3.0, 0.0, 0.0, 1.0, np.nan, 2.0])
    b = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, np.nan])
    got = cmp.relative_difference(v, b)
    np.testing.assert_allclose(got[:6], [10.0, -50.0, 100.0, -100.0, 0.0, 100.0])
    assert np.isnan(got[6]) and np.isnan(got[7])


def test_describe_keeps_finite_values_and_is_nan_when_empty():
    d = cmp.describe(np.array([1.0, 2.0, 3.0, np.nan, np.inf]))
    assert d["n"] == 3 and d["median"] == 2.0 and d["mean"] == 2.0
    assert d["sem"] == pytest.approx(1 / np.sqrt(3))
    assert (d["q10"], d["q90"]) == pytest.approx((1.2, 2.8))
    empty = cmp.describe(np.array([]))
    assert empty["n"] == 0 and all(np.isnan(v) for k, v in empty.items() if k != "n")


def _pairs(values: dict[str, list[tuple[float, float]]]) -> pd.DataFrame:
    """Paired splits of one comparison: dataset -> [(value, other) per split]."""
    rows = [{"model": "m", "regime": "default", "dataset": d, "method": "A", "split": s,
             "value": v, "other": o, "n_rows": 1000, "paired": True}
            for d, splits in values.items() for s, (v, o) in enumerate(splits)]
    return pd.DataFrame(rows, columns=cmp.PAIR_COLUMNS)


def test_pairing_keeps_only_the_splits_both_have_and_means_before_the_ratio():
    values = pd.DataFrame({
        "model": "m", "regime": "default", "dataset": "d", "split": [0, 1, 2, 0, 1],
        "method": ["B", "B", "B", "A", "A"], "value": [1.0, 3.0, 5.0, 1.5, np.nan],
        "n_rows": 1000})
    pairs = cmp.paired_splits(values, "B", ["A"])
    assert sorted(pairs["split"]) == [0, 1, 2]  # every split either has
    assert pairs.set_index("split")["paired"].to_dict() == {0: True, 1: False, 2: False}
    diffs = cmp.dataset_differences(pairs)
    assert diffs.loc[0, "n_splits"] == 1 and diffs.loc[0, "rel_diff"] == pytest.approx(50.0)
    points = cmp.split_differences(_pairs({"d": [(1.0, 2.0), (3.0, 2.0)]}))
    assert points["rel_diff"].tolist() == pytest.approx([-50.0, 50.0])


@pytest.mark.parametrize(
    ("rel", "expect"),
    [
        ([-4.5, -3.0, -2.0, -1.5, -6.0, -2.5], "better"),  # a clear win at n = 6
        ([0.2, -0.3, 0.1, 0.0, -0.4, 0.3, 0.5], "equivalent"),  # a tie within the ROPE
        ([3.0, 4.0, 2.5, 5.0, 6.0, 2.0], "worse"),
        ([-4.0, 4.0, -3.0, 3.5, 0.0, -2.0, 2.5], None),  # no side convincing
    ],
)
def test_bayesian_signed_rank_regimes(rel, expect):
    post = cmp.bayesian_signed_rank(np.array(rel), rope=1.0)
    probs = {"better": post.p_better, "equivalent": post.p_equivalent, "worse": post.p_worse}
    assert sum(probs.values()) == pytest.approx(1.0)
    if expect is None:
        assert max(probs.values()) < 0.95, probs
    else:
        assert probs[expect] >= 0.95, probs
    again = cmp.bayesian_signed_rank(np.array(rel), rope=1.0)
    assert again == post  # seeded: a table recomputes to the same numbers
    assert np.isnan(cmp.bayesian_signed_rank(np.array([1.0])).p_better)


def test_a_wider_rope_turns_small_gains_into_equivalence():
    rel = np.array([-1.5, -2.0, -1.2, -1.8, -2.2, -1.6])
    assert cmp.bayesian_signed_rank(rel, rope=1.0).p_better >= 0.95
    assert cmp.bayesian_signed_rank(rel, rope=5.0).p_equivalent >= 0.95


def test_bootstrap_interval_holds_the_median_and_collapses_on_identical_datasets():
    rng = np.random.default_rng(3)
    data = {f"d{i}": [(1.0 - 0.02 * (i % 5) + 0.01 * rng.standard_normal(), 1.0)
                      for _ in range(5)] for i in range(15)}
    pairs = _pairs(data)
    median = np.median(cmp.dataset_differences(pairs)["rel_diff"])
    lo, hi = cmp.bootstrap_median_interval(pairs)
    assert lo <= median <= hi and hi - lo < 6.0
    assert cmp.bootstrap_median_interval(pairs) == (lo, hi)  # seeded
    same = _pairs({f"d{i}": [(0.9, 1.0)] * 3 for i in range(8)})
    assert cmp.bootstrap_median_interval(same) == pytest.approx((-10.0, -10.0))
    lo_s, hi_s = cmp.bootstrap_median_interval(_pairs({"a": [(0.5, 1.0), (1.5, 1.0)]} | {
        f"d{i}": [(1.0, 1.0)] * 2 for i in range(4)}), unit="split")
    assert lo_s <= 0.0 <= hi_s
    with pytest.raises(ValueError, match="unit"):
        cmp.bootstrap_median_interval(same, unit="fold")
    assert np.isnan(cmp.bootstrap_median_interval(same.iloc[:0])[0])


def _reference_bootstrap(pairs: pd.DataFrame, unit: str, n_boot: int = 500,
                         seed: int = cmp.BAYES_SEED) -> tuple[float, float]:
    """The two-level bootstrap as its docstring says it, one sub-frame per dataset (the
    straightforward form the library's padded arrays replace), drawing the same numbers."""
    pairs = pairs[pairs["paired"].astype(bool)]
    groups = [g[["value", "other"]].to_numpy(dtype=float)
              for _, g in pairs.groupby("dataset", sort=True)]
    n, sizes = len(groups), np.array([len(g) for g in groups])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(n_boot, n))
    uniform = rng.random((n_boot, n, int(sizes.max())))
    medians = []
    for b in range(n_boot):
        drawn = [groups[d][np.floor(uniform[b, i, :sizes[d]] * sizes[d]).astype(int)]
                 for i, d in enumerate(picks[b])]
        if unit == "dataset":
            means = np.array([g.mean(axis=0) for g in drawn])
            medians.append(np.median(cmp.relative_difference(means[:, 0], means[:, 1])))
        else:
            rows = np.concatenate(drawn)
            medians.append(np.median(cmp.relative_difference(rows[:, 0], rows[:, 1])))
    lo, hi = np.quantile(medians, [0.025, 0.975])
    return float(lo), float(hi)


@pytest.mark.parametrize("unit", ["dataset", "split"])
def test_bootstrap_interval_is_the_per_dataset_resampling_it_describes(unit):
    """Shuffled rows, uneven split counts, unpaired rows and Arrow-backed dataset names (as
    read from parquet): the interval is the straightforward per-dataset loop's."""
    rng = np.random.default_rng(11)
    rows = [(f"d{d}", 0.5 + rng.random(), 0.5 + rng.random(), rng.random() < 0.9)
            for d in rng.integers(0, 12, size=40)]
    pairs = pd.DataFrame(rows, columns=["dataset", "value", "other", "paired"])
    pairs = pairs.sample(frac=1.0, random_state=4).astype({"dataset": "string[pyarrow]"})
    assert cmp.BOOTSTRAP_LEVEL == 0.95
    got = cmp.bootstrap_median_interval(pairs, n_boot=500, unit=unit)
    assert got == pytest.approx(_reference_bootstrap(pairs, unit), rel=1e-12, abs=1e-12)


def test_mean_ranks_equal_the_row_ranks_averaged_and_need_five_datasets():
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.random((9, 4)), columns=["a", "b", "c", "d"])
    table["a"] -= 1.0  # a is lowest everywhere
    ranking = cmp.mean_ranks(table)
    want = np.mean([rankdata(row) for row in table.to_numpy()], axis=0)
    np.testing.assert_allclose(ranking.mean_ranks.to_numpy(), want)
    assert ranking.mean_ranks["a"] == 1.0 and ranking.p_friedman < 0.05
    # Nemenyi's critical difference for k = 4 methods, N = 9 datasets: q_0.05 = 2.569
    assert ranking.cd == pytest.approx(2.569 * np.sqrt(4 * 5 / (6 * 9)), rel=1e-3)
    assert cmp.mean_ranks(table.iloc[:4]) is None
    with_gap = table.copy()
    with_gap.loc[0, "b"] = np.nan  # a dataset missing a method is left out
    assert cmp.mean_ranks(with_gap).mean_ranks["a"] == 1.0


def _parity_cases() -> list[tuple[np.ndarray, float, int]]:
    """Relative differences as the summaries meet them: few and many datasets, exact zeros
    (separable ties), values on the ROPE's edge (baycomp's step gives them half weight),
    rounded values that repeat, wide and narrow spreads."""
    rng = np.random.default_rng(11)
    cases = []
    for k in range(40):
        n = int(rng.integers(2, 61))
        rope = (0.1, 0.5, 1.0, 2.0)[k % 4]
        rel = np.round(rng.normal(rng.normal(0.0, 1.0), rng.choice([0.1, 1.0, 5.0]), n),
                       int(rng.integers(0, 4)))
        if k % 5 == 0:
            rel[: n // 2] = 0.0
        if k % 7 == 0:
            rel[0], rel[-1] = rope, -rope
        cases.append((rel, rope, k))
    return cases


@pytest.mark.parametrize(("rel", "rope", "seed"), _parity_cases())
def test_the_signed_rank_kernel_gives_baycomps_probabilities(rel, rope, seed):
    """cmp.signed_rank_probs is baycomp's SignedRankTest.probs computed in one matrix product:
    the same probabilities, to the last sample, for the same seed."""
    from baycomp import SignedRankTest

    want = SignedRankTest.probs(np.zeros(len(rel)), rel, rope=rope, nsamples=cmp.BAYES_SAMPLES,
                                random_state=seed)
    assert cmp.signed_rank_probs(rel, rope, cmp.BAYES_SAMPLES, seed) == tuple(map(float, want))


def test_the_signed_rank_kernel_refuses_a_rope_that_is_not_positive():
    with pytest.raises(ValueError, match="ROPE must be positive"):
        cmp.signed_rank_probs(np.array([1.0, 2.0]), 0.0, 100, 0)


def test_the_monte_carlo_error_is_the_binomial_one():
    assert cmp.mc_standard_error(0.05, 10_000) == pytest.approx(np.sqrt(0.05 * 0.95 / 10_000))
    assert cmp.mc_standard_error(0.0, 10_000) == 0.0
    assert cmp.mc_standard_error(0.3, None) == 0.0  # an exact probability
    assert np.isnan(cmp.mc_standard_error(np.nan, 10_000))
    with pytest.raises(ValueError, match="at least one draw"):
        cmp.mc_standard_error(0.5, 0)
    post = cmp.Posterior(0.2, 0.5, 0.3, draws=400)
    assert (post.se_better, post.se_equivalent, post.se_worse) == pytest.approx(
        (0.02, 0.025, np.sqrt(0.21 / 400)))


def test_the_monte_carlo_error_is_the_spread_of_the_probability_over_seeds():
    """The s.e. the tables print is what a seed actually moves a probability by: over 60 seeds
    the probabilities' standard deviation is the binomial error (the draws are independent),
    within the sampling error of a standard deviation from 60 values (about ±9 %)."""
    rel = np.array([-4.0, 4.0, -3.0, 3.5, 0.0, -2.0, 2.5, -0.5])
    draws = 2_000
    probs = np.array([cmp.signed_rank_probs(rel, 1.0, draws, seed) for seed in range(60)])
    spread = probs.std(axis=0, ddof=1)
    predicted = np.sqrt(probs.mean(axis=0) * (1 - probs.mean(axis=0)) / draws)
    assert np.all(predicted > 0.003)  # a case where none of the three is 0 or 1
    np.testing.assert_allclose(spread, predicted, rtol=0.3)


@pytest.mark.parametrize(
    ("p", "se", "near"),
    [
        (0.95, 0.002, True),  # exactly at a threshold: near whenever it has an error
        (0.05, 0.002, True),
        (0.05, 0.0, False),  # an exact probability at a threshold: the rule decides it
        (0.0559, 0.002, True),  # 2.95 s.e. from 0.05
        (0.0561, 0.002, False),  # 3.05 s.e.
        (0.5, 0.005, False),  # far from both
        (0.99, 0.001, False),
        (np.nan, 0.002, False),
    ],
)
def test_a_probability_within_three_standard_errors_of_a_threshold_is_near_it(p, se, near):
    assert cmp.MC_BAND == 3.0 and cmp.THRESHOLDS == (0.05, 0.95)
    assert cmp.near_threshold(p, se) is near


def test_the_adaptive_test_draws_more_only_near_a_threshold_and_is_baycomp_at_its_draws():
    """A probability far from 0.05 and 0.95 keeps the first draws; one near a threshold is
    drawn again (doubling, up to the cap), and the probabilities are then baycomp's with that
    many samples from the same seed: the extra draws continue one stream."""
    from baycomp import SignedRankTest

    rel = np.array([-4.0, 4.0, -3.0, 3.5, 0.0, -2.0, 2.5, -0.5])
    first = cmp.signed_rank_probs(rel, 1.0, 5_000, 3)
    assert cmp.signed_rank_adaptive(rel, 1.0, 3, 0, nsamples=5_000) == (first, 5_000)
    # a threshold set at the probability itself: near it whatever the draws, up to the cap
    probs, drawn = cmp.signed_rank_adaptive(rel, 1.0, 3, 0, nsamples=5_000, max_samples=20_000,
                                            thresholds=(first[0],))
    assert drawn == 20_000
    want = SignedRankTest.probs(np.zeros(len(rel)), rel, rope=1.0, nsamples=drawn,
                                random_state=3)
    assert probs == tuple(map(float, want))
    post = cmp.bayesian_signed_rank(rel, 1.0, nsamples=5_000, seed=3, decides="p_better")
    assert post.draws == 5_000 and post.p_better == first[0]
    with pytest.raises(ValueError, match="decides"):
        cmp.bayesian_signed_rank(rel, 1.0, decides="better")


def test_the_draws_in_chunks_are_the_draws_in_one(monkeypatch):
    rel = np.array([-1.0, 0.5, 2.0, -0.2, 0.0, 1.5])
    whole = cmp.signed_rank_probs(rel, 0.5, 7_000, 1)
    monkeypatch.setattr(cmp, "_CHUNK", 999)
    assert cmp.signed_rank_probs(rel, 0.5, 7_000, 1) == whole
