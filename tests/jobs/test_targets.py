"""The catch-all for a target no rule makes (:mod:`tabbench.jobs.targets`)."""

from __future__ import annotations

import re

import pytest

from tabbench.jobs.refusal import Refused
from tabbench.jobs.targets import refuse_unmade, unmade_in_results


def test_the_catch_all_matches_only_what_no_rule_makes():
    pattern = unmade_in_results(
        "results", ["results/runs/{model}/{dataset}/split{split}.parquet"],
        "results/selected/{model}/{dataset}.parquet", [], ["results/report.html"],
        "mlp|xgboost")
    assert re.fullmatch(pattern, "selectd/mlp/kc1.parquet")
    assert re.fullmatch(pattern, "runs/xgbost/kc1/split0.parquet")
    for made in ("runs/mlp/kc1/split0.parquet", "selected/mlp/kc1.parquet", "report.html"):
        assert not re.fullmatch(pattern, made), made


def test_a_requested_typo_is_refused_with_the_path_meant():
    with pytest.raises(Refused, match="did you mean 'results/selected/mlp/kc1.parquet'"):
        refuse_unmade("selectd/mlp/kc1.parquet", ["results/selectd/mlp/kc1.parquet"],
                      "results", "data")


def test_a_path_no_one_asked_for_is_left_to_snakemake():
    with pytest.raises(ValueError, match="made by no job"):
        refuse_unmade("selectd/mlp/kc1.parquet", ["figures"], "results", "data")
