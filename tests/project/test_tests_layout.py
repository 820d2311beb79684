"""The tests mirror the packages: a reader looking for the tests of ``tabbench.summary`` finds them
in ``tests/summary/``. Besides the package folders, ``tests/`` holds ``project/`` (the project as a
whole: docs, packaging, hygiene, examples, benchmarks and scripts), ``workflow/`` (small real
Snakemake DAGs: what only a DAG shows) and ``fixtures/`` (shared generators, no tests)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tabbench"
TESTS = ROOT / "tests"
#: test folders that are not a package of src/tabbench, each with its one job
NOT_PACKAGES = {"project", "workflow", "fixtures"}


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def test_every_test_folder_mirrors_a_package():
    folders = {p.parent.relative_to(TESTS) for p in _test_files()} - {Path(".")}
    wrong = sorted(str(f) for f in folders
                   if f.parts[0] not in NOT_PACKAGES and not (SRC / f / "__init__.py").is_file())
    assert not wrong, f"test folders with no package of the same path in src/tabbench: {wrong}"


def test_top_level_tests_belong_to_a_top_level_module():
    """A test file directly in tests/ tests a module directly in src/tabbench (``calibration``,
    ``torch``); everything else goes to its package's folder."""
    modules = {p.stem for p in SRC.glob("*.py") if not p.stem.startswith("_")}
    strays = sorted(p.name for p in TESTS.glob("test_*.py")
                    if not any(p.stem == f"test_{m}" or p.stem.startswith(f"test_{m}_")
                               for m in modules))
    assert not strays, f"tests directly in tests/ for no module directly in src/tabbench: {strays}"


def test_basenames_are_unique():
    """Test folders are not packages (pytest imports each file by its basename), so two files of
    the same name in different folders would collide at collection."""
    names = [p.name for p in _test_files()]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"test files with the same name in two folders: {twice}"
