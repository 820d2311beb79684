"""Import direction inside the library, checked on the source.

- the packages stand in layers (docs/design.md §2, :data:`LAYERS`): a module imports only
  modules of its own package and of lower layers, so the import graph with packages as nodes
  has no cycle and no edge running back up; every package says in a docstring what it is for,
  and few modules stand directly in ``src/tabbench/``;
- ``tabbench.data`` imports nothing from ``tabbench.models`` (trainers consume data; data does
  not know trainers), ``tabbench.models`` nothing from ``tabbench.search`` (a search space may
  import its model's torch-free config module, never the reverse);
- no module imports another module's private (``_``-prefixed) name: what two modules share is
  public where it lives (e.g. ``metrics.folds.cv_folds`` for the reference and the fast path);
- no import cycle among the modules, and no library module imports ``tabbench.cli`` (the CLI
  parses text into the library's arguments, so it may import the library, never the reverse).

And reading the registries, sampling an XGBoost config and building its trainer or the CLI
import neither PyTorch nor a model library (the workflow reads the registries when it parses).

Every ``import`` statement counts, at module level or inside a function: a function-local import
only postpones a cycle to the first call; the two modules still cannot be understood, tested or
moved one without the other. Not counted: the implicit import of a parent package (importing
``tabbench.metrics.batched`` runs ``tabbench/metrics/__init__.py``; a package re-exporting its
submodules would otherwise be in a cycle with each of them) and imports by name at run time
(``importlib.import_module`` in the lazy re-exports and the entry-point registries), which are
indirections on purpose.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

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


def _loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``code`` (in the
    checkout's ``src``, so that its code is what is imported)."""
    probe = f"\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))\n"
    res = subprocess.run([sys.executable, "-c", code + probe], capture_output=True, text=True,
                         cwd=SRC.parent)
    assert res.returncode == 0, res.stderr
    return ast.literal_eval(res.stdout.splitlines()[-1])


def test_registries_and_xgboost_do_not_import_torch():
    code = (
        "from tabbench.metrics.registry import get_stopping_metrics\n"
        "from tabbench.models.registry import get_models, get_trainer\n"
        "from tabbench.search import sample_config\n"
        "from tabbench.cli import build_parser\n"
        "get_stopping_metrics(); get_models(); build_parser()\n"
        "sample_config('xgboost', 1, seed=0, dataset='d', split=0)\n"
        "get_trainer('xgboost')"
    )
    assert "torch" not in _loaded_after(code, ("torch", "xgboost", "sklearn"))


def test_reading_the_registries_imports_no_numerical_kernel():
    code = (
        "from tabbench.metrics.registry import get_stopping_metrics\n"
        "from tabbench.models.registry import get_models\n"
        "get_stopping_metrics(); get_models()"
    )
    assert _loaded_after(code, ("torch", "xgboost", "sklearn", "tabbench.metrics.batched")) == []


#: what a `tabbench` job's start would pay for and the command itself may not need
#: (docs/performance.md, "A job's start"): each command imports its own library functions
HEAVY_FOR_A_START = ("scipy", "sklearn", "matplotlib", "torch", "xgboost", "lightgbm")


@pytest.mark.parametrize("argv", [[], ["select", "--runs", "r.parquet", "--out", "o.parquet"],
                                  ["data", "split", "--processed", "p", "--out", "o",
                                   "--n-splits", "1"]])
def test_a_job_start_imports_no_heavy_library(argv):
    """Building every parser and parsing a job's arguments loads none of the big libraries:
    a select or data job would pay ~1 s of imports it does not use, on every job."""
    code = ("from tabbench.cli import build_parser\n"
            f"parser = build_parser()\nif {argv!r}: parser.parse_args({argv!r})")
    assert _loaded_after(code, HEAVY_FOR_A_START) == []


def test_the_workflow_parse_imports_no_heavy_library():
    """The library imports of the Snakefile and its rules load none of the big libraries:
    every `snakemake` call (a dry run included) parses them, and scipy with scikit-learn
    cost about as much as the rest of the parse."""
    repo = SRC.parent.parent
    files = [repo / "Snakefile", *sorted(repo.glob("workflow/rules/*.smk"))]
    lines = [line.strip() for path in files
             for line in path.read_text().splitlines()
             if re.match(r"(from|import) tabbench\b", line.strip())]
    assert len(lines) > 5, "the workflow's imports were not found"
    assert _loaded_after("\n".join(lines), HEAVY_FOR_A_START) == []


# --- import graph -------------------------------------------------------------------------------

def _module_names() -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a package is its ``__init__``)."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imported_modules(
    name: str, path: Path, modules: Mapping[str, Path]
) -> Iterator[tuple[str, int]]:
    """(module, line) of every tabbench module that ``name`` imports, anywhere in its source.

    ``from a.b import c`` imports module ``a.b.c`` if there is one, else names of ``a.b``;
    relative imports are resolved against the importing module's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            candidates = [f"{base}.{alias.name}" for alias in node.names]
            targets = [c if c in modules else base for c in candidates]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # ``import a.b.c as x`` of a name in a.b
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target, node.lineno


def _import_graph() -> dict[str, dict[str, list[int]]]:
    """module -> {imported module: lines} over the whole package."""
    modules = _module_names()
    graph: dict[str, dict[str, list[int]]] = {m: {} for m in modules}
    for name, path in modules.items():
        for target, line in _imported_modules(name, path, modules):
            graph[name].setdefault(target, []).append(line)
    return graph


def _cycles(graph: Mapping[str, Mapping[str, object]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative): each is a
    set of modules that reach one another through imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(frozenset(component))
    return out


def _describe(cycle: frozenset[str], graph: Mapping[str, Mapping[str, list[int]]]) -> str:
    edges = [f"{a} -> {b} (line {', '.join(map(str, lines))})"
             for a in sorted(cycle) for b, lines in sorted(graph[a].items()) if b in cycle]
    return "; ".join(edges)


def test_cycle_finder_finds_cycles_through_any_import():
    """The finder itself: a 3-cycle, a 2-cycle, a self-free chain and a diamond."""
    graph = {"a": {"b": [1]}, "b": {"c": [1]}, "c": {"a": [1], "d": [1]}, "d": {},
             "e": {"f": [1], "g": [1]}, "f": {"h": [1]}, "g": {"h": [1]}, "h": {},
             "x": {"y": [1]}, "y": {"x": [1]}}
    assert sorted(map(sorted, _cycles(graph))) == [["a", "b", "c"], ["x", "y"]]


def test_import_graph_counts_function_local_and_relative_imports(tmp_path, monkeypatch):
    """A cycle through an import inside a function, or a relative import, is still a cycle."""
    pkg = tmp_path / "tabbench"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("from . import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from tabbench.sub.a import x\n")
    (pkg / "c.py").write_text("import tabbench.sub.a as a\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", pkg)
    graph = _import_graph()
    assert graph["tabbench.sub.a"] == {"tabbench.sub.b": [1]}
    assert graph["tabbench.sub.b"] == {"tabbench.sub.a": [2]}
    assert graph["tabbench.c"] == {"tabbench.sub.a": [1]}
    assert _cycles(graph) == [frozenset({"tabbench.sub.a", "tabbench.sub.b"})]


def test_no_import_cycle():
    graph = _import_graph()
    found = _cycles(graph)
    assert found == [], "import cycles:\n" + "\n".join(_describe(c, graph) for c in found)


def test_no_library_module_imports_the_cli():
    graph = _import_graph()
    importers = {m: lines for m, targets in graph.items() if not _in_cli(m)
                 for t, lines in targets.items() if _in_cli(t)}
    assert importers == {}, f"library modules importing tabbench.cli (module: lines): {importers}"


def _in_cli(module: str) -> bool:
    return module == "tabbench.cli" or module.startswith("tabbench.cli.")


# --- the layers -------------------------------------------------------------------------------

#: the library's packages (and the modules directly in it), bottom first: a module may import
#: only its own package's modules and those of lower layers (docs/design.md §2)
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    {"_scores", "core"},
    {"metrics", "data"},
    {"models", "calibration", "stopping"},
    {"search", "settings", "torch"},
    {"summary"},
    {"study"},
    {"diagnostics"},
    {"plots"},
    {"report"},
    {"cli", "jobs"},
))
#: at most this many modules directly in src/tabbench/ besides the packages
MAX_TOP_MODULES = 8


def _node(module: str) -> str:
    """The package (or top-level module) a module of ``tabbench`` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer_of(node: str) -> int:
    for i, layer in enumerate(LAYERS):
        if node in layer:
            return i
    raise AssertionError(f"tabbench.{node} is in no layer: add it to LAYERS (and to "
                         "docs/design.md §2)")


def _upward_imports(graph: Mapping[str, Mapping[str, list[int]]]) -> list[str]:
    """Every import of a module from a package of the same or a higher layer (other than its
    own package)."""
    bad = []
    for module, targets in sorted(graph.items()):
        here = _node(module)
        if not here:
            continue
        for target, lines in sorted(targets.items()):
            there = _node(target)
            if there and there != here and _layer_of(there) >= _layer_of(here):
                bad.append(f"{module} (layer {_layer_of(here)}) imports {target} (layer "
                           f"{_layer_of(there)}), line {', '.join(map(str, lines))}")
    return bad


#: how a package's docstring states its layer, numbered as in docs/design.md §2 (1 = the bottom)
LAYER_SAID = re.compile(r"\blayer (\d+) of docs/design\.md §2", re.IGNORECASE)


def _package_folders(src: Path) -> list[Path]:
    """Every folder below ``src`` that holds Python code, at any depth (data folders aside)."""
    return sorted(d for d in src.rglob("*") if d.is_dir() and d.name != "__pycache__"
                  and any(d.rglob("*.py")))


def _unstated_layers(src: Path) -> list[str]:
    """Each package folder below ``src`` without an ``__init__.py``, or whose ``__init__``
    docstring does not say "layer N of docs/design.md §2" with N its package's layer."""
    bad = []
    for folder in _package_folders(src):
        init = folder / "__init__.py"
        where = init.relative_to(src)
        if not init.exists():
            bad.append(f"{where} is missing")
            continue
        said = LAYER_SAID.search(" ".join((ast.get_docstring(ast.parse(init.read_text()))
                                           or "").split()))
        layer = _layer_of(folder.relative_to(src).parts[0]) + 1
        if not said or int(said[1]) != layer:
            bad.append(f"{where}: its docstring does not say 'layer {layer} of docs/design.md §2'")
    return bad


def test_every_package_has_a_layer_and_a_docstring():
    nodes = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
             if (p.is_file() and p.suffix == ".py" and p.name != "__init__.py")
             or (p.is_dir() and any(p.rglob("*.py")))}
    for node in sorted(nodes):
        _layer_of(node)
    assert _unstated_layers(SRC) == []
    assert ast.get_docstring(ast.parse((SRC / "__init__.py").read_text()))


def test_the_package_check_finds_a_missing_init_and_an_unstated_layer(tmp_path):
    for folder, doc in (("core", "Layer 1 of docs/design.md §2."), ("core/sub", None),
                        ("metrics", "Layer 1 of docs/design.md\n§2."), ("data", "Data."),
                        ("data/static", None)):
        (tmp_path / folder).mkdir()
        if doc is not None:
            (tmp_path / folder / "__init__.py").write_text(f'"""{doc}"""\n')
    (tmp_path / "core" / "sub" / "a.py").write_text("")
    (tmp_path / "data" / "static" / "table.csv").write_text("")
    assert _unstated_layers(tmp_path) == [
        "core/sub/__init__.py is missing",
        "data/__init__.py: its docstring does not say 'layer 2 of docs/design.md §2'",
        "metrics/__init__.py: its docstring does not say 'layer 2 of docs/design.md §2'"]


def test_imports_run_down_the_layers_only():
    bad = _upward_imports(_import_graph())
    assert bad == [], "imports against the layer order:\n" + "\n".join(bad)


def test_the_layer_check_finds_an_import_up_or_across():
    graph = {"tabbench.core.io": {"tabbench.summary.select": [3]},
             "tabbench.search.space": {"tabbench.settings.table": [5],
                                       "tabbench.core.io": [6]},
             "tabbench.cli.x": {"tabbench.report.y": [1]}}
    assert _upward_imports(graph) == [
        "tabbench.core.io (layer 0) imports tabbench.summary.select (layer 4), line 3",
        "tabbench.search.space (layer 3) imports tabbench.settings.table (layer 3), line 5"]


def test_few_modules_directly_in_the_package():
    top = sorted(p.name for p in SRC.glob("*.py") if p.name != "__init__.py")
    assert len(top) <= MAX_TOP_MODULES, top
