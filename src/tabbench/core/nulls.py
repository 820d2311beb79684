"""How null is spelled in text: the one definition, for every place that reads a value as text.

Text values arrive from the CLI's arguments (:mod:`tabbench.cli.args`), from Snakemake's
``--config key=value`` (:func:`tabbench.settings.presets.coerce_cli_strings`) and from the model
registry's trainer options. Snakemake renders config values into shell commands as Python would
print them, so ``None`` must read as null beside YAML's spellings. It lives in the library, not
in the CLI layer, because the library reads such text too and must not import the CLI.
"""

from __future__ import annotations

#: how null is written in text: YAML's spellings (``null``, ``~``, empty) and Python's (``None``,
#: as Snakemake renders it), in any case
NULL_SPELLINGS = frozenset({"", "~", "null", "none"})


def is_null(text: str) -> bool:
    """Whether ``text`` spells null (:data:`NULL_SPELLINGS`, case and surrounding space
    ignored)."""
    return text.strip().lower() in NULL_SPELLINGS
