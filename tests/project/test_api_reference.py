"""The API reference as a reader sees it: the site built by ``mkdocs build --strict`` (about ten
seconds) and its API page read back.

- every documented function, class and method that takes parameters shows them in a parameter
  table (mkdocstrings renders a numpy-style ``Parameters`` section as one; a docstring that is
  not numpy-style renders as a run-on paragraph and has no table);
- no reStructuredText shows literally: no ``::`` (a literal block that Markdown does not know),
  no Sphinx role (``:func:``), no section underline (``----------``) of a section the parser
  did not recognise.
"""

from __future__ import annotations

import html
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.optional import import_optional

ROOT = Path(__file__).resolve().parents[2]
#: the ``id`` of every documented object's heading on a mkdocstrings page
HEADING = re.compile(r'<h[2-6] id="(tabbench\.[\w.]+)"')


@pytest.fixture(scope="module")
def api_page(tmp_path_factory) -> str:
    import_optional("mkdocs", "docs")
    site = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(site)], cwd=ROOT, capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return (site / "api" / "index.html").read_text()


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def _sections(page: str) -> dict[str, str]:
    """Documented object -> its own part of the page (from its heading to the next heading)."""
    marks = [(m.group(1), m.start()) for m in HEADING.finditer(page)]
    return {name: page[start:end]
            for (name, start), (_, end) in zip(marks, [*marks[1:], ("", len(page))], strict=True)}


def _resolve(path: str) -> object:
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise AssertionError(path)


def _parameters(obj: object) -> list[str]:
    """The parameters a reader passes (``*args``/``**kwargs`` as written in numpy style)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    out = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        out.append(prefix + p.name)
    return out


def _table_names(section: str) -> set[str]:
    """The first-column names of the section's parameter tables."""
    names = set()
    for table in re.findall(r"<table>(.*?)</table>", section, flags=re.S):
        if "<th>Name</th>" in table or "<b>Name</b>" in table:
            names |= {_text(c).strip() for c in re.findall(
                r'<tr class="doc-section-item">\s*<td>(.*?)</td>', table, flags=re.S)}
    return names


def test_every_documented_callable_has_a_parameter_table(api_page):
    sections = _sections(api_page)
    assert len(sections) >= 40, sorted(sections)
    missing = {}
    for name, section in sections.items():
        obj = _resolve(name)
        if inspect.ismodule(obj) or not callable(obj) or getattr(obj, "_is_protocol", False):
            continue  # a Protocol documents its methods, it is not called
        params = _parameters(obj)
        lacking = [p for p in params if p not in _table_names(section)]
        if lacking:
            missing[name] = lacking
    assert missing == {}, f"parameters without a table row (object: parameters): {missing}"


def test_the_temperature_scaled_classifiers_table_has_types_and_defaults(api_page):
    section = _sections(api_page)["tabbench.calibration.TemperatureScaledClassifier"]
    table = re.search(r"<table>.*?</table>", section, flags=re.S).group(0)
    assert _text(table).split()[:4] == ["Name", "Type", "Description", "Default"]
    row = re.search(r"<td>\s*<code>cv</code>\s*</td>(.*?)</tr>", table, flags=re.S).group(1)
    assert "float, int, CV splitter" in _text(row) and "None" in _text(row)


def test_no_restructuredtext_shows_literally(api_page):
    text = _text(re.sub(r"<(script|style)\b.*?</\1>", "", api_page, flags=re.S))
    for literal in ("::", ":func:", ":class:", ":mod:", ":meth:", ":data:", "----------"):
        where = [text[max(0, i - 60):i + 40] for i in
                 (m.start() for m in re.finditer(re.escape(literal), text))]
        assert where == [], (literal, where[:5])
