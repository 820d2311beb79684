"""Project-wide pytest setup: the ``site`` fixture. Markers are registered in pyproject.toml
(pytest runs with --strict-markers, so an unregistered or misspelt marker is an error)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabbench.metrics import registry as metrics_registry
from tabbench.models import registry as models_registry


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` to install distributions into (the example plugin:
    fixtures/plugin_dists.py). The registries are read afresh before and after the test, and
    its modules forgotten, so no other test sees what it installed."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    before = set(sys.modules)
    metrics_registry.reload_registry()
    models_registry.reload_registry()
    yield root
    for name in set(sys.modules) - before:
        if str(root) in str(getattr(sys.modules[name], "__file__", "") or ""):
            del sys.modules[name]
    metrics_registry.reload_registry()
    models_registry.reload_registry()
