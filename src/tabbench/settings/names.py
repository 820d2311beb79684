"""Dataset names a user types (an explicit suite, ``exclude``), checked before
``run_config.yaml`` is written or any job starts.

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
from tabbench.settings.presets import PRESETS

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
    that every name of an explicit list and of ``exclude`` is one the data jobs can take
    (:func:`dataset_name_error`; an excluded name must be in the suite). ``ValueError`` with one
    line naming the key otherwise. Whether a source has each name is
    :func:`unknown_suite_names`'s question, asked only where the answer matters."""
    suite = config["suite"]
    for key, names in (("suite", [] if isinstance(suite, str) else suite),
                       ("exclude", config.get("exclude") or ())):
        for name in names:
            why = dataset_name_error(name)
            if why is not None:
                raise ValueError(f"config key {key!r}: {why}")
    return suite_names(suite, demo_dir, config.get("exclude") or ())


def unknown_suite_names(config: Mapping[str, Any], demo_dir: str | os.PathLike[str]
                        ) -> str | None:
    """Why the resolved ``config``'s explicit suite cannot run (one line naming the key, the
    first name no chosen source has and the closest known name), or None. Each name of a list
    the user typed must be one a chosen source has
    (:func:`tabbench.data.manifest.known_names`). A named suite (``ye2024``, ``demo``,
    ``large``) is the manifests' and a preset's own list (``smoke``'s) the project's: neither
    is checked; a dataset of theirs that no source has is reported unavailable by the data
    stage, as the paper's filter counts it.

    The workflow asks it first thing in a run about to write the folder's ``run_config.yaml``
    (the names are about to be fetched and remembered there): not for a folder that has its
    settings (its data may be in place while a source is not, e.g. an unmounted TALENT
    folder), nor for drawing figures."""
    suite = config["suite"]
    if isinstance(suite, str) or suite == PRESETS[config["preset"]]["suite"]:
        return None
    sources = list(config["sources"])
    known = known_names(sources, demo_dir, config.get("talent_dir"))
    unknown = [str(n) for n in suite if str(n) not in set(known)]
    if not unknown:
        return None
    name = unknown[0]
    listed = (f"; known: {', '.join(known)}" if len(known) <= MAX_LISTED
              else f" ({len(known)} known)")
    others = (f" (and {len(unknown) - 1} more: {', '.join(unknown[1:])})"
              if len(unknown) > 1 else "")
    return (f"invalid configuration: config key 'suite': no source of sources={sources} has "
            f"dataset {name!r}{others}{did_you_mean(name, known) or listed}")
