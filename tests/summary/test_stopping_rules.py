"""Stopping rules (tabbench.summary.stopping_rules, docs/stopping_rules.md): the patience rule's
semantics on hand-made curves, its vectorised form against the curve definition, the
selection of every (rule, patience) against a loop reference, and the settings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fixtures.synthetic import SyntheticDataset, synthetic_run
from test_select import pick, records

from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.runs_schema import val_column
from tabbench.summary.select import select_table
from tabbench.summary.stopping_rules import (
    NETWORK_PATIENCES,
    ROUND_PATIENCES,
    RuleChoice,
    StoppingRule,
    apply_rule,
    best_blocks,
    best_curve,
    best_rows,
    patience_blocks,
    patience_curve,
    patiences_for,
    rule_choices,
    selected_choices,
    with_rule_columns,
)

NAN = np.nan


@pytest.mark.parametrize(("curve", "p", "ties", "want"), [
    # best at position 1; positions 2, 3 do not improve: stop at 1 + 2 = 3
    ([3.0, 1.0, 2.0, 2.0, 0.5], 2, "first", (1, 3)),
    # never p epochs without improvement: the whole run, its best
    ([3.0, 2.0, 1.0, 0.5], 2, "first", (3, 3)),
    # a tie is no improvement under "first": the patience counts from the first of them
    ([2.0, 1.0, 1.0, 1.0, 0.1], 2, "first", (1, 3)),
    # under "last" a tie is an improvement: the counter restarts, the last tie is returned
    ([2.0, 1.0, 1.0, 1.0, 0.1], 2, "last", (4, 4)),
    ([2.0, 1.0, 1.0, 3.0, 3.0, 0.1], 2, "last", (2, 4)),
    # patience 1: stop at the first epoch that does not improve
    ([1.0, 1.0, 0.0], 1, "first", (0, 1)),
])
def test_patience_stops_p_epochs_after_the_best_so_far(curve, p, ties, want):
    assert patience_curve(np.array(curve), ties, p) == want


def test_a_patience_longer_than_the_run_is_the_best_rule():
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.integers(0, 5, size=rng.integers(1, 30)).astype(float)
        v[rng.random(len(v)) < 0.2] = NAN
        for ties in ("first", "last"):
            assert patience_curve(v, ties, len(v)) == best_curve(v, ties)
            assert patience_curve(v, ties, 10_000) == best_curve(v, ties)


def test_non_finite_epochs_never_improve_and_count_towards_the_patience():
    # a diverged run: NaN after the best counts like any epoch without improvement
    assert patience_curve(np.array([2.0, 1.0, NAN, NAN, NAN]), "first", 2) == (1, 3)
    # epochs before the first finite value count too (nothing to return yet)
    assert patience_curve(np.array([NAN, NAN, 1.0, 0.5]), "first", 2) == (-1, 1)
    assert patience_curve(np.array([NAN, 1.0, 0.5]), "first", 2) == (2, 2)
    assert patience_curve(np.array([NAN, NAN]), "last", 5) == (-1, 1)
    assert patience_curve(np.array([1.0, np.inf, 0.5]), "first", 2) == (2, 2)


def test_a_patience_must_be_a_positive_integer():
    for bad in (0, -1, 2.5, None, True):
        with pytest.raises(ValueError, match="patience"):
            patience_curve(np.array([1.0]), "first", bad)


def _random_blocks(seed: int, n_blocks: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Curves of random lengths with ties (small integers) and NaN, concatenated."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 40, size=n_blocks)
    values = rng.integers(0, 6, size=int(lengths.sum())).astype(float)
    values[rng.random(len(values)) < 0.15] = NAN
    values[rng.random(len(values)) < 0.02] = np.inf
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    epochs = np.concatenate([np.arange(1, n + 1) for n in lengths])
    return values, epochs, starts


@pytest.mark.parametrize("ties", ["first", "last"])
@pytest.mark.parametrize("p", [1, 2, 3, 7, 100])
def test_the_vectorised_patience_equals_the_curve_definition(ties, p):
    values, epochs, starts = _random_blocks(p)
    chosen, stop = patience_blocks(values, epochs, starts, ties, p)
    ends = np.append(starts[1:], len(values))
    for b, (s, e) in enumerate(zip(starts, ends, strict=True)):
        pick_, at = patience_curve(values[s:e], ties, p)
        assert chosen[b] == (s + pick_ if pick_ >= 0 else -1), b
        assert stop[b] == s + at, b


@pytest.mark.parametrize("ties", ["first", "last"])
def test_the_vectorised_best_equals_the_curve_definition(ties):
    values, epochs, starts = _random_blocks(11)
    chosen, stop = best_blocks(values, epochs, starts, ties)
    ends = np.append(starts[1:], len(values))
    for b, (s, e) in enumerate(zip(starts, ends, strict=True)):
        pick_, at = best_curve(values[s:e], ties)
        assert (chosen[b], stop[b]) == (s + pick_ if pick_ >= 0 else -1, e - 1)


def test_a_rule_without_a_vectorised_form_is_applied_curve_by_curve(monkeypatch):
    import tabbench.summary.stopping_rules as sr

    plain = StoppingRule("patience", "patience", patience_curve, parametrised=True,
                         default_params=lambda m: (3,))
    monkeypatch.setattr(sr, "get_stopping_rule", lambda rid: plain)
    values, epochs, starts = _random_blocks(5)
    got = apply_rule(RuleChoice("patience", 3), values, epochs, starts, "first")
    want = patience_blocks(values, epochs, starts, "first", 3)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    broken = StoppingRule("patience", "patience", lambda v, t, p: (len(v), len(v)),
                          parametrised=True, default_params=lambda m: (3,))
    monkeypatch.setattr(sr, "get_stopping_rule", lambda rid: broken)
    with pytest.raises(ValueError, match="stopping rule 'patience' returned"):
        apply_rule(RuleChoice("patience", 3), values, epochs, starts, "first")


# --- the settings --------------------------------------------------------------------------------


def test_patiences_come_from_the_setting_else_the_models_kind():
    assert patiences_for(None, "xgboost") == ROUND_PATIENCES
    assert patiences_for(None, "mlp") == NETWORK_PATIENCES
    assert patiences_for(None, "someone_elses_model") == ROUND_PATIENCES
    assert patiences_for([50, 5, 5], "mlp") == (5, 50)
    assert patiences_for({"mlp": [4]}, "mlp") == (4,)
    assert patiences_for({"mlp": [4]}, "xgboost") == ROUND_PATIENCES
    assert patiences_for({"mlp": None}, "mlp") == NETWORK_PATIENCES
    assert patiences_for([], "mlp") == ()
    with pytest.raises(ValueError, match="patience"):
        patiences_for([0], "mlp")


def test_rule_choices_put_best_first_then_the_patiences_in_order():
    assert rule_choices("mlp", [16, 8]) == (RuleChoice("best"), RuleChoice("patience", 8),
                                            RuleChoice("patience", 16))
    assert rule_choices("mlp", []) == (RuleChoice("best"),)
    assert RuleChoice("patience", 8).name == "patience 8"
    assert RuleChoice("best").name == "best"


# --- selection ------------------------------------------------------------------------------------


def test_selection_holds_a_row_per_rule_with_its_stop_epoch_and_compute():
    # config 0: best at epoch 2, then 3 epochs without improvement, a better epoch 6
    sel = select_table(records({0: [3.0, 1.0, 2.0, 2.0, 2.0, 0.5], 1: [2.0, 0.4, 0.9],
                                2: [0.3, 0.8, 0.8]}), patience=[2, 10])
    assert selected_choices(sel) == [RuleChoice("best"), RuleChoice("patience", 2),
                                     RuleChoice("patience", 10)]
    best = pick(sel, "default")
    assert (best["epoch"], best["stop_epoch"]) == (6, 6)
    assert (best["epochs_trained"], best["epochs_recorded"]) == (6, 6)
    p2 = pick(sel, "default", rule="patience", patience=2)
    assert (p2["epoch"], p2["stop_epoch"], p2["val"]) == (2, 4, 1.0)
    assert p2["test_logloss"] == 2.0  # the test values of the returned epoch
    assert (p2["epochs_trained"], p2["epochs_recorded"]) == (4, 6)
    assert pick(sel, "default", rule="patience", patience=10)["epoch"] == 6
    # tuned: config 1 (best 0.4 at epoch 2) reaches the end of its 3 epochs; config 2 (best
    # 0.3 at epoch 1) stops at 1 + 2 = 3 and wins
    t2 = pick(sel, "tuned", rule="patience", patience=2)
    assert (t2["config"], t2["epoch"], t2["stop_epoch"]) == (2, 1, 3)
    assert (t2["epochs_trained"], t2["epochs_recorded"]) == (6, 6)
    # the oracle: the lowest test logloss after TS over the regime's (config, epoch)s
    assert best["oracle_logloss_ts"] == 1.5
    assert t2["oracle_logloss_ts"] == 1001.5
    assert best_rows(sel)["rule"].eq("best").all()


def test_a_selection_with_no_patience_holds_the_best_rule_only():
    sel = select_table(records({0: [3.0, 1.0]}), patience=[])
    assert set(sel["rule"]) == {"best"} and sel["patience"].isna().all()


def _naive_patience(df: pd.DataFrame, p: int, ties: str) -> pd.DataFrame:
    """Loop reference: each config's curve through :func:`patience_curve`, then the lowest
    returned value across configs (lowest id on ties); plus the stop epoch and the compute."""
    out = []
    for split, sdf in df.groupby("split"):
        for m in stopping_metric_ids():
            got, stops, lengths = {}, {}, {}
            for config, g in sdf.groupby("config"):
                g = g.sort_values("epoch")
                v = g[val_column(m)].to_numpy(dtype=float)
                i, at = patience_curve(v, ties, p)
                stops[config], lengths[config] = at + 1, len(v)
                if i >= 0:
                    got[config] = (v[i], i + 1)
            for regime in ("default", "tuned"):
                member = [c for c in lengths if (c == 0) == (regime == "default")]
                cands = {c: b for c, b in got.items() if c in member}
                if not cands:
                    continue
                c = min(sorted(cands), key=lambda k: cands[k][0])
                out.append((split, regime, m, c, cands[c][1], stops[c],
                            sum(stops[k] for k in member), sum(lengths[k] for k in member)))
    return pd.DataFrame(out, columns=["split", "regime", "stopping", "config", "epoch",
                                      "stop_epoch", "epochs_trained", "epochs_recorded"])


@pytest.mark.parametrize("ties", ["first", "last"])
def test_patience_selection_matches_a_loop_reference_with_nans_and_ties(ties):
    ds = SyntheticDataset("toy", 1_200, 3)
    df = pd.concat([synthetic_run("mlp", ds, s, n_configs=8, epochs=(25, 25),
                                  diverge_rate=0.3, seed=3) for s in range(2)])
    assert df[val_column("logloss")].isna().any()
    sel = select_table(df, epoch_ties=ties, patience=[3])
    cols = ["split", "regime", "stopping", "config", "epoch", "stop_epoch", "epochs_trained",
            "epochs_recorded"]
    got = sel[sel["rule"] == "patience"][cols]
    want = _naive_patience(df, 3, ties)
    key = ["split", "regime", "stopping"]
    pd.testing.assert_frame_equal(got.sort_values(key, ignore_index=True),
                                  want.sort_values(key, ignore_index=True), check_dtype=False)
    assert (got["stop_epoch"] < 25).any()  # some configs stop early


def test_an_old_selection_reads_as_the_best_rule():
    old = pd.DataFrame({"model": ["mlp"], "stopping": ["logloss"], "epoch": [3]})
    new = with_rule_columns(old)
    assert new["rule"].tolist() == ["best"] and new["patience"].isna().all()
    assert new["stop_epoch"].isna().all()
    assert selected_choices(new) == [RuleChoice("best")]
    assert best_rows(old) is old
