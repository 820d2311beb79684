"""The configuration reference (``docs/configuration.md``), generated from the settings table
and the schema's types; ``python -m tabbench.settings.reference`` rewrites the page (a test
checks the committed page equals what it generates)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tabbench.core.markdown import markdown_table
from tabbench.settings.schema import describe, load_schema
from tabbench.settings.table import Effect, groups

#: the schema and the page, relative to a checkout's root
SCHEMA_PATH = Path("workflow/schemas/config.schema.yaml")
PAGE_PATH = Path("docs/configuration.md")

_EFFECT = {
    Effect.STUDY: "study",
    Effect.RUN: "run",
    Effect.REDRAW: "redraw",
}

_INTRO = """\
# Configuration reference

Every key of `config.yaml`, generated from the settings table (`src/tabbench/settings/table.py`)
and the schema's types (`workflow/schemas/config.schema.yaml`) by
`python -m tabbench.settings.reference`; `config.yaml` has the same keys and defaults, with
longer comments. Give a key in `config.yaml` or for one invocation with
`--config key=value`. A key left out takes its default; `null` in a key marked *preset* takes
the chosen preset's value (`src/tabbench/settings/presets.py`).

**Effect** says what changing a key does to a results folder made with another value:

- **study**: a setting of the study. Its value is recorded in the folder's `run_config.yaml`;
  a `--config` that differs is refused on that folder, and editing it there reruns what it
  changes (a train job reruns when a setting it is given changes).
- **run**: how a run goes (threads, GPUs, what is kept beside the records, where the folder
  is); may change between invocations, never changes a record.
- **redraw**: what the summary and figures show; may change between invocations, redraws only.

The CLI flag is the `tabbench` command-line option that takes the key's value (the workflow's
rules pass it).
"""


def _value(value: Any) -> str:
    return f"`{json.dumps(value)}`"


def configuration_page(schema: Mapping[str, Any]) -> str:
    """The reference page: per section, each key's type in words (from ``schema``), default,
    effect, CLI flag and help."""
    props = schema.get("properties") or {}
    parts = [_INTRO]
    for group, settings in groups():
        rows = []
        for s in settings:
            allowed = describe(props[s.key]) if s.key in props else "see the model's option"
            default = _value(s.default) + (" (preset)" if s.preset else "")
            flag = f"`{s.cli_flag}`" if s.cli_flag else ""
            rows.append([f"`{s.key}`", allowed, default, _EFFECT[s.effect], flag, s.help])
        parts.append(f"## {group}\n\n" + markdown_table(
            ["key", "type", "default", "effect", "CLI flag", "help"], rows) + "\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Rewrite ``docs/configuration.md`` of the checkout given (default: the working
    directory)."""
    root = Path((argv if argv is not None else sys.argv[1:] or ["."])[0])
    page = configuration_page(load_schema(root / SCHEMA_PATH))
    (root / PAGE_PATH).write_text(page)
    print(f"wrote {root / PAGE_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
