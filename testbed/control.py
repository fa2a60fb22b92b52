"""The operator's narrow way into a running driver (the service's only one): submit jobs,
cancel, hold, reclass and move them, list the live jobs, and stop a serving run.

Each command is logged and its consequences carried out by the driver as any policy action
is; nothing here keeps state of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

from testbed.driver import Driver
from testbed.workloads.files import JobSpec, Workload


class LiveJob(NamedTuple):
    """A job not yet ended as an operator sees it: its spec, its state (``submitted``: not
    arrived, ``waiting``: queued, ``running``, ``stopped`` or ``held``), its arrival and start
    times (s on the run's clock, None before) and its home row when placed."""

    spec: JobSpec
    state: str
    arrived_at: float | None
    started_at: float | None
    row: int | None


class Control:
    """Commands to ``driver`` while it serves."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    @property
    def pes(self) -> int:
        """The machine's PEs."""
        return self._driver.policy.config.pes

    def now(self) -> float:
        """The run's clock (s since the run started)."""
        return self._driver.executor.now()

    def submit(self, workload: Workload) -> None:
        """Jobs submitted while the driver runs (logged as one more ``workload`` event): each
        arrives its ``arrival`` seconds from now (or, with ``after``, that long after its
        predecessor ends)."""
        self._driver.enter(self.now(), workload)

    def cancel(self, job: str, kill: Callable[[str], None]) -> str:
        """Cancel ``job``: not arrived yet, or still queued, it ends ``killed`` at once; running,
        ``kill`` is called on it and it ends when its ranks are gone.  Returns what happened:
        ``cancelled``, ``killing`` or ``unknown`` (no such job, or it has ended)."""
        return self._driver.cancel(job, kill)

    def hold(self, job: str, held: bool) -> bool:
        """Suspend (``held``) or resume a started job; False if it is not running."""
        driver = self._driver
        if driver.jobs.state(job) != "started":
            return False
        driver.log.emit("hold", self.now(), job=job, held=held)
        driver.apply(driver.policy.hold(job) if held else driver.policy.release(job))
        return True

    def set_class(self, job: str, name: str) -> str | None:
        """Move ``job`` to class ``name`` (logged as ``job_class``); None when done, else why
        not (the policy has no classes, no such class, no such job or it has ended)."""
        driver = self._driver
        record = driver.jobs.get(job)
        if record is None:
            return f"{job} has ended or does not exist"
        now = self.now()
        try:
            old, actions = driver.policy.set_class(job, name, now)
        except ValueError as err:
            return str(err)
        driver.log.emit("job_class", now, job=job, old=old, new=name)
        record.spec = dataclasses.replace(record.spec, job_class=name)
        driver.apply(actions)
        return None

    def migrate(self, job: str, pes: tuple[int, ...]) -> str | None:
        """Move ``job`` to ``pes`` by hand (an operator's ``testbed migrate``); None when
        done, else why not."""
        driver = self._driver
        if driver.jobs.state(job) != "started":
            return f"{job} is not running"
        try:
            actions = driver.policy.migrate(job, pes, self.now())
        except ValueError as err:
            return str(err)
        driver.apply(actions)
        return None

    def stop(self) -> None:
        """End a serving run at the next round: what is left is killed."""
        self._driver.stopping = True

    def jobs(self) -> list[LiveJob]:
        """Every job not ended, in submission order."""
        policy = self._driver.policy
        placed = policy.placements()
        running = policy.running_now()
        out = []
        for record in self._driver.jobs:
            job = record.spec.id
            if record.state == "started":
                state = ("held" if job in policy.held
                         else "running" if job in running else "stopped")
                started = record.started_at
            else:
                state = "waiting" if record.state == "queued" else "submitted"
                started = None
            out.append(LiveJob(record.spec, state, record.arrived_at, started, placed.get(job)))
        return out
