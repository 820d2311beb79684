"""The workflow's own configuration files, apart from those the command line gives."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import yaml


def configfile_values(files: Iterable[Any], given: Iterable[Any]) -> dict[str, Any]:
    """The values of the workflow's ``configfile:`` files (config.yaml) that are not among the
    ``given`` ones (``--configfile``): the defaults a results folder's run_config.yaml
    replaces; later files win."""
    cli = {os.path.abspath(str(f)) for f in given}
    out: dict[str, Any] = {}
    for f in files:
        if os.path.abspath(str(f)) not in cli:
            with open(f) as fh:
                out.update(yaml.safe_load(fh) or {})
    return out
