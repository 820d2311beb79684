"""The install layers: ``pip install tabbench`` is the library on numpy, scipy and scikit-learn;
the pipeline and the torchmetrics metrics come with extras, and a module imported without its
extra says in one line which extra to install (``tabbench.core.extras``).

- pyproject.toml's dependencies are the three, and each import name that
  :data:`~tabbench.core.extras.EXTRAS` checks for comes from a distribution of its extra;
- every third-party import of a module is either one of the three or of the extra the module
  (or its package) checks for before importing it, and a function of the library that needs an
  extra's package checks for it first;
- with every package of the extras blocked, the library imports and its estimator fits and
  predicts, every other module raises the one line, and the console script prints it (the
  same checks as CI's fresh venv holding only the wheel: ``scripts/check_light_install.py``);
- ``tabbench --version`` prints the installed version.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import tabbench
from tabbench.core.extras import EXTRAS, MissingExtraError, require_extra

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(tabbench.__file__).resolve().parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[;<>=!~(]", requirement, maxsplit=1)[0].lower()


def _core_imports() -> set[str]:
    """Import names of pyproject's dependencies (in this environment)."""
    dists = {_name(r) for r in PROJECT["dependencies"]}
    return {module for module, owners in md.packages_distributions().items()
            if any(o.lower() in dists for o in owners)}


def _extra_dists(extra: str) -> set[str]:
    """Distribution names of an extra, with the extras of tabbench it names expanded."""
    out: set[str] = set()
    for req in PROJECT["optional-dependencies"][extra]:
        m = re.fullmatch(r"tabbench\[([a-z,]+)\]", req)
        if m:
            for inner in m.group(1).split(","):
                out |= _extra_dists(inner)
        else:
            out.add(_name(req))
    return out


def test_the_library_depends_on_numpy_scipy_and_scikit_learn_only():
    assert {_name(r) for r in PROJECT["dependencies"]} == {"numpy", "scipy", "scikit-learn"}


def test_each_checked_import_comes_from_its_extra():
    owners = md.packages_distributions()
    for extra, modules in EXTRAS.items():
        dists = _extra_dists(extra)
        for module in modules:
            assert {o.lower() for o in owners.get(module, [])} & dists, (extra, module, dists)


def test_dev_installs_the_pipeline_and_torch_extras():
    dev = _extra_dists("dev")
    assert _extra_dists("pipeline") | _extra_dists("torch") <= dev


# --- every import covered by the extra its module checks for ----------------------------------

def _check_call(node: ast.AST) -> str | None:
    """The extra of a ``require_extra("<extra>", ...)`` call, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "require_extra" and node.args
            and isinstance(node.args[0], ast.Constant)):
        return node.args[0].value
    return None


def _third_party(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module]
    else:
        return []
    return [n.split(".")[0] for n in names if n.split(".")[0] not in STDLIB | {"tabbench"}]


def _module_level(tree: ast.Module) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(line, extra) of module-level ``require_extra`` calls and (line, name) of module-level
    third-party imports (in ``if``/``try`` blocks too, not under ``if TYPE_CHECKING``)."""
    checks, imports = [], []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.If | ast.Try):
            stack += [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                      *(s for h in getattr(node, "handlers", []) for s in h.body)]
        elif isinstance(node, ast.Expr) and _check_call(node.value):
            checks.append((node.lineno, _check_call(node.value)))
        imports += [(node.lineno, n) for n in _third_party(node)]
    return checks, imports


def _package_extra(path: Path) -> str | None:
    """The extra the enclosing packages' ``__init__`` check for (innermost first), if any."""
    for init in [p / "__init__.py" for p in path.parents if SRC in (p, *p.parents)]:
        if init.exists() and init != path:
            checks, _ = _module_level(ast.parse(init.read_text()))
            if checks:
                return checks[0][1]
    return None


#: the packages (and top-level modules) of the library a user's own code imports with no extra
LIBRARY = {"calibration", "stopping", "metrics", "_scores"}


def test_every_third_party_import_is_of_the_extra_checked_first():
    core = _core_imports()
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text())
        where = path.relative_to(SRC)
        checks, imports = _module_level(tree)
        package_extra = _package_extra(path)
        extra = package_extra or (checks[0][1] if checks else None)
        allowed = core | set(EXTRAS.get(extra, ()))
        first_check = checks[0][0] if checks and not package_extra else 0
        for line, name in imports:
            if name not in allowed:
                bad.append(f"{where}:{line} imports {name}, not of the extra {extra!r}")
            elif name not in core and line < first_check:
                bad.append(f"{where}:{line} imports {name} before require_extra")
        if where.parts[0].removesuffix(".py") not in LIBRARY:
            continue
        # the library: a function that imports a package of an extra checks for it first
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            inner = [n for n in ast.walk(func) if n is not func]
            checked = {e for n in inner if (e := _check_call(n))}
            for node in inner:
                for name in _third_party(node):
                    if name not in core and not any(name in EXTRAS[e] for e in checked):
                        bad.append(f"{where}:{node.lineno} {func.name} imports {name} "
                                   "without require_extra")
    assert bad == [], "\n".join(bad)


def test_the_import_check_finds_an_uncovered_import(tmp_path, monkeypatch):
    """The check above on a made-up package: an import of no extra, and one before the check."""
    pkg = tmp_path / "tabbench"
    (pkg / "metrics").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""x"""\n')
    (pkg / "metrics" / "__init__.py").write_text('"""x"""\n')
    (pkg / "metrics" / "a.py").write_text("import pandas\n")
    (pkg / "metrics" / "b.py").write_text(
        "import torch\nfrom tabbench.core.extras import require_extra\n"
        "require_extra('torch', __name__)\n")
    (pkg / "metrics" / "c.py").write_text("def f():\n    import relplot\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", pkg)
    with pytest.raises(AssertionError) as err:
        test_every_third_party_import_is_of_the_extra_checked_first()
    found = str(err.value)
    assert "metrics/a.py:1 imports pandas, not of the extra None" in found
    assert "metrics/b.py:1 imports torch before require_extra" in found
    assert "metrics/c.py:2 f imports relplot without require_extra" in found


# --- without the extras -----------------------------------------------------------------------

#: run in a fresh interpreter with every package of the extras blocked: a finder ahead of all
#: others raises ModuleNotFoundError for them, as an environment without them would (setting
#: ``sys.modules[name] = None`` instead would mislead the libraries that look for an imported
#: torch or pandas in ``sys.modules``)
BLOCKED_RUN = """
import contextlib, importlib.abc, io, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
from fixtures.scripts import load_script
check = load_script("scripts/check_light_install.py")
outcome = check.import_outcomes()
problems = check.module_problems(outcome)
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import refinement_loss
X, y = make_classification(300, random_state=0)
model = TemperatureScaledClassifier(LogisticRegression(), cv=0.3, random_state=0).fit(X, y)
proba = model.predict_proba(X)
from tabbench.cli import main
err = io.StringIO()
with contextlib.redirect_stderr(err):
    rc = main(["status", "--results", "results"])
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc_version = main(["--version"])
print(json.dumps({{"outcome": outcome, "problems": problems, "rows": proba.shape[0],
                  "sum": float(proba.sum()), "beta": float(model.beta_),
                  "ts_ref": refinement_loss(y, proba, scores="proba"),
                  "cli": [rc, err.getvalue()], "version": [rc_version, out.getvalue()]}}))
"""


@pytest.fixture(scope="module")
def blocked() -> dict:
    names = sorted({n for modules in EXTRAS.values() for n in modules})
    env = {**os.environ, "PYTHONPATH": f"{SRC.parent}{os.pathsep}{ROOT / 'tests'}"}
    res = subprocess.run([sys.executable, "-c", BLOCKED_RUN.format(blocked=names)],
                         capture_output=True, text=True, cwd=ROOT / "tests", timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.splitlines()[-1])


def test_without_extras_the_library_imports_and_every_other_module_names_its_extra(blocked):
    assert blocked["problems"] == []
    outcome = blocked["outcome"]
    library = [m for m in outcome if m.split(".")[1] in {"calibration", "stopping", "metrics"}]
    assert len(library) >= 10 and all(outcome[m] is None for m in library)
    assert outcome["tabbench.torch"] == "torch"
    for package in ("data", "models", "search", "settings", "summary", "study", "diagnostics",
                    "plots", "report", "cli.data"):
        assert outcome[f"tabbench.{package}"] == "pipeline", package


def test_without_extras_the_temperature_scaled_classifier_fits_and_predicts(blocked):
    assert blocked["rows"] == 300 and blocked["sum"] == pytest.approx(300)
    assert blocked["beta"] > 0 and 0 < blocked["ts_ref"] < 0.7


def test_without_the_pipeline_the_command_prints_one_line(blocked):
    rc, err = blocked["cli"]
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("tabbench: error: the tabbench command needs the 'pipeline' extra: "
                          "pip install 'tabbench[pipeline]' (not installed: pandas,")
    rc, out = blocked["version"]
    assert rc == 0 and out == f"tabbench {md.version('tabbench')}\n"


def test_require_extra_raises_one_line_naming_the_extra_and_what_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchmetrics", None)
    with pytest.raises(MissingExtraError) as err:
        require_extra("torch", "tabbench.torch")
    assert str(err.value) == ("tabbench.torch needs the 'torch' extra: pip install "
                              "'tabbench[torch]' (not installed: torchmetrics)")
    assert isinstance(err.value, ImportError)
    require_extra("pipeline", "tabbench.models")  # installed here: nothing raised


def test_version_prints_the_installed_version():
    res = subprocess.run([sys.executable, "-m", "tabbench.cli", "--version"], capture_output=True,
                         text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"tabbench {md.version('tabbench')}\n"
