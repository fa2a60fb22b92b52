"""The node manager (THESIS §4.3.4-4.3.5): launches, stops, continues and kills ranks on a node.

The NM that owns a job's first PE is the job's launcher: it runs the MPI's launcher (never
through a shell; ``testbed.emulation.launchers`` says how for each MPI) with every rank bound to
its PE's CPU, finds the rank processes, and reports their pids
and, later, the job's termination.  Every NM holding one of the job's PEs asks its node policy
which of its processes run (and whether coscheduled) after each heartbeat, and, under FCS,
after each block or unblock the shim reports; all outgoing processes are stopped before any
incoming one is continued.

The NM creates each local rank's shared record before launch and removes it when the job
ends.  It adds to the record the time the rank spent stopped before continuing it, so neither
the shim nor the benchmark counts stopped time as communication wait (THESIS §3.4).  With the
shim, the NM also preloads the library into the ranks (through the launcher), reads
block/unblock datagrams on its socket, and sets each rank's spin as its node policy says
(under FCS, by class).

``TESTBED_DELAY_SWITCH_US`` (off by default, ``testbed.emulation.injection``) makes the NM
busy-wait that long in every switch that stops or continues a rank, between the stops and the
continues: a known slowdown for checking that the overhead suite detects one.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from testbed.emulation import injection, paging, procs
from testbed.emulation.commands import command_problem
from testbed.emulation.launch_tmp import LaunchDirs
from testbed.emulation.launchers import Launcher
from testbed.emulation.memory import NodeCgroups
from testbed.emulation.messages import (
    Heartbeat,
    JobCounters,
    KillJob,
    LaunchFailure,
    LaunchJob,
    MoveFailed,
    MoveJob,
    NodeSample,
    Paged,
    PidInfo,
    Release,
    Shutdown,
    SwitchDone,
    Termination,
)
from testbed.emulation.shim import EventSocket
from testbed.hang import RankSample
from testbed.machine import Machine, Node
from testbed.policies.node import ClassChange, GangNode, Proc, ProcKey
from testbed.policies.spin import Spin
from testbed.shim_record import Record, record_path

SAMPLE_INTERVAL = 0.5


def _busy_wait(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


@dataclass(frozen=True)
class ShimSetup:
    """The shim for a run: the library to preload, the spin ranks start with, and whether the
    jobs' collectives are the blocking calls (the same for every rank of a job)."""

    library: str
    spin: Spin
    native_collectives: bool


# The usage fields of a rank whose process was never found (it had ended, or never started,
# before discovery saw it): unknown, not zero.
UNSEEN: dict[str, object] = dict.fromkeys(("cpu_s", "minor_faults", "major_faults",
                                           "peak_rss_kib"))

Message = Heartbeat | LaunchJob | PidInfo | KillJob | Release | Shutdown | MoveJob


@dataclass
class Rank:
    """One rank process on this node."""

    rank: int
    pe: int
    pid: int
    pidfd: int
    last: procs.Usage | None = None
    peak_rss_kib: int = 0

    def sample(self) -> None:
        """Read the process's usage from /proc (kept when it is gone)."""
        now = procs.usage(self.pid)
        if now is not None:
            self.last = now
            self.peak_rss_kib = max(self.peak_rss_kib, now.rss_kib)

    def counters(self) -> dict[str, object]:
        """The last sample as JSON-ready fields."""
        last = self.last or procs.Usage(0.0, 0, 0, 0)
        return {"cpu_s": round(last.cpu_s, 3), "minor_faults": last.minor_faults,
                "major_faults": last.major_faults, "peak_rss_kib": self.peak_rss_kib}


@dataclass
class LocalJob:
    """What this NM knows of a job: its local PEs by rank, its ranks, its launcher, and the
    other processes it runs here (stopped and continued with its ranks)."""

    job: str
    local_pes: dict[int, int]
    size: int
    launched_at: float
    launched_epoch: float = 0.0
    ranks: dict[int, Rank] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = None
    pidfd: int | None = None
    stderr_path: str = ""
    kill_reason: str | None = None
    reported: bool = False
    found: dict[int, int] = field(default_factory=dict)
    prioritised: set[int] = field(default_factory=set)
    extras: dict[int, int] = field(default_factory=dict)
    """Its other working processes here (spawned, or started by a rank): pid -> pidfd."""
    launchers: set[int] = field(default_factory=set)


def _last_line(path: str) -> str:
    with contextlib.suppress(OSError), open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 4096))
        lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
        lines = [ln for ln in lines if ln and not set(ln) <= {"=", "-", " "}]
        return lines[-1][:300] if lines else ""
    return ""


class NodeManager:
    """Node manager for one node; ``clock()`` gives seconds since the run started."""

    def __init__(self, node: Node, machine: Machine, launcher: Launcher, env: dict[str, str],
                 run_id: str, clock: Callable[[], float], policy: GangNode,
                 shim: ShimSetup | None = None, memory: NodeCgroups | None = None,
                 page_out: bool = False, page_in: bool = False, scan: bool = False) -> None:
        self.node = node
        self.machine = machine
        self.launcher = launcher
        self.env = env
        self.run_id = run_id
        self.clock = clock
        self.policy = policy
        self.shim = shim
        self.memory = memory
        self.page_out = page_out
        self.page_in = page_in
        self.paged: list[Paged] = []
        self.jobs: dict[str, LocalJob] = {}
        self.active: dict[ProcKey, bool] = {}
        self.records: dict[ProcKey, Record] = {}
        self.record_keys: dict[int, ProcKey] = {}     # the shim's record ids
        self.record_ids = itertools.count()
        self.stopped_at: dict[ProcKey, float] = {}
        self.spins: dict[ProcKey, Spin] = {}
        self.events = EventSocket(f"testbed-{run_id}-nm{node.index}") if shim else None
        self.last_sample = 0.0
        self.scan = scan
        self.unmarked: set[int] = set()
        self.rank_priority = procs.RankPriority()
        self.signalled_at: float | None = None
        self.switch_delay = injection.switch_delay_s(env)
        self.launch_dirs: LaunchDirs | None = None

    def handle(self, msg: Message) -> list[object]:
        """Carry out one message from the MM; return the replies."""
        match msg:
            case Heartbeat():
                self.policy.heartbeat(msg.jobs, msg.slot)
                self.signalled_at = None
                stopped, continued = self._apply()
                done = self.clock() if self.signalled_at is None else self.signalled_at
                latency = done - msg.sent
                changes = self._classify()
                if changes:
                    self._apply()
                paged, self.paged = self.paged, []
                return [SwitchDone(msg.seq, self.node.index, stopped, continued, latency),
                        *changes, *paged]
            case LaunchJob():
                return self._launch(msg)
            case PidInfo():
                self._adopt(msg.job, msg.pids)
                return []
            case KillJob():
                self._kill(msg.job, msg.reason)
                return []
            case Release():
                return self._forget(msg.job)
            case MoveJob():
                return self._move(msg)
            case Shutdown():
                for job in list(self.jobs):
                    self._kill(job, msg.reason)
                return []
        raise TypeError(f"node manager {self.node.index}: unexpected message {msg!r}")

    def launcher_fd(self, job: str) -> int | None:
        """The pidfd of ``job``'s mpiexec if this NM launched it and it has not been reaped."""
        local = self.jobs.get(job)
        return local.pidfd if local is not None else None

    def launcher_fds(self) -> dict[int, str]:
        """pidfds of the mpiexec processes this NM launched, mapped to their job."""
        return {j.pidfd: j.job for j in self.jobs.values() if j.pidfd is not None}

    def awaiting_pids(self) -> bool:
        """True while a job launched here (any job with ranks here, with ``scan``) has ranks not
        found yet."""
        return any((self.scan or j.popen is not None) and not j.reported
                   for j in self.jobs.values())

    def _launch(self, msg: LaunchJob) -> list[object]:
        local = {r: pe for r, pe in enumerate(msg.pes) if pe in self.node.pes}
        if not local:
            return []
        job = LocalJob(msg.job, local, len(msg.pes), self.clock())
        self.jobs[msg.job] = job
        self.unmarked.clear()           # a pid freed and reused since must not hide a rank
        for rank, pe in local.items():
            self.policy.add(Proc(msg.job, rank, pe, msg.slot))
            key = (msg.job, rank)
            spin = self.shim.spin if self.shim else Spin("forever")
            record_id = next(self.record_ids)
            self.records[key] = Record.create(
                record_path(self.run_id, msg.job, rank), record_id, msg.job, rank,
                self.events.name if self.events else "", spin,
                bool(self.shim and self.shim.native_collectives))
            self.spins[key] = spin
            self.record_keys[record_id] = key
        if msg.run_now:
            self.policy.heartbeat(self.policy.jobs | {msg.job}, self.policy.slot)
            self._apply()
        if msg.pes[0] not in self.node.pes:
            return []
        if self.launch_dirs is None:
            self.launch_dirs = LaunchDirs(f"testbed-{self.run_id}-nm{self.node.index}")
        base = {**self.env, **dict(msg.env)}
        argv, binding = self._placement(msg.pes, msg.argv, base)
        env = self.launch_dirs.env(msg.job, {**base, **binding,
                                             procs.MARKER: self.env[procs.MARKER],
                                             "TESTBED_JOB": msg.job})
        problem = command_problem(msg.argv[0], env, msg.cwd or os.getcwd())
        if problem is not None:
            return [LaunchFailure(msg.job, problem)]
        try:
            with open(msg.stdout, "ab") as out, open(msg.stderr, "ab") as err:
                job.popen = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=err, start_new_session=True, cwd=msg.cwd)
        except OSError as exc:
            return [LaunchFailure(msg.job, f"cannot run {argv[0]} in {msg.cwd or '.'}: "
                                           f"{exc.strerror}")]
        job.launched_epoch = time.time()
        self.rank_priority.apply(job.popen.pid)     # inherited by what it starts from now on
        job.pidfd = procs.open_pidfd(job.popen.pid)
        job.stderr_path = msg.stderr
        return []

    def _placement(self, pes: tuple[int, ...], argv: tuple[str, ...], env: dict[str, str]
                   ) -> tuple[list[str], dict[str, str]]:
        """The launcher's command line and extra environment running ``argv`` as rank i on
        ``pes[i]``: on one host, bound to the PEs' CPUs; across hosts, on the PEs' hosts in
        rank order (each host's NM pins its own ranks); the shim preloaded if there is one.
        ``env``: the launch's environment without the extra."""
        preload = self.shim.library if self.shim else ""
        if not self.machine.hosts:
            return self.launcher.job(argv, [self.machine.cpus[pe] for pe in pes], None, preload,
                                     env)
        names = [self.machine.hosts[self.machine.node_of(pe).index].name for pe in pes]
        return self.launcher.job(argv, None, names, preload, env)

    def discover(self) -> list[PidInfo]:
        """Find the rank processes of jobs launched here; report jobs whose ranks are all found.

        Ranks on this node are adopted as soon as they are seen, so that a rank of a job whose
        slot is not current is stopped at once.  With ``scan`` (a node manager of its own on
        each host) every NM finds its own ranks among the run's processes on its host and
        reports those.
        """
        found = []
        for job in self.jobs.values():
            if job.reported or (job.popen is None and not self.scan):
                continue
            if self.scan:
                ranks, others = procs.marked_ranks(self.run_id, job.job, self.unmarked,
                                                   self.launcher)
                job.found.update((r, pid) for r, pid in ranks.items() if r in job.local_pes)
                self._prioritise(job, others)
            else:
                known = set(job.found.values())
                tree = procs.descendants(job.popen.pid)
                self._prioritise(job, tree)
                for pid in tree:
                    if pid in known:
                        continue
                    rank = self.launcher.world_rank(procs.read_environ(pid))
                    if rank is not None:
                        job.found[rank] = pid
            self._adopt(job.job, job.found)
            if len(job.found) == (len(job.local_pes) if self.scan else job.size):
                job.reported = True
                found.append(PidInfo(job.job, dict(job.found), self.clock() - job.launched_at))
        return found

    def _prioritise(self, job: LocalJob, pids: list[int]) -> None:
        """Give the job's launcher processes (hydra's proxies, which wake whenever a rank
        stops or continues) the ranks' priority, once each."""
        for pid in pids:
            if pid not in job.prioritised:
                job.prioritised.add(pid)
                self.rank_priority.apply(pid)

    def _adopt(self, name: str, pids: dict[int, int]) -> None:
        job = self.jobs.get(name)
        if job is None:
            return
        for rank, pid in pids.items():
            if rank in job.ranks or rank not in job.local_pes:
                continue
            pidfd = procs.open_pidfd(pid)
            if pidfd is None:
                continue
            pe = job.local_pes[rank]
            job.ranks[rank] = Rank(rank, pe, pid, pidfd)
            job.ranks[rank].sample()
            if (name, rank) not in self.active:
                self._signal((name, rank), signal.SIGSTOP)
            procs.pin(pid, self.machine.cpus[pe])
            self.rank_priority.apply(pid)
            if self.memory is not None:
                self.memory.add(self.node.index, pid)

    def _apply(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Make the node policy's decision real; return the jobs stopped and continued.

        Outgoing processes stop first, then the coscheduled flags change, then incoming
        processes continue, so no wait is counted under the wrong flag."""
        wanted = self.policy.decide()
        outgoing = [k for k in self.active if k not in wanted]
        incoming = [k for k in wanted if k not in self.active]
        for key in outgoing:
            self._signal(key, signal.SIGSTOP)
        for name in {k[0] for k in outgoing} - {k[0] for k in wanted}:
            self._signal_extras(name, signal.SIGSTOP)
        if self.page_out:
            self._page(outgoing, "out", paging.page_out)
        for key, coscheduled in wanted.items():
            record = self.records.get(key)
            if record is None:
                continue
            if self.active.get(key) != coscheduled:
                record.set_coscheduled(coscheduled)
            spin = self.policy.spin_of(key, coscheduled)
            if spin is not None and spin != self.spins.get(key):
                record.set_spin(spin)
                self.spins[key] = spin
        if self.page_in:
            self._page(incoming, "in", paging.page_in)
        if self.switch_delay and (outgoing or incoming):
            _busy_wait(self.switch_delay)
        for key in self._ours_last(incoming):
            self._signal(key, signal.SIGCONT)
        for name in {k[0] for k in incoming} - {k[0] for k in self.active}:
            self._signal_extras(name, signal.SIGCONT)
        self.active = wanted
        return (tuple(sorted({k[0] for k in outgoing})),
                tuple(sorted({k[0] for k in incoming})))

    def _move(self, msg: MoveJob) -> list[object]:
        """Pin the job's ranks on this node to their new PEs' CPUs (every thread), or say why
        not: its ranks would change nodes, or they have not all been found yet."""
        job = self.jobs.get(msg.job)
        moved = {rank: pe for rank, pe in enumerate(msg.pes) if pe in self.node.pes}
        if job is None and not moved:
            return []
        if job is None or set(moved) != set(job.local_pes):
            return [MoveFailed(msg.job, "its ranks would change nodes")]
        if len(job.ranks) < len(job.local_pes):
            return [MoveFailed(msg.job, "its ranks have not all been found yet")]
        for rank, pe in moved.items():
            procs.pin(job.ranks[rank].pid, self.machine.cpus[pe])
            job.ranks[rank].pe = pe
            job.local_pes[rank] = pe
            self.policy.add(Proc(msg.job, rank, pe, msg.slot))
        return []

    def _page(self, keys: list[ProcKey], direction: str,
              move: Callable[[int], paging.Moved]) -> None:
        """Move the memory of the ranks ``keys`` out to swap or back in, job by job (T3D:
        a preempted job's state goes to disk); each job's totals become a ``Paged`` reply."""
        by_job: dict[str, list[int]] = {}
        for job_name, rank in keys:
            job = self.jobs.get(job_name)
            if job is not None and rank in job.ranks:
                by_job.setdefault(job_name, []).append(job.ranks[rank].pid)
        for job_name, pids in by_job.items():
            moves = [move(pid) for pid in pids]
            self.paged.append(Paged(job_name, direction, sum(m.seconds for m in moves),
                                    sum(m.swap_kib_before for m in moves),
                                    sum(m.swap_kib_after for m in moves)))

    def _ours_last(self, keys: list[ProcKey]) -> list[ProcKey]:
        """``keys`` with the ranks pinned to the CPU we run on moved to the end.

        Without real-time priority a rank continued on our CPU can take it from us for a
        whole kernel time slice (about 1.5 ms), even at ``SCHED_IDLE`` where autogroup puts
        each rank's session in a group of its own; continued last, it delays no other rank."""
        here = procs.current_cpu()

        def on_our_cpu(key: ProcKey) -> bool:
            job = self.jobs.get(key[0])
            rank = job.ranks.get(key[1]) if job else None
            return rank is not None and self.machine.cpus[rank.pe] == here
        return sorted(keys, key=on_our_cpu)

    def _signal(self, key: ProcKey, sig: int) -> None:
        """Stop or continue one rank, keeping its record's stopped time up to date."""
        job = self.jobs.get(key[0])
        rank = job.ranks.get(key[1]) if job else None
        if rank is None:
            return
        if sig == signal.SIGSTOP:
            self.stopped_at.setdefault(key, time.monotonic())
        elif key in self.stopped_at and key in self.records:
            self.records[key].add_stopped(time.monotonic() - self.stopped_at.pop(key))
        # Taken as the signal is issued: a rank it wakes on our own CPU may preempt us on the
        # way out of the system call, when the switch is already complete.
        self.signalled_at = self.clock()
        procs.send(rank.pidfd, sig)

    def _signal_extras(self, name: str, sig: int) -> None:
        """Stop or continue the job's other processes here (those gone are forgotten)."""
        job = self.jobs.get(name)
        for pid, pidfd in list(job.extras.items()) if job else []:
            if not procs.send(pidfd, sig):
                os.close(job.extras.pop(pid))

    def _find_extras(self, job: LocalJob) -> None:
        """Adopt the job's processes here that are neither ranks nor its launcher's (those it
        spawned, those its ranks started): at its ranks' priority, and stopped at once when
        none of its ranks here runs, so that a job's every process keeps to its slot."""
        if self.scan:
            envs = procs.job_processes(self.run_id, job.job, self.unmarked)
        elif job.popen is not None:
            envs = {pid: procs.read_environ(pid) for pid in procs.descendants(job.popen.pid)
                    if pid not in job.launchers and pid not in job.extras}
        else:
            return
        ranks = {rank.pid for rank in job.ranks.values()}
        new = [pid for pid in procs.extras(envs, ranks, self.launcher, job.local_pes)
               if pid not in job.extras]
        job.launchers.update(pid for pid, env in envs.items()
                             if env and pid not in ranks and pid not in new)
        running = any(key[0] == job.job for key in self.active)
        for pid in new:
            pidfd = procs.open_pidfd(pid)
            if pidfd is None:
                continue
            job.extras[pid] = pidfd
            self.rank_priority.apply(pid)
            if not running:
                procs.send(pidfd, signal.SIGSTOP)

    def _classify(self, keys: list[ProcKey] | None = None) -> list[ClassChange]:
        if self.shim is None:
            return []
        changes = []
        for key in self.records if keys is None else keys:
            job = self.jobs.get(key[0])
            rank = job.ranks.get(key[1]) if job else None
            cpu = procs.cpu_seconds(rank.pid) if rank else None
            if cpu is not None:
                change = self.policy.update(key, self.records[key].counters(), cpu)
                if change is not None:
                    changes.append(change)
        return changes

    def shim_events(self) -> list[ClassChange]:
        """Handle the block/unblock datagrams waiting on the socket; act on them at once."""
        assert self.events is not None
        touched = []
        for record_id, blocked, _seq in self.events.read():
            key = self.record_keys.get(record_id)
            if key is not None:
                self.policy.set_blocked(key, blocked)
                touched.append(key)
        changes = self._classify([k for k in dict.fromkeys(touched) if k in self.records])
        if touched:
            self._apply()
        return changes

    def sample(self) -> NodeSample | None:
        """Every ``SAMPLE_INTERVAL`` s, read the usage of every rank found here and what its
        shim record says it is doing; per job with ranks here, their summed RSS (KiB) and
        faults, and each rank's CPU seconds and activity (None between samples, or with no
        rank found here)."""
        now = self.clock()
        if now - self.last_sample < SAMPLE_INTERVAL:
            return None
        self.last_sample = now
        memory: dict[str, dict[str, int]] = {}
        activity: dict[str, dict[int, RankSample]] = {}
        for job in self.jobs.values():
            if job.ranks and len(job.ranks) == len(job.local_pes):
                self._find_extras(job)
            for rank in job.ranks.values():
                rank.sample()
            samples = [r.last for r in job.ranks.values() if r.last is not None]
            if samples:
                memory[job.job] = {"rss_kib": sum(u.rss_kib for u in samples),
                                   "minor_faults": sum(u.minor_faults for u in samples),
                                   "major_faults": sum(u.major_faults for u in samples)}
            ranks = {number: RankSample(number, rank.last.cpu_s if rank.last else None,
                                        self.records[job.job, number].activity())
                     for number, rank in job.ranks.items() if (job.job, number) in self.records}
            if ranks:
                activity[job.job] = ranks
        return NodeSample(memory, activity) if activity else None

    def _kill(self, name: str, reason: str) -> None:
        job = self.jobs.get(name)
        if job is None:
            return
        job.kill_reason = job.kill_reason or reason
        segments: set[str] = set()
        for rank in job.ranks.values():
            segments |= procs.shm_segments(rank.pid)
            procs.send(rank.pidfd, signal.SIGKILL)
        procs.unlink_all(segments)
        if job.popen is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job.popen.pid, signal.SIGKILL)
        if job.popen is not None or self.scan:
            procs.kill_marked(self.run_id, name)

    def reap(self, name: str) -> Termination:
        """The job's mpiexec exited: collect its status, make sure no rank is left, report."""
        job = self.jobs[name]
        assert job.popen is not None and job.pidfd is not None
        code = job.popen.wait()
        os.close(job.pidfd)
        job.pidfd = None
        procs.kill_marked(self.run_id, name)
        self._remove_launch_dir(name)
        procs.reap_orphans(keep=self._popen_pids())
        if code != 0:
            procs.unlink_all(procs.orphan_segments(job.launched_epoch - 1.0,
                                                   self.launcher.segment_prefixes))
        if job.kill_reason == "timeout":
            return Termination(name, "timeout", code, "killed: ran past its limit")
        if job.kill_reason is not None:
            return Termination(name, "killed", code, f"killed: {job.kill_reason}")
        if code == 0:
            return Termination(name, "done", 0, "")
        what = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        detail = _last_line(job.stderr_path)
        return Termination(name, "failed", code, f"{what}: {detail}" if detail else what)

    def _popen_pids(self) -> set[int]:
        return {j.popen.pid for j in self.jobs.values() if j.popen is not None}

    def _forget(self, name: str) -> list[object]:
        """Let the job go (its launcher killed if it still runs); the counters of each of its
        ranks here, ``UNSEEN`` usage for those never found, with their shim counters."""
        job = self.jobs.pop(name, None)
        if job is None:
            return []
        if job.popen is not None and job.pidfd is not None:     # released before it ended
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job.popen.pid, signal.SIGKILL)
            job.popen.wait()
            os.close(job.pidfd)
            job.pidfd = None
        self._remove_launch_dir(name)
        for pidfd in [*(rank.pidfd for rank in job.ranks.values()), *job.extras.values()]:
            os.close(pidfd)
        self.policy.remove(name)
        self.active = {k: v for k, v in self.active.items() if k[0] != name}
        self.record_keys = {i: k for i, k in self.record_keys.items() if k[0] != name}
        counters = {rank: job.ranks[rank].counters() if rank in job.ranks else dict(UNSEEN)
                    for rank in job.local_pes}
        for key in [k for k in self.records if k[0] == name]:
            record = self.records.pop(key)
            self.stopped_at.pop(key, None)
            self.spins.pop(key, None)
            if self.shim is not None:
                counters[key[1]]["shim"] = record.counters().as_dict()
            record.remove()
        return [JobCounters(name, counters)] if counters else []

    def _remove_launch_dir(self, name: str) -> None:
        if self.launch_dirs is not None:
            self.launch_dirs.remove(name)

    def close(self) -> None:
        """Remove what is left of the records and of the launches' temporary directories, and
        close the event socket."""
        for record in self.records.values():
            record.remove()
        self.records.clear()
        if self.launch_dirs is not None:
            self.launch_dirs.close()
        if self.events is not None:
            self.events.close()
