"""docs/reproduction_large.md cannot drift from its shipped results: its generated tables are
recomputed from docs/results/large/ (a published copy of the suite-large study, joined with the
bundled study's pairs on the large bundled datasets; the patience table of the rerun from
docs/results/large_rerun/) and must be the page's to the character."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from tabbench.report.page_tables import embedded, names_in
from tabbench.report.publish import MAX_BYTES, is_published, read_manifest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "reproduction_large.md"
SHIPPED = REPO / "docs" / "results" / "large"


def test_the_shipped_large_copy_is_a_published_copy_of_suite_large_within_budget():
    assert is_published(SHIPPED), f"{SHIPPED} is not a published copy (PUBLISHED.json)"
    size = sum(f.stat().st_size for f in SHIPPED.rglob("*") if f.is_file())
    assert size <= MAX_BYTES, f"{size / 2**20:.1f} MB"
    settings = yaml.safe_load((SHIPPED / "run_config.yaml").read_text())
    assert settings["preset"] == "large" and settings["suite"] == "large"
    # what the bundled study lent is named, pair by pair
    joined = read_manifest(SHIPPED).get("joined", [])
    lent = {p for j in joined for p in j["pairs"]}
    held = {p.relative_to(SHIPPED / "selected").with_suffix("").as_posix()
            for p in (SHIPPED / "selected").rglob("*.parquet")}
    assert lent <= held


def test_the_large_page_tables_are_what_the_shipped_results_give(tmp_path):
    text = PAGE.read_text()
    assert {"claims", "complete_pairs", "what_ran", "heterogeneity",
            "stopping_rules from results/large_rerun"} <= set(names_in(text))
    page = tmp_path / "reproduction_large.md"
    page.write_text(text)
    (tmp_path / "results").symlink_to(SHIPPED.parent)  # "from results/..." tables: beside it
    proc = subprocess.run([sys.executable, "-m", "tabbench.cli", "claims-table", "--results",
                           str(SHIPPED), "--page", str(page), "--jobs", "1"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for name in names_in(text):
        assert embedded(page.read_text(), name) == embedded(text, name), (
            f"docs/reproduction_large.md's generated table {name!r} differs from its shipped "
            "results: regenerate with `tabbench claims-table --results docs/results/large "
            "--page docs/reproduction_large.md`")
    assert page.read_text() == text


def _table_rows(markdown: str, start: str) -> list[list[str]]:
    """The cells of the first Markdown table after the line starting with ``start``."""
    lines = markdown[markdown.index(start):].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[first + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


BUNDLED = REPO / "docs" / "results" / "bundled"
BESIDE = "| TS-Ref.+TS vs Logloss+TS |"


def headline_cell(claims_file: Path, model: str, regime: str, with_n: bool) -> str:
    """The Fig. 5 headline (TS-Ref.+TS vs Logloss+TS, large datasets) of one model and regime
    as docs/reproduction.md's side-by-side table writes it."""
    claims = pd.read_parquet(claims_file)
    row = claims[(claims["claim"] == "ts_ref_beats_logloss") & (claims["model"] == model)
                 & (claims["regime"] == regime)].iloc[0]
    median = f"{row['median']:+.2f} %".replace("-", "−")
    cell = (f"{median}, {row['wins']}/{row['ties']}/{row['losses']}, P {row['p_better']:.2f}/"
            f"{row['p_equivalent']:.2f}/{row['p_worse']:.2f}: **{row['verdict']}**")
    return f"n = {row['n']}: {cell}" if with_n else cell


def test_the_bundled_pages_side_by_side_headline_is_what_both_copies_give():
    """docs/reproduction.md's table of the headline at n = 6 beside suite large's is written by
    hand from two copies (a generated table reads one): each cell is held to its copy's
    claims."""
    from tabbench.models.registry import model_label

    rows = _table_rows(REPO.joinpath("docs", "reproduction.md").read_text(), BESIDE)
    large = pd.read_parquet(SHIPPED / "summary" / "claims.parquet")
    headline = large[large["claim"] == "ts_ref_beats_logloss"]
    want = {(model_label(m), r) for m, r in zip(headline["model"], headline["regime"],
                                                strict=True)}
    got = {tuple(r[0].rsplit(" ", 1)) for r in rows}
    assert got == want, "the table has a row per (model, regime) suite large judges"
    labels = {model_label(m): m for m in headline["model"]}
    for label_regime, bundled, suite_large in rows:
        label, regime = label_regime.rsplit(" ", 1)
        model = labels[label]
        assert bundled == headline_cell(BUNDLED / "summary" / "claims.parquet", model, regime,
                                        with_n=False), label_regime
        assert suite_large == headline_cell(SHIPPED / "summary" / "claims.parquet", model,
                                            regime, with_n=True), label_regime


def test_the_readmes_count_of_large_datasets_is_the_copys():
    """The README's one-line answer names how many large datasets, and how many multi-class,
    suite large judges: those of the copy's dataset table (the data stage's, shipped)."""
    table = pd.read_csv(SHIPPED / "datasets.csv")
    kept = table[(table["status"] == "kept") & (table["rows_final"] >= 10_000)]
    text = " ".join((REPO / "README.md").read_text().split())
    assert (f"{len(kept)} large datasets, {int((kept['n_classes'] >= 3).sum())} of them "
            "multi-class") in text
    selected = {p.stem for p in (SHIPPED / "selected").rglob("*.parquet")}
    assert set(kept["dataset"]) == selected  # every kept dataset has pairs in the copy
