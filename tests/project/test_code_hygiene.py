"""Code, rules and tests describe the project as it is: no issue numbers and no history
narration (history belongs to CHANGELOG.md and git), and no ``test_*`` function in the library
(pytest would collect one imported into a test module, which forces aliasing there)."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: words that narrate the code's history; each pattern is written so that it does not match
#: its own source line
HISTORY = re.compile(
    r"\bissues?\s+\d+"
    r"|(?<!is )(?<!are )(?<!be )\bused\s+to\b"
    r"|\bno\s+longer\b"
    r"|\bthe\s+old\s+name\b"
    r"|\bonce\s+was\b"
    r"|\bformerly\b"
    r"|\bfrom\s+before\b"
    r"|\bbefore\s+[\w`.]+(?:\s+[\w`.]+)?\s+existed\b",
    re.IGNORECASE,
)


def _sources() -> list[Path]:
    files = [ROOT / "Snakefile"]
    for folder, patterns in (("src", ("*.py",)), ("workflow", ("*.smk", "*.py", "*.yaml")),
                             ("tests", ("*.py",))):
        for pattern in patterns:
            files += sorted((ROOT / folder).rglob(pattern))
    return files


def test_no_issue_numbers_or_history_words_in_code_rules_and_tests():
    found = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
             for path in _sources()
             for i, line in enumerate(path.read_text().splitlines(), 1)
             if HISTORY.search(line)]
    assert found == [], "history narration (say why, not when):\n" + "\n".join(found)


def test_the_history_pattern_finds_what_it_is_for():
    # the examples are joined from words, so that this file's lines hold none of them
    for words in (["see", "issue", "14"], ["(issues", "7,", "15)"], ["jobs", "used", "to", "wait"],
                  ["it", "no", "longer", "does"], ["kept", "under", "the", "old", "name"],
                  ["a", "folder", "from", "before", "the", "key"],
                  ["written", "before", "run_config.yaml", "existed"]):
        text = " ".join(words)
        assert HISTORY.search(text), text
    for text in ("the recorder is used to compute", "no longest path", "the old file"):
        assert not HISTORY.search(text), text


#: a citation of one of the project's issues or pull requests ("issue N", "PR #N", a bare "#N"),
#: but not a colour code, a Markdown anchor or an HTML entity; an upstream tracker's issue is
#: cited with its project's name
ISSUE_NUMBER = re.compile(
    r"(?<!pytabkit )(?<!jobstep plugin )\b(?:issues?|PRs?|pull\s+requests?)\s*#?\d+"
    r"|(?<![\w\"'&#/=-])(?<!\]\()(?<!issue )#\d{1,5}\b(?![\w\"'-])",
    re.IGNORECASE,
)


def _prose_and_code() -> list[Path]:
    """What a reader reads as the project's description: code, rules, tests, benchmarks,
    scripts, examples, the README and the docs' pages (the changelog aside: history is its
    subject)."""
    tracked = subprocess.run(["git", "ls-files", "src", "tests", "benchmarks", "scripts",
                              "examples", "workflow", "Snakefile", "README.md", "docs/*.md"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / name for name in tracked.split()
            if not (name.startswith("docs/") and "/" in name.removeprefix("docs/"))
            and name != "docs/changelog.md" and (ROOT / name).is_file()]


def test_no_issue_numbers_in_code_benchmarks_scripts_examples_workflow_or_docs():
    found = []
    for path in _prose_and_code():
        try:
            text = path.read_text()
        except UnicodeDecodeError:  # a data file (parquet, a picture)
            continue
        found += [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
                  for i, line in enumerate(text.splitlines(), 1) if ISSUE_NUMBER.search(line)]
    assert found == [], "issue numbers (say what the code does, not which issue asked):\n" + (
        "\n".join(found))


def test_the_issue_number_pattern_finds_what_it_is_for():
    # the examples are joined from words, so that this file's lines hold none of them
    for words in (["see", "issue", "12"], ["(issue", "#7)"], ["fixes", "#34"], ["PR", "#3"],
                  ["(issues", "7,", "15)"], ["pull", "request", "9"]):
        text = " ".join(words)
        assert ISSUE_NUMBER.search(text), text
    for text in ('colour "#000000"', "colour '#999'", "[design](design.md#3-datasets)",
                 "[§3](#3)", "&#8212;", "## 1. Title", "a quirk (pytabkit issue #40)",
                 "the jobstep plugin issue #164", "issues its requests", "# 3 models"):
        assert not ISSUE_NUMBER.search(text), text


def test_no_test_functions_in_the_library():
    found = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
             for path in sorted((ROOT / "src").rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
             and node.name.startswith("test")]
    assert found == []


#: the most parameters a library function takes (``self``/``cls`` aside): more is a sign that
#: some of them belong together in one object (a spec, a setting group)
MAX_PARAMETERS = 8


def _parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    bound = 1 if positional[:1] in (["self"], ["cls"]) else 0
    return (len(positional) - bound + len(a.kwonlyargs) + (a.vararg is not None)
            + (a.kwarg is not None))


def test_no_library_function_takes_more_than_eight_parameters():
    found = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({_parameter_count(node)})"
             for path in sorted((ROOT / "src").rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
             and _parameter_count(node) > MAX_PARAMETERS]
    assert found == []


def test_the_parameter_count_leaves_self_out_and_counts_the_rest():
    tree = ast.parse("class A:\n    def f(self, a, /, b, *c, d, **e): ...\n"
                     "def g(a, b=1, *, c): ...\n")
    counts = {n.name: _parameter_count(n) for n in ast.walk(tree)
              if isinstance(n, ast.FunctionDef)}
    assert counts == {"f": 5, "g": 3}


# --- function-local imports ---------------------------------------------------------------------

#: the comment a function-local import carries, on its line or on the line above its run of
#: imports (isort's groups, a blank line apart, are one run): ``# lazy: <why>``, the why being an
#: optional dependency (an extra, checked first, or a private API that may be absent) or a
#: measured import cost that its module's other users need not pay. An import cycle is no
#: reason: the cycle is what to fix.
LAZY = re.compile(r"#\s*lazy:\s*(?P<why>\S.*)$")
NOT_A_REASON = re.compile(r"\bcycle|\bcircular", re.IGNORECASE)


def _function_local_imports(
        tree: ast.AST, inside: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement inside a function (not under ``if TYPE_CHECKING``)."""
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if inside and isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        out += _function_local_imports(
            node, inside or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))
    return out


def _above_blank_lines(lines: list[str], lineno: int) -> int:
    """The number of the line above ``lineno`` that is not blank (0 if none)."""
    above = lineno - 1
    while above >= 1 and not lines[above - 1].strip():
        above -= 1
    return above


def _unexplained_imports(source: str) -> list[tuple[int, str]]:
    """(line, text) of each function-local import without a ``# lazy: <why>`` comment on its
    first line or above the run of import statements it belongs to, or whose why names a
    cycle."""
    lines = source.splitlines()
    imports = _function_local_imports(ast.parse(source))
    ends = {node.end_lineno: node for node in imports}
    bad = []
    for node in imports:
        first = node
        while (before := _above_blank_lines(lines, first.lineno)) in ends:  # the run of imports
            first = ends[before]                               # this one closes (groups too)
        above = lines[first.lineno - 2].strip() if first.lineno > 1 else ""
        said = LAZY.search(lines[node.lineno - 1]) or (
            LAZY.match(above) if above.startswith("#") else None)
        if not said or NOT_A_REASON.search(said["why"]):
            bad.append((node.lineno, lines[node.lineno - 1].strip()))
    return bad


def test_every_function_local_import_says_why():
    found = [f"{path.relative_to(ROOT)}:{line}: {text}"
             for path in sorted((ROOT / "src").rglob("*.py"))
             for line, text in _unexplained_imports(path.read_text())]
    assert found == [], ("function-local imports without '# lazy: <why>' (move the import to "
                         "the module's top, or say why):\n" + "\n".join(found))


def test_the_lazy_import_check_finds_what_it_is_for():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import json\n"
        "if TYPE_CHECKING:\n"
        "    import pandas\n"
        "def a():\n"
        "    import torch  # lazy: torch costs 1 s\n"
        "def b():\n"
        "    # lazy: the extra is checked above\n"
        "    import pandas\n"
        "    from pyarrow import parquet\n"
        "\n"
        "    from tabbench import y\n"
        "    x = 1\n"
        "    import yaml\n"
        "def c():\n"
        "    import tabbench.x  # lazy: avoids an import cycle\n"
        "    def inner():\n"
        "        from os import path\n"
        "    return lambda: None\n"
        "try:\n"
        "    import fast\n"
        "except ImportError:\n"
        "    fast = None\n"
    )
    assert _unexplained_imports(source) == [
        (14, "import yaml"), (16, "import tabbench.x  # lazy: avoids an import cycle"),
        (18, "from os import path")]
