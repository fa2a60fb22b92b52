"""Small, Linux-specific process helpers: pidfd signals, /proc reads, sweeping a run's processes.

Every process a run starts carries ``TESTBED_RUN=<run id>`` in its environment (``mpiexec``
passes the environment on to the ranks), which is how a sweep finds them even after they have
left our process tree: hydra puts every rank in a session of its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from dataclasses import dataclass

MARKER = "TESTBED_RUN"
SHM_PREFIX = "/dev/shm/"
MPI_SEGMENT_PREFIXES = ("mpich_shm_", "ucx_shm_posix_")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
_PR_SET_CHILD_SUBREAPER = 36


def open_pidfd(pid: int) -> int | None:
    """A pidfd for ``pid`` (signals sent through it can never hit a recycled pid), or None."""
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def send(pidfd: int, sig: int) -> bool:
    """Send ``sig`` through ``pidfd``; False when the process is already gone."""
    try:
        signal.pidfd_send_signal(pidfd, sig)
    except ProcessLookupError:
        return False
    return True


def read_environ(pid: int) -> dict[str, str]:
    """The environment of ``pid`` ({} when unreadable or gone)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in data.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


@dataclass(frozen=True)
class Usage:
    """What ``/proc/<pid>/stat`` says of a process: CPU seconds, faults, resident KiB."""

    cpu_s: float
    minor_faults: int
    major_faults: int
    rss_kib: int


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2 :].split()


def usage(pid: int) -> Usage | None:
    """CPU seconds (user + system), minor and major faults and RSS of ``pid``; None when gone."""
    fields = _stat(pid)
    if fields is None:
        return None
    return Usage((int(fields[11]) + int(fields[12])) / _CLOCK_TICKS, int(fields[7]),
                 int(fields[9]), int(fields[21]) * _PAGE_KIB)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (None when gone)."""
    sample = usage(pid)
    return None if sample is None else sample.cpu_s


def swap_pages() -> tuple[int, int]:
    """The machine's pages swapped in and out since boot (``/proc/vmstat``)."""
    counts = {}
    with open("/proc/vmstat") as f:
        for line in f:
            key, _, value = line.partition(" ")
            if key in ("pswpin", "pswpout"):
                counts[key] = int(value)
    return counts.get("pswpin", 0), counts.get("pswpout", 0)


def state(pid: int) -> str | None:
    """The one-letter scheduler state of ``pid`` (R, S, D, T, Z...) or None when gone."""
    fields = _stat(pid)
    return None if fields is None else fields[0].decode()


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` on any of its threads."""
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as f:
            kids.extend(int(k) for k in f.read().split())
    return kids


def descendants(pid: int) -> list[int]:
    """All descendants of ``pid``, parents before children."""
    found, frontier = [], [pid]
    while frontier:
        kids = [k for p in frontier for k in children(p)]
        found.extend(kids)
        frontier = kids
    return found


def pin(pid: int, cpu: int) -> None:
    """Bind every thread of ``pid`` to host CPU ``cpu`` (silently skips vanished threads)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(tid), {cpu})


def shm_segments(pid: int) -> set[str]:
    """Files under /dev/shm that ``pid`` has mapped (MPICH's shared-memory segments)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return set()
    paths = (line.split(None, 5)[-1] for line in lines if SHM_PREFIX in line)
    return {p.removesuffix(" (deleted)") for p in paths if p.startswith(SHM_PREFIX)}


def unlink_all(paths: set[str]) -> None:
    """Remove files that may already be gone."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def marked(run_id: str, job: str | None = None) -> list[int]:
    """Pids of live processes carrying this run's marker (and, if given, this job's)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        env = read_environ(int(entry))
        mine = env.get(MARKER) == run_id and (job is None or env.get("TESTBED_JOB") == job)
        if mine and state(int(entry)) not in (None, "Z"):
            found.append(int(entry))
    return found


def kill_marked(run_id: str, job: str | None = None, rounds: int = 50) -> int:
    """SIGKILL every live process of the run (or job) until none is left; return how many.

    Shared-memory segments the victims had mapped are unlinked, since SIGKILLed MPICH ranks
    cannot remove their own.
    """
    killed: set[int] = set()
    for _ in range(rounds):
        victims = marked(run_id, job)
        if not victims:
            break
        segments: set[str] = set()
        for pid in victims:
            segments |= shm_segments(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        unlink_all(segments)
        killed.update(victims)
        time.sleep(0.02)
    return len(killed)


def become_subreaper() -> None:
    """Adopt orphaned descendants (an mpiexec's proxy) so that we can reap them."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans(keep: set[int]) -> None:
    """Reap exited children that are not in ``keep`` (those belong to a ``Popen``)."""
    for pid in children(os.getpid()):
        if pid not in keep and state(pid) == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def raise_priority() -> str:
    """Make this process real-time (SCHED_FIFO 1) if allowed; return the policy now in force.

    ``SCHED_RESET_ON_FORK`` keeps children (mpiexec, ranks, the watchdog) at normal priority.
    A real-time coordinator is not preempted by the ranks it wakes in the middle of a
    multi-context-switch.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(1))
    except (PermissionError, OSError):
        return "SCHED_OTHER (real-time priority not permitted)"
    return "SCHED_FIFO 1, reset on fork"


def orphan_segments(since: float) -> set[str]:
    """MPI shared-memory files created since ``since`` (epoch s) that no live process maps.

    Ranks killed by a signal cannot remove their segments (nor can a rank stopped between
    creating and mapping one); once nobody maps one it is garbage.
    """
    fresh = set()
    for name in os.listdir(SHM_PREFIX):
        path = SHM_PREFIX + name
        with contextlib.suppress(OSError):
            if name.startswith(MPI_SEGMENT_PREFIXES) and os.stat(path).st_ctime >= since:
                fresh.add(path)
    if not fresh:
        return fresh
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fresh -= shm_segments(int(entry))
    return fresh
