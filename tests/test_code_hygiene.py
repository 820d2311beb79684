"""Code, rules and tests describe the project as it is: no issue numbers and no history
narration (history belongs to CHANGELOG.md and git), and no ``test_*`` function in the library
(pytest would collect one imported into a test module, which forces aliasing there)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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
