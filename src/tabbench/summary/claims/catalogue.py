"""The paper's tabular claims as data: every claim of Berta et al. (2025) that the tabular
figures support, written once (:data:`CLAIMS`), with the kinds of claim there are
(:data:`KINDS`). Judged by :mod:`tabbench.summary.claims.judge`; a user's own claims (config
``comparisons``) are :class:`Claim` s too (:mod:`tabbench.summary.view`)."""

from __future__ import annotations

from dataclasses import dataclass

from tabbench.summary.methods import BASELINE

#: claim kinds: the direction the claim expects of the method's relative difference to the
#: comparison ("better" = lower, all metrics being lower-is-better), a tolerance, or a ranking
KINDS = ("better", "worse", "comparable", "no_worse", "sometimes_better", "best_ranked")


@dataclass(frozen=True)
class Claim:
    """One statement of the paper, checked as ``method`` vs ``versus`` on ``metric``.

    ``metric`` is a test metric id (``logloss``, ``error``, ``auroc`` (= 1 − AUROC), ...) or
    ``"epoch"`` (the chosen epoch, Fig. G.5). ``subset`` is ``large`` (datasets with ≥ the
    folder's "large" threshold), ``all``, or ``large_vs_small`` (Fig. G.1: the relative
    differences of large datasets against those of the others). ``unit``: one point per
    ``dataset`` (mean over splits) or per (dataset, ``split``), as the paper's Fig. G.5 plots.
    For ``best_ranked`` the two methods named are the ones claimed best. ``models``/``regimes``
    = None: every one present.
    """

    id: str
    figure: str
    statement: str
    method: str
    versus: str
    metric: str
    kind: str
    subset: str = "large"
    models: tuple[str, ...] | None = None
    regimes: tuple[str, ...] | None = None
    unit: str = "dataset"


CLAIMS: tuple[Claim, ...] = (
    Claim("ts_helps", "Fig. 5", "Temperature scaling helps: Logloss without TS is worse than "
          "Logloss+TS", "Logloss", BASELINE, "logloss", "worse"),
    Claim("ts_ref_beats_logloss", "Fig. 5", "TS-Ref.+TS beats Logloss+TS in test logloss "
          "(XGBoost, MLP and RealMLP)", "TS-Ref.+TS", BASELINE, "logloss", "better"),
    Claim("accuracy_worse", "Fig. 5", "Accuracy+TS is worse than Logloss+TS in test logloss",
          "Accuracy+TS", BASELINE, "logloss", "worse"),
    Claim("gain_larger_on_large", "Fig. G.1", "The gain of TS-Ref.+TS over Logloss+TS is "
          "clearer on large datasets than on small ones", "TS-Ref.+TS", BASELINE, "logloss",
          "better", subset="large_vs_small"),
    Claim("ts_ref_and_cv5_best", "Fig. G.2", "TS-Refinement and its 5-fold CV version perform "
          "best (mean ranks of the stopping methods, test logloss after TS)", "TS-Ref.+TS",
          "TS-Ref.-5CV+TS", "logloss", "best_ranked"),
    Claim("cv5_as_good", "Fig. G.2", "TS-Ref.-5CV+TS is as good as TS-Ref.+TS",
          "TS-Ref.-5CV+TS", "TS-Ref.+TS", "logloss", "comparable"),
    Claim("brier_comparable", "Fig. G.2", "Brier+TS is comparable to Logloss+TS", "Brier+TS",
          BASELINE, "logloss", "comparable"),
    Claim("brier_ref_comparable", "Fig. G.2", "Brier-Ref.+TS is comparable to Logloss+TS",
          "Brier-Ref.+TS", BASELINE, "logloss", "comparable"),
    Claim("auroc_worse_realmlp", "Fig. G.2", "AUROC+TS is worse than Logloss+TS for RealMLP",
          "AUROC+TS", BASELINE, "logloss", "worse", models=("realmlp",)),
    Claim("ts_ref_accuracy_no_worse", "Fig. G.3", "Tuning on TS-Ref. gives a classification "
          "error no worse than tuning on logloss", "TS-Ref.+TS", BASELINE, "error",
          "no_worse"),
    Claim("ts_ref_sometimes_beats_accuracy", "Fig. G.3", "Tuning on TS-Ref. sometimes beats "
          "tuning on accuracy itself, in accuracy", "TS-Ref.+TS", "Accuracy+TS", "error",
          "sometimes_better", regimes=("tuned",)),
    Claim("ts_ref_auroc_no_worse", "Fig. G.4", "Tuning on TS-Ref. gives an AUROC no worse "
          "than tuning on logloss", "TS-Ref.+TS", BASELINE, "auroc", "no_worse"),
    Claim("accuracy_poor_auroc", "Fig. G.4", "Tuning on accuracy often gives poor AUROC "
          "(1 − AUROC higher than with Logloss+TS)", "Accuracy+TS", BASELINE, "auroc",
          "worse"),
    # Fig. G.5 as the paper plots it: one point per (dataset, split), large datasets
    Claim("logloss_stops_before_ts_ref", "Fig. G.5", "Logloss stops first on average: "
          "TS-Ref. stops later than logloss (default configs)", "TS-Ref.+TS", BASELINE,
          "epoch", "worse", regimes=("default",), unit="split"),
    Claim("brier_stops_later", "Fig. G.5", "Brier stops later than logloss (default "
          "configs)", "Brier+TS", BASELINE, "epoch", "worse", regimes=("default",),
          unit="split"),
    Claim("brier_ref_stops_after_brier", "Fig. G.5", "Losses after TS stop later than before "
          "TS: Brier-Ref. stops later than Brier (default configs)", "Brier-Ref.+TS",
          "Brier+TS", "epoch", "worse", regimes=("default",), unit="split"),
    Claim("accuracy_stops_late", "Fig. G.5", "Accuracy stops late: later than logloss "
          "(default configs)", "Accuracy+TS", BASELINE, "epoch", "worse",
          regimes=("default",), unit="split"),
    Claim("auroc_stops_in_the_middle", "Fig. G.5", "AUROC stops in the middle: later than "
          "logloss (default configs)", "AUROC+TS", BASELINE, "epoch", "worse",
          regimes=("default",), unit="split"),
    Claim("auroc_stops_before_accuracy", "Fig. G.5", "AUROC stops in the middle: earlier "
          "than accuracy (default configs)", "AUROC+TS", "Accuracy+TS", "epoch", "better",
          regimes=("default",), unit="split"),
    # the same trend per dataset over all datasets: an extra view (the table before Appendix
    # G's points were checked one by one)
    Claim("logloss_stops_before_ts_ref_all", "Fig. G.5", "TS-Ref. stops later than logloss "
          "(default configs; per dataset, all datasets)", "TS-Ref.+TS", BASELINE, "epoch",
          "worse", subset="all", regimes=("default",)),
    Claim("brier_stops_later_all", "Fig. G.5", "Brier stops later than logloss (default "
          "configs; per dataset, all datasets)", "Brier+TS", BASELINE, "epoch", "worse",
          subset="all", regimes=("default",)),
)
