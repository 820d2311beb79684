"""A real single-node SLURM cluster on localhost, for tests that exercise `--executor slurm`.

Why a real cluster rather than a mock: the SLURM profile is only worth something if sbatch, the
executor plugin's status queries and the job step (`srun` inside the allocation) work together.
The harness starts Debian's `munged`, `slurmctld` and `slurmd` (package `slurm-wlm`) with
private sockets, ports, state and logs under one temporary directory, so it neither needs nor
touches a system-wide SLURM/munge installation, and tears everything down afterwards.

Choices that make it work in an unprivileged-cgroup container:
- `ProctrackType=proctrack/linuxproc`, `TaskPlugin=task/none`: no cgroups needed.
- `AccountingStorageType=accounting_storage/none`: no slurmdbd/MySQL. Hence `sacct` cannot answer,
  and runs must pass `--slurm-status-command squeue` (see `SNAKEMAKE_ARGS`); `MinJobAge=600`
  keeps finished jobs visible to `squeue` long enough for the plugin (it recommends >= 120 s).
- `JobCompType=jobcomp/filetxt`: every finished job is appended to `jobcomp_log`, an independent
  record that jobs really went through SLURM.
- The node is described with `slurmd -C` (this machine's CPUs and memory) so it comes up `idle`
  instead of `inval`.

Used by the `slurm_cluster` fixture in tests/workflow/conftest.py; usable directly too:

    with SlurmCluster.start() as cluster:
        subprocess.run(["sinfo"], env=cluster.env)
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# Debian 12 packages that provide munged, slurmctld, slurmd and the client commands.
APT_PACKAGES = ("slurm-wlm", "munge")
REQUIRED_BINARIES = (
    "munged",
    "slurmctld",
    "slurmd",
    "sinfo",
    "sbatch",
    "squeue",
    "scancel",
    "srun",
)

CLIENT_COMMANDS = ("srun", "sbatch", "squeue", "scancel", "scontrol", "sinfo", "sacct")

PARTITION = "debug"
# Extra Snakemake arguments a run against this cluster needs (on top of `--executor slurm` or
# `--profile profiles/slurm`): no accounting database, so job status comes from squeue and
# there is no account to guess; status polled every second instead of 10-40 s so tests are quick.
SNAKEMAKE_ARGS = (
    "--slurm-status-command",
    "squeue",
    "--slurm-no-account",
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--seconds-between-status-checks",
    "1",
)


class SlurmHarnessError(RuntimeError):
    """The local cluster could not be started; the message carries the daemons' log tails."""


def missing_binaries() -> list[str]:
    """Names from REQUIRED_BINARIES that are not on PATH (also looks in /usr/sbin)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    return [b for b in REQUIRED_BINARIES if shutil.which(b, path=path) is None]


def install_with_apt() -> None:
    """Install APT_PACKAGES (needs root and a reachable Debian mirror)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update"], check=True, env=env, capture_output=True)
    subprocess.run(
        ["apt-get", "install", "-y", *APT_PACKAGES], check=True, env=env, capture_output=True
    )


def _free_port() -> int:
    # Bind-to-0 then close: a tiny race with other programs, acceptable for tests.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sbin(name: str) -> str:
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    found = shutil.which(name, path=path)
    if found is None:
        raise SlurmHarnessError(
            f"{name} not found; install Debian packages {' '.join(APT_PACKAGES)}"
        )
    return found


def _node_hardware() -> str:
    """This machine's node description as `slurmd -C` reports it, minus NodeName/UpTime."""
    out = subprocess.run([_sbin("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("NodeName="))
    return " ".join(tok for tok in line.split() if not tok.startswith("NodeName="))


def _tail(path: Path, n: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


@dataclass
class SlurmCluster:
    """Handle on a running local cluster. Create it with `SlurmCluster.start()`."""

    root: Path
    conf: Path
    env: dict[str, str]
    jobcomp_log: Path
    startup_seconds: float = 0.0
    partition: str = PARTITION
    _procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    # ----------------------------------------------------------------- start
    @classmethod
    def start(cls, timeout: float = 60.0) -> SlurmCluster:
        """Write configs, start munged, slurmctld and slurmd; return once the node is idle."""
        t0 = time.monotonic()
        # Short path: munge's socket path must fit in sun_path (108 bytes).
        root = Path(tempfile.mkdtemp(prefix="tbslurm-"))
        # munged insists that every directory above its socket is world-executable.
        root.chmod(0o755)
        for sub in ("munge", "state", "spool/slurmd-localhost", "log", "run"):
            (root / sub).mkdir(parents=True)
        # The key stays private (munged refuses a readable key); the socket sits in a
        # world-executable directory (munged refuses one that clients cannot traverse).
        (root / "munge").chmod(0o700)
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        sock_dir = root / "msock"
        sock_dir.mkdir(mode=0o755)
        sock = sock_dir / "munge.socket.2"

        conf = root / "slurm.conf"
        jobcomp = root / "log" / "jobcomp.txt"
        user = getpass.getuser()
        conf.write_text(
            _slurm_conf(
                root=root,
                sock=sock,
                user=user,
                ctld_port=_free_port(),
                slurmd_port=_free_port(),
                hardware=_node_hardware(),
                jobcomp=jobcomp,
            )
        )
        # snakemake-executor-plugin-slurm-jobstep (0.6.1) strips every SLURM_* variable except
        # the job id before its inner `srun`, SLURM_CONF included (jobstep plugin issue #164). Real
        # clusters keep slurm.conf at /etc/slurm or serve it configless; our private config is
        # reached through wrappers, first on PATH, that put SLURM_CONF back for every client
        # command (srun in the job step, squeue/scontrol in the rules' own shell commands).
        bin_dir = root / "bin"
        bin_dir.mkdir()
        for cmd in CLIENT_COMMANDS:
            wrapper = bin_dir / cmd
            wrapper.write_text(f'#!/bin/sh\nSLURM_CONF={conf} exec {_sbin(cmd)} "$@"\n')
            wrapper.chmod(0o755)
        env = dict(
            os.environ,
            SLURM_CONF=str(conf),
            PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        # A caller inside a SLURM job must not leak its allocation into ours.
        for k in [k for k in env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
            del env[k]
        cluster = cls(root=root, conf=conf, env=env, jobcomp_log=jobcomp)
        try:
            cluster._spawn(
                "munged",
                [
                    _sbin("munged"),
                    "-F",
                    "--force",
                    f"--key-file={key}",
                    f"--socket={sock}",
                    f"--pid-file={root / 'run' / 'munged.pid'}",
                    f"--log-file={root / 'log' / 'munged.log'}",
                    f"--seed-file={root / 'munge' / 'munged.seed'}",
                ],
            )
            cluster._wait_for(lambda: sock.exists(), timeout, "munged socket")
            cluster._spawn("slurmctld", [_sbin("slurmctld"), "-D", "-c", "-f", str(conf)])
            cluster._wait_for(cluster._ctld_answers, timeout, "slurmctld to answer")
            cluster._spawn("slurmd", [_sbin("slurmd"), "-D", "-N", "localhost", "-f", str(conf)])
            cluster._wait_for(cluster._node_idle, timeout, "node localhost to be idle")
        except BaseException:
            cluster.stop()
            raise
        cluster.startup_seconds = time.monotonic() - t0
        return cluster

    def _spawn(self, name: str, argv: list[str]) -> None:
        out = open(self.root / "log" / f"{name}.stdout", "wb")  # noqa: SIM115 (closed with proc)
        # New session: a Ctrl-C in the test runner does not hit the daemons before stop() runs.
        self._procs[name] = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
        )
        out.close()

    def _wait_for(self, predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self._procs.items():
                if proc.poll() is not None:
                    raise SlurmHarnessError(
                        f"{name} exited with {proc.returncode} while waiting for {what}\n"
                        + self.log_tails()
                    )
            if predicate():
                return
            time.sleep(0.2)
        raise SlurmHarnessError(
            f"timed out after {timeout:.0f}s waiting for {what}\n" + self.log_tails()
        )

    def _run(self, *argv: str, check: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, check=check, timeout=30
        )

    def _ctld_answers(self) -> bool:
        return self._run("scontrol", "ping").stdout.find("UP") >= 0

    def _node_idle(self) -> bool:
        r = self._run("sinfo", "-h", "-N", "-n", "localhost", "-o", "%T")
        return r.returncode == 0 and r.stdout.strip() == "idle"

    # -------------------------------------------------------------- queries
    def sinfo(self) -> str:
        return self._run("sinfo").stdout

    def completed_jobs(self) -> list[dict[str, str]]:
        """Finished jobs from the jobcomp/filetxt log: one dict of KEY=VALUE fields per job."""
        if not self.jobcomp_log.exists():
            return []
        jobs = []
        for line in self.jobcomp_log.read_text().splitlines():
            fields = dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", line))
            if fields:
                jobs.append(fields)
        return jobs

    def log_tails(self) -> str:
        logs = sorted((self.root / "log").glob("*"))
        return "\n".join(f"--- {p.name}\n{_tail(p)}" for p in logs)

    # ----------------------------------------------------------------- stop
    def stop(self) -> None:
        """Cancel remaining jobs, stop the daemons we started (by pid) and delete the tmp dir."""
        if "slurmctld" in self._procs and self._procs["slurmctld"].poll() is None:
            self._run("scancel", f"--partition={self.partition}")
            deadline = time.monotonic() + 20
            while (
                time.monotonic() < deadline
                and self._run("squeue", "-h", "-t", "RUNNING,PENDING,COMPLETING").stdout.strip()
            ):
                time.sleep(0.3)
        # Reverse start order: slurmd, slurmctld, munged.
        for name in reversed(list(self._procs)):
            proc = self._procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        self._procs.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> SlurmCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _slurm_conf(
    *,
    root: Path,
    sock: Path,
    user: str,
    ctld_port: int,
    slurmd_port: int,
    hardware: str,
    jobcomp: Path,
) -> str:
    return f"""\
# Generated by tests/workflow/slurm_cluster.py: a throwaway single-node cluster.
ClusterName=tabbench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/slurmd-%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={jobcomp}
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MinJobAge=600
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=localhost NodeAddr=127.0.0.1 {hardware} State=UNKNOWN
PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""
