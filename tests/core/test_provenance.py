"""Provenance: what a runs file records of the code and environment that produced it, and how a
results folder's files are summarised (mixed environments are named)."""

import io
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from fixtures.data_fixtures import write_dataset
from fixtures.jobs import train_job

import tabbench
from tabbench.core.layout import part_dir
from tabbench.core.provenance import (
    PARQUET_KEY,
    describe_cpu,
    environment,
    gather,
    read_runs_provenance,
)


def test_environment_names_the_code_and_the_libraries():
    env = environment(device="cpu", threads=3)
    assert env["tabbench"] == tabbench.__version__
    assert env["numpy"] == metadata.version("numpy")
    assert env["xgboost"] == metadata.version("xgboost")
    assert env["torch"] == metadata.version("torch")
    assert env["device"] == "cpu" and env["threads"] == 3
    assert env["python"].count(".") == 2
    assert env["cpu"] == describe_cpu(_cpuinfo(), platform.processor())
    assert env["cpu"] != "unknown"
    # the commit of the checkout tabbench is imported from, as git itself says (None where
    # it is not imported from a git checkout, e.g. a wheel)
    sha, dirty = _checkout_commit()
    assert env["commit"] == (None if sha is None else sha + ("-dirty" if dirty else ""))


def _cpuinfo() -> str:
    path = Path("/proc/cpuinfo")
    return path.read_text() if path.exists() else ""


def _checkout_commit() -> tuple[str | None, bool]:
    """git's HEAD for the folder tabbench is imported from, and whether it has changes."""
    src = str(Path(tabbench.__file__).resolve().parent)
    head = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode != 0:
        return None, False
    status = subprocess.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no",
                             "--", "."], capture_output=True, text=True, check=True)
    sha = head.stdout.strip()
    assert len(sha) == 40, sha
    return sha, bool(status.stdout.strip())


def test_a_checkout_with_changes_is_marked_dirty_and_none_outside_git(tmp_path, monkeypatch):
    """code_commit() on a throwaway repository: its HEAD, "-dirty" after a change to a tracked
    file, and None where the package is not in a git checkout."""
    from tabbench.core import provenance

    pkg = tmp_path / "repo" / "tabbench"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path / "repo"), *args], check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    sha = git("rev-parse", "HEAD")

    def commit_of(package_dir: Path) -> str | None:
        monkeypatch.setattr(tabbench, "__file__", str(package_dir / "__init__.py"))
        provenance.code_commit.cache_clear()
        try:
            return provenance.code_commit()
        finally:
            provenance.code_commit.cache_clear()

    assert commit_of(pkg) == sha
    (pkg / "__init__.py").write_text("x = 1\n")
    assert commit_of(pkg) == f"{sha}-dirty"
    elsewhere = tmp_path / "no_git" / "tabbench"
    elsewhere.mkdir(parents=True)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert commit_of(elsewhere) is None


def test_the_cpu_is_named_with_its_widest_vector_instruction_set():
    """Float32 training rounds differently on CPUs with other kernels: a runs file says which."""
    x86 = ("processor\t: 0\nmodel name\t: AMD EPYC 9554\nflags\t\t: fpu sse4_2 avx avx2 avx512f\n"
           "processor\t: 1\nmodel name\t: AMD EPYC 9554\n")
    assert describe_cpu(x86) == "AMD EPYC 9554 (avx512f)"
    assert describe_cpu("model name : Intel Xeon\nflags : sse4_2 avx avx2\n") == "Intel Xeon (avx2)"
    arm = "processor : 0\nFeatures : fp asimd evtstrm\nCPU part : 0xd0c\n"
    assert describe_cpu(arm) == "0xd0c (asimd)"
    assert describe_cpu("", fallback="arm") == "arm" and describe_cpu("") == "unknown"


def test_gather_names_mixed_keys():
    a = {"numpy": "2.0", "torch": "2.3", "threads": 1}
    b = {"numpy": "2.0", "torch": "2.4", "threads": 1}
    out = gather([a, b, None, a])
    assert out["versions"]["numpy"] == "2.0"
    assert out["versions"]["torch"] == ["2.3", "2.4"]
    assert out["mixed"] == ["torch"]
    assert out["n_files"] == 4 and out["n_without_provenance"] == 1


def test_train_job_writes_provenance_into_the_runs_file(tmp_path):
    processed, splits = write_dataset(tmp_path / "data")
    out = tmp_path / "runs.parquet"
    train_job("xgboost", "toy", 0, processed, splits, out, n_configs=1,
              epochs={"xgboost_default": 3, "xgboost_tuned": 3}, seed=0, threads=2,
              progress=io.StringIO())
    prov = read_runs_provenance(out)
    assert prov == {**environment(device="cpu", threads=2)}
    # plain readers are unaffected
    assert len(pd.read_parquet(out)) == 6
    assert PARQUET_KEY.encode() in pq.read_schema(out).metadata


def test_resumed_job_under_another_environment_says_mixed(tmp_path, monkeypatch):
    """A part file written by another environment (here: another xgboost version) is reused,
    and the runs file then lists both versions and names the key in ``mixed``."""
    processed, splits = write_dataset(tmp_path / "data")
    out = tmp_path / "runs.parquet"
    kw = dict(n_configs=1, epochs={"xgboost_default": 3, "xgboost_tuned": 3}, seed=0,
              progress=io.StringIO())
    train_job("xgboost", "toy", 0, processed, splits, out, **kw)
    # rebuild the part folder as a killed job would have left it, with config 0 from "elsewhere"
    parts = part_dir(out)
    parts.mkdir()
    (parts / "job.json").write_text(json.dumps(
        {"model": "xgboost", "dataset": "toy", "split": 0, "seed": 0}))
    df = pd.read_parquet(out)
    old = {**environment(device="cpu", threads=1), "xgboost": "0.0.1"}
    from tabbench.core.io import write_parquet_atomic
    from tabbench.core.provenance import to_parquet_metadata

    write_parquet_atomic(df[df["config"] == 0], parts / "config0.parquet",
                         to_parquet_metadata(old))
    train_job("xgboost", "toy", 0, processed, splits, out, **kw)
    prov = read_runs_provenance(out)
    assert prov["mixed"] == ["xgboost"]
    assert sorted(prov["xgboost"]) == sorted(["0.0.1", metadata.version("xgboost")])


def test_summary_meta_gathers_the_versions_of_the_runs_files(tmp_path):
    from tabbench.summary.aggregate import aggregate
    from tabbench.summary.select import select_files

    processed, splits = write_dataset(tmp_path / "data")
    runs = tmp_path / "runs"
    for split in (0, 1):
        train_job("xgboost", "toy", split, processed, splits,
                  runs / "xgboost" / "toy" / f"split{split}.parquet", n_configs=1,
                  epochs={"xgboost_default": 3, "xgboost_tuned": 3}, seed=0,
                  progress=io.StringIO())
    sel = tmp_path / "selected.parquet"
    select_files(sorted((runs / "xgboost" / "toy").glob("split*.parquet"))).to_parquet(sel)
    aggregate([sel], tmp_path / "summary", runs_dir=runs)
    meta = json.loads((tmp_path / "summary" / "meta.json").read_text())
    assert meta["versions"]["xgboost"] == metadata.version("xgboost")
    assert meta["versions"]["tabbench"] == tabbench.__version__
    assert meta["mixed_versions"] == [] and meta["n_runs_files"] == 2
    assert (tmp_path / "summary" / "claims.md").is_file()
