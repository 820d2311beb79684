"""Check an environment that holds tabbench installed with no extra (``pip install tabbench``).

CI runs it with the Python of a fresh venv into which only the built wheel was installed
(``.ci/run``); it fails (exit 1, one line per problem) unless

- no package of an extra came with it: none of the distributions that ``tabbench``'s metadata
  lists under an extra is installed (torch, Snakemake, XGBoost, LightGBM, OpenML and Optuna
  among them) besides the library's own dependencies and what a fresh venv holds;
- the tabbench imported is the installed one, not a source tree on the path;
- every module of the package either imports, or raises the one-line error that names the extra
  it needs (:mod:`tabbench.core.extras`); the public library (calibration, stopping, metrics)
  imports, the pipeline's packages and ``tabbench.torch`` name their extra;
- the ``tabbench`` console script answers ``--version`` and, for a command, prints that one
  line (no traceback).

Prints the size of the installed packages (site-packages) on success.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import pkgutil
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

#: what the brief of the install layers names; must be among the extras' distributions
NAMED_HEAVY = {"torch", "snakemake", "xgboost", "lightgbm", "openml", "optuna"}
#: the library a user's own code imports: must import with no extra
LIBRARY = ("tabbench.calibration", "tabbench.stopping", "tabbench.metrics")
#: modules that must name their extra (so that the walk below cannot pass vacuously)
NEEDS = {"tabbench.models": "pipeline", "tabbench.data": "pipeline", "tabbench.torch": "torch"}
#: what a fresh venv holds before anything is installed into it
VENV_OWN = {"pip", "setuptools"}
LINE = re.compile(r"(\S+) needs the '([a-z]+)' extra: pip install 'tabbench\[\2\]' \(not "
                  r"installed: [a-z0-9_, ]+\)")


def _name(requirement: str) -> str:
    return re.split(r"[\s\[;<>=!~(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _installed() -> set[str]:
    return {dist.metadata["Name"].lower().replace("_", "-") for dist in md.distributions()}


def check_distributions(problems: list[str]) -> None:
    requires = md.requires("tabbench") or []
    core = {_name(r) for r in requires if "extra ==" not in r}
    extras = {_name(r) for r in requires if "extra ==" in r} - core - {"tabbench"}
    if not NAMED_HEAVY <= extras:
        problems.append(f"not declared under an extra: {sorted(NAMED_HEAVY - extras)}")
    for name in sorted(extras & _installed() - VENV_OWN):
        problems.append(f"installed without its extra: {name}")


def check_installed_copy(problems: list[str]) -> None:
    import tabbench

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    if site not in Path(tabbench.__file__).resolve().parents:
        problems.append(f"tabbench imported from {tabbench.__file__}, not from {site}")


def import_outcomes() -> dict[str, str | None]:
    """Every module of the package (as far as its packages import) -> None where it imports,
    the extra it names where it raises the extra's one line (which may name a module it
    imports: ``tabbench.cli.data`` says that ``tabbench.settings`` needs the pipeline), or the
    error text (``!`` first) where it fails otherwise."""
    import tabbench

    outcome: dict[str, str | None] = {}
    for info in pkgutil.walk_packages(tabbench.__path__, "tabbench."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
            outcome[info.name] = None
        except ImportError as err:
            match = LINE.fullmatch(str(err))
            outcome[info.name] = match.group(2) if match else f"!{type(err).__name__}: {err}"
        except Exception as err:  # noqa: BLE001 - every failure is a finding
            outcome[info.name] = f"!{type(err).__name__}: {err}"
    return outcome


def module_problems(outcome: dict[str, str | None]) -> list[str]:
    """What :func:`import_outcomes` found wrong: a module failing otherwise than with its
    extra's line, the library not importing, or a module of :data:`NEEDS` not naming its extra."""
    problems = [f"import {m}: {v[1:]}" for m, v in outcome.items() if v and v.startswith("!")]
    for module in LIBRARY:
        subs = {m: v for m, v in outcome.items() if m == module or m.startswith(module + ".")}
        if not subs or any(v is not None for v in subs.values()):
            problems.append(f"{module} does not import without extras: {subs}")
    for module, extra in NEEDS.items():
        if outcome.get(module) != extra:
            problems.append(f"{module}: expected the {extra!r} extra's line, got "
                            f"{outcome.get(module, 'no outcome')!r}")
    return problems


def check_console_script(problems: list[str]) -> None:
    script = Path(sys.executable).parent / "tabbench"
    version = subprocess.run([script, "--version"], capture_output=True, text=True)
    if version.stdout.strip() != f"tabbench {md.version('tabbench')}":
        problems.append(f"tabbench --version: {version.stdout!r} {version.stderr!r}")
    command = subprocess.run([script, "status", "--help"], capture_output=True, text=True)
    lines = command.stderr.strip().splitlines()
    if command.returncode == 0 or len(lines) != 1 or not LINE.search(lines[0]):
        problems.append(f"tabbench status: rc {command.returncode}, {command.stderr!r}")


def main() -> int:
    problems: list[str] = []
    check_distributions(problems)
    check_installed_copy(problems)
    outcome = import_outcomes()
    problems += module_problems(outcome)
    named = sum(v is not None for v in outcome.values())
    print(f"{len(outcome) - named} modules import, {named} name their extra")
    check_console_script(problems)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    site = Path(sysconfig.get_paths()["purelib"])
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    print(f"no-extras install: {len(_installed())} distributions, site-packages "
          f"{size / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
