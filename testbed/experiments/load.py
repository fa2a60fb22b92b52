"""What else used the CPUs while a run ran: load averages, other processes' CPU time and the
hypervisor's steal time, from snapshots before and after (psutil).

*Foreign* CPU time is every CPU second the host spent busy minus what this process and its
reaped descendants used (the coordinator, node managers, launchers and ranks of a run are all
that) and, inside a Slurm job, what the processes of the same job outside this process tree
used: node managers and ranks that ``srun`` started under ``slurmstepd`` are the run's too.
Those are found by the ``SLURM_JOB_ID`` in their environment, in process tables sampled while
the run runs (``JobWatch``), since they end before the run does.  *Steal* is time the
hypervisor gave this machine's virtual CPUs to someone else.  A run is *disturbed* when
foreign work took more than ``FOREIGN_LIMIT`` of one CPU on average, or steal more than
``STEAL_LIMIT`` of the host's CPU time.
"""

from __future__ import annotations

import os
import re
import resource
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import psutil

FOREIGN_LIMIT = 0.10
STEAL_LIMIT = 0.05
SAMPLE_S = 0.5


@dataclass(frozen=True)
class Snapshot:
    """The host's CPU counters at one moment (seconds, summed over CPUs)."""

    wall: float
    busy: float
    steal: float
    own: float
    loadavg: tuple[float, float, float]

    def as_dict(self) -> dict[str, Any]:
        """The snapshot as a plain dict."""
        return asdict(self)


def snapshot() -> Snapshot:
    """The host's busy and steal CPU time, this process tree's CPU time and the load average
    now."""
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    steal = getattr(times, "steal", 0.0)
    busy = sum(times) - idle - steal - getattr(times, "guest", 0.0) \
        - getattr(times, "guest_nice", 0.0)
    own = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        own += usage.ru_utime + usage.ru_stime
    return Snapshot(time.monotonic(), busy, steal, own, os.getloadavg())


def disturbance(before: Snapshot, after: Snapshot, cpus: int | None = None,
                job_cpu: float = 0.0) -> dict[str, Any]:
    """What other work took between two snapshots: foreign CPU seconds (less ``job_cpu``,
    the seconds that processes of the run's own Slurm job outside this process tree used) and
    their share of one CPU, steal seconds and their share of the host's CPU time, the load
    averages, and whether the run counts as disturbed (with why)."""
    cpus = cpus or psutil.cpu_count() or 1
    wall = max(after.wall - before.wall, 1e-9)
    foreign = max(0.0, (after.busy - before.busy) - (after.own - before.own) - job_cpu)
    steal = max(0.0, after.steal - before.steal)
    foreign_share, steal_share = foreign / wall, steal / (wall * cpus)
    why = []
    if foreign_share > FOREIGN_LIMIT:
        why.append(f"other processes used {foreign_share:.0%} of a CPU")
    if steal_share > STEAL_LIMIT:
        why.append(f"the hypervisor stole {steal_share:.0%} of the CPU time")
    return {"wall_s": round(wall, 3), "foreign_cpu_s": round(foreign, 3),
            "foreign_share": round(foreign_share, 4), "steal_s": round(steal, 3),
            "steal_share": round(steal_share, 4), "loadavg_before": before.loadavg,
            "loadavg_after": after.loadavg, "job_cpu_s": round(job_cpu, 3),
            "disturbed": bool(why), "why": "; ".join(why)}


@dataclass(frozen=True)
class Proc:
    """One process in a process table: its pid and start time (together, which process it
    is), the Slurm job in its environment (None without one, or when it cannot be read), its
    CPU time (user + system, s), and whether it is this process or one of its descendants
    (whose time ``resource.getrusage`` counts already)."""

    pid: int
    started: float
    job: str | None
    cpu: float
    ours: bool


def job_seconds(tables: Sequence[Sequence[Proc]], job: str) -> float:
    """CPU seconds the processes of Slurm job ``job`` outside this process tree used from the
    first of ``tables`` (process tables in the order they were taken) to the last: for each
    such process, its CPU time in the last table it is in, less its CPU time in the first
    table when it was already running then (what it used before the run is not the run's)."""
    if not tables:
        return 0.0
    first = {(p.pid, p.started): p.cpu for p in tables[0]}
    last: dict[tuple[int, float], float] = {}
    for table in tables:
        for p in table:
            if p.job == job and not p.ours:
                last[(p.pid, p.started)] = p.cpu
    return sum(cpu - first.get(key, 0.0) for key, cpu in last.items())


STEP_DAEMON = re.compile(r"slurmstepd: \[(\d+)[.\]]")


def step_daemon_job(title: str) -> str | None:
    """The Slurm job a step daemon works for, from its process title
    (``slurmstepd: [JOB.STEP]`` or ``slurmstepd: [JOB]``); None for any other title.  A step
    daemon is started by ``slurmd`` and carries no ``SLURM_JOB_ID`` of its own, but the CPU it
    spends starting and watching the job's steps is the job's."""
    found = STEP_DAEMON.match(title)
    return found[1] if found else None


def _job_of(proc: psutil.Process) -> str | None:
    try:
        job = proc.environ().get("SLURM_JOB_ID")
        return job if job is not None else step_daemon_job(" ".join(proc.cmdline()))
    except (psutil.Error, OSError):
        return None


def process_table(jobs: dict[tuple[int, float], str | None]) -> list[Proc]:
    """This host's processes now, as ``Proc``s; ``jobs`` caches each process's Slurm job by
    (pid, start time), since its environment does not change and is costly to read."""
    mine = {os.getpid(), *(c.pid for c in psutil.Process().children(recursive=True))}
    table = []
    for proc in psutil.process_iter(["pid", "create_time", "cpu_times"]):
        info = proc.info
        times = info["cpu_times"]
        if times is None or info["create_time"] is None:
            continue
        key = (info["pid"], info["create_time"])
        if key not in jobs:
            jobs[key] = _job_of(proc)
        table.append(Proc(info["pid"], info["create_time"], jobs[key],
                          times.user + times.system, info["pid"] in mine))
    return table


class JobWatch:
    """Samples the process table every ``SAMPLE_S`` seconds in a thread, from ``start`` to
    ``stop``, when this process runs in a Slurm job (else does nothing), so that ``stop``
    can say what the job's processes outside this process tree used meanwhile (their last
    sample: at most ``SAMPLE_S`` of a process's last CPU time is missed)."""

    def __init__(self, job: str | None = None) -> None:
        self.job = job if job is not None else os.environ.get("SLURM_JOB_ID")
        self._tables: list[list[Proc]] = []
        self._jobs: dict[tuple[int, float], str | None] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="job-watch", daemon=True)

    def _sample(self) -> None:
        while True:
            self._tables.append(process_table(self._jobs))
            if self._done.wait(SAMPLE_S):
                return

    def start(self) -> JobWatch:
        """Begin sampling (in a Slurm job only); this watch."""
        if self.job:
            self._thread.start()
        return self

    def stop(self) -> float:
        """Stop sampling, take a last table and give the job's CPU seconds since ``start``
        outside this process tree (0 outside a Slurm job)."""
        if not self.job:
            return 0.0
        self._done.set()
        self._thread.join()
        self._tables.append(process_table(self._jobs))
        return job_seconds(self._tables, self.job)
