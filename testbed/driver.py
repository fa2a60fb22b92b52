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
both; only ``advance`` (wait until a time, or until something happens) differs.  What an
executor and an observer are is in ``testbed.ports``; an operator's commands reach a serving
driver through ``testbed.control``; only the run library (``testbed.run``) builds a driver.
"""

from __future__ import annotations

import json
import math
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.agenda import Agenda, Entry, Kind
from testbed.events import EventLog, WriteFailed
from testbed.job_table import JobTable
from testbed.memory_history import MemoryHistory, program_of
from testbed.owners import OwnerStream, owner_pe
from testbed.policies import Action, JobRequest, Launch, Migrate, Policy, Requeue, Run
from testbed.ports import Ended, Executor, Interrupted, Observer
from testbed.workloads.files import JobSpec, Workload


def new_run_id() -> str:
    """A fresh, unique run id (also the marker every process of an emulated run carries)."""
    return f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"


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
        self.refuses = type(policy).refuse is not Policy.refuse
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
        self.enter(0.0, self.workload)
        for visit in self.workload.owners:
            self.agenda.push(visit.arrival, Kind.OWNER_VISIT, visit)
        if self.owners is not None:
            self.agenda.push(self.owner_rng.expovariate(self.owners.rate), Kind.OWNER_ARRIVAL)

    def enter(self, now: float, workload: Workload) -> None:
        """Log ``workload`` and enter its jobs: each arrives its ``arrival`` seconds from
        ``now``, or that long after its predecessor ends."""
        self.log.emit_workload(now, workload.path, workload.meta,
                               [(j.id, j.line, j.arrival, j.pes, j.work, j.limit, j.estimate,
                                 j.after, j.source_id, j.job_class or None, j.prime)
                                for j in workload.jobs])
        for spec in workload.jobs:
            record = self.jobs.enter(spec)
            if spec.after is None:
                record.arrival = self.agenda.push(now + spec.arrival, Kind.ARRIVAL, spec)

    def _tick_at(self) -> float | None:
        return self.next_tick

    def _loop(self) -> None:
        executor, agenda, policy, observer = self.executor, self.agenda, self.policy, self.observer
        handle, ended = self._handle, self.job_ended
        arm = self._arm_heartbeat if Kind.HEARTBEAT in agenda.timers else None
        arrival = Kind.ARRIVAL
        timed = bool(agenda.timers)
        while True:
            executor.check()
            now = executor.now()
            if observer is not None:
                observer.poll(now)
                if self.stopping:
                    return
            # without timers, nothing is due while the earliest entry (as the last round
            # found it, and nothing was pushed or cancelled since) lies ahead
            if timed or (top_at := agenda.top_at) is None or top_at <= now:
                for entry in agenda.due(now):
                    handle(entry, now)
            if arm is not None:
                arm(now)
            if (observer is None and not agenda.count(arrival)
                    and not self.jobs.successors_waiting() and policy.idle()):
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
            self.apply(self.policy.wake(now))
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
            self.log.emit("limit", now, job=entry.what, limit=self.jobs.limit_reached(entry.what))
            self.executor.kill(entry.what)

    def _heartbeat(self, due: float, now: float) -> None:
        """The heartbeat due at ``due`` (s) comes at ``now``: the policy's tick, and the next
        heartbeat a whole timeslice on (beats missed meanwhile are skipped)."""
        timeslice = self.policy.timeslice
        if timeslice is None or not self.policy.busy():
            self.next_tick = None
            return
        self.apply(self.policy.tick(now), due=due)
        timeslice = self.policy.timeslice or timeslice      # adapted by the switch
        self.next_tick = due + timeslice * max(1, math.ceil((now - due) / timeslice))

    def _arm_heartbeat(self, now: float) -> None:
        """Heartbeats while jobs are placed: the first a timeslice from ``now`` (s)."""
        timeslice = self.policy.timeslice
        if timeslice is None or not self.policy.busy():
            self.next_tick = None
        elif self.next_tick is None:
            self.next_tick = now + timeslice

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
            self.jobs.withdraw(job)
        self.job_ended(Ended(job, "killed", None, "killed: cancelled"), started=False)
        if actions:
            self.apply(actions)
        return "cancelled"

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
        self.apply(self.policy.owner_arrive(pe, now))

    def _owner_leaves(self, pe: int, now: float) -> None:
        self.owned.discard(pe)
        self.log.emit("owner_end", now, pe=pe)
        self.executor.owner_end(pe)
        self.apply(self.policy.owner_leave(pe, now))

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
        self.jobs.arrived(spec.id, due)
        request = JobRequest(spec.id, spec.pes, due, mem_mb, spec.estimate, spec.job_class,
                             spec.interactive, spec.prime)
        if self.refuses and (refusal := self.policy.refuse(request)) is not None:
            self.job_ended(Ended(spec.id, "failed", None, refusal), started=False)
            return
        self.apply(self.policy.arrive(request, now))

    def apply(self, actions: list[Action], due: float | None = None) -> None:
        """Carry out the policy's ``actions`` (``due``: when the heartbeat that made them was
        due, s), then log the job states that changed when the policy keeps states."""
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
                self.agenda.cancel(self.jobs.requeued(action.job))
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
            self.apply(self.policy.migration_failed(move, now))

    def _launch(self, action: Launch) -> None:
        record = self.jobs.get(action.job)
        assert record is not None
        spec = record.spec
        now = self.executor.now()
        cpus = self.executor.cpus
        self.log.emit_start(now, spec.id, action.slot, action.pes,
                            None if cpus is None else [cpus[pe] for pe in action.pes])
        limit = self._limit(spec)
        self.jobs.started(spec.id, now, action.pes, limit)
        if limit is not None:
            record.deadline = self.agenda.push(now + limit, Kind.DEADLINE, spec.id, key=spec.id)
        failed = self.executor.launch(spec, action)
        if self.observer is not None:
            self.observer.started(spec.id)
        if failed is not None:
            self.job_ended(failed)

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

    def job_ended(self, end: Ended, started: bool = True) -> None:
        """``end`` came: log it, take the job out of the table, tell the policy (when it had
        ``started``) and the observer, and let its successors arrive."""
        now = self._finish_event(end)
        record = self.jobs.remove(end.job)
        if record.deadline is not None:
            self.agenda.cancel(record.deadline)
        spec = record.spec
        if self.history is not None and end.status == "done" and end.peak_mib is not None:
            self.history.record(program_of(spec.argv), spec.pes, spec.user, end.peak_mib)
            self.history.save()
        if started:
            self.apply(self.policy.finish(end.job, now))
        if self.observer is not None:
            self.observer.ended(end)
        for waiting in self.jobs.released(spec.source_id):
            waiting.arrival = self.agenda.push(now + waiting.spec.arrival, Kind.ARRIVAL,
                                               waiting.spec)
