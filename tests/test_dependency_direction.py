"""Import direction inside the library, checked on the source (issue 12, item 5).

- ``tabbench.data`` imports nothing from ``tabbench.models`` (trainers consume data; data does
  not know trainers);
- ``tabbench.models`` imports nothing from ``tabbench.search`` (a search space may import its
  model's torch-free config module, never the reverse);
- no module imports another module's private (``_``-prefixed) name: what two modules share is
  public where it lives (e.g. ``metrics.folds.cv_folds`` for the reference and the fast path).

And reading the registries, sampling an XGBoost config and building its trainer or the CLI
import neither PyTorch nor a model library (the workflow reads the registries when it parses).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import tabbench

SRC = Path(tabbench.__file__).resolve().parent


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``from tabbench... import name`` / ``import tabbench...``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tabbench"):
            out += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(alias.name, "") for alias in node.names if alias.name.startswith("tabbench")]
    return out


def _violations(package: str, forbidden: str) -> list[str]:
    return [f"{path.relative_to(SRC)} imports {module}"
            for path in sorted((SRC / package).rglob("*.py"))
            for module, _ in _imports(path)
            if module == forbidden or module.startswith(forbidden + ".")]


def test_data_does_not_import_models():
    assert _violations("data", "tabbench.models") == []


def test_models_do_not_import_search_spaces():
    assert _violations("models", "tabbench.search") == []


def test_no_module_imports_a_private_name_of_another():
    bad = [f"{path.relative_to(SRC)}: from {module} import {name}"
           for path in sorted(SRC.rglob("*.py"))
           for module, name in _imports(path) if name.startswith("_")]
    assert bad == []


def test_registries_and_xgboost_do_not_import_torch():
    code = (
        "import sys\n"
        "from tabbench.metrics.registry import get_stopping_metrics\n"
        "from tabbench.models.registry import get_models, get_trainer\n"
        "from tabbench.search import sample_config\n"
        "from tabbench.cli import build_parser\n"
        "get_stopping_metrics(); get_models(); build_parser()\n"
        "sample_config('xgboost', 1, seed=0, dataset='d', split=0)\n"
        "get_trainer('xgboost')\n"
        "print(sorted(m for m in ('torch', 'xgboost', 'sklearn') if m in sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=SRC.parent)
    assert res.returncode == 0, res.stderr
    loaded = res.stdout.split("\n")[-2]
    assert "torch" not in loaded, loaded


def test_reading_the_registries_imports_no_numerical_kernel():
    code = (
        "import sys\n"
        "from tabbench.metrics.registry import get_stopping_metrics\n"
        "from tabbench.models.registry import get_models\n"
        "get_stopping_metrics(); get_models()\n"
        "print(sorted(m for m in ('torch', 'xgboost', 'sklearn', 'tabbench.metrics.batched')"
        " if m in sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=SRC.parent)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
