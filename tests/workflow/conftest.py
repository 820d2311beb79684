"""Fixtures for workflow-level tests.

`slurm_cluster`: a real single-node SLURM cluster (see slurm_cluster.py), started once per test
session. Opt-in because it starts system daemons: set TABBENCH_SLURM_TESTS=1. If the Debian
packages are missing it skips, unless TABBENCH_SLURM_INSTALL=1 allows it to `apt-get install`
them (root and a reachable Debian mirror needed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from slurm_cluster import APT_PACKAGES, SlurmCluster, install_with_apt, missing_binaries


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    if os.environ.get("TABBENCH_SLURM_TESTS") != "1":
        pytest.skip("starts real SLURM daemons; set TABBENCH_SLURM_TESTS=1 to run")
    pytest.importorskip(
        "snakemake_executor_plugin_slurm",
        reason="pip install snakemake-executor-plugin-slurm (extra `slurm`)",
    )
    missing = missing_binaries()
    if missing:
        if os.environ.get("TABBENCH_SLURM_INSTALL") != "1":
            pytest.skip(
                f"missing {', '.join(missing)}: apt-get install {' '.join(APT_PACKAGES)} "
                "or set TABBENCH_SLURM_INSTALL=1 to let the test install them"
            )
        install_with_apt()
    with SlurmCluster.start() as cluster:
        yield cluster
