"""Project-wide pytest setup: markers that are not in pyproject.toml."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "slurm: needs a real local SLURM cluster (Debian slurm-wlm + munge); "
        "runs only with TABBENCH_SLURM_TESTS=1",
    )
