"""The simulation executor: jobs as modeled durations in virtual time.

A job needs ``duration`` seconds of execution (its work, or an SWF trace's runtime), with all
its ranks running at once: it advances only while the driver's run set holds it, so under gang
scheduling it runs while its row (or it, as an alternate) is current, and under the batch
policies from start to end.  Each time a stopped job is continued it loses ``switch_cost``
seconds (a multi-context switch's cost), and every job needs ``launch_cost`` seconds more than
its work (what starting its processes costs; both 0 by default).  ``advance`` jumps the
virtual clock to the earliest of the time the driver asks for and the next job end, so a run
costs time per event, not per simulated second.

Running jobs sit in a heap keyed by their end time; a job that is stopped keeps its entry,
which is recognised as stale by its version when it comes up.  Everything is deterministic:
no randomness, ties broken by launch order.  Ends no more than ``TIE`` (1 us, the event log's
resolution) apart count as simultaneous, and a job ending within ``TIE`` after the time asked
for ends before it: heartbeats (a sum of timeslices) and ends (sums of slices) drift apart by
an ulp, and a job stopped with an ulp of work left would end a whole round later.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testbed.events import EventLog
from testbed.policies import Launch
from testbed.ports import Ended, Stalled, Switch
from testbed.workloads.files import JobSpec

TIE = 1e-6
_UNCHANGED = Switch((), (), 0.0)


@dataclass(slots=True)
class _Job:
    name: str
    size: int
    remaining: float
    order: int
    end_at: float = 0.0
    resumed_at: float = 0.0
    version: int = 0
    running: bool = False
    executed: float = 0.0
    live: bool = True


class SimulationExecutor:
    """Runs modeled jobs; ``duration`` maps a job to the seconds of execution it needs, to
    which ``launch_cost`` (s) is added.  A job launched again after an owner interrupted it
    needs the same again, or, with ``redraw``, ``redraw(job)`` seconds (a fresh demand)."""

    kind = "simulation"
    cpus = None

    def __init__(self, duration: dict[str, float], switch_cost: float = 0.0,
                 launch_cost: float = 0.0,
                 redraw: Callable[[str], float] | None = None) -> None:
        self.duration = duration
        self.redraw = redraw
        self.switch_cost = switch_cost
        self.launch_cost = launch_cost
        self.clock = 0.0
        self.jobs: dict[str, _Job] = {}
        self.running: set[str] = set()      # the jobs of ``jobs`` that run now
        # (end, launch order, version, job): the launch order is unique, so jobs are never
        # compared; an entry whose version is not its job's, or whose job is no longer live
        # (ended, or dropped by an owner's interrupt), is stale
        self.heap: list[tuple[float, int, int, _Job]] = []
        self.interrupted: set[str] = set()
        self.launched = 0
        self.collecting = False

    def now(self) -> float:
        """The virtual clock (s)."""
        return self.clock

    def begin(self, log: EventLog, config: dict[str, Any]) -> None:
        """Record the model's parameters in ``config``, and hold off the cyclic garbage
        collector until ``end``: a run makes and drops a few objects a job, none of them in
        cycles (reference counting frees them), and each pass of the collector would walk
        every live job (a few microseconds a job over 100,000 jobs)."""
        config["simulation"] = {"switch_cost": self.switch_cost, "launch_cost": self.launch_cost}
        self.collecting = gc.isenabled()
        gc.disable()

    def check(self) -> None:
        """Nothing stops a simulation but its end."""

    def launch(self, spec: JobSpec, action: Launch) -> Ended | None:
        """Start the job's clock (running now, or stopped until its row comes)."""
        self.launched += 1
        if self.redraw is not None and spec.id in self.interrupted:
            self.duration[spec.id] = self.redraw(spec.id)
        job = self.jobs[spec.id] = _Job(spec.id, spec.pes,
                                        self.duration[spec.id] + self.launch_cost,
                                        self.launched)
        if action.running:
            self._resume(job, 0.0)
        return None

    def switch(self, jobs: frozenset[str], slot: int | None) -> Switch:
        """Stop the running jobs not in ``jobs`` and continue the stopped ones in it."""
        running, launched, clock = self.running, self.jobs, self.clock
        if jobs == running:                 # most of gang's rounds: the same run set again
            return _UNCHANGED
        stopped = [name for name in running if name not in jobs]
        running.difference_update(stopped)
        for name in stopped:
            job = launched[name]
            job.running = False
            job.version += 1
            job.remaining = job.end_at - clock
            job.executed += clock - job.resumed_at
        continued = [name for name in jobs if name not in running and name in launched]
        for name in continued:
            self._resume(launched[name], self.switch_cost)
        return Switch(tuple(stopped), tuple(continued), self.switch_cost if continued else 0.0)

    def _resume(self, job: _Job, cost: float) -> None:
        job.running = True
        self.running.add(job.name)
        job.remaining += cost
        job.resumed_at = self.clock
        job.end_at = self.clock + job.remaining
        heapq.heappush(self.heap, (job.end_at, job.order, job.version, job))

    def kill(self, job: str) -> None:
        """End ``job`` now as killed at its limit (reported by the next ``advance``)."""
        state = self.jobs[job]
        if state.running:
            state.executed += self.clock - state.resumed_at
        state.running = False
        self.running.discard(job)
        state.version += 1
        state.end_at = self.clock
        heapq.heappush(self.heap, (self.clock, state.order, state.version, state))
        state.remaining = -1.0

    def requeue(self, job: str) -> tuple[float, float | None]:
        """Drop ``job``'s run (an owner interrupted it); the seconds it had run and the CPU
        seconds its ranks used (repeated work, COW §3.2)."""
        state = self.jobs.pop(job)
        state.live = False
        self.running.discard(job)
        self.interrupted.add(job)
        executed = state.executed + (self.clock - state.resumed_at if state.running else 0.0)
        return executed, round(executed * state.size, 6)

    def owner_start(self, pe: int, duration: float) -> None:
        """Owners cost nothing here: the policy keeps gangs off their PEs."""

    def migrate(self, job: str, slot: int, pes: tuple[int, ...]) -> str | None:
        """A modeled job moves at no cost."""
        return None

    def owner_end(self, pe: int) -> None:
        """Nothing to stop (owners are not modelled as work)."""

    def advance(self, until: float) -> list[Ended]:
        """Jump to the next job end if it comes no later than ``until`` (s; within ``TIE``) and
        return the jobs ending then (within ``TIE``); else jump to ``until`` and return
        nothing.  ``Stalled`` when nothing can ever happen (no job runs, ``until`` is
        infinite)."""
        heap = self.heap
        while heap:
            end_at, _, version, job = heap[0]
            if version != job.version or not job.live:
                heapq.heappop(heap)
                continue
            if end_at > until + TIE:
                break
            if end_at > self.clock:
                self.clock = end_at
            ended = []
            last = end_at + TIE
            while heap and heap[0][0] <= last:
                _, _, version, job = heapq.heappop(heap)
                if version == job.version and job.live:
                    ended.append(self._ended(job))
            return ended
        if until == float("inf"):
            raise Stalled(f"t={self.clock:.3f}: jobs wait but no event is due")
        if until > self.clock:
            self.clock = until
        return []

    def _ended(self, job: _Job) -> Ended:
        del self.jobs[job.name]
        self.running.discard(job.name)
        job.live = False
        if job.remaining < 0:
            return Ended(job.name, "timeout", None, "killed: ran past its limit", None, None,
                         round(job.executed * job.size, 6))
        job.executed += self.clock - job.resumed_at
        return Ended(job.name, "done", 0, "", None, None, round(job.executed * job.size, 6))

    def end(self, status: str) -> tuple[list[Ended], int]:
        """Nothing is left at the end of a complete run; an interrupted one has no processes.
        The garbage collector runs again if it ran before ``begin``."""
        if self.collecting:
            gc.enable()
        return [Ended(name, "killed", None, f"run {status}") for name in self.jobs], 0
