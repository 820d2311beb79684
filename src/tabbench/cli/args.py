"""Argument types shared by the CLI subcommands.

Snakemake renders config values into shell commands as Python would print them (``True``,
``None``), so the rules' flags arrive as text; these parse them strictly and say what was wrong.
"""

from __future__ import annotations

import argparse

_NULL = ("", "None", "null")


def boolean(text: str) -> bool:
    """``true/false`` in any of the usual spellings (``True``, ``1``, ``yes``, ...)."""
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def optional_str(text: str) -> str | None:
    """A string, or None for an empty or null config value (Snakemake renders null as ``None``)."""
    return None if text in _NULL else text
