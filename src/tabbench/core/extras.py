"""The optional extras: which packages each brings, and the one line an import without it gives.

``pip install tabbench`` installs the library a user's own code imports
(:mod:`tabbench.calibration`, :mod:`tabbench.stopping`, :mod:`tabbench.metrics`) on numpy,
scipy and scikit-learn only; the pipeline's packages and torchmetrics come with extras
(``pyproject.toml``). A module that needs an extra calls :func:`require_extra` before it imports
anything of it, so that an install without the extra ends in one line naming what to install
rather than in a traceback about a module the user never asked for.

The check looks for the import names with :func:`importlib.util.find_spec`, which locates a
package without importing it: a package's ``__init__`` can check its whole extra at almost no
cost, and the workflow, which imports the registries when it parses, still imports no model
library. Import names rather than distribution names, so that an equivalent build installed
under another name (``xgboost-cpu`` provides ``import xgboost``) counts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from types import MappingProxyType

#: extra -> the import names of the packages of that extra that tabbench's modules import
#: (``pyproject.toml``'s optional dependencies; tests/project/test_install_layers.py checks that
#: each name comes from a distribution of its extra and that every third-party import of a
#: module needing the extra is listed here)
EXTRAS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    # the pipeline's library (data, models, search, settings, summary, study, diagnostics,
    # plots, report, the command line); Snakemake itself is a workflow tool, never imported
    "pipeline": ("pandas", "pyarrow", "yaml", "jsonschema", "matplotlib", "xgboost",
                 "lightgbm", "optuna", "openml", "torch", "autorank", "relplot"),
    # tabbench.torch: the refinement loss as a torchmetrics metric
    "torch": ("torch", "torchmetrics"),
})


class MissingExtraError(ImportError):
    """A module was imported without the optional extra it needs; the message is one line."""


def missing_extra_message(user: str, extra: str) -> str:
    """``<user> needs the '<extra>' extra: pip install 'tabbench[<extra>]'``."""
    return f"{user} needs the {extra!r} extra: pip install 'tabbench[{extra}]'"


def missing_modules(extra: str) -> list[str]:
    """The import names of ``extra`` (:data:`EXTRAS`) that this interpreter cannot import."""
    return [name for name in EXTRAS[extra] if not _importable(name)]


def require_extra(extra: str, user: str) -> None:
    """Raise :class:`MissingExtraError` (one line: what to install, and which packages are
    missing) unless every package of ``extra`` can be imported; ``user`` names the module or
    command that needs it.
    """
    if extra not in EXTRAS:
        raise KeyError(f"no extra {extra!r}; the extras with import checks: "
                       + ", ".join(EXTRAS))
    missing = missing_modules(extra)
    if missing:
        raise MissingExtraError(
            f"{missing_extra_message(user, extra)} (not installed: {', '.join(missing)})")


def _importable(name: str) -> bool:
    """Whether ``import name`` can find the module (without importing it). An import blocked
    (a finder raising ImportError, or None in ``sys.modules``) counts as missing."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules[name] is None
        return False
