"""The full-suite DAG: `snakemake -n` of the paper preset after the checkpoint, i.e.
3 models × 196 kept datasets × 5 splits = 2,940 train jobs, must take < 60 s on 2 cores.
The fixture and the timing are benchmarks/dag_dry_run.py's (run it to see the numbers)."""

from __future__ import annotations

import pytest
from fixtures.scripts import load_script


def _benchmark():
    return load_script("benchmarks/dag_dry_run.py")


@pytest.mark.slow
@pytest.mark.parametrize("splits", [True, False], ids=["splits-drawn", "splits-pending"])
def test_full_suite_dry_run_after_checkpoint_is_fast(tmp_path, splits):
    bench = _benchmark()
    root = bench.make_workspace(tmp_path / "wf")
    kept = bench.write_after_checkpoint(root, n_kept=196, splits=splits)
    assert len(kept) == 196
    elapsed, stats, text = bench.dry_run(root)
    print(
        f"snakemake -n, 2,940 train jobs, splits {'drawn' if splits else 'pending'}: "
        f"{elapsed:.1f} s; {stats}"
    )
    assert stats["train"] == 3 * 196 * 5 == 2940
    assert stats["select"] == 3 * 196
    assert stats.get("split_dataset", 0) == (0 if splits else 196)
    # the checkpoint is complete: nothing upstream of it is planned again
    for rule in ("fetch_dataset", "filter_dataset", "collect_datasets"):
        assert rule not in stats, text[-3000:]
    assert elapsed < 60, f"dry run took {elapsed:.1f} s"
