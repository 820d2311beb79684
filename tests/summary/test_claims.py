"""The claims table: the verdict rule on hand-picked numbers, and check_claims on hand-built
per-dataset means whose relative differences and verdicts are known in advance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabbench.summary.claims import (
    ALPHA,
    BORDERLINE,
    CLAIM_COLUMNS,
    CLAIMS,
    INCONCLUSIVE,
    N_MIN,
    NOT_REPRODUCED,
    PROB,
    REPRODUCED,
    VERDICT_LEGEND,
    VERDICT_RULE,
    Evidence,
    check_claims,
    claims_html,
    claims_markdown,
    verdict,
)
from tabbench.summary.comparisons import BAYES_MAX_SAMPLES, Posterior, bayesian_signed_rank
from tabbench.summary.select import TEST_COLUMNS

HIGH, LOW = PROB, 1 - PROB


def post(better, equivalent, worse):
    return Posterior(better, equivalent, worse)


@pytest.mark.parametrize(
    ("kind", "evidence", "expected"),
    [
        ("better", Evidence(N_MIN, posterior=post(HIGH, 0.0, 1 - HIGH)), REPRODUCED),
        ("better", Evidence(N_MIN, posterior=post(0.6, 0.3, 0.1)), INCONCLUSIVE),
        ("better", Evidence(N_MIN, posterior=post(LOW, 0.9, 0.05)), NOT_REPRODUCED),
        ("better", Evidence(N_MIN - 1, posterior=post(1.0, 0.0, 0.0)), INCONCLUSIVE),
        ("worse", Evidence(N_MIN, posterior=post(0.0, 0.02, 0.98)), REPRODUCED),
        ("worse", Evidence(N_MIN, posterior=post(0.98, 0.02, 0.0)), NOT_REPRODUCED),
        ("comparable", Evidence(N_MIN, posterior=post(0.01, 0.97, 0.02)), REPRODUCED),
        ("comparable", Evidence(N_MIN, posterior=post(0.5, 0.02, 0.48)), NOT_REPRODUCED),
        ("comparable", Evidence(N_MIN, posterior=post(0.3, 0.6, 0.1)), INCONCLUSIVE),
        ("no_worse", Evidence(N_MIN, posterior=post(0.97, 0.03, 0.0)), REPRODUCED),
        ("no_worse", Evidence(N_MIN, posterior=post(0.0, 0.03, 0.97)), NOT_REPRODUCED),
        ("no_worse", Evidence(N_MIN, posterior=post(0.1, 0.5, 0.4)), INCONCLUSIVE),
        ("better", Evidence(100), INCONCLUSIVE),  # nothing to decide on
        # without a posterior (two groups of datasets): the median's sign and the p-value
        ("better", Evidence(N_MIN, median=-3.0, p=ALPHA / 2), REPRODUCED),
        ("better", Evidence(N_MIN, median=-3.0, p=0.5), INCONCLUSIVE),
        ("better", Evidence(N_MIN, median=3.0, p=0.001), NOT_REPRODUCED),
        ("sometimes_better", Evidence(N_MIN, wins_beyond_rope=1), REPRODUCED),
        ("sometimes_better", Evidence(N_MIN, wins_beyond_rope=0), NOT_REPRODUCED),
        ("best_ranked", Evidence(N_MIN, p=0.001, ranks=(1.5, 2.0), best_other_rank=3.0,
                                 cd=2.0), REPRODUCED),
        ("best_ranked", Evidence(N_MIN, p=0.3, ranks=(1.5, 2.0), best_other_rank=3.0,
                                 cd=2.0), INCONCLUSIVE),
        ("best_ranked", Evidence(N_MIN, p=0.001, ranks=(1.5, 5.0), best_other_rank=2.0,
                                 cd=2.0), NOT_REPRODUCED),
        ("best_ranked", Evidence(N_MIN, p=0.001, ranks=(1.5, 3.5), best_other_rank=2.0,
                                 cd=2.0), INCONCLUSIVE),  # another ranks between, not far
    ],
)
def test_verdict_rule(kind, evidence, expected):
    assert verdict(kind, evidence) == expected


def _drawn(better, equivalent, worse, draws):
    return Evidence(N_MIN, posterior=Posterior(better, equivalent, worse, draws))


@pytest.mark.parametrize(
    ("kind", "evidence", "expected"),
    [
        # exactly at a threshold, from draws: borderline, whichever side the rule puts it on
        ("better", _drawn(HIGH, 0.0, 1 - HIGH, 10_000), BORDERLINE),
        ("better", _drawn(LOW, 0.9, 0.05, 1_280_000), BORDERLINE),
        ("worse", _drawn(0.0, 0.05, 0.95, 1_280_000), BORDERLINE),
        ("comparable", _drawn(0.01, HIGH, 0.04, 10_000), BORDERLINE),
        ("no_worse", _drawn(0.9, 0.05, LOW, 10_000), BORDERLINE),
        # within 3 s.e. (0.0065 at 10,000 draws) of 0.05, not at it
        ("better", _drawn(0.055, 0.9, 0.045, 10_000), BORDERLINE),
        # the same probability from 1,280,000 draws (3 s.e. = 0.0006) is decided
        ("better", _drawn(0.055, 0.9, 0.045, 1_280_000), INCONCLUSIVE),
        ("better", _drawn(0.9505, 0.0, 0.0495, 1_280_000), BORDERLINE),
        # far from both thresholds: the draws do not matter
        ("better", _drawn(0.99, 0.01, 0.0, 10_000), REPRODUCED),
        ("better", _drawn(0.0, 1.0, 0.0, 10_000), NOT_REPRODUCED),
        ("no_worse", _drawn(0.3, 0.69, 0.01, 10_000), REPRODUCED),
        # only the probability the kind is judged on counts: P(≈) at 0.05 is no matter here
        ("better", _drawn(0.5, 0.05, 0.45, 10_000), INCONCLUSIVE),
        # an exact probability at a threshold is decided by the rule
        ("better", Evidence(N_MIN, posterior=Posterior(HIGH, 0.0, 1 - HIGH)), REPRODUCED),
        # too few datasets stays inconclusive, whatever the posterior
        ("better", Evidence(N_MIN - 1, posterior=Posterior(HIGH, 0.0, 0.05, 10_000)),
         INCONCLUSIVE),
    ],
)
def test_a_probability_within_the_monte_carlo_error_of_a_threshold_is_borderline(
        kind, evidence, expected):
    assert verdict(kind, evidence) == expected


def test_the_rule_and_the_legend_name_the_fourth_verdict():
    for text in (VERDICT_RULE, VERDICT_LEGEND):
        assert BORDERLINE in text and "Monte Carlo" in text
        assert f"{BAYES_MAX_SAMPLES:,}" in text


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown claim kind 'bigger'"):
        verdict("bigger", Evidence(10))


def test_a_no_worse_claim_does_not_pass_on_a_small_median_with_only_ties_and_losses():
    """The case that motivated the Bayesian rule: median +0.22 %, 0 wins, 3 ties, 3 losses
    passes a |median| <= 1 % rule; the posterior does not support "no worse"."""
    rel = np.array([0.0, 0.0, 0.0, 0.44, 2.0, 3.0])
    assert np.median(rel) == pytest.approx(0.22)
    assert verdict("no_worse", Evidence(len(rel), posterior=bayesian_signed_rank(rel))) != (
        REPRODUCED)


def means_frame(values: dict[tuple[str, str, str], list[float]], n_rows: list[int],
                metric: str = "test_logloss_ts", epochs=None) -> pd.DataFrame:
    """Selected rows of one split: values[(model, regime, stopping)] = one value per dataset
    (datasets d0, d1, ... with n_rows rows); other test metrics 1.0."""
    rows = []
    for (model, regime, stopping), vals in values.items():
        for i, v in enumerate(vals):
            row = {c: 1.0 for c in TEST_COLUMNS}
            row.update(model=model, dataset=f"d{i}", split=0, regime=regime, stopping=stopping,
                       n_splits=5, n_rows=n_rows[i], n_classes=2, epoch=10.0)
            row[metric] = v
            if epochs is not None and (model, regime, stopping) in epochs:
                row["epoch"] = epochs[(model, regime, stopping)][i]
            rows.append(row)
    return pd.DataFrame(rows)


BASE = [1.0] * 8
LARGE = [20_000] * 8


def _row(claims: pd.DataFrame, claim: str, model: str = "xgboost", regime: str = "default"):
    sel = claims[(claims["claim"] == claim) & (claims["model"] == model)
                 & (claims["regime"] == regime)]
    assert len(sel) == 1, claims[["claim", "model", "regime"]]
    return sel.iloc[0]


def test_ts_ref_gain_on_every_large_dataset_is_reproduced():
    # TS-Ref.+TS 2..9 % lower on 8 large datasets: median -5.5 %, 8 wins, Wilcoxon p = 2/2^8
    ts_ref = [1 - k / 100 for k in range(2, 10)]
    means = means_frame({("xgboost", "default", "logloss"): BASE,
                         ("xgboost", "default", "ts_ref"): ts_ref}, LARGE)
    row = _row(check_claims(means, large_rows=10_000), "ts_ref_beats_logloss")
    assert row["n"] == 8 and (row["wins"], row["ties"], row["losses"]) == (8, 0, 0)
    assert row["median"] == pytest.approx(-5.5)
    assert row["p_wilcoxon"] == pytest.approx(2 / 2**8)
    assert row["verdict"] == REPRODUCED


def test_small_datasets_do_not_count_for_large_claims():
    ts_ref = [1 - k / 100 for k in range(2, 10)]
    sizes = [20_000] * 3 + [2_000] * 5  # only 3 large: fewer than N_MIN
    means = means_frame({("mlp", "default", "logloss"): BASE,
                         ("mlp", "default", "ts_ref"): ts_ref}, sizes)
    row = _row(check_claims(means, large_rows=10_000), "ts_ref_beats_logloss", "mlp")
    assert row["n"] == 3 and row["verdict"] == INCONCLUSIVE
    # the same with the folder's threshold at 1,000 rows: all 8 count
    row = _row(check_claims(means, large_rows=1_000), "ts_ref_beats_logloss", "mlp")
    assert row["n"] == 8 and row["verdict"] == REPRODUCED


def test_accuracy_better_than_logloss_means_not_reproduced():
    acc = [0.9] * 8  # Accuracy+TS 10 % lower: the paper says it is worse
    means = means_frame({("xgboost", "tuned", "logloss"): BASE,
                         ("xgboost", "tuned", "error"): acc}, LARGE)
    row = _row(check_claims(means, large_rows=10_000), "accuracy_worse", regime="tuned")
    assert row["median"] == pytest.approx(-10.0) and row["verdict"] == NOT_REPRODUCED


def test_comparable_claims_use_the_margin_and_cv5_is_compared_with_ts_ref():
    ts_ref = [0.9] * 8
    cv5 = [0.9 * (1 + s * 0.002) for s in (1, -1, 1, -1, 1, -1, 1, 2)]  # within 0.4 % of TS-Ref.
    means = means_frame({("xgboost", "default", "logloss"): BASE,
                         ("xgboost", "default", "ts_ref"): ts_ref,
                         ("xgboost", "default", "ts_ref_cv5"): cv5}, LARGE)
    row = _row(check_claims(means, large_rows=10_000), "cv5_as_good")
    assert row["versus"] == "TS-Ref.+TS"
    assert abs(row["median"]) <= row["rope"] and row["p_equivalent"] >= PROB
    assert row["verdict"] == REPRODUCED
    assert row["median_lo"] <= row["median"] <= row["median_hi"]


def test_realmlp_only_claim_and_absent_methods_give_no_rows():
    means = means_frame({("xgboost", "default", "logloss"): BASE,
                         ("xgboost", "default", "auroc"): [1.2] * 8,
                         ("realmlp", "default", "logloss"): BASE,
                         ("realmlp", "default", "auroc"): [1.2] * 8}, LARGE)
    claims = check_claims(means, large_rows=10_000)
    auroc = claims[claims["claim"] == "auroc_worse_realmlp"]
    assert auroc["model"].tolist() == ["realmlp"] and auroc["verdict"].tolist() == [REPRODUCED]
    assert "ts_ref_beats_logloss" not in set(claims["claim"])  # no ts_ref in these means
    assert list(claims.columns) == CLAIM_COLUMNS


def test_large_vs_small_compares_the_two_groups():
    # large datasets gain 5-8 %, small ones between -1 and +1 %
    ts_ref = [0.95, 0.94, 0.93, 0.92, 0.99, 1.01, 1.0, 0.995, 1.005, 1.0]
    sizes = [20_000] * 4 + [2_000] * 6
    base = [1.0] * 10
    means = means_frame({("xgboost", "default", "logloss"): base,
                         ("xgboost", "default", "ts_ref"): ts_ref}, sizes)
    # 4 large < N_MIN: inconclusive whatever the test says
    row = _row(check_claims(means, large_rows=10_000), "gain_larger_on_large")
    assert (row["n"], row["n_other"]) == (4, 6)
    assert row["median"] == pytest.approx(-6.5) and row["median_other"] == pytest.approx(0.0)
    assert row["verdict"] == INCONCLUSIVE
    means2 = means_frame({("xgboost", "default", "logloss"): base * 2,
                          ("xgboost", "default", "ts_ref"): ts_ref * 2}, sizes * 2)
    row = _row(check_claims(means2, large_rows=10_000), "gain_larger_on_large")
    assert (row["n"], row["n_other"]) == (8, 12)
    assert row["p_wilcoxon"] < ALPHA and row["verdict"] == REPRODUCED


def test_large_vs_small_counts_each_group_and_decides_on_the_smaller():
    # 13 large datasets and 6 small ones, as in the demo: the row and its printed cell give
    # 13/6 (not the smaller group's count twice); 4 small ones (< N_MIN) make it inconclusive
    sizes = [20_000] * 13 + [2_000] * 6
    ts_ref = [0.94] * 13 + [1.0, 1.01, 0.99, 1.0, 1.005, 0.995]
    means = means_frame({("xgboost", "default", "logloss"): [1.0] * 19,
                         ("xgboost", "default", "ts_ref"): ts_ref}, sizes)
    claims = check_claims(means, large_rows=10_000)
    row = _row(claims, "gain_larger_on_large")
    assert (row["n"], row["n_other"]) == (13, 6)
    assert "large vs small (n = 13/6)" in claims_markdown(claims, large_rows=10_000)
    few = means_frame({("xgboost", "default", "logloss"): [1.0] * 17,
                       ("xgboost", "default", "ts_ref"): ts_ref[:17]}, sizes[:17])
    row = _row(check_claims(few, large_rows=10_000), "gain_larger_on_large")
    assert (row["n"], row["n_other"]) == (13, 4) and row["verdict"] == INCONCLUSIVE


def test_best_epoch_claims_compare_chosen_epochs_of_default_configs():
    epochs = {("mlp", "default", "logloss"): [10.0] * 8,
              ("mlp", "default", "ts_ref"): [15.0, 14, 13, 20, 30, 12, 11, 16],
              ("mlp", "default", "brier"): [9.0] * 8}
    means = means_frame({k: BASE for k in epochs}, [2_000] * 8, epochs=epochs)
    claims = check_claims(means, large_rows=10_000)
    later = _row(claims, "logloss_stops_before_ts_ref_all", "mlp")
    assert later["metric"] == "epoch" and later["subset"] == "all"
    # +50, +40, +30, +100, +100 (clipped), +20, +10, +60 % -> median 45 %
    assert later["median"] == pytest.approx(45.0) and later["verdict"] == REPRODUCED
    brier = _row(claims, "brier_stops_later_all", "mlp")
    assert brier["median"] == pytest.approx(-10.0) and brier["verdict"] == NOT_REPRODUCED
    # the paper's view (one point per (dataset, split), large datasets): none large here
    paper = _row(claims, "logloss_stops_before_ts_ref", "mlp")
    assert paper["n"] == 0 and paper["verdict"] == INCONCLUSIVE


def test_fig_g5_claims_take_one_point_per_dataset_and_split_on_large_datasets():
    """Two splits per dataset: 6 large datasets give 12 points; the chosen epochs of the
    second split contradict the first ones', which a per-dataset mean would hide."""
    rows = []
    for i in range(6):
        for split, (ll, acc, auroc) in enumerate([(10.0, 30.0, 20.0), (10.0, 31.0, 19.0)]):
            for stopping, epoch in (("logloss", ll), ("error", acc), ("auroc", auroc)):
                row = {c: 1.0 for c in TEST_COLUMNS}
                row.update(model="xgboost", dataset=f"d{i}", split=split, regime="default",
                           stopping=stopping, n_rows=50_000, n_classes=2, epoch=epoch)
                rows.append(row)
    claims = check_claims(pd.DataFrame(rows), large_rows=10_000)
    late = _row(claims, "accuracy_stops_late")
    assert (late["unit"], late["n"]) == ("split", 12) and late["verdict"] == REPRODUCED
    middle = _row(claims, "auroc_stops_before_accuracy")
    assert middle["n"] == 12 and middle["verdict"] == REPRODUCED
    assert _row(claims, "auroc_stops_in_the_middle")["verdict"] == REPRODUCED


def test_a_claim_on_split_points_still_needs_five_datasets():
    """Two large datasets give ten (dataset, split) points that all agree, but splits of one
    dataset are not independent evidence: the verdict stays inconclusive (the rule's dataset
    minimum) while the numbers are still shown; five datasets decide."""
    def rows(n_datasets: int) -> pd.DataFrame:
        out = []
        for i in range(n_datasets):
            for split in range(5):
                for stopping, epoch in (("logloss", 10.0), ("error", 30.0 + split)):
                    row = {c: 1.0 for c in TEST_COLUMNS}
                    row.update(model="xgboost", dataset=f"d{i}", split=split,
                               regime="default", stopping=stopping, n_rows=50_000,
                               n_classes=2, epoch=epoch)
                    out.append(row)
        return pd.DataFrame(out)

    two = _row(check_claims(rows(2), large_rows=10_000), "accuracy_stops_late")
    assert (two["n"], two["n_datasets"], two["losses"]) == (10, 2, 10)
    assert two["p_worse"] > 0.95 and two["verdict"] == INCONCLUSIVE
    five = _row(check_claims(rows(5), large_rows=10_000), "accuracy_stops_late")
    assert (five["n"], five["n_datasets"], five["verdict"]) == (25, 5, REPRODUCED)
    from tabbench.summary.claims import reproduction_table

    line = next(x for x in reproduction_table(check_claims(rows(2), large_rows=10_000))
                .splitlines() if "Accuracy stops late" in x)
    assert ", 2 datasets: **inconclusive**" in line


def test_sometimes_better_needs_one_win_beyond_the_rope():
    acc = [1.0] * 8
    ts = [1.0] * 7 + [0.97]  # one dataset 3 % lower in error than tuning on accuracy
    means = means_frame({("xgboost", "tuned", "error"): acc, ("xgboost", "tuned", "ts_ref"): ts},
                        LARGE, metric="test_error_ts")
    row = _row(check_claims(means, large_rows=10_000), "ts_ref_sometimes_beats_accuracy",
               regime="tuned")
    assert row["wins_beyond_rope"] == 1 and row["verdict"] == REPRODUCED
    means = means_frame({("xgboost", "tuned", "error"): acc,
                         ("xgboost", "tuned", "ts_ref"): [1.0] * 7 + [0.995]}, LARGE,
                        metric="test_error_ts")
    row = _row(check_claims(means, large_rows=10_000), "ts_ref_sometimes_beats_accuracy",
               regime="tuned")
    assert row["wins_beyond_rope"] == 0 and row["verdict"] == NOT_REPRODUCED


def test_best_ranked_claim_uses_the_mean_ranks_of_the_stopping_methods():
    # TS-Ref. lowest and TS-Ref.-5CV second on every one of 8 large datasets; the others
    # (logloss, brier, error) above: the two best mean ranks, Friedman significant
    order = {"ts_ref": 0.90, "ts_ref_cv5": 0.91, "logloss": 1.0, "brier": 1.01, "error": 1.1}
    noise = np.linspace(0, 0.001, 8)
    means = means_frame({("xgboost", "default", s): list(v + noise) for s, v in order.items()},
                        LARGE)
    row = _row(check_claims(means, large_rows=10_000), "ts_ref_and_cv5_best")
    assert (row["mean_rank"], row["mean_rank_other"], row["best_other_rank"]) == (1.0, 2.0, 3.0)
    assert row["n"] == 8 and row["p_wilcoxon"] < ALPHA and row["verdict"] == REPRODUCED
    # accuracy stopping best everywhere instead: far better than the worse of the two
    order["error"] = 0.5
    means = means_frame({("xgboost", "default", s): list(v + noise) for s, v in order.items()},
                        LARGE)
    row = _row(check_claims(means, large_rows=10_000), "ts_ref_and_cv5_best")
    assert row["best_other_rank"] == 1.0 and row["verdict"] in (NOT_REPRODUCED, INCONCLUSIVE)
    assert row["mean_rank_other"] - row["best_other_rank"] == pytest.approx(2.0)


def test_every_claim_has_a_known_kind_unit_and_subset():
    from tabbench.summary.claims import KINDS

    assert len({c.id for c in CLAIMS}) == len(CLAIMS)
    for c in CLAIMS:
        assert c.kind in KINDS and c.unit in ("dataset", "split")
        assert c.subset in ("all", "large", "large_vs_small")


def test_claims_are_written_with_the_summary(tmp_path):
    ts_ref = [1 - k / 100 for k in range(2, 10)]
    means = means_frame({("xgboost", "default", "logloss"): BASE,
                         ("xgboost", "default", "ts_ref"): ts_ref}, LARGE)
    claims = check_claims(means, large_rows=10_000)
    md = claims_markdown(claims, 10_000)
    assert "TS-Ref.+TS beats Logloss+TS" in md and "**reproduced**" in md
    assert "Verdict rule" in md
    assert "No claim could be checked" in claims_markdown(claims.iloc[:0], 10_000)


def test_the_claims_name_their_preset_and_say_when_the_run_cannot_judge_the_paper():
    from tabbench.summary.claims import claims_html, study_sentence

    assert study_sentence({}) is None  # a summary of selected files without their folder
    assert study_sentence({"preset": None}) == ("Preset: not recorded (the folder has no "
                                                "run_config.yaml).")
    assert study_sentence({"preset": "bundled", "scale_note": None}) == "Preset: bundled."
    demo = study_sentence({"preset": "demo", "scale_note": "a reduced-scale run (...) cannot "
                                                           "judge the paper's claims"})
    assert demo == ("Preset: demo. Not a test of the paper: a reduced-scale run (...) cannot "
                    "judge the paper's claims.")
    claims = check_claims(means_frame({("xgboost", "default", "logloss"): BASE}, LARGE),
                          large_rows=10_000)
    lines = claims_markdown(claims, 10_000, study=demo).splitlines()
    assert lines[2] == f"**{demo}**"  # under the title, before any verdict
    assert claims_markdown(claims, 10_000, study="Preset: bundled.").splitlines()[2] == (
        "Preset: bundled.")
    assert f"<p><b>{demo.replace(chr(39), '&#x27;')}</b></p>" in claims_html(claims, 10_000,
                                                                            study=demo)


def test_claims_html_is_the_markdown_table_as_a_page_with_escaped_text():
    ts_ref = [1 - k / 100 for k in range(2, 10)]
    means = means_frame({("xgboost", "default", "logloss"): BASE,
                         ("xgboost", "default", "ts_ref"): ts_ref}, LARGE)
    claims = check_claims(means, large_rows=10_000)
    html = claims_html(claims, 10_000)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    # one table row per claim row, beside the header row
    assert html.count("<tr>") == len(claims) + 1
    row = _row(claims, "ts_ref_beats_logloss", "xgboost")
    assert f"{row['median']:+.2f}" in html and "<b>reproduced</b>" in html
    # the statements' text is escaped (e.g. "TS-Ref.+TS" stays, "<" would not break the page)
    weird = claims.copy()
    weird["statement"] = "a < b & c"
    assert "a &lt; b &amp; c" in claims_html(weird, 10_000)
    assert "No claim could be checked" in claims_html(claims.iloc[:0], 10_000)


def test_the_tables_show_the_monte_carlo_error_and_a_borderline_verdict():
    """claims.md gives each probability's Monte Carlo error and the draws, counts the fourth
    verdict and colours it in the HTML; the page's short cell gives the deciding probability to
    four decimals with its error where the test drew more than its first samples."""
    from tabbench.summary.claims import reproduction_table
    from tabbench.summary.comparisons import mc_standard_error

    ts_ref = [1 - k / 100 for k in range(2, 10)]
    means = means_frame({("xgboost", "default", "logloss"): BASE,
                         ("xgboost", "default", "ts_ref"): ts_ref}, LARGE)
    claims = check_claims(means, large_rows=10_000)
    row = _row(claims, "ts_ref_beats_logloss", "xgboost")
    assert row["draws"] == 10_000 and row["se_better"] == pytest.approx(
        mc_standard_error(row["p_better"], 10_000))
    md = claims_markdown(claims, 10_000)
    assert "MC s.e. (draws)" in md and "(10,000)" in md and "0 borderline" in md
    i = claims.index[claims["claim"] == "ts_ref_beats_logloss"][0]
    claims.loc[i, ["p_better", "p_equivalent", "p_worse", "draws"]] = [0.0504, 0.93, 0.0196,
                                                                       1_280_000]
    claims.loc[i, "se_better"] = mc_standard_error(0.0504, 1_280_000)
    claims.loc[i, "verdict"] = BORDERLINE
    assert "1 borderline" in claims_markdown(claims, 10_000)
    assert "#fff2cc\"><b>borderline</b>" in claims_html(claims, 10_000)
    cell = next(line for line in reproduction_table(claims).splitlines()
                if "TS-Ref.+TS beats Logloss+TS" in line)
    assert "P 0.05/0.93/0.02 (P(<) 0.0504 ± 0.0002, 1,280,000 draws): **borderline**" in cell


def test_a_claim_compares_only_the_splits_both_methods_have():
    # split 1 of TS-Ref. is missing (NaN): its baseline value must not enter the mean
    rows = []
    for i in range(6):
        for split, (base, ts) in enumerate([(1.0, 0.9), (3.0, np.nan)]):
            for stopping, v in (("logloss", base), ("ts_ref", ts)):
                row = {c: 1.0 for c in TEST_COLUMNS}
                row.update(model="xgboost", dataset=f"d{i}", split=split, regime="default",
                           stopping=stopping, n_rows=20_000, n_classes=2, epoch=1.0,
                           test_logloss_ts=v)
                rows.append(row)
    row = _row(check_claims(pd.DataFrame(rows), large_rows=10_000), "ts_ref_beats_logloss")
    assert row["median"] == pytest.approx(-10.0)  # 0.9 vs 1.0, not 0.9 vs mean(1, 3) = 2


def test_reproduction_table_has_a_row_per_claim_and_a_column_per_model_and_regime():
    from tabbench.summary.claims import reproduction_table

    ts_ref = [1 - k / 100 for k in range(2, 10)]
    means = means_frame({("xgboost", "default", "logloss"): BASE,
                         ("xgboost", "default", "ts_ref"): ts_ref,
                         ("mlp", "tuned", "logloss"): BASE,
                         ("mlp", "tuned", "ts_ref"): BASE}, LARGE)
    claims = check_claims(means, large_rows=10_000)
    table, legend = reproduction_table(claims).split("\n\n")
    assert legend == VERDICT_LEGEND  # the four verdicts named under the table
    lines = table.splitlines()
    assert lines[0] == "| paper (figure): claim | XGBoost default | MLP tuned |"
    assert len(lines) == 2 + claims["claim"].nunique()
    row = next(line for line in lines if "TS-Ref.+TS beats Logloss+TS" in line)
    assert "-5.50 %" in row and "8/0/0" in row and "**reproduced**" in row
    assert "0/8/0" in row and "**not reproduced**" in row  # the MLP's tie: no gain


def test_a_row_whose_cells_rest_on_different_numbers_of_datasets_says_the_range():
    """A regime trained on fewer datasets (e.g. tuned on 5 of 8) is not labelled with the
    largest n alone."""
    from tabbench.summary.claims import reproduction_table

    ts_ref = [1 - k / 100 for k in range(2, 10)]
    means = means_frame({("xgboost", "default", "logloss"): BASE,
                         ("xgboost", "default", "ts_ref"): ts_ref,
                         ("xgboost", "tuned", "logloss"): BASE[:5],
                         ("xgboost", "tuned", "ts_ref"): ts_ref[:5]}, LARGE)
    lines = reproduction_table(check_claims(means, large_rows=10_000)).splitlines()
    beats = next(line for line in lines if "TS-Ref.+TS beats Logloss+TS" in line)
    assert "large datasets, n = 5–8)" in beats and "8/0/0" in beats and "5/0/0" in beats
    same = reproduction_table(check_claims(means[means["regime"] == "default"],
                                           large_rows=10_000))
    assert "large datasets, n = 8)" in same


def test_a_cell_without_the_datasets_it_needs_says_so():
    # small datasets only: every large-dataset claim has none, the ranks cannot be drawn
    from tabbench.metrics.registry import stopping_metric_ids
    from tabbench.summary.claims import reproduction_table

    ts_ref = [1 - k / 100 for k in range(2, 10)]
    values = {("xgboost", "default", m): BASE for m in stopping_metric_ids()}
    values["xgboost", "default", "ts_ref"] = ts_ref
    lines = reproduction_table(check_claims(means_frame(values, [2_000] * 8),
                                            large_rows=10_000)).splitlines()
    beats = next(line for line in lines if "TS-Ref.+TS beats Logloss+TS" in line)
    assert beats.endswith("| no datasets: **inconclusive** |") and "0/0/0" not in beats
    ranks = next(line for line in lines if "perform best" in line)
    assert ranks.endswith("| too few datasets to rank: **inconclusive** |")
    all_datasets = [line for line in lines if "all datasets" in line]
    assert all_datasets and not any("no datasets" in line for line in all_datasets)
