"""Gang scheduling on non-dedicated workstations (COW: Karatza 2001, §2): AFCFS and LGFS.

Each PE is a workstation with its own queue.  On arrival a gang of n tasks is routed to n
distinct PEs by join-the-shortest-queue (COW §2.1: task by task, the shortest remaining queue;
a queue's length counts the gang tasks assigned to the PE, waiting or running; ties go to the
lower PE).  A gang runs only when each of its PEs is *available*: no owner at it and no other
gang running there.  Workstation owners (``owner_arrive``/``owner_leave``) run at once; a gang
running on the owner's PE is interrupted (``Requeue``): all its work is lost and its tasks go
back to the head of their queues, reserving nothing (§2.2: "the remaining processors ... execute
tasks of other jobs").

Both policies scan the gangs greedily and start every one whose PEs are all available; they
differ only in the order (§2.2), interrupted gangs always first (in the order they were
interrupted):

* ``afcfs``: arrival order, so a smaller gang passes a blocked larger one;
* ``lgfs``: largest gang first ("tasks that belong to larger gangs are placed at the head of
  queues"; the "increasing job size order" of the same sentence contradicts its parenthesis,
  which we follow), arrival order among equal sizes.
"""

from __future__ import annotations

from testbed.policies.base import Action, JobRequest, Launch, Policy, Requeue
from testbed.policies.config import PolicyConfig
from testbed.policies.matrix import mask_of


class Cow(Policy):
    """Per-PE queues with JSQ routing, owners, and a greedy scan in ``order``."""

    fixed_mpl = 1
    time_sliced = False
    supports_owners = True

    def __init__(self, config: PolicyConfig) -> None:
        if config.memory is not None:
            raise ValueError(f"the {self.name} scheduler does not support memory admission")
        super().__init__(config)
        self.assigned: dict[str, tuple[int, ...]] = {}
        self.requests: dict[str, JobRequest] = {}
        self.arrived: list[str] = []
        self.interrupted: list[str] = []
        self.owned: set[int] = set()
        self.lengths = [0] * self.config.pes

    def order(self, waiting: list[str]) -> list[str]:
        """The order in which waiting (not interrupted) gangs are tried."""
        return waiting

    def busy(self) -> bool:
        """Whether any gang is placed or waiting."""
        return bool(self.assigned)

    def idle(self) -> bool:
        """Whether no gang is assigned (waiting or running)."""
        return not self.assigned

    def route(self, size: int) -> tuple[int, ...]:
        """The ``size`` PEs join-the-shortest-queue picks (shortest first, lower PE on ties)."""
        ranked = sorted(range(self.config.pes), key=lambda pe: (self.lengths[pe], pe))
        return tuple(sorted(ranked[:size]))

    def arrive(self, job: JobRequest, now: float) -> list[Action]:
        """Route the gang's tasks to their queues and start what may start."""
        pes = self.route(job.size)
        for pe in pes:
            self.lengths[pe] += 1
        self.assigned[job.id] = pes
        self.requests[job.id] = job
        self.arrived.append(job.id)
        return self._schedule()

    def finish(self, job: str, now: float) -> list[Action]:
        """The gang ended: leave its queues, free its PEs, start what may start."""
        for pe in self.assigned.pop(job):
            self.lengths[pe] -= 1
        self.requests.pop(job)
        if job in self.matrix.placed:
            self.matrix.remove(job)
        return self._schedule()

    def owner_arrive(self, pe: int, now: float) -> list[Action]:
        """An owner takes ``pe``: a gang running there is interrupted (work lost, back to the
        head of its queues); the PEs it frees may start others."""
        self.owned.add(pe)
        actions: list[Action] = []
        victim = self.matrix.job_at(0, pe)
        if victim is not None:
            self.matrix.remove(victim)
            self.interrupted.append(victim)
            actions.append(Requeue(victim, pe))
        return actions + self._schedule()

    def owner_leave(self, pe: int, now: float) -> list[Action]:
        """The owner of ``pe`` left: start what may start."""
        self.owned.discard(pe)
        return self._schedule()

    def _available(self, pes: tuple[int, ...]) -> bool:
        return not self.matrix.busy[0] & mask_of(pes) and self.owned.isdisjoint(pes)

    def _schedule(self) -> list[Action]:
        launches: list[Action] = []
        self.arrived = [job for job in self.arrived if job in self.assigned]
        waiting = [job for job in self.arrived
                   if job not in self.matrix.placed and job not in self.interrupted]
        for job in [*self.interrupted, *self.order(waiting)]:
            pes = self.assigned[job]
            if self._available(pes):
                self.matrix.assign(job, 0, pes)
                if job in self.interrupted:
                    self.interrupted.remove(job)
                launches.append(Launch(job, 0, pes))
        if launches:
            self.current = frozenset(self.matrix.placed) - self.held
        return launches


class Afcfs(Cow):
    """Adaptive first-come first-served: arrival order; smaller gangs pass blocked ones."""

    name = "afcfs"


class Lgfs(Cow):
    """Largest gang first served: larger gangs first, arrival order among equals."""

    name = "lgfs"

    def order(self, waiting: list[str]) -> list[str]:
        """Largest first; the sort is stable, so equal sizes keep arrival order."""
        return sorted(waiting, key=lambda job: -self.requests[job].size)
