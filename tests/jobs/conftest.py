"""Shared by the tests of :mod:`tabbench.jobs`: a settled configuration (the smoke preset's,
with folders under the test's tmp_path), as the workflow hands it to the library."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tabbench.settings.presets import resolve_config
from tabbench.settings.table import defaults


def settle(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    """The smoke preset's resolved configuration with ``changes``, its data and results
    folders under ``tmp_path``."""
    config = {**defaults(), "preset": "smoke", "data_dir": str(tmp_path / "data"),
              "results_dir": str(tmp_path / "results"), **changes}
    return resolve_config(config)


@pytest.fixture
def settled(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """:func:`settle` under this test's tmp_path."""
    return lambda **changes: settle(tmp_path, **changes)


@pytest.fixture
def config(tmp_path: Path) -> dict[str, Any]:
    return settle(tmp_path)
