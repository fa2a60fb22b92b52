"""``benchmarks.papers.reproduce --slurm``: the emulated papers (timed, on real processes) each run
as
one Slurm job on one exclusive node, which runs ``benchmarks.papers.reproduce --only NAME`` into the
same ``--out`` (a directory the nodes share) and so writes that paper's file there; the
simulated papers' runs are spread over Slurm tasks by ``testbed.experiments.slurm_spread``
from the process that was started.  ``job_args`` is pure."""

from __future__ import annotations

import contextlib
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks.harness import REPO
from benchmarks.papers.reproduce import parts
from testbed.experiments.slurm import Settings, slurm_command
from testbed.experiments.slurm_spread import queued

CODE = REPO
POLL_S = 2.0


def job_args(settings: Settings, name: str, size: str, out: Path, runs: Path) -> list[str]:
    """The ``sbatch`` command line that runs paper ``name`` at ``size`` alone on one exclusive
    node, its paper file into ``out`` and its run directories under ``runs``."""
    command = [sys.executable, "-m", "benchmarks.papers.reproduce", "--only", name, "--size", size,
               "--out", str(out), "--runs", str(runs)]
    args = ["sbatch", "--parsable", "--job-name", f"reproduce-{name}", "--nodes=1",
            "--exclusive", f"--chdir={CODE}", "--output", str(out / "slurm" / f"{name}.out")]
    args += [f"--partition={settings.partition}"] if settings.partition else []
    args += [f"--account={settings.account}"] if settings.account else []
    args += [f"--time={settings.time}"] if settings.time else []
    return [*args, *settings.options, "--wrap", shlex.join(command)]


@contextlib.contextmanager
def on_nodes(names: list[str], settings: Settings, size: str, out: Path, runs: Path,
             log: Callable[[str], None]) -> Iterator[Callable[[], list[str]]]:
    """Submit each paper of ``names`` as one exclusive job; give a function that waits until
    none of them is queued or running and returns the papers whose job did not (re)write
    their file, each with the log to read.  Leaving the ``with`` (also on Ctrl-C) cancels
    the jobs still queued or running, by their ids."""
    (out / "slurm").mkdir(parents=True, exist_ok=True)
    began = time.time()
    jobs: dict[str, str] = {}

    def wait() -> list[str]:
        while any(queued(job) for job in jobs.values()):
            time.sleep(POLL_S)
        return [f"{name}: its job {job} wrote no paper file (see "
                f"{out / 'slurm' / f'{name}.out'})" for name, job in jobs.items()
                if not parts.path(out, name).is_file()
                or parts.path(out, name).stat().st_mtime < began]

    try:
        for name in names:
            jobs[name] = slurm_command(job_args(settings, name, size, out, runs)
                                       ).stdout.strip().split(";")[0]
            log(f"{name}: Slurm job {jobs[name]} (one exclusive node)")
        yield wait
    finally:
        waiting = [job for job in jobs.values() if queued(job)]
        if waiting:
            slurm_command(["scancel", *waiting], check=False)
