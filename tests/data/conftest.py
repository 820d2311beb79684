"""Shared fixture of the data-layer tests: the on-disk dataset generators of
``tests/fixtures/data_fixtures.py``."""

from __future__ import annotations

from types import ModuleType

import pytest
from fixtures import data_fixtures


@pytest.fixture(scope="session")
def fx() -> ModuleType:
    """The module tests/fixtures/data_fixtures.py."""
    return data_fixtures
