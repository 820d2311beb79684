"""docs/reproduction.md cannot drift from the code: its generated tables
(tabbench.report.page_tables:
the claims, the complete pairs, the progress, the all-datasets comparison, the ranks, the
regret, the headline at several ROPEs) are recomputed here from the study's results shipped in
docs/results/bundled/ (a published copy: tabbench.report.publish), with the folder's own settings,
and
must be the page's tables to the character."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tabbench.report.page_tables import embedded, names_in
from tabbench.report.publish import MAX_BYTES, is_published, read_manifest
from tabbench.search.sampling import sample_config

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "reproduction.md"
SHIPPED = REPO / "docs" / "results" / "bundled"


def test_the_shipped_results_are_a_published_copy_within_budget():
    assert is_published(SHIPPED), f"{SHIPPED} is not a published copy (PUBLISHED.json)"
    manifest = read_manifest(SHIPPED)
    size = sum(f.stat().st_size for f in SHIPPED.rglob("*") if f.is_file())
    assert size <= MAX_BYTES, f"{size / 2**20:.1f} MB"
    assert yaml.safe_load((SHIPPED / "run_config.yaml").read_text())["preset"] == "bundled"
    assert manifest["files"]  # what it copied is listed


def test_the_shipped_copy_extends_the_lost_folders_copy_as_published():
    """docs/results/bundled is docs/results/bundled_part3 (the copy of the three lost study
    folders as last published, kept so that later pairs can be joined to it again) extended by
    `publish --onto`: its first sources are that copy's, unchanged since, and it holds every
    pair that copy held, file for file."""
    part3 = SHIPPED.with_name("bundled_part3")
    assert is_published(part3)
    earlier = read_manifest(part3)["sources"]
    assert len(earlier) == 3
    assert read_manifest(SHIPPED)["sources"][:len(earlier)] == earlier
    selected_files = list((part3 / "selected").rglob("*.parquet"))
    assert selected_files
    for selected in selected_files:
        shipped = SHIPPED / selected.relative_to(part3)
        assert shipped.read_bytes() == selected.read_bytes(), shipped


def test_the_page_tables_are_what_the_shipped_results_give(tmp_path):
    """The page's own regeneration command, run on a copy of the page, changes nothing: each
    generated table is what tabbench.report.page_tables computes from the shipped results with their
    own settings (tabbench.report.redraw.summary_frames)."""
    assert set(names_in(PAGE.read_text())) == {"claims", "complete_pairs", "progress",
                                                "all_datasets", "ranks", "regret", "rope"}
    page = tmp_path / "reproduction.md"
    page.write_text(PAGE.read_text())
    proc = subprocess.run([sys.executable, "-m", "tabbench.cli", "claims-table", "--results",
                           str(SHIPPED), "--page", str(page), "--jobs", "1"],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for name in names_in(PAGE.read_text()):
        assert embedded(page.read_text(), name) == embedded(PAGE.read_text(), name), (
            f"docs/reproduction.md's generated table {name!r} differs from its shipped results: "
            "regenerate the page's tables with `tabbench claims-table --results "
            "docs/results/bundled --page docs/reproduction.md`")
    assert page.read_text() == PAGE.read_text()  # and nothing else of the page is touched


def test_the_shipped_tuned_configs_are_what_the_sampler_draws():
    """Every tuned config the shipped selected files name is the one
    :func:`tabbench.search.sampling.sample_config` draws from the study's seed, parameter for
    parameter: the study's folders drew them with optuna 5.0.0 and 5.1.0 (the summary's mixed
    versions), so a later version, or a change to a search space, that drew other configs would
    make the page's results unreproducible from its command."""
    seed = yaml.safe_load((SHIPPED / "run_config.yaml").read_text())["seed"]
    checked = 0
    for path in sorted((SHIPPED / "selected").rglob("*.parquet")):
        chosen = pd.read_parquet(path, columns=["model", "dataset", "split", "config", "params"])
        for row in chosen.drop_duplicates(["split", "config"]).itertuples():
            if row.config == 0:
                continue
            drawn = sample_config(row.model, int(row.config), seed=seed, dataset=row.dataset,
                                  split=int(row.split))
            expected = {k: pytest.approx(v, rel=1e-12) if isinstance(v, float) else v
                        for k, v in json.loads(row.params).items()}  # params: JSON text
            assert drawn == expected, (path.name, row.split, row.config)
            checked += 1
    assert checked > 100  # the tuned selections of every tuned model


def test_the_stopping_order_verdict_the_page_quotes_is_the_copys():
    """The G.5 bullet's "TS-Ref. stops later than logloss" for XGBoost: its points, probability,
    draws and verdict as the shipped copy's claims give them."""
    claims = pd.read_parquet(SHIPPED / "summary" / "claims.parquet")
    row = claims[(claims["claim"] == "logloss_stops_before_ts_ref")
                 & (claims["model"] == "xgboost") & (claims["regime"] == "default")].iloc[0]
    text = " ".join(PAGE.read_text().split())
    assert (f"(earlier on {row['wins']} points, tied on {row['ties']}, later on "
            f"{row['losses']}; P(later) {row['p_worse']:.3f}, from {row['draws']:,} posterior "
            f"samples: *{row['verdict']}*") in text
