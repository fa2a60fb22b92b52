"""Lazy gang scheduling with job classes: the LLNL Cray T3D gang scheduler (T3D §4).

There is no periodic switch.  A job holds its PEs until it ends or is preempted, and a job is
preempted only when a job of its class or a higher one needs the PEs (§4.3):

* never before its do-not-disturb time is up: the class multiplier (s per PE) times its PEs,
  counted from the moment it was last loaded;
* never for a job of a lower class, and never at all in a class that is not preemptable
  (debug and benchmark in Table 1).

The scheduler runs whenever something changes (an arrival, an end, a held job released) and
when a do-not-disturb time or a maximum wait runs out.  Each run has two passes:

1. Jobs that have waited for loading (since arrival or since their last preemption) longer
   than their class's maximum wait, by class priority and then by waiting time, longest first.
   For the first one that can have PEs at all, the cheapest set of PEs is reserved: cost is
   compared as (PEs of the jobs it would preempt, the sum of their priorities, the sum of
   their remaining do-not-disturb times), in that order (the paper names the three terms but
   not how they combine).  Only one job has a reservation at a time; a waiting job of a higher
   class past its maximum wait takes the reservation over.  The reserved PEs' occupants are
   preempted as their do-not-disturb times run out, and the job is loaded once they are free.
2. Every other waiting job, in the same order: if the job limit, its class's PE limit, the
   large-job limit and (for a job never loaded) the system limit allow, it is loaded on PEs
   that are free or held by jobs it may preempt now, outside the reservation; of several such
   sets, the best fit is the one preempting the fewest PEs, then the lowest priorities, then
   the allocator's order.

Preempted jobs keep their PEs (the rows of the matrix hold them, ``system_limit / PEs`` rows):
they are stopped, not moved, so one is reloaded where it ran.  T3D could relocate a job it had
written to disk; here relocation needs migration.  An operator's hold (``testbed suspend``) is
T3D's user suspend; a released job waits for loading again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from testbed.policies.base import Action, JobRequest, Launch, Policy, Run
from testbed.policies.classes import ClassTable, JobClass
from testbed.policies.config import PolicyConfig
from testbed.policies.matrix import Matrix, Placement

Cost = tuple[int, int, float]


@dataclass
class _Job:
    request: JobRequest
    cls: JobClass
    order: int
    waiting_since: float
    loaded_at: float | None = None
    launched: bool = False
    held: bool = False

    @property
    def size(self) -> int:
        return self.request.size

    def dnd_end(self) -> float:
        """When its do-not-disturb time runs out (s; it must be loaded)."""
        assert self.loaded_at is not None
        return self.loaded_at + self.cls.dnd_multiplier_s * self.size


class T3d(Policy):
    """The T3D's lazy gang scheduler with job classes and the two-pass algorithm."""

    name = "t3d"
    time_sliced = False
    pages_preempted = True

    def __init__(self, config: PolicyConfig) -> None:
        if config.memory is not None:
            raise ValueError("the t3d scheduler does not support memory admission")
        if config.classes is None:
            raise ValueError("the t3d scheduler needs a class table")
        super().__init__(config)
        self.table: ClassTable = config.classes
        rows = max(1, math.ceil(self.table.system_limit / config.pes))
        self.matrix = Matrix(rows, config.pes, config.allocator)
        self.jobs: dict[str, _Job] = {}
        self.loaded: set[str] = set()
        self.reservation: tuple[str, int, Placement] | None = None
        self.arrivals = 0
        self.now = 0.0

    def refuse(self, request: JobRequest) -> str | None:
        """Why ``request`` can never run here (an unknown class, more PEs than a job or its
        class may have); None if it can."""
        try:
            cls = self.table.of(request.job_class, request.interactive)
        except KeyError:
            known = ", ".join(sorted(self.table.classes))
            return f"unknown job class {request.job_class!r} (known: {known})"
        limit = min(self.table.job_limit, cls.pe_limit, self.config.pes)
        if request.size > self.table.large_limit and request.size >= self.table.large_size:
            limit = min(limit, self.table.large_limit)
        if request.size > limit:
            return f"{request.size} PEs asked for, class {cls.name} may have {limit}"
        return None

    def busy(self) -> bool:
        """Whether any job is known (waiting, loaded, preempted or held)."""
        return bool(self.jobs)

    def idle(self) -> bool:
        """Whether no job is known."""
        return not self.jobs

    def running(self) -> frozenset[str]:
        """The loaded jobs."""
        return frozenset(self.loaded)

    def states(self) -> dict[str, str]:
        """Each job's state as T3D's gangster shows it (Fig 8): ``N`` new (no PEs yet), ``W``
        waiting with PEs reserved, ``R`` running, ``O`` preempted (stopped, its state kept on
        its PEs), ``S`` suspended by an operator."""
        reserved = self.reservation[0] if self.reservation else None
        out = {}
        for name, job in self.jobs.items():
            if job.held:
                out[name] = "S"
            elif name in self.loaded:
                out[name] = "R"
            elif name == reserved:
                out[name] = "W"
            else:
                out[name] = "O" if job.launched else "N"
        return out

    def set_class(self, job: str, name: str, now: float) -> tuple[str, list[Action]]:
        """Move a job to class ``name`` (gangster): its old class and the actions that follow;
        ``ValueError`` for an unknown job or class or a class it may not be in."""
        state = self.jobs.get(job)
        if state is None:
            raise ValueError(f"no job {job} under the t3d scheduler")
        if name not in self.table.classes:
            raise ValueError(f"unknown job class {name!r} (known: "
                             f"{', '.join(sorted(self.table.classes))})")
        refusal = self.refuse(state.request._replace(job_class=name))
        if refusal is not None:
            raise ValueError(refusal)
        old = state.cls.name
        state.cls = self.table.classes[name]
        return old, self._schedule(now)

    def arrive(self, job: JobRequest, now: float) -> list[Action]:
        """Register the job in its class (default by kind) and schedule."""
        self.arrivals += 1
        self.jobs[job.id] = _Job(job, self.table.of(job.job_class, job.interactive),
                                 self.arrivals, now)
        return self._schedule(now)

    def finish(self, job: str, now: float) -> list[Action]:
        """The job ended: free its PEs and schedule."""
        self.jobs.pop(job, None)
        self.loaded.discard(job)
        if job in self.matrix.placed:
            self.matrix.remove(job)
        if self.reservation is not None and self.reservation[0] == job:
            self.reservation = None
        return self._schedule(now)

    def cancel(self, job: str, now: float) -> list[Action] | None:
        """Forget a job never launched; None if it was launched (it is killed instead)."""
        state = self.jobs.get(job)
        if state is None or state.launched:
            return None
        return self.finish(job, now)

    def hold(self, job: str) -> list[Action]:
        """Stop ``job`` until ``release`` (T3D's user suspend); its PEs may be used."""
        if job in self.jobs:
            self.jobs[job].held = True
            self.loaded.discard(job)
        return self._schedule(self.now)

    def release(self, job: str) -> list[Action]:
        """Let a held job wait for loading again, from now."""
        state = self.jobs.get(job)
        if state is not None and state.held:
            state.held = False
            state.waiting_since = self.now
        return self._schedule(self.now)

    def wake_at(self) -> float | None:
        """The next maximum wait or do-not-disturb time to run out while jobs wait."""
        waiting = [j for n, j in self.jobs.items() if n not in self.loaded and not j.held]
        if not waiting:
            return None
        times = [j.waiting_since + j.cls.max_wait_s for j in waiting]
        times += [self.jobs[n].dnd_end() for n in self.loaded]
        future = [t for t in times if t > self.now and math.isfinite(t)]
        return min(future, default=None)

    def wake(self, now: float) -> list[Action]:
        """A maximum wait or do-not-disturb time ran out: schedule."""
        return self._schedule(now)

    def _waiting(self) -> list[tuple[str, _Job]]:
        """Jobs waiting for loading, by class priority, then longest waiting, then arrival."""
        waiting = [(n, j) for n, j in self.jobs.items() if n not in self.loaded and not j.held]
        return sorted(waiting, key=lambda nj: (-nj[1].cls.priority, nj[1].waiting_since,
                                               nj[1].order))

    def _options(self, job: _Job) -> list[tuple[int, Placement]]:
        """Where ``job`` may be loaded: its own PEs once launched, else every free cell set."""
        if job.launched:
            return [self.matrix.placed[job.request.id]]
        return list(self.matrix.candidates(job.size))

    def _victims(self, pes: Placement) -> set[str]:
        return {n for n in self.loaded if set(self.matrix.placed[n][1]) & set(pes)}

    def _may_preempt(self, job: _Job, victim: _Job, now: float | None) -> bool:
        """Whether ``job`` may preempt ``victim`` (at ``now``; None: some day)."""
        if not victim.cls.preemptable or victim.cls.priority > job.cls.priority:
            return False
        return now is None or now >= victim.dnd_end()

    def _cost(self, job: _Job, pes: Placement, now: float | None) -> Cost | None:
        """The cost of loading ``job`` on ``pes`` (None: not allowed, at ``now`` or ever)."""
        victims = [self.jobs[n] for n in self._victims(pes)]
        if not all(self._may_preempt(job, v, now) for v in victims):
            return None
        return (sum(v.size for v in victims), sum(v.cls.priority for v in victims),
                sum(max(0.0, v.dnd_end() - self.now) for v in victims))

    def _within_limits(self, job: _Job, victims: set[str]) -> bool:
        stay = [self.jobs[n] for n in self.loaded - victims]
        table = self.table
        if job.size > table.job_limit:
            return False
        if sum(j.size for j in stay if j.cls is job.cls) + job.size > job.cls.pe_limit:
            return False
        large = [j.size for j in stay if j.size >= table.large_size]
        if job.size >= table.large_size and sum(large) + job.size > table.large_limit:
            return False
        placed = sum(len(pes) for _, pes in self.matrix.placed.values())
        return job.launched or placed + job.size <= table.system_limit

    def _schedule(self, now: float) -> list[Action]:
        self.now = now
        before = frozenset(self.loaded)
        launches: list[Launch] = []
        self._reserve(now)
        if self.reservation is not None:
            name, slot, pes = self.reservation
            for victim in self._victims(pes):
                if now >= self.jobs[victim].dnd_end():
                    self._preempt(victim, now)
            if not self._victims(pes):
                self.reservation = None
                self._load(name, slot, pes, now, launches)
        reserved = set(self.reservation[2]) if self.reservation else set()
        for name, job in self._waiting():
            best: tuple[Cost, int, Placement] | None = None
            for slot, pes in self._options(job):
                if reserved & set(pes) and (self.reservation is None
                                            or name != self.reservation[0]):
                    continue
                cost = self._cost(job, pes, now)
                if cost is None or not self._within_limits(job, self._victims(pes)):
                    continue
                if self.reservation is not None and name == self.reservation[0] and cost[0]:
                    continue        # the reserved job takes only free PEs elsewhere
                if best is None or cost < best[0]:
                    best = (cost, slot, pes)
            if best is not None:
                if self.reservation is not None and name == self.reservation[0]:
                    self.reservation = None
                    reserved = set()
                for victim in self._victims(best[2]):
                    self._preempt(victim, now)
                self._load(name, best[1], best[2], now, launches)
        self.current = frozenset(self.loaded)
        actions: list[Action] = []
        if self.current != before:
            actions.append(Run(self.current, None))
        return actions + launches

    def _reserve(self, now: float) -> None:
        """Pass 1: keep, take over or make the one reservation for a job past its wait."""
        starving = [(n, j) for n, j in self._waiting()
                    if now - j.waiting_since >= j.cls.max_wait_s]
        if self.reservation is not None:
            holder = self.jobs.get(self.reservation[0])
            if holder is None or holder.held or self.reservation[0] in self.loaded:
                self.reservation = None
            elif not any(j.cls.priority > holder.cls.priority for _, j in starving):
                return
            else:
                self.reservation = None
        for name, job in starving:
            options = [(cost, slot, pes) for slot, pes in self._options(job)
                       if (cost := self._cost(job, pes, None)) is not None]
            options = [o for o in options if self._within_limits(job, self._victims(o[2]))]
            if options:
                _, slot, pes = min(options)
                self.reservation = (name, slot, pes)
                return

    def _preempt(self, name: str, now: float) -> None:
        self.loaded.discard(name)
        self.jobs[name].waiting_since = now

    def _load(self, name: str, slot: int, pes: Placement, now: float,
              launches: list[Launch]) -> None:
        job = self.jobs[name]
        job.loaded_at = now
        self.loaded.add(name)
        if not job.launched:
            job.launched = True
            self.matrix.assign(name, slot, pes)
            launches.append(Launch(name, slot, pes, True))
