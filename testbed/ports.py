"""The driver's ports: what an executor and an observer are, and what they report.

Both executors (``testbed.emulation.executor``, ``testbed.simulation.executor``) implement
``Executor`` and report ``Ended`` and ``Switch``; the service is an ``Observer``.  They sit
beside the agenda, below the driver, so the executors never import the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from testbed.events import EventLog
from testbed.policies import Launch
from testbed.workloads.files import JobSpec


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
