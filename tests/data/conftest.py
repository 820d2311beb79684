"""Shared fixture of the data-layer tests: the on-disk dataset generators of
``tests/fixtures/data_fixtures.py`` (loaded by path: the tests folders are not packages)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

_NAME = "tabbench_tests_data_fixtures"


def load_data_fixtures() -> ModuleType:
    if _NAME not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "fixtures" / "data_fixtures.py"
        spec = importlib.util.spec_from_file_location(_NAME, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]


@pytest.fixture(scope="session")
def fx() -> ModuleType:
    """The module tests/fixtures/data_fixtures.py."""
    return load_data_fixtures()
