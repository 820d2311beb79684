"""The workflow's files are thin (read as text, no DAG built): every function they define is one
statement (a call into the library, or a read of what only Snakemake knows), each rule with
params takes them from one call of :mod:`tabbench.jobs` (where their rerun classification is
derived from the settings table: tests/jobs/test_triggers.py), and the whole stays small."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
#: the most lines the Snakefile and rule files hold together
MOST_LINES = 700
#: functions of more than one statement, with why they stay in the workflow
LONGER = {
    "remember_run_config": "writes the results folder's run_config.yaml (its owner's call)",
    "requested_targets": "reads Snakemake's internals, which differ while linting",
}
#: the rules whose params are one library call, and that call
PARAMS = {
    "fetch_dataset": "**DATA_JOBS.fetch_params()",
    "filter_dataset": "**DATA_JOBS.filter_params()",
    "split_dataset": "**DATA_JOBS.split_params()",
    "train": "**TRAIN_JOBS.train_params()",
    "select": "**TRAIN_JOBS.select_params()",
    "replay_split": "**TRAIN_JOBS.replay_params()",
}


def _functions(text: str) -> dict[str, ast.FunctionDef]:
    """Every top-level ``def`` of a workflow file, parsed on its own."""
    out = {}
    for match in re.finditer(r"^def .*?(?=^\S|\Z)", text, flags=re.M | re.S):
        node = ast.parse(match.group(0)).body[0]
        assert isinstance(node, ast.FunctionDef)
        out[node.name] = node
    return out


def _params(text: str) -> dict[str, list[str]]:
    """rule -> the lines of its params block (comments left out)."""
    out = {}
    for match in re.finditer(r"^(?:rule|checkpoint) (\w+):\n(.*?)(?=^\S|\Z)", text,
                             flags=re.M | re.S):
        block = re.search(r"^    params:\n((?:        .*\n)+)", match.group(2), flags=re.M)
        if block:
            out[match.group(1)] = [line.strip() for line in block.group(1).splitlines()
                                   if not line.strip().startswith("#")]
    return out


def test_every_workflow_function_is_one_statement():
    longer = {}
    for path in FILES:
        for name, node in _functions(path.read_text()).items():
            statements = sum(isinstance(n, ast.stmt) for n in ast.walk(node))
            if statements - 1 - bool(ast.get_docstring(node)) != 1:
                longer[name] = path.name
    assert set(longer) == set(LONGER), longer


def test_the_rules_params_are_one_call_of_the_library():
    found = {}
    for path in FILES:
        found.update(_params(path.read_text()))
    assert {rule: found.get(rule) for rule in PARAMS} == {r: [c + ","] for r, c in PARAMS.items()}


def test_the_workflow_is_small():
    assert sum(len(p.read_text().splitlines()) for p in FILES) < MOST_LINES


def test_the_checks_find_what_they_look_for():
    """The readers themselves, on a two-statement function and a rule's params."""
    text = ('def f(w):\n    """Doc."""\n    x = 1\n    return x\n\n\n'
            "rule r:\n    params:\n        # why\n        **J.p(),\n    shell:\n        'x'\n")
    node = _functions(text)["f"]
    assert sum(isinstance(n, ast.stmt) for n in ast.walk(node)) == 4
    assert _params(text) == {"r": ["**J.p(),"]}
