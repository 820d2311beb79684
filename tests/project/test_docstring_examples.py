"""Every public function and class of the library a user's own code imports —
``tabbench.calibration``, ``tabbench.stopping``, ``tabbench.torch``, ``tabbench.metrics`` (their
``__all__``, and what docs/api.md lists of them) — has an ``Examples`` section, and its
examples run as printed (doctest, in a fresh interpreter, each object's examples with nothing
imported beforehand: what a reader copies must run).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.optional import import_optional

import tabbench.calibration
import tabbench.metrics
import tabbench.stopping

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tabbench"
MODULES = ("tabbench.calibration", "tabbench.stopping", "tabbench.torch", "tabbench.metrics")
#: examples that need a package of an optional extra (and that extra)
OPTIONAL = {"tabbench.stopping.catboost_metric": ("catboost", "catboost"),
            "tabbench.torch.": ("torchmetrics", "torch")}


def _torch_all() -> list[str]:
    """``tabbench.torch.__all__``, read from the source (importing it needs the torch extra)."""
    tree = ast.parse((SRC / "torch.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == "__all__" for t in n.targets))
    return list(ast.literal_eval(node.value))


def _api_md_members() -> list[str]:
    """Objects of :data:`MODULES` that docs/api.md lists under ``members:``."""
    out = []
    for block in re.split(r"^::: ", (ROOT / "docs" / "api.md").read_text(), flags=re.M)[1:]:
        module = block.split()[0]
        if module.startswith(MODULES):
            out += [f"{module}.{m}" for m in re.findall(r"^\s+- (\w+)$", block, flags=re.M)]
    return out


def public_objects() -> list[str]:
    names = [f"tabbench.torch.{n}" for n in _torch_all()]
    for module in (tabbench.calibration, tabbench.stopping, tabbench.metrics):
        names += [f"{module.__name__}.{n}" for n in module.__all__
                  if inspect.isclass(getattr(module, n)) or inspect.isfunction(getattr(module, n))]
    return sorted(set(names) | set(_api_md_members()))


PUBLIC = public_objects()

#: run in a fresh interpreter: each object's doctests with empty globals -> JSON
RUN = """
import doctest, importlib, io, json, sys, warnings
warnings.simplefilter("ignore")  # a library's deprecation notes are not the example's output
results = {}
for name in sys.argv[1:]:
    module, _, attr = name.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except Exception as err:
        results[name] = {"examples": 0, "failed": -1, "report": repr(err)}
        continue
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    report = io.StringIO()
    for test in doctest.DocTestFinder().find(obj, name, globs={}):
        runner.run(test, out=report.write)
    results[name] = {"examples": runner.tries, "failed": runner.failures,
                     "report": report.getvalue()[-3000:]}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def doctest_results() -> dict[str, dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", RUN, *PUBLIC], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.splitlines()[-1])


def test_the_public_api_is_found():
    assert len(PUBLIC) >= 40
    for name in ("tabbench.calibration.TemperatureScaledClassifier",
                 "tabbench.stopping.refinement_loss", "tabbench.torch.TSRefinement",
                 "tabbench.metrics.ts_ref", "tabbench.metrics.registry.reload_registry"):
        assert name in PUBLIC


@pytest.mark.parametrize("name", PUBLIC)
def test_has_an_examples_section(name):
    module, _, attr = name.rpartition(".")
    if module == "tabbench.torch":  # its docstrings, read without importing torch
        tree = ast.parse((SRC / "torch.py").read_text())
        node = next(n for n in tree.body if getattr(n, "name", None) == attr)
        doc = ast.get_docstring(node) or ""
    else:
        doc = inspect.getdoc(getattr(__import__(module, fromlist=[attr]), attr)) or ""
    assert re.search(r"^Examples\n--------\n", doc, flags=re.M), f"{name}: no Examples section"
    assert ">>> " in doc.split("Examples\n--------\n", 1)[1], f"{name}: no example to run"


@pytest.mark.parametrize("name", PUBLIC)
def test_examples_run_as_printed(name, doctest_results):
    for prefix, (package, extra) in OPTIONAL.items():
        if name.startswith(prefix):
            import_optional(package, extra)
    result = doctest_results[name]
    assert result["examples"] > 0 and result["failed"] == 0, result["report"]
