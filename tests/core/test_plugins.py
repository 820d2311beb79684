"""The registries read entry points of real (throwaway) distributions, and a broken registration
is an error naming the distribution and the entry point.

Each test installs distributions into the ``site`` folder on ``sys.path`` (conftest.py,
fixtures/plugin_dists.py), i.e. exactly what ``pip install`` of a package declaring the entry
points gives: the shipped example ``examples/plugin/``, or variants of its metric.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixtures.plugin_dists import (
    METRIC_GROUP,
    METRIC_ID,
    METRIC_LABEL,
    METRIC_SOURCE,
    install_example_plugin,
    metric_source,
    write_distribution,
)

from tabbench.core.plugins import RegistrationError, group_entry_points, load_registrations
from tabbench.metrics.registry import StoppingMetric, get_stopping_metrics, stopping_metric_ids
from tabbench.models import registry as models_registry

BUILTIN_METRICS = ("logloss", "brier", "error", "auroc", "ts_ref", "ts_ref_brier", "ts_ref_cv5",
                   "ir_ref")
METRICS = "tabbench.stopping_metrics"


def _metric_dist(site: Path, dist: str, module: str, source: str, eps: dict[str, str]) -> None:
    write_distribution(site, dist, {module: source}, {METRICS: eps})


def _error(site: Path) -> str:
    with pytest.raises(RegistrationError) as exc:
        get_stopping_metrics()
    return str(exc.value)


def test_builtins_come_from_tabbench_entry_points_in_definition_order():
    eps = [ep for ep in group_entry_points(METRICS) if ep.dist.name == "tabbench"]
    assert sorted(ep.name for ep in eps) == sorted(BUILTIN_METRICS)
    assert stopping_metric_ids() == BUILTIN_METRICS  # the runs files' column order
    assert [m.label for m in get_stopping_metrics().values()] == [
        "Logloss", "Brier", "Accuracy", "AUROC", "TS-Ref.", "Brier-Ref.", "TS-Ref.-5CV",
        "IR-Ref."]
    # (more built-in models may follow these, from other tabbench modules)
    assert list(models_registry.get_models())[:3] == ["xgboost", "mlp", "realmlp"]


def test_a_package_with_one_entry_point_adds_a_metric_after_the_builtins(site):
    install_example_plugin(site, [METRIC_GROUP])
    assert stopping_metric_ids() == (*BUILTIN_METRICS, METRIC_ID)
    metric = get_stopping_metrics()[METRIC_ID]
    assert metric.label == METRIC_LABEL and not metric.raw_method


def test_import_failure_names_the_distribution_and_entry_point(site):
    _metric_dist(site, "tabbench-broken", "broken_metric",
                 'raise ImportError("no module named fancylib")\n',
                 {"broken": "broken_metric:METRIC"})
    text = _error(site)
    assert "'broken'" in text and "tabbench-broken 0.1" in text
    assert "failed to import" in text and "fancylib" in text


def test_a_duplicate_id_names_both_registrations(site):
    source = metric_source("logloss", "My logloss")
    _metric_dist(site, "tabbench-dup", "dup_metric", source, {"logloss": "dup_metric:METRIC"})
    text = _error(site)
    assert "tabbench-dup" in text and "'logloss'" in text
    assert "already registered by" in text and "distribution tabbench " in text


def test_a_duplicate_label_is_an_error(site):
    source = metric_source(label="TS-Ref.")
    _metric_dist(site, "tabbench-same-label", "label_metric", source,
                 {METRIC_ID: "label_metric:METRIC"})
    text = _error(site)
    assert "tabbench-same-label" in text and "label 'TS-Ref.'" in text and "'ts_ref'" in text


@pytest.mark.parametrize("name", ["Bad", "val-gap", "1gap"])
def test_an_entry_point_name_that_is_no_column_suffix_is_an_error(site, name):
    _metric_dist(site, "tabbench-bad-name", "bad_name_metric", METRIC_SOURCE,
                 {name: "bad_name_metric:METRIC"})
    text = _error(site)
    assert f"entry point {name!r}" in text and "tabbench-bad-name" in text
    assert "lower-case identifier" in text


def test_an_entry_point_name_other_than_the_id_is_an_error(site):
    _metric_dist(site, "tabbench-renamed", "renamed_metric", METRIC_SOURCE,
                 {"other_name": "renamed_metric:METRIC"})
    text = _error(site)
    assert "'other_name'" in text and "tabbench-renamed" in text and repr(METRIC_ID) in text


def test_an_entry_point_to_something_else_is_an_error(site):
    _metric_dist(site, "tabbench-not-a-metric", "fn_metric", METRIC_SOURCE,
                 {METRIC_ID: "fn_metric:batched"})
    text = _error(site)
    assert "tabbench-not-a-metric" in text and "not a StoppingMetric" in text


@pytest.mark.parametrize("bad", ["Bad", "with space", "val-x", "", "x.y", 3])
def test_a_stopping_metric_id_must_be_a_column_suffix(bad):
    with pytest.raises(ValueError, match="lower-case identifier"):
        StoppingMetric(bad, "Label", lambda z, y: np.zeros(len(z)))


def test_a_label_ending_in_ts_is_refused():
    with pytest.raises(ValueError, match="must not end in"):
        StoppingMetric("x", "X+TS", lambda z, y: np.zeros(len(z)))


def test_without_tabbench_entry_points_the_error_says_how_to_fix_it(site):
    """A stale install (metadata older than the registries) must not silently run without the
    built-ins."""
    install_example_plugin(site, [METRIC_GROUP])
    third_party = [ep for ep in group_entry_points(METRICS) if ep.dist.name != "tabbench"]
    assert third_party
    with pytest.raises(RegistrationError, match=r"pip install -e \."):
        load_registrations(METRICS, StoppingMetric, lambda m: m.id, eps=third_party)


def test_a_model_reusing_builtin_epochs_keys_is_an_error(site):
    source = '''
from tabbench.models.registry import ModelSpec
MODEL = ModelSpec(name="xgb2", trainer="x:Y", search_space="x",
                  epochs_keys=("xgboost_default", "xgb2_tuned"),
                  paper_epochs={"xgboost_default": 1, "xgb2_tuned": 2})
'''
    write_distribution(site, "tabbench-xgb2", {"xgb2_model": source},
                       {"tabbench.models": {"xgb2": "xgb2_model:MODEL"}})
    with pytest.raises(RegistrationError) as exc:
        models_registry.get_models()
    text = str(exc.value)
    assert "tabbench-xgb2" in text and "'xgboost_default'" in text and "'xgboost'" in text


def test_the_docs_name_only_entry_point_groups_tabbench_reads():
    """Wherever the docs or the example package call something an entry-point group, it is one
    of the groups the registries read (a reader copies the name into their pyproject.toml):
    "group `tabbench.models`", "groups ... (`tabbench.x`)", ``[project.entry-points."..."]``.
    The example's README named the module `tabbench.plugins` as the group."""
    import re

    from tabbench.metrics.registry import GROUP as METRICS
    from tabbench.models.registry import GROUP as MODELS
    from tabbench.summary.stopping_rules import GROUP as RULES

    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md")),
             *sorted((root / "examples").rglob("*.md")),
             *sorted((root / "examples").rglob("pyproject.toml"))]
    named = re.compile(r"groups?\b[^.\n]{0,80}?[`(](tabbench\.[a-z_]+)"
                       r"|project\.entry-points\.\"([^\"]+)\"")
    seen, wrong = set(), []
    for page in pages:
        text = " ".join(page.read_text().split())  # sentences wrapped over lines
        for m in named.finditer(text):
            group = m.group(1) or m.group(2)
            seen.add(group)
            if group not in (METRICS, MODELS, RULES):
                wrong.append(f"{page.relative_to(root)}: {m.group(0)!r}")
    assert not wrong, wrong
    assert {METRICS, MODELS} <= seen  # the pattern still finds the docs' mentions
