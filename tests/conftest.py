"""Project-wide pytest setup: the order tests are handed out in and the ``site`` fixture.
Markers are registered in pyproject.toml (pytest runs with --strict-markers, so an unregistered
or misspelt marker is an error)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabbench.metrics import registry as metrics_registry
from tabbench.models import registry as models_registry

#: the end-to-end tests, each running Snakemake: the longest files of the suite
END_TO_END = Path(__file__).resolve().parent / "workflow"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end tests first, the rest in their order after them: ``-n auto --dist
    loadfile`` hands out whole files in this order, and a long file handed out last would keep
    one worker busy after the others have finished (on 2 cores about 25 s of the suite's time).
    Every test stays independent of the order; only the workers' balance changes."""
    items.sort(key=lambda item: END_TO_END not in Path(item.path).parents)


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
