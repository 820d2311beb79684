"""docs/reproduction_large.md cannot drift from its shipped results: its generated tables are
recomputed from docs/results/large/ (a published copy of the suite-large study, joined with the
bundled study's pairs on the large bundled datasets) and must be the page's to the character."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tabbench.report.page_tables import embedded, names_in
from tabbench.report.publish import MAX_BYTES, is_published, read_manifest

REPO = Path(__file__).resolve().parents[1]
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
    assert {"claims", "complete_pairs", "progress"} <= set(names_in(text))
    page = tmp_path / "reproduction_large.md"
    page.write_text(text)
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


RERUN = REPO / "docs" / "results" / "large_rerun"


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


def _number(cell: str) -> str:
    return cell.replace("−", "-").replace(" %", "").replace("+", "")


def test_the_patience_table_of_the_rerun_is_what_its_shipped_copy_gives():
    """The hand-written table of the section on the networks' multi-class datasets holds, row for
    row, what `tabbench stopping-rules` prints for docs/results/large_rerun."""
    assert is_published(RERUN)
    proc = subprocess.run([sys.executable, "-m", "tabbench.cli", "stopping-rules", "--results",
                           str(RERUN), "--jobs", "1"],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    printed = {(r[0], r[2]): r for r in _table_rows(proc.stdout, "| model")}
    page = _table_rows(PAGE.read_text(), "### Where the networks gain")
    assert len(page) == 8
    for model, rule, n, median, probs, fractions in page:
        want = printed[(model, rule)]
        assert want[3] == n, (model, rule)
        assert _number(want[4]) == _number(median), (model, rule)
        assert want[5] == probs, (model, rule)
        assert " / ".join(want[7].split(" / ")[:2]) == fractions, (model, rule)
