"""Small, Linux-specific process helpers: pidfd signals, process reads, sweeping a run's processes.

Every process a run starts carries ``TESTBED_RUN=<run id>`` in its environment (``mpiexec``
passes the environment on to the ranks), which is how a sweep finds them even after they have
left our process tree: hydra puts every rank in a session of its own.

psutil reads environments, CPU times, memory, thread ids and states. The rest is by hand where
psutil has no such call (pidfds, fault counts, the child subreaper), where its call costs far
more than a hot path can pay (child lists, shared-memory mappings) and for swap counts, which
it reports in bytes of assumed 4 KiB pages.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Collection
from dataclasses import dataclass

import psutil

from testbed.emulation.launchers import ALL_SEGMENT_PREFIXES, Launcher

MARKER = "TESTBED_RUN"
SHM_PREFIX = "/dev/shm/"
_PR_SET_CHILD_SUBREAPER = 36
_GONE = (psutil.NoSuchProcess, psutil.AccessDenied)
# psutil's state names back to the kernel's letters, which callers compare against.
_STATE_LETTERS = {
    psutil.STATUS_RUNNING: "R", psutil.STATUS_SLEEPING: "S", psutil.STATUS_DISK_SLEEP: "D",
    psutil.STATUS_STOPPED: "T", psutil.STATUS_TRACING_STOP: "t", psutil.STATUS_ZOMBIE: "Z",
    psutil.STATUS_DEAD: "X", psutil.STATUS_WAKING: "W", psutil.STATUS_PARKED: "P",
    psutil.STATUS_IDLE: "I",
}


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
    """The environment of ``pid`` ({} when unreadable, gone or a zombie)."""
    try:
        return psutil.Process(pid).environ()
    except _GONE:
        return {}


@dataclass(frozen=True)
class Usage:
    """A process's CPU seconds (user + system), minor and major page faults, resident KiB."""

    cpu_s: float
    minor_faults: int
    major_faults: int
    rss_kib: int


def _faults(pid: int) -> tuple[int, int] | None:
    """Minor and major page faults of ``pid`` since it started, or None when gone.

    Read by hand from ``/proc/<pid>/stat``: psutil has no page-fault counts.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return int(fields[7]), int(fields[9])


def usage(pid: int) -> Usage | None:
    """CPU seconds (user + system), minor and major faults and KiB resident of ``pid``.

    None when the process is gone.
    """
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            times = proc.cpu_times()
            rss = proc.memory_info().rss
    except _GONE:
        return None
    faults = _faults(pid)
    if faults is None:
        return None
    return Usage(times.user + times.system, faults[0], faults[1], rss // 1024)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (None when gone)."""
    try:
        times = psutil.Process(pid).cpu_times()
    except _GONE:
        return None
    return times.user + times.system


def swap_pages() -> tuple[int, int]:
    """The machine's pages swapped in and out since boot (``/proc/vmstat``).

    Read by hand: ``psutil.swap_memory()`` turns these counts into bytes as if every page
    were 4 KiB, and reads ``/proc/meminfo`` besides.
    """
    counts = {}
    with open("/proc/vmstat") as f:
        for line in f:
            key, _, value = line.partition(" ")
            if key in ("pswpin", "pswpout"):
                counts[key] = int(value)
    return counts.get("pswpin", 0), counts.get("pswpout", 0)


def state(pid: int) -> str | None:
    """The one-letter scheduler state of ``pid`` (R, S, D, T, t, Z...) or None when gone."""
    try:
        status = psutil.Process(pid).status()
    except _GONE:
        return None
    return _STATE_LETTERS.get(status, "?")


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` on any of its threads.

    Read by hand from ``/proc/<pid>/task/<tid>/children``: psutil's ``children()`` reads the
    stat file of every process on the machine (ten times the cost with 80 processes up), and
    pid discovery walks the tree every 2 ms.
    """
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
    """Bind every thread of ``pid`` to host CPU ``cpu`` (silently skips vanished threads).

    psutil's ``cpu_affinity()`` binds only the thread whose id is ``pid``, so each thread
    psutil lists is bound with ``os.sched_setaffinity``.
    """
    try:
        threads = psutil.Process(pid).threads()
    except _GONE:
        return
    for thread in threads:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(thread.id, {cpu})


RANK_POLICIES = {"other": os.SCHED_OTHER, "batch": os.SCHED_BATCH, "idle": os.SCHED_IDLE}


@dataclass(frozen=True)
class RankPriority:
    """How every rank is scheduled beside the coordinator: a Linux policy (``other``,
    ``batch`` or ``idle``) and a niceness (0-19).  Any user may set these on their own
    processes.  ``batch`` tasks do not preempt others on waking and ``idle`` ones have the
    lowest weight, so the ranks continued in a switch (and their launchers, which wake as
    ranks stop and continue) seldom preempt an unprivileged coordinator in the middle of it.
    Where autogroup puts each rank's session in a group of its own, a rank woken on the
    coordinator's CPU still does; the node manager therefore continues those last."""

    policy: str = "other"
    nice: int = 0

    @classmethod
    def parse(cls, text: str) -> RankPriority:
        """``POLICY[:NICE]`` (``normal`` means ``other:0``); ``ValueError`` saying why not."""
        name, _, nice = text.partition(":")
        name = "other" if name == "normal" else name
        if name not in RANK_POLICIES:
            raise ValueError(f"not a rank policy: {name!r} (normal, other, batch or idle)")
        if nice and not (nice.isdigit() and int(nice) <= 19):
            raise ValueError(f"not a niceness 0-19: {nice!r}")
        return cls(name, int(nice or 0))

    def describe(self) -> str:
        """Policy and niceness, e.g. ``batch, nice 0``."""
        return f"{self.policy}, nice {self.nice}"

    def apply(self, pid: int) -> None:
        """Set every thread of ``pid`` to this policy and niceness (vanished ones skipped)."""
        if self == RankPriority():
            return
        try:
            threads = psutil.Process(pid).threads()
        except _GONE:
            return
        for thread in threads:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(thread.id, RANK_POLICIES[self.policy], os.sched_param(0))
                os.setpriority(os.PRIO_PROCESS, thread.id, self.nice)


AUTO_UNPRIVILEGED = RankPriority("idle", 0)


def rank_priority(setting: str, coordinator: str) -> RankPriority:
    """The ranks' priority for ``--rank-priority`` ``setting`` when the coordinator runs at
    ``coordinator`` (``raise_priority``'s answer): ``auto`` keeps them as they are beside a
    real-time coordinator and makes them ``idle`` otherwise (measured best; see README)."""
    if setting != "auto":
        return RankPriority.parse(setting)
    if coordinator.startswith("SCHED_FIFO"):
        return RankPriority()
    return AUTO_UNPRIVILEGED


def shm_segments(pid: int) -> set[str]:
    """Files under /dev/shm that ``pid`` has mapped (MPICH's shared-memory segments).

    Read by hand from ``/proc/<pid>/maps``: psutil's ``memory_maps()`` reads ``smaps``, for
    which the kernel walks every page of every mapping (ten times the cost), and
    ``orphan_segments`` reads the mappings of every process on the machine.
    """
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
    """Pids of live processes carrying this run's marker (and, if given, this job's).

    Zombies never match: psutil reports that a zombie has no environment left to read.
    """
    me = os.getpid()
    found = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            env = proc.environ()
        except _GONE:
            continue
        if env.get(MARKER) == run_id and (job is None or env.get("TESTBED_JOB") == job):
            found.append(proc.pid)
    return found


def job_processes(run_id: str, job: str, unmarked: set[int]) -> dict[int, dict[str, str]]:
    """Every process of the run's ``job`` on this host, with its environment.

    Pids whose environment was read and lacks the run's marker are added to ``unmarked`` and
    not read again, so that polling while a job starts reads only new processes.  (A rank is
    forked by a marked launcher process, so it never shows an unmarked environment; one read
    in the middle of an exec shows none at all, and is read again.)
    """
    found = {}
    for pid in psutil.pids():
        if pid in unmarked:
            continue
        env = read_environ(pid)
        if env.get(MARKER) != run_id:
            if env:
                unmarked.add(pid)
        elif env.get("TESTBED_JOB") == job:
            found[pid] = env
    return found


def marked_ranks(run_id: str, job: str, unmarked: set[int], launcher: Launcher
                 ) -> tuple[dict[int, int], list[int]]:
    """The rank processes (world rank -> pid, as ``launcher`` names them) of the run's ``job``
    on this host, and its other processes here (its launcher's, and any it spawned);
    ``unmarked`` as for ``job_processes``."""
    found, others = {}, []
    for pid, env in job_processes(run_id, job, unmarked).items():
        rank = launcher.world_rank(env)
        if rank is None:
            others.append(pid)
        else:
            found[rank] = pid
    return found, others


def extras(envs: dict[int, dict[str, str]], ranks: set[int], launcher: Launcher,
           local: Collection[int]) -> list[int]:
    """Of a job's processes (pid -> environment), those that are neither its ranks (pids
    ``ranks``) nor its launcher's and that belong to this node: every process whose
    environment names an MPI rank as ``launcher`` sets it, which is each process the job
    spawned and each one a rank started, but of the job's own world only the ranks ``local``
    (world ranks placed on this node) and what they started.  Another node's rank, and what it
    started, are that node's to stop and continue, even when they run on this host."""
    return [pid for pid, env in envs.items() if pid not in ranks and launcher.names_rank(env)
            and launcher.world_rank(env) in (None, *local)]


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


_LIBC = ctypes.CDLL(None, use_errno=True)


def current_cpu() -> int:
    """The CPU the calling thread runs on at this instant (``sched_getcpu``, from the vDSO:
    well under a microsecond; neither ``os`` nor psutil offers it so cheaply)."""
    return _LIBC.sched_getcpu()


def become_subreaper() -> None:
    """Adopt orphaned descendants (an mpiexec's proxy) so that we can reap them.

    Through ``prctl`` by hand: neither psutil nor ``os`` offers it.
    """
    _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


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


def orphan_segments(since: float, prefixes: tuple[str, ...] = ALL_SEGMENT_PREFIXES
                    ) -> set[str]:
    """MPI shared-memory files (names starting with one of ``prefixes``) created since
    ``since`` (epoch s) that no live process maps.

    Ranks killed by a signal cannot remove their segments (nor can a rank stopped between
    creating and mapping one); once nobody maps one it is garbage.
    """
    fresh = set()
    for name in os.listdir(SHM_PREFIX):
        path = SHM_PREFIX + name
        with contextlib.suppress(OSError):
            if name.startswith(prefixes) and os.stat(path).st_ctime >= since:
                fresh.add(path)
    if not fresh:
        return fresh
    for pid in psutil.pids():
        fresh -= shm_segments(pid)
    return fresh
