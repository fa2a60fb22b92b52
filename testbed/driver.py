"""The driver: one run loop over an executor (the machine manager's part, THESIS §4.3.3).

The driver owns time's events: arrivals (successors arrive when their predecessor ends),
heartbeats every timeslice while jobs are placed, the policy's own wake-ups, and job limits.
It feeds the policy, hands its actions to the executor, and writes the events that say what
happened to ``events.jsonl``.  The executor makes the actions real and tells the driver when
jobs end:

* the emulation executor (``testbed.emulation.executor``) runs real ranks under node managers
  and waits in real time;
* the simulation executor (``testbed.simulation.executor``) advances modeled jobs and jumps
  its virtual clock to the next thing that happens.

As in SimPy, where the real-time environment overrides only ``step``, the loop is the same for
both; only ``advance`` (wait until a time, or until something happens) differs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from testbed.agenda import Agenda, Entry, Kind
from testbed.events import EventLog, WriteFailed
from testbed.job_table import JobTable
from testbed.memory_history import MemoryHistory, program_of
from testbed.policies import Action, JobRequest, Launch, Migrate, Policy, Requeue, Run
from testbed.workloads.files import JobSpec, Workload


class Ended(NamedTuple):
    """What an executor reports when a job ends (immutable; a named tuple, quick to make).

    ``status`` is done, failed, killed or timeout; ``swap_in``/``swap_out`` are pages swapped
    during its life (None when simulated); ``cpu_s`` the CPU seconds of its ranks when the
    executor models them (None when measured per rank); ``peak_mib`` its largest rank's peak
    RSS (MiB), None when unknown.
    """

    job: str
    status: str
    exit_code: int | None = None
    reason: str = ""
    swap_in: int | None = None
    swap_out: int | None = None
    cpu_s: float | None = None
    peak_mib: float | None = None


@dataclass(frozen=True)
class Switch:
    """What a heartbeat changed: jobs stopped and continued, and its latency (s)."""

    stopped: tuple[str, ...]
    continued: tuple[str, ...]
    latency: float


OWNER_PICKS = ("unowned", "idle", "any")


@dataclass(frozen=True)
class OwnerStream:
    """Workstation owners (COW §2.1): they arrive Poisson at ``rate`` (per s), each stays an
    exponential time of mean ``mean_s`` (s) at a PE drawn uniformly, as ``pick`` says, from

    * ``unowned``: the PEs without an owner, idle or running a gang (COW §2.1's redraw until
      the workstation drawn is not its owner's already);
    * ``idle``: the PEs with neither an owner nor a gang, or, when there is none, ``unowned``;
    * ``any``: all PEs (an owner drawn at a PE that has one already is dropped).

    An arrival finding every PE owned is dropped; every draw comes from ``seed``."""

    rate: float
    mean_s: float
    seed: int = 1
    pick: str = "unowned"

    def __post_init__(self) -> None:
        if self.pick not in OWNER_PICKS:
            raise ValueError(f"unknown owner pick {self.pick!r} (known: {', '.join(OWNER_PICKS)})")


def owner_pe(rng: random.Random, pick: str, pes: int, owned: set[int],
             busy: set[int]) -> int | None:
    """The PE an arriving owner takes (``OwnerStream.pick`` says how), drawn with ``rng``
    among ``pes`` PEs of which ``owned`` have an owner and ``busy`` run a gang; None when the
    owner is dropped."""
    if pick == "any":
        pe = rng.randrange(pes)
        return None if pe in owned else pe
    free = [pe for pe in range(pes) if pe not in owned]
    if pick == "idle":
        free = [pe for pe in free if pe not in busy] or free
    return rng.choice(free) if free else None


class Executor(Protocol):
    """What the driver needs from an executor.  Times are seconds on the run's clock.
    ``cpus`` maps PEs to the CPUs ranks are pinned to, None when nothing is pinned."""

    kind: str
    cpus: tuple[int, ...] | list[int] | None

    def now(self) -> float:
        """The run's clock (s since the run started)."""
        ...

    def begin(self, log: EventLog, config: dict[str, Any]) -> None:
        """Set up before the first event (``config`` may gain executor facts)."""
        ...

    def check(self) -> None:
        """Raise ``Interrupted`` if the run has been asked to stop (a signal came)."""
        ...

    def launch(self, spec: JobSpec, action: Launch) -> Ended | None:
        """Start ``spec`` as ``action`` says; an ``Ended`` if it failed to start."""
        ...

    def switch(self, jobs: frozenset[str], slot: int | None) -> Switch:
        """Make exactly ``jobs`` run (the others placed stop)."""
        ...

    def kill(self, job: str) -> None:
        """Kill ``job`` (its limit expired); its end is reported by ``advance`` later."""
        ...

    def requeue(self, job: str) -> tuple[float, float | None]:
        """Kill ``job`` for good (an owner interrupted it; it will be launched again); the
        seconds it had run and the CPU seconds its ranks used (None when unknown)."""
        ...

    def owner_start(self, pe: int, duration: float) -> None:
        """A workstation owner takes ``pe`` for ``duration`` s (its job starts at once)."""
        ...

    def migrate(self, job: str, slot: int, pes: tuple[int, ...]) -> str | None:
        """Move ``job``'s rank i to PE ``pes[i]``, its home row ``slot``; None when done, else
        why not."""
        ...

    def owner_end(self, pe: int) -> None:
        """The owner of ``pe`` leaves (its job ends)."""
        ...

    def advance(self, until: float) -> list[Ended]:
        """Let time pass up to ``until`` (s) at most; return the jobs that ended meanwhile.
        May return early with nothing (the emulation polls)."""
        ...

    def end(self, status: str) -> tuple[list[Ended], int]:
        """Kill what is left at the end of the run; the jobs that ended so, and the number of
        stray processes swept."""
        ...


def new_run_id() -> str:
    """A fresh, unique run id (also the marker every process of an emulated run carries)."""
    return f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"


class Interrupted(Exception):
    """The run was stopped by a signal (raised by an executor while it waits)."""


class Observer(Protocol):
    """Someone told of jobs as they start and end, and asked to look around every round (the
    service: streaming output, answering clients)."""

    def started(self, job: str) -> None:
        """``job`` was launched."""
        ...

    def ended(self, end: Ended) -> None:
        """A job ended (its ``finish`` event is written)."""
        ...

    def poll(self, now: float) -> None:
        """Once a round of the loop, at ``now`` (s)."""
        ...


class Stalled(RuntimeError):
    """Jobs wait but nothing can ever happen (a policy that never starts them)."""


class Driver:
    """Runs ``workload`` under ``policy`` on ``executor`` into ``run_dir``, writing ``log``
    (which it closes when the run ends).

    ``job_timeout`` (s) is the runtime limit of jobs without ``limit=``; with ``kill_at_estimate``
    a job with an ``estimate=`` is also killed at it (batch systems kill at the requested time).
    What is due when is on ``agenda``; the jobs not yet ended are in ``jobs``.
    """

    def __init__(self, workload: Workload, policy: Policy, executor: Executor, run_dir: Path,
                 config: dict[str, Any], *, log: EventLog, job_timeout: float | None = None,
                 history: MemoryHistory | None = None, kill_at_estimate: bool = False,
                 run_id: str | None = None, observer: Observer | None = None,
                 owners: OwnerStream | None = None) -> None:
        self.workload = workload
        self.policy = policy
        self.executor = executor
        self.run_dir = run_dir
        self.config = config
        self.log = log
        self.job_timeout = job_timeout
        self.history = history
        self.kill_at_estimate = kill_at_estimate
        self.run_id = run_id or new_run_id()
        self.observer = observer
        self.owners = owners
        self.owner_rng = random.Random(owners.seed if owners else 0)
        self.owned: set[int] = set()
        self.states: dict[str, str] = {}
        self.stopping = False
        self.jobs = JobTable()
        self.successors: dict[int, list[JobSpec]] = defaultdict(list)
        self.next_tick: float | None = None
        # a policy that keeps the base's wake_at (or states) never wakes (or keeps states),
        # and one without a timeslice never gets one: the loop does not ask them every round
        timers: dict[Kind, Callable[[], float | None]] = {}
        if type(policy).wake_at is not Policy.wake_at:
            timers[Kind.WAKE] = policy.wake_at
        if policy.timeslice is not None:
            timers[Kind.HEARTBEAT] = self._tick_at
        self.agenda = Agenda(timers)
        self.keeps_states = type(policy).states is not Policy.states
        self.slot_seen: int | None = None
        self.seq = 0
        if workload.owners and not policy.supports_owners:
            raise ValueError(f"{workload.path}: owner lines need a scheduler with owners "
                             f"(afcfs, lgfs), not {policy.name}")

    @property
    def serving(self) -> bool:
        """Whether the driver serves (runs until stopped, jobs come through ``submit``)."""
        return self.observer is not None

    def run(self) -> str:
        """Run the workload to the end; return ``complete`` or ``interrupted``.

        Writes ``config.json``, ``events.jsonl`` and (emulated) job outputs under ``jobs/``.
        An executor raising ``Interrupted`` ends the run as interrupted; it is asked first
        thing in every round, before anything due is handled (nothing starts after a signal).
        A file of the run that cannot be written (``WriteFailed``: a full disk) ends the run
        at once, every job killed, and is raised again once the executor has ended.
        With an observer the driver serves: it runs until ``stop`` or a signal, which end it
        ``stopped``, and jobs come in through ``submit``.
        """
        log = self.log
        status = "error"
        try:
            (self.run_dir / "jobs").mkdir()
            self.config["executor"] = self.executor.kind
            try:
                self._begin()
                self._loop()
                status = "stopped" if self.serving else "complete"
            except Interrupted:
                status = "stopped" if self.serving else "interrupted"
            finally:
                ended, swept = self.executor.end(status)
                for end in ended:
                    self._finish_event(end)
                log.emit("run_end", self.executor.now(), status=status, swept=swept)
        finally:
            log.close()
        return status

    def _begin(self) -> None:
        self.executor.begin(self.log, self.config)
        config = self.run_dir / "config.json"
        try:
            config.write_text(json.dumps(self.config, indent=2) + "\n")
        except OSError as err:
            raise WriteFailed(config, err) from None
        self.log.emit("run_start", 0.0, run_id=self.run_id, wall_time=time.time(),
                      config=self.config)
        self._enter(0.0, self.workload)
        for visit in self.workload.owners:
            self.agenda.push(visit.arrival, Kind.OWNER_VISIT, visit)
        if self.owners is not None:
            self.agenda.push(self.owner_rng.expovariate(self.owners.rate), Kind.OWNER_ARRIVAL)

    def _enter(self, now: float, workload: Workload) -> None:
        """Log ``workload`` and enter its jobs: each arrives its ``arrival`` seconds from
        ``now``, or that long after its predecessor ends."""
        self.log.emit_workload(now, workload.path, workload.meta,
                               [(j.id, j.line, j.arrival, j.pes, j.work, j.limit, j.estimate,
                                 j.after, j.source_id, j.job_class or None, j.prime)
                                for j in workload.jobs])
        for spec in workload.jobs:
            if spec.after is None:
                record = self.jobs.add(spec, "pending")
                record.arrival = self.agenda.push(now + spec.arrival, Kind.ARRIVAL, spec)
            else:
                self.jobs.add(spec, "waiting")
                self.successors[spec.after].append(spec)

    def _tick_at(self) -> float | None:
        return self.next_tick

    def _loop(self) -> None:
        executor, agenda, policy, observer = self.executor, self.agenda, self.policy, self.observer
        handle, ended = self._handle, self._ended
        arm = self._arm_heartbeat if Kind.HEARTBEAT in agenda.timers else None
        arrival = Kind.ARRIVAL
        while True:
            executor.check()
            now = executor.now()
            if observer is not None:
                observer.poll(now)
                if self.stopping:
                    return
            for entry in agenda.due(now):
                handle(entry, now)
            if arm is not None:
                arm(now)
            if (observer is None and not agenda.count(arrival)
                    and not self.successors_waiting() and policy.idle()):
                return
            for end in executor.advance(agenda.next_at()):
                ended(end)

    def _handle(self, entry: Entry, now: float) -> None:
        """Do what ``entry`` says, due now (``now``, s)."""
        kind = entry.kind
        if kind is Kind.ARRIVAL:
            self._arrive(entry.what, entry.at, now)
        elif kind is Kind.HEARTBEAT:
            self._heartbeat(entry.at, now)
        elif kind is Kind.WAKE:
            self._apply(self.policy.wake(now))
        elif kind is Kind.OWNER_END:
            self._owner_leaves(entry.what, now)
        elif kind is Kind.OWNER_VISIT:
            if entry.what.pe not in self.owned:
                self._owner_takes(entry.what.pe, entry.what.duration, now)
        elif kind is Kind.OWNER_ARRIVAL:
            assert self.owners is not None
            self._owner_arrives(self.owner_rng, self.owners, now)
            self.agenda.push(entry.at + self.owner_rng.expovariate(self.owners.rate),
                             Kind.OWNER_ARRIVAL)
        else:
            record = self.jobs.get(entry.what)
            assert record is not None and record.limit is not None
            self.log.emit("limit", now, job=entry.what, limit=record.limit)
            record.limit = record.deadline = None
            self.executor.kill(entry.what)

    def _heartbeat(self, due: float, now: float) -> None:
        """The heartbeat due at ``due`` (s) comes at ``now``: the policy's tick, and the next
        heartbeat a whole timeslice on (beats missed meanwhile are skipped)."""
        timeslice = self.policy.timeslice
        if timeslice is None or not self.policy.busy():
            self.next_tick = None
            return
        self._apply(self.policy.tick(now), due=due)
        timeslice = self.policy.timeslice or timeslice      # adapted by the switch
        self.next_tick = due + timeslice * max(1, math.ceil((now - due) / timeslice))

    def _arm_heartbeat(self, now: float) -> None:
        """Heartbeats while jobs are placed: the first a timeslice from ``now`` (s)."""
        timeslice = self.policy.timeslice
        if timeslice is None or not self.policy.busy():
            self.next_tick = None
        elif self.next_tick is None:
            self.next_tick = now + timeslice

    def submit(self, workload: Workload) -> None:
        """Jobs submitted while the driver runs (logged as one more ``workload`` event): each
        arrives its ``arrival`` seconds from now (or, with ``after``, that long after its
        predecessor ends)."""
        self._enter(self.executor.now(), workload)

    def cancel(self, job: str, kill: Callable[[str], None]) -> str:
        """Cancel ``job``: not arrived yet, or still queued, it ends ``killed`` at once; running,
        ``kill`` is called on it and it ends when its ranks are gone.  Returns what happened:
        ``cancelled``, ``killing`` or ``unknown`` (no such job, or it has ended)."""
        record = self.jobs.get(job)
        if record is None:
            return "unknown"
        if record.state == "started":
            kill(job)
            return "killing"
        actions = None
        if record.state == "queued":
            actions = self.policy.cancel(job, self.executor.now())
        elif record.state == "pending":
            self.agenda.cancel(record.arrival)
        else:
            after = self.successors[record.spec.after]     # type: ignore[index]
            after[:] = [spec for spec in after if spec.id != job]
        self._ended(Ended(job, "killed", None, "killed: cancelled"), started=False)
        if actions:
            self._apply(actions)
        return "cancelled"

    def hold(self, job: str, held: bool) -> bool:
        """Suspend (``held``) or resume a started job; False if it is not running."""
        if self.jobs.state(job) != "started":
            return False
        self.log.emit("hold", self.executor.now(), job=job, held=held)
        self._apply(self.policy.hold(job) if held else self.policy.release(job))
        return True

    def held(self, job: str) -> bool:
        """Whether ``job`` is held stopped (``hold``)."""
        return job in self.policy.held

    def set_class(self, job: str, name: str) -> str | None:
        """Move ``job`` to class ``name`` (logged as ``job_class``); None when done, else why
        not (the policy has no classes, no such class, no such job or it has ended)."""
        record = self.jobs.get(job)
        if record is None:
            return f"{job} has ended or does not exist"
        now = self.executor.now()
        try:
            old, actions = self.policy.set_class(job, name, now)
        except ValueError as err:
            return str(err)
        self.log.emit("job_class", now, job=job, old=old, new=name)
        record.spec = dataclasses.replace(record.spec, job_class=name)
        self._apply(actions)
        return None

    def stop(self) -> None:
        """End a serving run at the next round: what is left is killed."""
        self.stopping = True

    def _owner_arrives(self, rng: random.Random, owners: OwnerStream, now: float) -> None:
        """An owner arrives at a PE picked as ``owners.pick`` says (none: it is dropped)."""
        duration = rng.expovariate(1 / owners.mean_s)
        busy = {pe for record in self.jobs if record.state == "started"
                for pe in record.pes} if owners.pick == "idle" else set()
        pe = owner_pe(rng, owners.pick, self.policy.config.pes, self.owned, busy)
        if pe is not None:
            self._owner_takes(pe, duration, now)

    def _owner_takes(self, pe: int, duration: float, now: float) -> None:
        self.owned.add(pe)
        self.agenda.push(now + duration, Kind.OWNER_END, pe, key=pe)
        self.log.emit("owner_start", now, pe=pe, duration=round(duration, 6))
        self.executor.owner_start(pe, duration)
        self._apply(self.policy.owner_arrive(pe, now))

    def _owner_leaves(self, pe: int, now: float) -> None:
        self.owned.discard(pe)
        self.log.emit("owner_end", now, pe=pe)
        self.executor.owner_end(pe)
        self._apply(self.policy.owner_leave(pe, now))

    def successors_waiting(self) -> bool:
        """Whether some job still waits for its predecessor to end."""
        return any(self.successors.values())

    def _arrive(self, spec: JobSpec, due: float, now: float) -> None:
        """``spec`` arrives at ``now``; ``due`` (s) is when it was due (its workload arrival,
        or its predecessor's end plus its think time)."""
        mem_mb, source = spec.mem_mb, "declared"
        if mem_mb is None:
            source = "none"
            if self.history is not None:
                found = self.history.estimate(program_of(spec.argv), spec.pes, spec.user)
                if found:
                    mem_mb, source = found
        self.log.emit_arrival(now, spec.id, due, spec.pes, spec.work, spec.limit, spec.estimate,
                              spec.user, spec.argv, mem_mb and round(mem_mb, 3), source)
        record = self.jobs.get(spec.id)
        assert record is not None
        record.state, record.arrived_at, record.arrival = "queued", due, None
        request = JobRequest(spec.id, spec.pes, due, mem_mb, spec.estimate, spec.job_class,
                             spec.interactive, spec.prime)
        refusal = self.policy.refuse(request)
        if refusal is not None:
            self._ended(Ended(spec.id, "failed", None, refusal), started=False)
            return
        self._apply(self.policy.arrive(request, now))

    def _apply(self, actions: list[Action], due: float | None = None) -> None:
        for action in actions:
            if isinstance(action, Launch):
                self._launch(action)
            elif isinstance(action, Run):
                self._switch(action, due)
            elif isinstance(action, Migrate):
                self._migrate(action)
            elif isinstance(action, Requeue):
                lost, cpu = self.executor.requeue(action.job)
                self.log.emit("interrupt", self.executor.now(), job=action.job, pe=action.pe,
                              lost_s=round(lost, 6), cpu_s=cpu)
                record = self.jobs.get(action.job)
                assert record is not None
                self.agenda.cancel(record.deadline)
                record.state, record.limit, record.deadline = "queued", None, None
        if not self.keeps_states:
            return
        states = self.policy.states()
        if states is not None:
            changed = {job: s for job, s in states.items() if self.states.get(job) != s}
            if changed:
                self.log.emit("states", self.executor.now(), changed=changed)
            self.states = states

    def _migrate(self, move: Migrate) -> None:
        problem = self.executor.migrate(move.job, move.slot, move.pes)
        now = self.executor.now()
        self.log.emit("migrate", now, job=move.job, slot=move.slot, pes=list(move.pes),
                      from_slot=move.from_slot, from_pes=list(move.from_pes),
                      error=problem)
        if problem is not None:
            self._apply(self.policy.migration_failed(move, now))

    def migrate(self, job: str, pes: tuple[int, ...]) -> str | None:
        """Move ``job`` to ``pes`` by hand (an operator's ``testbed migrate``); None when
        done, else why not."""
        if self.jobs.state(job) != "started":
            return f"{job} is not running"
        try:
            actions = self.policy.migrate(job, pes, self.executor.now())
        except ValueError as err:
            return str(err)
        self._apply(actions)
        return None

    def _launch(self, action: Launch) -> None:
        record = self.jobs.get(action.job)
        assert record is not None
        spec = record.spec
        now = self.executor.now()
        cpus = self.executor.cpus
        self.log.emit_start(now, spec.id, action.slot, action.pes,
                            None if cpus is None else [cpus[pe] for pe in action.pes])
        record.state, record.started_at, record.pes = "started", now, action.pes
        record.limit = limit = self._limit(spec)
        if limit is not None:
            record.deadline = self.agenda.push(now + limit, Kind.DEADLINE, spec.id, key=spec.id)
        failed = self.executor.launch(spec, action)
        if self.observer is not None:
            self.observer.started(spec.id)
        if failed is not None:
            self._ended(failed)

    def _limit(self, spec: JobSpec) -> float | None:
        """The job's runtime limit (s): its ``limit=``, else its estimate when jobs are killed
        at their estimates, else ``--job-timeout``."""
        if spec.limit is not None:
            return spec.limit
        if self.kill_at_estimate and spec.estimate is not None:
            return spec.estimate
        return self.job_timeout

    def _switch(self, action: Run, due: float | None) -> None:
        self.seq += 1
        sent = self.executor.now()
        change = self.executor.switch(action.jobs, action.slot)
        moved, self.slot_seen = action.slot != self.slot_seen, action.slot
        if not change.stopped and not change.continued and not moved:
            return
        if change.stopped and change.continued:
            self.policy.observe_switch(change.latency)
        stopped, continued = sorted(change.stopped), sorted(change.continued)
        self.log.emit_switch(sent, self.seq, action.slot, sorted(action.jobs), stopped,
                             continued, round(change.latency * 1e6, 1),
                             None if due is None else round((sent - due) * 1e6, 1),
                             self.policy.timeslice)
        self.log.emit_jobs("suspend", sent, stopped)
        self.log.emit_jobs("resume", sent, continued)

    def _finish_event(self, end: Ended) -> float:
        now = self.executor.now()
        self.log.emit_finish(now, end.job, end.status, end.exit_code, end.reason, end.swap_in,
                             end.swap_out, end.cpu_s)
        return now

    def _ended(self, end: Ended, started: bool = True) -> None:
        now = self._finish_event(end)
        record = self.jobs.remove(end.job)
        self.agenda.cancel(record.deadline)
        spec = record.spec
        if self.history is not None and end.status == "done" and end.peak_mib is not None:
            self.history.record(program_of(spec.argv), spec.pes, spec.user, end.peak_mib)
            self.history.save()
        if started:
            self._apply(self.policy.finish(end.job, now))
        if self.observer is not None:
            self.observer.ended(end)
        if spec.source_id is not None:
            for successor in self.successors.pop(spec.source_id, []):
                waiting = self.jobs.get(successor.id)
                assert waiting is not None
                waiting.state = "pending"
                waiting.arrival = self.agenda.push(now + successor.arrival, Kind.ARRIVAL,
                                                   successor)
