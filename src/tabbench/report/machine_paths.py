"""A published copy names no path of the machine it was made on.

A study folder's ``run_config.yaml`` and its status hold the paths of the machine that ran it
(an absolute ``pypi_cache_dir``, the data folders the status looked in). A copy ships in a
repository, so each such path is cut to its last component when the copy is written (its
settings by :meth:`tabbench.settings.folder.ResultsFolder.copy_settings`, passed
:func:`without_machine_paths`): the
name still tells which folder was meant, the machine's layout is not published. Relative
paths stay as they are (they describe the study's layout, not the machine's).
"""

from __future__ import annotations

import re
from typing import Any

#: an absolute POSIX path inside a text: a slash-led run of at least two components
_ABSOLUTE = re.compile(r"(?<![\w.~/-])/(?:[\w.+-]+/)+([\w.+-]+)")


def without_machine_paths(value: Any) -> Any:
    """``value`` (a manifest or settings structure) with every absolute path inside its
    strings cut to its last component."""
    if isinstance(value, str):
        return _ABSOLUTE.sub(lambda m: m.group(1), value)
    if isinstance(value, dict):
        return {k: without_machine_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_machine_paths(v) for v in value]
    return value
