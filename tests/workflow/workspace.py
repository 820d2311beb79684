"""A temporary copy of the workflow to run Snakemake in (for end-to-end tests).

The copy holds the top-level files (Snakefile, config.yaml, environment.yml), workflow/,
profiles/ and the chosen bundled datasets; a ``tabbench`` launcher that imports this checkout's
``src`` is put first on PATH, so the rules run the code under test and nothing is written into
the repository.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pandas as pd
from fixtures.signals import interruptible

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"

LAUNCHER = """#!{python}
import sys
sys.path.insert(0, {src!r})
from tabbench import cli
sys.exit(cli.main())
"""


class Workspace:
    """A workflow copy in ``root``; :meth:`snakemake` runs ``python -m snakemake`` there."""

    def __init__(self, root: Path, demo: Iterable[str] | None = ()) -> None:
        """``demo``: names of the shipped bundled datasets to copy into data/demo (with a
        MANIFEST restricted to them); None copies them all; () copies none."""
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        for name in ("Snakefile", "config.yaml", "environment.yml"):
            shutil.copy2(REPO / name, self.root / name)
        for folder in ("workflow", "profiles"):
            shutil.copytree(REPO / folder, self.root / folder)
        if demo is None or list(demo):
            self.add_shipped_demo(demo)
        bin_dir = self.root / "bin"
        bin_dir.mkdir()
        launcher = bin_dir / "tabbench"
        launcher.write_text(LAUNCHER.format(python=sys.executable, src=str(SRC)))
        launcher.chmod(0o755)
        self.env = dict(os.environ)
        self.env["PATH"] = f"{bin_dir}{os.pathsep}{self.env.get('PATH', '')}"
        self.env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(SRC), self.env.get("PYTHONPATH")])
        )

    def add_shipped_demo(self, names: Iterable[str] | None) -> None:
        src, dest = REPO / "data" / "demo", self.root / "data" / "demo"
        dest.mkdir(parents=True, exist_ok=True)
        manifest = pd.read_csv(src / "MANIFEST.csv", dtype=str)
        if names is not None:
            manifest = manifest[manifest["name"].isin(list(names))]
        for name in manifest["name"]:
            shutil.copy2(src / f"{name}.parquet", dest / f"{name}.parquet")
        manifest.to_csv(dest / "MANIFEST.csv", index=False)

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "snakemake", *args]

    def snakemake(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command(*args),
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(self, args: Sequence[str], log: Path) -> subprocess.Popen:
        """Start Snakemake in its own process group (so a test can kill it with its jobs),
        with SIGINT at its default, as a terminal's foreground job has it (so a test can
        interrupt it as Ctrl-C does)."""
        fh = open(log, "w")  # noqa: SIM115 - closed by the caller via proc.stdout_file
        proc = subprocess.Popen(
            self.command(*args),
            cwd=self.root,
            env=self.env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=interruptible,
        )
        proc.log_file = fh  # type: ignore[attr-defined]
        return proc


def planned_commands(text: str, start: str = "tabbench ") -> list[str]:
    """The shell commands a ``snakemake -n -p`` run printed (``text``) that begin with
    ``start``, in plan order."""
    prefix = "Shell command: "
    return [line.removeprefix(prefix) for line in text.splitlines()
            if line.startswith(prefix + start)]


def run_planned_in_process(ws: Workspace, *args: str) -> list[list[str]]:
    """The `tabbench` jobs that ``snakemake -n -p *args`` plans, run here in this process, as
    their shell commands say (each job's output to its log), until Snakemake plans none: a
    checkpoint's downstream jobs are planned once it has run. Each job must exit 0. Returns
    the commands run.

    What the data stage does costs a second or two per job when each starts Python anew;
    in-process it costs what the jobs do. Snakemake records nothing (no job metadata): use it
    for what the jobs write, not for what Snakemake would plan afterwards."""
    import contextlib
    import io
    import shlex

    from tabbench import cli

    done: list[list[str]] = []
    while True:
        res = ws.snakemake("--cores", "1", "-n", "-p", *args)
        assert res.returncode == 0, output_of(res)[-3000:]
        commands = planned_commands(res.stdout)
        if not commands:
            return done
        for command in commands:
            words = shlex.split(command)
            argv, log = words, None
            if ">" in words:
                at = words.index(">")
                argv, log = words[:at], ws.root / words[at + 1]
                assert words[at + 2:] == ["2>&1"], command
            assert argv not in done, f"planned again after it ran: {command}"
            out = io.StringIO()
            with (contextlib.chdir(ws.root), contextlib.redirect_stdout(out),
                  contextlib.redirect_stderr(out)):
                code = cli.main(argv[1:])
            if log is not None:
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(out.getvalue())
            assert code == 0, f"{command}\n{out.getvalue()[-3000:]}"
            done.append(argv)


def descendants(pid: int) -> list[int]:
    """Process ids below ``pid`` (children, grandchildren...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def job_stats(text: str) -> dict[str, int]:
    """Snakemake's 'Job stats' table (dry run or real run) as {rule: count}."""
    stats: dict[str, int] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "Job stats:":
            for row in lines[i + 3 :]:
                parts = row.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    break
                stats[parts[0]] = int(parts[1])
            break
    return stats


#: the jobs that fetch, filter, split or train: what drawing from a finished folder never plans
DATA_JOBS = ("train", "fetch_dataset", "filter_dataset", "split_dataset", "collect_datasets")


def output_of(res: subprocess.CompletedProcess) -> str:
    """What a Snakemake run printed, stdout then stderr."""
    return res.stdout + res.stderr


def planned_jobs(ws: Workspace, *args: str) -> dict[str, int]:
    """The 'Job stats' of ``snakemake --cores 1 -n *args`` (which must succeed)."""
    res = ws.snakemake("--cores", "1", "-n", *args)
    assert res.returncode == 0, output_of(res)[-3000:]
    return job_stats(output_of(res))


def assert_no_data_or_training(ws: Workspace) -> None:
    """Neither `figures` nor `report` plans a data or training job in ``ws``."""
    for target in ("figures", "report"):
        stats = planned_jobs(ws, target)
        assert not set(stats) & set(DATA_JOBS), (target, stats)


def mtimes(root: Path, *folders: str) -> dict[str, int]:
    """Modification time (ns) of every file under ``folders`` of ``root``, by relative path."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns
            for f in folders for p in (root / f).rglob("*") if p.is_file()}


@contextlib.contextmanager
def restored(ws: Workspace, tmp: Path) -> Iterator[Workspace]:
    """Let a test change a shared workspace in place and put it back afterwards, its
    environment too (a copy elsewhere would not do: the fetch rule's params hold the absolute
    path of data/demo, so a moved project refetches)."""
    backup, env = tmp / "backup", dict(ws.env)
    shutil.copytree(ws.root, backup, symlinks=True)
    try:
        yield ws
    finally:
        shutil.rmtree(ws.root)
        shutil.move(backup, ws.root)
        ws.env = env
