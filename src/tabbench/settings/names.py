"""Dataset names a user types (an explicit suite, ``exclude``), checked while the configuration
is read: before ``run_config.yaml`` is written or any job starts.

A name nobody can provide is refused rather than carried along: a typo in ``suite=[...]`` would
otherwise be fetched, reported "unavailable", and remembered in the folder's
``run_config.yaml``, where it makes the corrected command a disagreeing one. Each refusal is one
line that names the key and, where a known name is close, suggests it
(:func:`tabbench.core.suggest.did_you_mean`).

A dataset name is also a file name and a command-line argument of the data jobs
(``--dataset NAME``): one that starts with ``-`` would be read as an option, one with ``/`` as
a folder (:func:`dataset_name_error`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tabbench.core.suggest import did_you_mean
from tabbench.data.manifest import known_names, suite_names

#: how many known names a refusal lists in full (beyond: the close ones and how many)
MAX_LISTED = 30


def dataset_name_error(name: str) -> str | None:
    """Why ``name`` cannot be a dataset's name (it would break the data jobs' arguments or
    paths), or None."""
    text = str(name)
    if not text.strip():
        return "a dataset name cannot be empty"
    if text.startswith("-"):
        return (f"dataset name {text!r} starts with '-', which the data jobs would read as an "
                "option")
    if "/" in text or "\\" in text or "\0" in text:
        return f"dataset name {text!r} holds a path separator"
    return None


def suite_datasets(config: Mapping[str, Any], demo_dir: str | os.PathLike[str]) -> list[str]:
    """The datasets of the resolved ``config``'s suite (``exclude`` left out), after checking
    every name it was given: each of an explicit list must be one a chosen source has
    (:func:`tabbench.data.manifest.known_names`) and a valid dataset name. A named suite
    (``ye2024``, ``demo``, ``large``) is the manifests' and is not checked against the sources:
    a dataset of it that no source has is reported unavailable by the data stage, as the
    paper's filter counts it. ``ValueError`` with one line naming the key otherwise."""
    suite = config["suite"]
    sources = list(config["sources"])
    for key, names in (("suite", [] if isinstance(suite, str) else suite),
                       ("exclude", config.get("exclude") or ())):
        for name in names:
            why = dataset_name_error(name)
            if why is not None:
                raise ValueError(f"config key {key!r}: {why}")
    if not isinstance(suite, str):
        known = known_names(sources, demo_dir, config.get("talent_dir"))
        unknown = [str(n) for n in suite if str(n) not in set(known)]
        if unknown:
            name = unknown[0]
            listed = (f"; known: {', '.join(known)}" if len(known) <= MAX_LISTED
                      else f" ({len(known)} known)")
            hint = did_you_mean(name, known) or listed
            others = f" (and {len(unknown) - 1} more: {', '.join(unknown[1:])})" \
                if len(unknown) > 1 else ""
            raise ValueError(f"config key 'suite': no source of sources={sources} has dataset "
                             f"{name!r}{others}{hint}")
    return suite_names(suite, demo_dir, config.get("exclude") or ())
