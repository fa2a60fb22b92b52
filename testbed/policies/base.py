"""What every policy shares: the events it sees, the actions it returns, the admission queue.

Policies are pure: they never touch processes, signals or the wall clock.  Time comes in as a
number of seconds since the start of the run.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from testbed.matrix import Matrix
from testbed.policies.node import GangNode
from testbed.shim import Spin


@dataclass(frozen=True)
class JobRequest:
    """A job as a policy sees it: id, number of ranks, arrival time (s)."""

    id: str
    size: int
    arrival: float


@dataclass(frozen=True)
class Launch:
    """Start ``job``'s ranks on ``pes`` (one rank per PE, in order); its home row is ``slot``."""

    job: str
    slot: int
    pes: tuple[int, ...]


@dataclass(frozen=True)
class Run:
    """Exactly ``jobs`` should be running from now on; ``slot`` is the current row, if any."""

    jobs: frozenset[str]
    slot: int | None


Action = Launch | Run


class Policy:
    """Base policy: a matrix, an arrival-ordered queue, and strict FCFS admission.

    Subclasses choose the MPL, whether there is a heartbeat (``timeslice``), and which of the
    placed jobs run now (``running``).
    """

    name = "base"
    uses_shim = False
    coscheduled = True
    spin: Spin | None = None

    def __init__(self, pes: int, mpl: int, timeslice: float | None, allocator: str) -> None:
        self.matrix = Matrix(mpl, pes, allocator)
        self.timeslice = timeslice
        self.queue: deque[JobRequest] = deque()
        self.current: frozenset[str] = frozenset()
        self.slot: int | None = None

    def node_policy(self) -> GangNode:
        """A fresh node-level policy for one node manager."""
        return GangNode(self.coscheduled)

    def running(self) -> frozenset[str]:
        """The jobs that should run now (all placed jobs unless a subclass says otherwise)."""
        return frozenset(self.matrix.placed)

    def arrive(self, job: JobRequest, now: float) -> list[Action]:
        """A job arrived at ``now``: queue it and admit what fits."""
        self.queue.append(job)
        return self._admit()

    def finish(self, job: str, now: float) -> list[Action]:
        """``job`` ended (any status) at ``now``: free its cells and admit what fits."""
        self.matrix.remove(job)
        return self._admit()

    def tick(self, now: float) -> list[Action]:
        """A timeslice expired at ``now`` (only called when ``timeslice`` is set)."""
        return []

    def refresh(self) -> None:
        """Hook: the matrix changed (jobs placed or removed); update derived state."""

    def _admit(self) -> list[Action]:
        actions: list[Action] = []
        while self.queue:
            head = self.queue[0]
            where = self.matrix.place(head.id, head.size)
            if where is None:
                break
            self.queue.popleft()
            actions.append(Launch(head.id, *where))
        self.refresh()
        return actions + self._run_if_changed()

    def _run_if_changed(self) -> list[Action]:
        now_running = self.running()
        if now_running == self.current:
            return []
        self.current = now_running
        return [Run(now_running, self.slot)]
