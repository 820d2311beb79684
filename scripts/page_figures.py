"""Reduced PNG copies of the figures a Markdown page shows, made from a folder `tabbench figures`
drew (its --out): every image link ``figures/<prefix><stem>.png`` of the page is (re)made from
``<figures>/<stem>.png``, at most ``--max-width`` pixels wide, so that the repository carries
small files and the page itself is the one list of what it shows (docs/reproduction.md:
"Reproduce this page").

    python scripts/page_figures.py --page docs/reproduction.md --figures /tmp/bundled

A link whose figure the folder lacks is an error naming it (nothing is written then); the
copies are written atomically, next to the page (``<page's folder>/figures/``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from PIL import Image

#: the widest copy kept: the page's column is narrower, and a larger file only costs the repo
MAX_WIDTH = 1100


def linked_stems(page: str, prefix: str) -> list[str]:
    """The figure stems the page links as ``figures/<prefix><stem>.png``, in page order."""
    pattern = re.compile(r"\]\(figures/" + re.escape(prefix) + r"([A-Za-z0-9_]+)\.png\)")
    return list(dict.fromkeys(pattern.findall(page)))


def reduce(src: Path, dst: Path, max_width: int = MAX_WIDTH) -> None:
    """``src`` at most ``max_width`` wide (aspect kept), as an optimised RGB PNG at ``dst``."""
    with Image.open(src) as im:
        width = min(max_width, im.width)
        small = im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)
        tmp = dst.with_name(f".{dst.name}.tmp")
        small.convert("RGB").save(tmp, format="PNG", optimize=True)
    os.replace(tmp, dst)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--page", type=Path, required=True, help="the Markdown page")
    p.add_argument("--figures", type=Path, required=True,
                   help="the figures folder of `tabbench figures` (its PNGs)")
    p.add_argument("--prefix", default="bundled30_",
                   help="what the page's copies are named with before the stem")
    p.add_argument("--max-width", type=int, default=MAX_WIDTH)
    args = p.parse_args(argv)
    stems = linked_stems(args.page.read_text(), args.prefix)
    if not stems:
        print(f"page_figures: {args.page} links no figures/{args.prefix}<stem>.png",
              file=sys.stderr)
        return 2
    missing = [s for s in stems if not (args.figures / f"{s}.png").is_file()]
    if missing:
        print(f"page_figures: {args.figures} has no {', '.join(f'{s}.png' for s in missing)} "
              f"(linked by {args.page})", file=sys.stderr)
        return 2
    out_dir = args.page.parent / "figures"
    out_dir.mkdir(parents=True, exist_ok=True)
    for stem in stems:
        dst = out_dir / f"{args.prefix}{stem}.png"
        reduce(args.figures / f"{stem}.png", dst, args.max_width)
        print(f"{dst} ({dst.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
