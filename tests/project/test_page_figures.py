"""scripts/page_figures.py makes the page's reduced figure copies from what `tabbench figures`
drew, and the page links only figures tabbench draws and the repository carries."""

from __future__ import annotations

from pathlib import Path

from fixtures.scripts import load_script
from PIL import Image

from tabbench.diagnostics.paths import DIAGNOSTIC_FIGURE_STEMS
from tabbench.plots import FIGURE_STEMS

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "reproduction.md"


def _script():
    return load_script("scripts/page_figures.py")


def test_each_linked_figure_is_copied_reduced_and_nothing_else(tmp_path):
    script = _script()
    figures = tmp_path / "drawn"
    figures.mkdir()
    Image.new("RGB", (2200, 1000), "white").save(figures / "fig5_logloss_large.png")
    Image.new("RGB", (500, 300), "white").save(figures / "diag_regret.png")
    Image.new("RGB", (900, 300), "white").save(figures / "figG3_error.png")  # not linked
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text("![a](figures/p_fig5_logloss_large.png)\ntext\n![b](figures/p_diag_regret.png)"
                    "\n![c](figures/other_figG3_error.png)\n![a](figures/p_fig5_logloss_large.png)")
    assert script.linked_stems(page.read_text(), "p_") == ["fig5_logloss_large", "diag_regret"]
    assert script.main(["--page", str(page), "--figures", str(figures), "--prefix", "p_"]) == 0
    out = page.parent / "figures"
    assert sorted(p.name for p in out.iterdir()) == ["p_diag_regret.png",
                                                     "p_fig5_logloss_large.png"]
    with Image.open(out / "p_fig5_logloss_large.png") as im:
        assert im.size == (script.MAX_WIDTH, 500)  # aspect kept
    with Image.open(out / "p_diag_regret.png") as im:
        assert im.size == (500, 300)  # never enlarged


def test_a_linked_figure_the_folder_lacks_is_an_error_and_nothing_is_written(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("![a](figures/p_fig5_logloss_large.png)")
    assert _script().main(["--page", str(page), "--figures", str(tmp_path), "--prefix", "p_"]) == 2
    assert "has no fig5_logloss_large.png" in capsys.readouterr().err
    assert not (tmp_path / "figures").exists()


def test_the_reproduction_page_links_only_figures_tabbench_draws_and_the_repo_carries():
    stems = _script().linked_stems(PAGE.read_text(), "bundled30_")
    assert stems, "docs/reproduction.md links no figures/bundled30_<stem>.png"
    assert set(stems) <= set(FIGURE_STEMS) | set(DIAGNOSTIC_FIGURE_STEMS)
    for stem in stems:
        assert (PAGE.parent / "figures" / f"bundled30_{stem}.png").is_file(), stem
