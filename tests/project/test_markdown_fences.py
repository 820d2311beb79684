"""The docs' code blocks are closed where their authors meant: in CommonMark a closing fence may
carry nothing but spaces, so a reflow that glues prose onto a closing ```` ``` ```` keeps the
block open and swallows the rest of the page into code (docs/reproduction.md's "Cost" section
once did, up to the next fence). Checked on README.md, CHANGELOG.md and every docs/*.md."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]


def fence_problems(text: str) -> list[str]:
    """Where ``text``'s backtick fences do not pair up: a fence line with text after it inside a
    block (not a closing fence, so the block runs on), or a block left open at the end."""
    problems, opened_at = [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped.startswith("```"):
            continue
        if opened_at is None:
            opened_at = number
        elif stripped.rstrip("`") == "":
            opened_at = None
        else:
            problems.append(f"line {number}: {stripped[:40]!r} inside the block opened at line "
                            f"{opened_at} does not close it")
    if opened_at is not None:
        problems.append(f"the block opened at line {opened_at} is never closed")
    return problems


def test_fence_problems_finds_prose_glued_to_a_closing_fence():
    assert fence_problems("a\n```bash\nx\n```\nb\n") == []
    glued = fence_problems("```bash\nx\n``` and then prose\n```bash\ny\n```\n")
    assert len(glued) == 2 and "line 3" in glued[0] and "line 4" in glued[1]
    assert fence_problems("```\nx\n") == ["the block opened at line 1 is never closed"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_code_blocks_close(page):
    assert fence_problems(page.read_text()) == []
