"""The README is the front door: short, and what it tells a newcomer to run is what CI runs.

- at most 200 lines; every relative link (and its anchor) leads somewhere;
- its set-up installs the PyTorch CI pins and extras CI installs, and its test command is CI's,
  so a newcomer's test run is CI's (no test skipped for a package the install left out);
- its Python snippet runs as printed (it lacked the import of XGBClassifier);
- the README, the documentation and the code describe the project; they do not narrate how it
  was built (no "session").
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CI = REPO / ".ci" / "run"


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def _commands(text: str) -> list[list[str]]:
    """The commands of a shell text: one a line, comments and continuations joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            for part in re.split(r"\s*&&\s*", line):
                out.append(shlex.split(part))
    return out


def _pip_installs(text: str) -> list[list[str]]:
    return [c[c.index("install") + 1:] for c in _commands(text)
            if "pip" in c and "install" in c]


def _extras(args: list[str]) -> set[str]:
    for arg in args:
        m = re.fullmatch(r"-e|\.\[([a-z,]+)\]", arg)
        if m and m.group(1):
            return set(m.group(1).split(","))
    return set()


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= 200


def test_the_readme_installs_what_ci_installs():
    readme = "\n".join(_blocks(README.read_text(), "bash"))
    ci = CI.read_text()
    torch = [a for args in _pip_installs(readme) for a in args if a.startswith("torch==")]
    ci_torch = [a for args in _pip_installs(ci) for a in args if a.startswith("torch==")]
    assert torch and torch == ci_torch[:1], (torch, ci_torch)
    readme_extras = set().union(*(_extras(a) for a in _pip_installs(readme) if "-e" in a))
    ci_extras = set().union(*(_extras(a) for a in _pip_installs(ci) if "-e" in a))
    assert "dev" in readme_extras and readme_extras - {"docs"} <= ci_extras, (readme_extras,
                                                                              ci_extras)
    # torch first (installed first, it is kept), then tabbench
    installs = _pip_installs(readme)
    assert installs[0][0].startswith("torch==") and "-e" in installs[1], installs


def test_the_readme_python_is_the_packages_minimum():
    import tomllib

    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    version = re.fullmatch(r">=(\d+\.\d+)", requires).group(1)
    text = README.read_text()
    assert f"Python {version} or newer" in text and f"python{version} -m venv" in text


def test_the_readme_test_command_is_cis():
    command = next(c for c in _commands("\n".join(_blocks(README.read_text(), "bash")))
                   if "pytest" in c)
    ci = " ".join(CI.read_text().replace("\\\n", " ").split())
    assert " ".join(shlex.quote(a) for a in command[1:]) in ci.replace('"not slow"',
                                                                      "'not slow'"), command


def test_the_readme_links_lead_somewhere():
    text = README.read_text()
    wrong = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        page = REPO / path
        if not page.exists():
            wrong.append(target)
        elif anchor and anchor not in _anchors(page.read_text()):
            wrong.append(target)
    assert not wrong, wrong


def _anchors(markdown: str) -> set[str]:
    """The heading ids Python-Markdown's toc (MkDocs) gives a page's headings."""
    out = set()
    for heading in re.findall(r"(?m)^#+ (.+)$", markdown):
        slug = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
        out.add(re.sub(r"[-\s]+", "-", slug))
    return out


def test_the_readme_snippet_runs_as_printed(capfd):
    """The snippet, given a training, a validation and a test set, runs and gives
    probabilities (its imports included: nothing is defined for it), and prints nothing (it
    printed every boosting round's validation metric)."""
    from sklearn.datasets import make_classification

    snippet = next(b for b in _blocks(README.read_text(), "python")
                   if "TemperatureScaledClassifier" in b)
    X, y = make_classification(n_samples=900, n_features=8, random_state=0)
    namespace = {"X_train": X[:500], "y_train": y[:500], "X_val": X[500:700],
                 "y_val": y[500:700], "X_test": X[700:], "y_test": y[700:]}
    exec(compile(snippet, "README.md", "exec"), namespace)  # noqa: S102 - the README's code
    proba = namespace["calibrated"].predict_proba(namespace["X_test"])
    assert proba.shape == (200, 2) and np.allclose(proba.sum(axis=1), 1)
    assert namespace["clf"].best_iteration < 2000  # it stopped early
    out, err = capfd.readouterr()
    assert out == "" and err == "", (out[:500], err[:500])


NARRATION = re.compile(r"\bsessions?\b", re.I)


@pytest.mark.parametrize("where", ["README.md", "CHANGELOG.md", "docs", "src"])
def test_no_narration_of_how_the_project_was_built(where):
    """Docs and code describe the project as it is: no "session" (the history is in
    CHANGELOG.md and git)."""
    root = REPO / where
    files = [root] if root.is_file() else [
        *sorted(root.glob("*.md")), *sorted(root.rglob("*.py")), *sorted(root.rglob("*.smk"))]
    found = [f"{f.relative_to(REPO)}:{n}: {line.strip()[:80]}"
             for f in files for n, line in enumerate(f.read_text().splitlines(), 1)
             if NARRATION.search(line)]
    assert not found, found
