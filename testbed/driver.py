"""The machine manager (THESIS §4.3.3) and the run loop.

The MM reads the workload, feeds the policy events (arrivals, heartbeats, terminations), turns
its actions into messages for the node managers, and writes every event to ``events.jsonl``.
It sleeps until the next arrival, heartbeat, job limit or mpiexec exit, whichever is first, so
arrivals and terminations are handled at once rather than at the next heartbeat.

Nothing outlives a run: on a normal end, Ctrl-C or SIGTERM the MM kills what is left itself;
if the MM is SIGKILLed, its watchdog (``testbed.emulation.watchdog``) does.
"""

from __future__ import annotations

import functools
import json
import math
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any

from testbed.emulation import procs, shim
from testbed.emulation.memory import NodeCgroups, SwapFile
from testbed.emulation.messages import (
    Heartbeat,
    JobCounters,
    KillJob,
    LaunchFailure,
    LaunchJob,
    PidInfo,
    Release,
    Shutdown,
    SwitchDone,
    Termination,
)
from testbed.emulation.mpi_info import MpiInfo
from testbed.emulation.node_manager import NodeManager, ShimSetup
from testbed.events import EventLog
from testbed.machine import Machine
from testbed.memory_history import MemoryHistory, program_of
from testbed.policies import Action, JobRequest, Launch, Policy, Run
from testbed.policies.node import ClassChange
from testbed.workloads.files import JobSpec, Workload

DISCOVERY_POLL = 0.002
IDLE_POLL = 0.5
SHUTDOWN_GRACE = 5.0
EPOLL_RESOLUTION = 0.001


def new_run_id() -> str:
    """A fresh, unique run id (also the marker every process of the run carries)."""
    return f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"


class Interrupted(Exception):
    """The run was stopped by a signal."""


class Coordinator:
    """Runs one workload under one policy into ``run_dir`` (which must exist and be empty)."""

    def __init__(self, workload: Workload, policy: Policy, machine: Machine, mpi: MpiInfo,
                 run_dir: Path, config: dict[str, Any], job_timeout: float | None = None,
                 shim_library: Path | None = None, node_memory: NodeCgroups | None = None,
                 swap: SwapFile | None = None, run_id: str | None = None,
                 history: MemoryHistory | None = None) -> None:
        self.workload = workload
        self.specs = {job.id: job for job in workload.jobs}
        self.policy = policy
        self.machine = machine
        self.run_dir = run_dir
        self.config = config
        self.job_timeout = job_timeout
        self.run_id = run_id or new_run_id()
        self.t0 = time.monotonic()
        env = dict(os.environ, **{procs.MARKER: self.run_id})
        spin = policy.spin
        shim_setup = (ShimSetup(str(shim_library), spin, policy.native_collectives)
                      if shim_library and spin else None)
        self.node_memory = node_memory
        self.history = history
        self.watchdog_args = [*(["--cgroup", str(node_memory.base)] if node_memory else []),
                              *(["--swap", str(swap.path)] if swap else [])]
        self.nms = [NodeManager(node, machine, mpi.mpiexec, env, self.run_id, self.clock,
                                policy.node_policy(), shim_setup, node_memory)
                    for node in machine.nodes]
        self.selector = selectors.DefaultSelector()
        for nm in self.nms:
            if nm.events is not None:
                self.selector.register(nm.events, selectors.EVENT_READ,
                                       functools.partial(self._shim_events, nm))
        self.log: EventLog | None = None
        self.swap_at_start: dict[str, tuple[int, int]] = {}
        self.deadlines: dict[str, float] = {}
        self.last_slot: int | None = None
        self.killing: set[str] = set()
        self.interrupted: int | None = None
        self.seq = 0

    def clock(self) -> float:
        """Seconds since the run started (monotonic)."""
        return time.monotonic() - self.t0

    def run(self) -> str:
        """Run the workload to the end; return ``complete`` or ``interrupted``.

        Writes ``config.json`` and ``events.jsonl`` (and job outputs under ``jobs/``).
        """
        (self.run_dir / "jobs").mkdir()
        self.log = EventLog(self.run_dir / "events.jsonl")
        procs.become_subreaper()
        self.config["coordinator_priority"] = procs.raise_priority()
        (self.run_dir / "config.json").write_text(json.dumps(self.config, indent=2) + "\n")
        watchdog = subprocess.Popen([sys.executable, "-m", "testbed.emulation.watchdog",
                                     self.run_id, *self.watchdog_args],
                                    stdin=subprocess.PIPE, start_new_session=True)
        wake_r, wake_w = socket.socketpair()
        wake_w.setblocking(False)
        self.selector.register(wake_r, selectors.EVENT_READ, functools.partial(wake_r.recv, 4096))
        old_wakeup = signal.set_wakeup_fd(wake_w.fileno())
        old_handlers = {sig: signal.signal(sig, self._on_signal)
                        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        self.t0 = time.monotonic()
        self.log.emit("run_start", 0.0, run_id=self.run_id, wall_time=time.time(),
                      config=self.config)
        self.log.emit("workload", 0.0, path=self.workload.path, meta=self.workload.meta,
                      jobs=[{"job": j.id, "line": j.line, "arrival": j.arrival, "pes": j.pes,
                             "work": j.work, "limit": j.limit, "source_id": j.source_id}
                            for j in self.workload.jobs])
        status = "complete"
        try:
            self._loop()
        except Interrupted:
            status = "interrupted"
        finally:
            self._shutdown(status)
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)
            signal.set_wakeup_fd(old_wakeup)
            wake_r.close()
            wake_w.close()
            assert watchdog.stdin is not None
            watchdog.stdin.close()
            watchdog.wait()
            self.log.close()
        return status

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.interrupted = signum

    def _check_interrupt(self) -> None:
        if self.interrupted is not None:
            raise Interrupted

    def _loop(self) -> None:
        assert self.log is not None
        pending = deque(self.workload.jobs)
        next_tick = math.inf
        timeslice = self.policy.timeslice
        while True:
            self._check_interrupt()
            now = self.clock()
            while pending and pending[0].arrival <= now:
                self._arrive(pending.popleft(), now)
            busy = bool(self.policy.matrix.placed)
            if timeslice is None or not busy:
                next_tick = math.inf
            elif next_tick == math.inf:
                next_tick = now + timeslice
            elif now >= next_tick:
                self._apply(self.policy.tick(now), due=next_tick)
                next_tick += timeslice * max(1, math.ceil((now - next_tick) / timeslice))
            for job, deadline in self.deadlines.items():
                if now >= deadline and job not in self.killing:
                    self.killing.add(job)
                    self.log.emit("limit", now, job=job, limit=self._limit(self.specs[job]))
                    self._broadcast(KillJob(job, "timeout"))
            awaiting = False
            memory: dict[str, dict[str, int]] = {}
            for nm in self.nms:
                for info in nm.discover():
                    self._pids(info)
                for job, values in nm.sample().items():
                    totals = memory.setdefault(job, dict.fromkeys(values, 0))
                    for key, value in values.items():
                        totals[key] += value
                awaiting = awaiting or nm.awaiting_pids()
            for job, values in memory.items():
                self.log.emit("memory", now, job=job, **values)
            if memory and self.node_memory is not None:
                self.log.emit("node_memory", now, used_kib=self.node_memory.used_kib())
            if not pending and not self.policy.queue and not self.policy.matrix.placed:
                return
            deadlines = [d for job, d in self.deadlines.items() if job not in self.killing]
            wake_at = min([next_tick, *deadlines, pending[0].arrival if pending else math.inf])
            timeout = min(wake_at - self.clock(), DISCOVERY_POLL if awaiting else IDLE_POLL)
            self._wait(max(0.0, timeout))

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

    def _arrive(self, spec: JobSpec, now: float) -> None:
        assert self.log is not None
        mem_mb, source = spec.mem_mb, "declared"
        if mem_mb is None and self.history is not None:
            found = self.history.estimate(program_of(spec.argv), spec.pes, spec.user)
            mem_mb, source = found if found else (None, "none")
        self.log.emit("arrival", now, job=spec.id, due=spec.arrival, pes=spec.pes,
                      work=spec.work, limit=spec.limit, user=spec.user, argv=list(spec.argv),
                      mem_mb=mem_mb and round(mem_mb, 3), mem_source=source)
        self._apply(self.policy.arrive(JobRequest(spec.id, spec.pes, spec.arrival, mem_mb),
                                       now))

    def _apply(self, actions: list[Action], due: float | None = None) -> None:
        for action in actions:
            if isinstance(action, Launch):
                self._launch(action)
            elif isinstance(action, Run):
                self._heartbeat(action, due)

    def _launch(self, action: Launch) -> None:
        assert self.log is not None
        spec = self.specs[action.job]
        jobs_dir = self.run_dir / "jobs"
        argv = spec.argv
        if spec.is_bsp:
            argv = (*argv, "--stats", str(jobs_dir / f"{spec.id}.stats.jsonl"))
        now = self.clock()
        self.swap_at_start[spec.id] = procs.swap_pages()
        self.log.emit("start", now, job=spec.id, slot=action.slot, pes=list(action.pes),
                      cpus=[self.machine.cpus[pe] for pe in action.pes])
        limit = self._limit(spec)
        if limit is not None:
            self.deadlines[spec.id] = now + limit
        msg = LaunchJob(spec.id, action.slot, action.pes, argv, spec.id in self.policy.current,
                        str(jobs_dir / f"{spec.id}.out"), str(jobs_dir / f"{spec.id}.err"))
        leader_last = sorted(self.nms, key=lambda nm: action.pes[0] in nm.node.pes)
        replies = [reply for nm in leader_last for reply in nm.handle(msg)]
        for nm in self.nms:
            fd = nm.launcher_fd(spec.id)
            if fd is not None:
                self.selector.register(fd, selectors.EVENT_READ,
                                       functools.partial(self._reaped, nm, spec.id))
        for reply in replies:
            if isinstance(reply, LaunchFailure):
                self._ended(Termination(reply.job, "failed", None, reply.reason))

    def _limit(self, spec: JobSpec) -> float | None:
        """The job's runtime limit (s): its ``limit=``, else ``--job-timeout``."""
        return spec.limit if spec.limit is not None else self.job_timeout

    def _heartbeat(self, action: Run, due: float | None) -> None:
        assert self.log is not None
        self.seq += 1
        sent = self.clock()
        everything = self._broadcast(Heartbeat(self.seq, action.slot, action.jobs, sent))
        self._log_changes(everything)
        replies = [r for r in everything if isinstance(r, SwitchDone)]
        stopped = sorted({j for r in replies for j in r.stopped})
        continued = sorted({j for r in replies for j in r.continued})
        moved, self.last_slot = action.slot != self.last_slot, action.slot
        if not stopped and not continued and not moved:
            return
        latency = max((r.latency for r in replies), default=0.0)
        self.log.emit("switch", sent, seq=self.seq, slot=action.slot, jobs=sorted(action.jobs),
                      stopped=stopped, continued=continued, latency_us=round(latency * 1e6, 1),
                      lag_us=None if due is None else round((sent - due) * 1e6, 1))
        for job in stopped:
            self.log.emit("suspend", sent, job=job)
        for job in continued:
            self.log.emit("resume", sent, job=job)

    def _log_changes(self, replies: list[object]) -> None:
        assert self.log is not None
        for change in replies:
            if isinstance(change, ClassChange):
                self.log.emit("class", self.clock(), job=change.job, rank=change.rank,
                              old=change.old, new=change.new, stats=change.stats)

    def _shim_events(self, nm: NodeManager) -> None:
        self._log_changes(list(nm.shim_events()))

    def _pids(self, info: PidInfo) -> None:
        assert self.log is not None
        self.log.emit("pids", self.clock(), job=info.job, pids={str(k): v for k, v in
                                                               sorted(info.pids.items())},
                      after_s=round(info.seconds_after_launch, 6))
        self._broadcast(info)

    def _reaped(self, nm: NodeManager, job: str) -> None:
        self.selector.unregister(nm.launcher_fd(job))
        self._ended(nm.reap(job))

    def _finish_event(self, term: Termination, status: str) -> float:
        assert self.log is not None
        now = self.clock()
        swap_in, swap_out = procs.swap_pages()
        start_in, start_out = self.swap_at_start.pop(term.job, (swap_in, swap_out))
        self.log.emit("finish", now, job=term.job, status=status, exit_code=term.exit_code,
                      reason=term.reason, swap_in=swap_in - start_in,
                      swap_out=swap_out - start_out)
        return now

    def _ended(self, term: Termination) -> None:
        assert self.log is not None
        now = self._finish_event(term, term.status)
        stats = self.run_dir / "jobs" / f"{term.job}.stats.jsonl"
        records = []
        if stats.exists():
            records = [json.loads(line) for line in stats.read_text().splitlines() if line]
            self.log.emit("stats", now, job=term.job, ranks=records)
        self.deadlines.pop(term.job, None)
        self.killing.discard(term.job)
        counters = self._release(term.job, now)
        peaks = [r["peak_rss_kib"] for r in records or counters.values()]
        if self.history is not None and term.status == "done" and peaks:
            spec = self.specs[term.job]
            self.history.record(program_of(spec.argv), spec.pes, spec.user, max(peaks) / 1024)
            self.history.save()
        self._apply(self.policy.finish(term.job, now))

    def _release(self, job: str, now: float) -> dict[int, dict[str, Any]]:
        assert self.log is not None
        counters = {rank: values for reply in self._broadcast(Release(job))
                    if isinstance(reply, JobCounters) for rank, values in reply.ranks.items()}
        if counters:
            self.log.emit("counters", now, job=job,
                          ranks={str(rank): counters[rank] for rank in sorted(counters)})
        return counters

    def _broadcast(self, msg: object) -> list[object]:
        return [reply for nm in self.nms for reply in nm.handle(msg)]  # type: ignore[arg-type]

    def _shutdown(self, status: str) -> None:
        """Kill every job left, wait for their launchers, and sweep the run's processes."""
        assert self.log is not None
        now = self.clock()
        if status == "interrupted":
            name = signal.Signals(self.interrupted).name if self.interrupted else "unknown"
            self.log.emit("interrupted", now, signal=name)
        self._broadcast(Shutdown(f"run {status}"))
        deadline = time.monotonic() + SHUTDOWN_GRACE
        for nm in self.nms:
            for fd, job in list(nm.launcher_fds().items()):
                self.selector.unregister(fd)
                ready = selectors.DefaultSelector()
                ready.register(fd, selectors.EVENT_READ)
                ready.select(max(0.0, deadline - time.monotonic()))
                ready.close()
                term = nm.reap(job)
                self._release(job, self._finish_event(term, "killed"))
        swept = procs.kill_marked(self.run_id)
        procs.reap_orphans(keep=set())
        for nm in self.nms:
            if nm.events is not None:
                self.selector.unregister(nm.events)
            nm.close()
        shim.remove_run_records(self.run_id)
        self.log.emit("run_end", self.clock(), status=status, swept=swept)
