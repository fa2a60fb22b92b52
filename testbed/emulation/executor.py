"""The emulation executor: real ranks under node managers, in real time (THESIS §4.3).

It turns the driver's actions into messages for the node managers (launch, heartbeat, kill,
release), waits on their links (``testbed.emulation.link``: one descriptor each, readable when
a launcher exited, a rank blocked or a remote node pushed something) until the time the driver
asks for, samples memory and what the ranks are doing, and writes the events only real
processes give: pids, memory samples, class changes, hangs, the benchmark's records and the
ranks' counters.  Node managers in this process and on other hosts are spoken to the same way,
but for broadcasts: on other hosts they go down a fan-out tree (``remote.Fanout``), so that
what the executor does per heartbeat does not grow with the number of hosts.  It waits with
epoll, so that terminations are handled at once rather than at the next heartbeat.

A job whose ranks stop making progress is not left to wait for its limit: with ``hang_after``
seconds (> 0), each job's samples go to a ``testbed.hang.HangWatch`` on the time the job was
not stopped, and a job found hung is logged (``hang``: what each rank was in), killed and
ended ``failed`` with the reason in words.

Nothing outlives a run: on a normal end, Ctrl-C or SIGTERM the executor kills what is left
itself; if the process running it is SIGKILLed, its watchdog (``testbed.emulation.watchdog``)
does.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed import shim_record
from testbed.emulation import launchers, procs, remote, tree
from testbed.emulation.link import LocalNode, NodeLink
from testbed.emulation.memory import NodeCgroups, SwapFile
from testbed.emulation.messages import (
    Heartbeat,
    JobCounters,
    KillJob,
    LaunchFailure,
    LaunchJob,
    MoveFailed,
    MoveJob,
    Paged,
    PidInfo,
    Release,
    Shutdown,
    SwitchDone,
    Termination,
)
from testbed.emulation.mpi_info import MpiInfo
from testbed.emulation.node_manager import NodeManager, ShimSetup
from testbed.events import EventLog
from testbed.hang import HangWatch, RankSample, describe, wait_cycles
from testbed.machine import Machine, Node
from testbed.policies import Launch, Policy
from testbed.policies.node import ClassChange
from testbed.ports import Ended, Interrupted, Switch
from testbed.workloads.files import JobSpec

DISCOVERY_POLL = 0.002
# A job whose ranks are not all found this long after its launch is failed: its ranks could
# be neither pinned, stopped nor continued, so it would run unscheduled.
RANKS_FOUND_WITHIN = 30.0
IDLE_POLL = 0.5
SHUTDOWN_GRACE = 5.0
EPOLL_RESOLUTION = 0.001
# UCX, the network layer MPICH loads in every rank, hooks the memory calls as it loads (for
# its caches of memory registered with network cards), which costs each rank about 45 ms of
# its start.  On one host the ranks talk through MPICH's shared memory, never through a
# network card, so the ranks of a run on one host go without (unless the user said otherwise).
UCX_MEM_EVENTS = "UCX_MEM_EVENTS"


class EmulationExecutor:
    """Runs jobs as real ranks on ``machine`` with ``mpi``; job outputs go under
    ``run_dir/jobs``.  A job hung for ``hang_after`` seconds of time not stopped fails
    (0: never)."""

    kind = "emulation"

    def __init__(self, policy: Policy, machine: Machine, mpi: MpiInfo, run_dir: Path,
                 run_id: str, shim_library: Path | None = None,
                 node_memory: NodeCgroups | None = None, swap: SwapFile | None = None,
                 rank_priority: str = "auto", tree_width: int = tree.DEFAULT_WIDTH,
                 hang_after: float = 0.0) -> None:
        self.machine = machine
        self.cpus = machine.cpus
        self.run_dir = run_dir
        self.run_id = run_id
        self.t0 = time.monotonic()
        env = dict(os.environ, **{procs.MARKER: run_id})
        if machine.launcher == "slurm":     # job steps share the CPUs with the NMs' step
            env["HYDRA_LAUNCHER_EXTRA_ARGS"] = "--overlap"
        if not machine.hosts:
            env.setdefault(UCX_MEM_EVENTS, "no")
        shim_setup = (ShimSetup(str(shim_library), policy.spin, policy.native_collectives)
                      if shim_library and policy.spin else None)
        self.node_memory = node_memory
        self.watchdog_args = [*(node_memory.cleanup_args() if node_memory else []),
                              *(["--swap", str(swap.path)] if swap else [])]
        # T3D moves a preempted job out and back; T3E's adaptive slice counts the swapping a
        # switch needs, so incoming jobs are paged in before they continue.
        page_out = policy.pages_preempted and node_memory is not None
        page_in = node_memory is not None and (policy.pages_preempted
                                                or policy.config.variation > 0)
        self.remote = bool(machine.hosts)
        self.paging = (page_out, page_in)
        self.nms: list[NodeLink] = []
        self.fanout: remote.Fanout | None = None
        self.tree_width = tree_width
        self.policy = policy
        self.mpi = mpi
        self.launcher = launchers.make(mpi.launcher, mpi.mpiexec, machine.launcher)
        self.launched_at: dict[str, float] = {}
        self.shim_setup = shim_setup
        self.control: subprocess.Popen[bytes] | None = None
        self.rank_setting = rank_priority
        self.job_nodes: dict[str, set[int]] = {}
        self.found: dict[str, dict[int, int]] = {}
        self.sizes: dict[str, int] = {}
        self.lost_nodes: set[int] = set()
        self.selector = selectors.DefaultSelector()
        self.log: EventLog | None = None
        self.swap_at_start: dict[str, tuple[int, int]] = {}
        self.ended: list[Ended] = []
        self.interrupted: int | None = None
        self.seq = 0
        self.idle_poll = IDLE_POLL
        self.watchdog: subprocess.Popen[bytes] | None = None
        self.wake: tuple[socket.socket, socket.socket] | None = None
        self.old_wakeup = -1
        self.old_handlers: dict[int, Any] = {}
        self.env = env
        self.owners: dict[int, subprocess.Popen[bytes]] = {}
        self.ran: dict[str, float] = {}
        self.running_since: dict[str, float] = {}
        self.hang_after = hang_after
        self.watches: dict[str, HangWatch] = {}
        self.activity: dict[str, dict[int, RankSample]] = {}

    def now(self) -> float:
        """Seconds since the run started (monotonic)."""
        return time.monotonic() - self.t0

    def begin(self, log: EventLog, config: dict[str, Any]) -> None:
        """Become the subreaper, raise our priority, start the watchdog, catch signals."""
        self.log = log
        procs.become_subreaper()
        config["coordinator_priority"] = procs.raise_priority()
        ranks = procs.rank_priority(self.rank_setting, config["coordinator_priority"])
        config["rank_priority"] = {"setting": self.rank_setting, "applied": ranks.describe()}
        config["mpi_launcher"] = self.launcher.describe()
        self.watchdog = subprocess.Popen([sys.executable, "-m", "testbed.emulation.watchdog",
                                          self.run_id, *self.watchdog_args],
                                         stdin=subprocess.PIPE, start_new_session=True)
        wake_r, wake_w = self.wake = socket.socketpair()
        wake_w.setblocking(False)
        self.selector.register(wake_r, selectors.EVENT_READ, functools.partial(wake_r.recv, 4096))
        self.old_wakeup = signal.set_wakeup_fd(wake_w.fileno())
        self.old_handlers = {sig: signal.signal(sig, self._on_signal)
                             for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        self.t0 = time.monotonic()
        if self.remote:
            self.fanout, self.control = remote.start_nodes(
                self.machine, self.launcher, self.env, self.run_id,
                [self.policy.node_policy() for _ in self.machine.nodes], self.shim_setup,
                self.now, self.rank_setting, self.tree_width)
            self.nms = list(self.fanout.nodes)
            config["tree_width"] = self.tree_width
            config["node_managers"] = [{"host": nm.name, "hostname": nm.hostname, "pid": nm.pid,
                                        "priority": nm.priority,
                                        "rank_priority": nm.rank_priority,
                                        "parent": self.fanout.shape[nm.node.index]}
                                       for nm in self.fanout.nodes]
        else:
            self.nms = [LocalNode(self._node_manager(node, ranks)) for node in self.machine.nodes]
        for nm in self.nms:
            self._watch(nm)

    def _node_manager(self, node: Node, ranks: procs.RankPriority) -> NodeManager:
        """The node manager of ``node`` in this process, its ranks scheduled as ``ranks``."""
        manager = NodeManager(node, self.machine, self.launcher, self.env, self.run_id, self.now,
                              self.policy.node_policy(), self.shim_setup, self.node_memory,
                              *self.paging)
        manager.rank_priority = ranks
        return manager

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.interrupted = signum

    def check(self) -> None:
        """Raise ``Interrupted`` once SIGINT, SIGTERM or SIGHUP has come."""
        if self.interrupted is not None:
            raise Interrupted

    def advance(self, until: float) -> list[Ended]:
        """Take in what the node managers pushed, discover pids, sample memory and the ranks
        (failing the jobs found hung), then, unless a job ended meanwhile, wait for launcher
        exits and shim events until ``until`` (s) or the next poll, whichever is first; return
        the jobs that ended."""
        assert self.log is not None
        self.check()
        now = self.now()
        awaiting = False
        memory: dict[str, dict[str, int]] = {}
        sampled: set[str] = set()
        for nm in self._pushed():
            self._node_events(nm)
            for info in nm.discover():
                self._pids(info)
            sample = nm.sample()
            awaiting = awaiting or nm.awaiting_pids()
            if sample is None:
                continue
            for job, values in sample.memory.items():
                if job not in self.job_nodes:       # pushed before its end came in
                    continue
                totals = memory.setdefault(job, dict.fromkeys(values, 0))
                for key, value in values.items():
                    totals[key] += value
            for job, ranks in sample.activity.items():
                if job in self.watches:
                    self.activity[job].update(ranks)
                    sampled.add(job)
        for job, values in memory.items():
            self.log.emit("memory", now, job=job, **values)
        if memory and self.node_memory is not None:
            self.log.emit("node_memory", now, used_kib=self.node_memory.used_kib())
        for job in sorted(sampled):
            self._check_hang(job)
        self._check_found(now)
        # A launcher that exited since the last wait (a job whose ranks ended before they were
        # found ends so) was reaped just above: its end is returned now, not after a wait.
        if not self.ended:
            timeout = min(until - self.now(), DISCOVERY_POLL if awaiting else self.idle_poll)
            self._wait(max(0.0, timeout))
        ended, self.ended = self.ended, []
        return ended

    def _pushed(self) -> list[NodeLink]:
        """The nodes to take pushes from: on other hosts those that pushed something (or were
        lost) since the last call, so that the cost does not grow with the hosts; here every
        one."""
        if self.fanout is None:
            return self.nms
        return [self.nms[index] for index in self.fanout.take_noticed()]

    def _wait(self, timeout: float) -> None:
        """Handle fd events for up to ``timeout`` seconds, waking on time to the microsecond.

        epoll rounds its timeout up to whole milliseconds, so the last millisecond before a
        heartbeat is slept precisely instead.
        """
        coarse = timeout - EPOLL_RESOLUTION if timeout > 2 * EPOLL_RESOLUTION else 0.0
        ready = self.selector.select(coarse)
        for key, _ in ready:
            key.data()
        if not ready and coarse == 0.0 and timeout > 0:
            time.sleep(timeout)

    def launch(self, spec: JobSpec, action: Launch) -> Ended | None:
        """Send the launch to every node manager (the leader's last) and watch the
        launchers."""
        jobs_dir = self.run_dir / "jobs"
        argv = spec.argv
        if spec.is_bsp:
            argv = (*argv, "--stats", str(jobs_dir / f"{spec.id}.stats.jsonl"))
        self.swap_at_start[spec.id] = procs.swap_pages()
        self.job_nodes[spec.id] = {self.machine.node_of(pe).index for pe in action.pes}
        self.sizes[spec.id] = len(action.pes)
        lost = self._lost_reason(self.job_nodes[spec.id])
        if lost is not None:        # _node_lost has passed: nothing would ever end it
            return self._end(Termination(spec.id, "failed", None, lost))
        msg = LaunchJob(spec.id, action.slot, action.pes, argv, action.running,
                        str(jobs_dir / f"{spec.id}.out"), str(jobs_dir / f"{spec.id}.err"),
                        spec.env, spec.cwd)
        leader_last = sorted((self.nms[index] for index in self.job_nodes[spec.id]),
                             key=lambda nm: action.pes[0] in nm.node.pes)
        replies = [reply for nm in leader_last for reply in nm.handle(msg)]
        self.ran[spec.id] = 0.0
        if self.hang_after > 0:
            self.watches[spec.id] = HangWatch(self.hang_after)
            self.activity[spec.id] = {}
        if action.running:
            self.running_since[spec.id] = self.now()
        for reply in replies:
            if isinstance(reply, LaunchFailure):
                return self._end(Termination(reply.job, "failed", None, reply.reason))
        self.launched_at[spec.id] = self.now()
        return None

    def switch(self, jobs: frozenset[str], slot: int | None) -> Switch:
        """Broadcast a heartbeat; the jobs stopped and continued and the slowest node's
        latency."""
        self.seq += 1
        everything = self._broadcast(Heartbeat(self.seq, slot, jobs, self.now()))
        self._log_changes(everything)
        replies = [r for r in everything if isinstance(r, SwitchDone)]
        change = Switch(tuple(sorted({j for r in replies for j in r.stopped})),
                        tuple(sorted({j for r in replies for j in r.continued})),
                        max((r.latency for r in replies), default=0.0))
        now = self.now()
        for job in change.stopped:
            if job in self.running_since:
                self.ran[job] += now - self.running_since.pop(job)
        for job in change.continued:
            self.running_since.setdefault(job, now)
        return change

    def kill(self, job: str, reason: str = "timeout") -> None:
        """Kill ``job``'s ranks: it ran past its limit (``timeout``), or ``reason`` (it ends
        ``killed`` with it)."""
        self._broadcast(KillJob(job, reason))

    def requeue(self, job: str) -> tuple[float, float | None]:
        """Kill ``job``'s ranks for good because an owner interrupted it (it will be launched
        again from scratch): wait for its launcher, sweep its ranks, forget the attempt.
        Returns the seconds it had run (wall clock, stopped time excluded) and the CPU seconds
        its ranks used (None if none was found)."""
        lost = self._ran(job)
        for nm in self.nms:
            nm.sample()
        self._broadcast(KillJob(job, "interrupted by an owner"))
        deadline = time.monotonic() + SHUTDOWN_GRACE
        for nm in self.nms:
            nm.await_end(job, deadline)
        for known in (self.job_nodes, self.found, self.watches, self.activity, self.launched_at):
            known.pop(job, None)
        ranks = [values for reply in self._broadcast(Release(job))
                 if isinstance(reply, JobCounters) for values in reply.ranks.values()]
        self.swap_at_start.pop(job, None)
        (self.run_dir / "jobs" / f"{job}.stats.jsonl").unlink(missing_ok=True)
        cpu = [r["cpu_s"] for r in ranks if r.get("cpu_s") is not None]
        return lost, round(sum(cpu), 6) if cpu else None

    def _ran(self, job: str) -> float:
        """Seconds ``job`` has run so far (its stopped time excluded); forgets it."""
        since = self.running_since.pop(job, None)
        return self.ran.pop(job, 0.0) + (self.now() - since if since is not None else 0.0)

    def _running_time(self, job: str) -> float:
        """Seconds ``job`` has run so far (its stopped time excluded)."""
        since = self.running_since.get(job)
        return self.ran.get(job, 0.0) + (self.now() - since if since is not None else 0.0)

    def _check_found(self, now: float) -> None:
        """Fail every job whose ranks have not all been found ``RANKS_FOUND_WITHIN`` s after
        its launch (killed on every node), its reason naming the MPI, the launcher and what
        was looked for: a job whose ranks are not known runs outside the schedule."""
        late = [job for job, at in self.launched_at.items() if now - at > RANKS_FOUND_WITHIN]
        for job in late:
            found = len(self.found.get(job, {}))
            reason = (f"its ranks were not found within {RANKS_FOUND_WITHIN:g} s of its launch "
                      f"({self.mpi.name()}, launcher {self.launcher.kind} "
                      f"{self.launcher.mpiexec}): looked for processes with TESTBED_JOB={job} and "
                      f"{self.launcher.looked_for()} in their environment"
                      + (f", found {found} of {self.sizes[job]}" if found else ""))
            self._broadcast(KillJob(job, "ranks not found"))
            deadline = time.monotonic() + SHUTDOWN_GRACE
            for nm in self.nms:
                if job in nm.launched:
                    nm.await_end(job, deadline)
            self._finish(Termination(job, "failed", None, reason))

    def _check_hang(self, job: str) -> None:
        """Give the watch of ``job`` its ranks' latest samples, once every rank has one; a
        job found hung is logged (``hang``), killed on every node and ended ``failed``, its
        reason saying what each rank was in."""
        assert self.log is not None
        ranks = self.activity[job]
        if len(ranks) < self.sizes[job]:
            return
        samples = [ranks[rank] for rank in sorted(ranks)]
        hang = self.watches[job].observe(self._running_time(job), samples)
        if hang is None:
            return
        fields = {"job": job, "seconds": round(hang.seconds, 3), "rule": hang.rule,
                  "ranks": {str(s.rank): s.fields() for s in samples},
                  "cycles": wait_cycles(samples)}
        self.log.emit("hang", self.now(), **fields)
        self._broadcast(KillJob(job, "hung"))
        deadline = time.monotonic() + SHUTDOWN_GRACE
        for nm in self.nms:
            if job in nm.launched:
                nm.await_end(job, deadline)
        self._finish(Termination(job, "failed", None, describe(fields)))

    def migrate(self, job: str, slot: int, pes: tuple[int, ...]) -> str | None:
        """Move ``job``'s rank i to PE ``pes[i]`` (each NM re-pins its ranks); None when done,
        else why not (then nothing moved on a node that refused)."""
        problems = [r.reason for r in self._broadcast(MoveJob(job, slot, pes))
                    if isinstance(r, MoveFailed)]
        return "; ".join(problems) or None

    def owner_start(self, pe: int, duration: float) -> None:
        """An owner's job (COW): a CPU-bound process pinned to ``pe``'s CPU, which stops by
        itself after ``duration`` s if ``owner_end`` has not killed it before."""
        self.owner_end(pe)
        argv = [sys.executable, "-m", "testbed.emulation.owner", f"{duration:.6f}"]
        proc = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        procs.pin(proc.pid, self.machine.cpus[pe])
        self.owners[pe] = proc

    def owner_end(self, pe: int) -> None:
        """Kill the owner process of ``pe``, if any, and reap it."""
        proc = self.owners.pop(pe, None)
        if proc is not None:
            proc.kill()
            proc.wait()

    def watch(self, fileobj: Any, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever ``fileobj`` is readable (while ``advance`` waits)."""
        self.selector.register(fileobj, selectors.EVENT_READ, callback)

    def unwatch(self, fileobj: Any) -> None:
        """Stop watching ``fileobj``."""
        self.selector.unregister(fileobj)

    def _log_changes(self, replies: list[object]) -> None:
        assert self.log is not None
        paged: dict[tuple[str, str], list[Paged]] = {}
        for reply in replies:
            if isinstance(reply, Paged):
                paged.setdefault((reply.job, reply.direction), []).append(reply)
        for (job, direction), parts in paged.items():
            self.log.emit("paging", self.now(), job=job, direction=direction,
                          seconds=round(max(p.seconds for p in parts), 6),
                          swap_kib_before=sum(p.swap_kib_before for p in parts),
                          swap_kib_after=sum(p.swap_kib_after for p in parts))
        for change in replies:
            if isinstance(change, ClassChange):
                self.log.emit("class", self.now(), job=change.job, rank=change.rank,
                              old=change.old, new=change.new, stats=change.stats)

    def _pids(self, info: PidInfo) -> None:
        assert self.log is not None
        if info.job not in self.job_nodes:      # pushed before its end came in
            return
        if self.remote:
            merged = self.found.setdefault(info.job, {})
            merged.update(info.pids)
            if len(merged) < self.sizes.get(info.job, 0):
                return
            info = PidInfo(info.job, dict(merged), info.seconds_after_launch)
        self.launched_at.pop(info.job, None)
        self.log.emit("pids", self.now(), job=info.job, pids={str(k): v for k, v in
                                                             sorted(info.pids.items())},
                      after_s=round(info.seconds_after_launch, 6))
        if not self.remote:
            self._broadcast(info)

    def _watch(self, nm: NodeLink) -> None:
        self.selector.register(nm, selectors.EVENT_READ, functools.partial(self._node_events, nm))

    def _node_events(self, nm: NodeLink) -> None:
        """Take in what a node manager pushed: its launchers' ends, class changes and paging
        records; a lost node fails its jobs.  A launcher that did not end well may have ended
        because another node of its job died: a node manager's death closes its connection
        before its ranks can go, so every other connection is read first and a loss found
        there fails the job for the loss, not for the exit code it caused."""
        nm.pump()
        ended = nm.take_ended()
        failed = [term for term in ended if term.status != "done"]
        for term in ended:
            if term.status == "done":
                self._finish(term)
        others: list[NodeLink] = []
        if failed:
            others = [other for other in self.nms
                      if other is not nm and other.node.index not in self.lost_nodes]
            for other in others:
                other.pump()
            self._check_lost()
        for term in failed:
            self._finish(term)
        self._log_changes(nm.take_changes())
        for other in others:        # what was read there will not be announced again
            for term in other.take_ended():
                self._finish(term)
            self._log_changes(other.take_changes())
        self._check_lost()

    def _lost_reason(self, nodes: set[int]) -> str | None:
        """Why the first of ``nodes`` already lost was lost; None if none is."""
        return next((self.nms[index].lost for index in sorted(nodes & self.lost_nodes)), None)

    def _check_lost(self) -> None:
        """Fail the jobs of every node found lost since the last call (only nodes on other
        hosts are ever lost)."""
        if self.fanout is not None:
            for index in sorted(self.fanout.routes.lost - self.lost_nodes):
                self._node_lost(self.nms[index])

    def _node_lost(self, nm: NodeLink) -> None:
        """``nm`` stopped answering or died: every job with ranks on its node is killed on the
        other nodes and fails with the reason; the others go on."""
        assert self.log is not None and nm.lost is not None
        self.lost_nodes.add(nm.node.index)
        self.selector.unregister(nm)
        if self.fanout is not None:
            self.fanout.forget(self.fanout.nodes[nm.node.index])
        nm.disconnect()
        self.log.emit("node_lost", self.now(), node=nm.node.index, host=nm.name,
                      reason=nm.lost)
        for job in [j for j, nodes in self.job_nodes.items() if nm.node.index in nodes]:
            if job not in self.job_nodes:   # failed meanwhile with another node found lost
                continue
            self._broadcast(KillJob(job, nm.lost))
            if self.machine.emulated_hosts:     # real hosts: the lost host's watchdog sweeps
                procs.kill_marked(self.run_id, job)
            deadline = time.monotonic() + SHUTDOWN_GRACE
            for other in self.nms:
                if job in other.launched:
                    other.await_end(job, deadline)
            self._finish(Termination(job, "failed", None, nm.lost))

    def _finish(self, term: Termination, status: str | None = None) -> None:
        """End the job (see ``_end``) and keep its end for ``advance`` or ``end`` to return;
        nothing if it has ended already."""
        ended = self._end(term, status)
        if ended is not None:
            self.ended.append(ended)

    def _end(self, term: Termination, status: str | None = None) -> Ended | None:
        """The job's end: swap during its life, the benchmark's records and the ranks'
        counters (logged), its peak RSS (None when no rank was ever found); None if it has
        ended already (a job is ended once,
        though a node found lost while it is being ended ends the jobs it had ranks on)."""
        assert self.log is not None
        if term.job not in self.job_nodes:
            return None
        for known in (self.job_nodes, self.found, self.sizes, self.watches, self.activity,
                      self.launched_at):
            known.pop(term.job, None)
        now = self.now()
        swap_in, swap_out = procs.swap_pages()
        start_in, start_out = self.swap_at_start.pop(term.job, (swap_in, swap_out))
        stats = self.run_dir / "jobs" / f"{term.job}.stats.jsonl"
        records = []
        if stats.exists():
            records = [json.loads(line) for line in stats.read_text().splitlines() if line]
            self.log.emit("stats", now, job=term.job, ranks=records)
        self._ran(term.job)
        counters = self._release(term.job, now)
        peaks = [r["peak_rss_kib"] for r in records or counters.values()
                 if r.get("peak_rss_kib") is not None]
        return Ended(term.job, status or term.status, term.exit_code, term.reason,
                     swap_in - start_in, swap_out - start_out, None,
                     max(peaks) / 1024 if peaks else None)

    def _release(self, job: str, now: float) -> dict[int, dict[str, Any]]:
        assert self.log is not None
        counters = {rank: values for reply in self._broadcast(Release(job))
                    if isinstance(reply, JobCounters) for rank, values in reply.ranks.items()}
        if counters:
            self.log.emit("counters", now, job=job,
                          ranks={str(rank): counters[rank] for rank in sorted(counters)})
        return counters

    def _broadcast(self, msg: object) -> list[object]:
        """Every NM's replies to ``msg``: node managers on other hosts get it down the tree
        and answer up it (``broadcast`` logs how it went), those here are called in turn."""
        if self.fanout is None:
            return [reply for nm in self.nms for reply in nm.handle(msg)]
        assert self.log is not None
        live = self.fanout.live()
        replies = self.fanout.broadcast(msg)
        timing = self.fanout.timing
        assert timing is not None
        self.log.emit("broadcast", self.now(), message=type(msg).__name__, nodes=live,
                      direct=timing.direct, read=timing.read, cpu_us=_us(timing.cpu_s),
                      send_us=_us(timing.send_s), gather_us=_us(timing.gather_s),
                      hop_us=_us(timing.hop_s), forward_us=_us(timing.forward_s))
        self._check_lost()
        return replies

    def end(self, status: str) -> tuple[list[Ended], int]:
        """Kill every job left, wait for their launchers, sweep the run's processes, restore
        the signal handlers and stop the watchdog."""
        assert self.log is not None
        try:
            if status == "interrupted":
                name = signal.Signals(self.interrupted).name if self.interrupted else "unknown"
                self.log.emit("interrupted", self.now(), signal=name)
            for nm in self.nms:                     # jobs that ended before the run did
                self._node_events(nm)
            self._broadcast(Shutdown(f"run {status}"))
            for pe in list(self.owners):
                self.owner_end(pe)
            deadline = time.monotonic() + SHUTDOWN_GRACE
            for nm in self.nms:
                # a termination that came in with a reply since is no longer launched
                for job in sorted({*nm.launched, *nm.ended}):
                    term = nm.await_end(job, deadline) or Termination(
                        job, "killed", None, nm.lost or "its launcher did not end")
                    self._finish(term, "killed")
            for job in list(self.job_nodes):
                self._finish(Termination(job, "killed", None, "run over"), "killed")
            ended, self.ended = self.ended, []
            for nm in self.nms:
                if nm.node.index not in self.lost_nodes:
                    self.selector.unregister(nm)
                nm.close()
            if self.fanout is not None:
                self.fanout.close()
            if self.control is not None:
                remote.stop_control(self.control)
            swept = procs.kill_marked(self.run_id)
            procs.reap_orphans(keep=set())
            shim_record.remove_run_records(self.run_id)
            return ended, swept
        finally:
            self._restore()

    def _restore(self) -> None:
        for sig, handler in self.old_handlers.items():
            signal.signal(sig, handler)
        if self.wake is not None:
            signal.set_wakeup_fd(self.old_wakeup)
            for sock in self.wake:
                sock.close()
        if self.watchdog is not None:
            assert self.watchdog.stdin is not None
            self.watchdog.stdin.close()
            self.watchdog.wait()


def _us(seconds: float | None) -> float | None:
    """Seconds as microseconds to 0.1 us (None stays None)."""
    return None if seconds is None else round(seconds * 1e6, 1)
