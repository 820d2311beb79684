"""environment.yml must list the same packages, with the same lower bounds, as pyproject.toml's
dependencies, its pipeline extra and its dev extra's own tools."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
# conda-forge names that differ from PyPI names
CONDA_NAME = {"torch": "pytorch"}


def _split(req: str) -> tuple[str, str]:
    m = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", req.strip())
    assert m, req
    return m.group(1).lower(), m.group(3).replace(" ", "")


def _pyproject() -> dict[str, str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = meta["optional-dependencies"]
    reqs = list(meta["dependencies"]) + list(extras["pipeline"]) + list(extras["dev"])
    # dev names other extras of tabbench itself (for their tests): the workflow's environment
    # needs the library, the pipeline and the dev tools, not those
    return {CONDA_NAME.get(n, n): spec for n, spec in map(_split, reqs)
            if n != meta["name"]}


def _environment() -> dict[str, str]:
    """conda packages and pip requirements (a package conda-forge lacks is listed there)."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    out = {}
    for dep in env["dependencies"]:
        deps = dep["pip"] if isinstance(dep, dict) else [dep]
        for req in deps:
            if req.startswith("-e "):
                continue
            name, spec = _split(req)
            if name not in {"python", "pip"}:
                out[name] = spec
    return out


def test_environment_lists_every_pyproject_dependency_with_same_bound() -> None:
    assert _environment() == _pyproject()


def test_environment_pip_section_installs_snakemake_reports_and_the_package() -> None:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert any(p.startswith("snakemake[reports]") for p in pip)
    assert "-e ." in pip
