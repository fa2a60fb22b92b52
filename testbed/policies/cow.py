"""Gang scheduling on non-dedicated workstations (COW: Karatza 2001, §2): AFCFS and LGFS.

Each PE is a workstation with its own queue.  On arrival a gang of n tasks is routed to n
distinct PEs by join-the-shortest-queue (COW §2.1: task by task, the shortest remaining queue;
a queue's length counts the gang tasks assigned to the PE, waiting or running; ties go to the
lower PE).  A gang runs only when each of its PEs is *available*: no owner at it and no other
gang running there.  Workstation owners (``owner_arrive``/``owner_leave``) run at once; a gang
running on the owner's PE is interrupted (``Requeue``): all its work is lost and it waits in
its queues to start again from the beginning.

Both policies scan the waiting gangs greedily and start every one whose PEs are all available;
they differ only in the order (§2.2):

* ``afcfs``: arrival order, so a smaller gang passes a blocked larger one;
* ``lgfs``: largest gang first ("tasks that belong to larger gangs are placed at the head of
  queues"; the "increasing job size order" of the same sentence contradicts its parenthesis,
  which we follow), arrival order among equal sizes.

Where an interrupted gang waits is ``restart`` (COW says "at the head of their assigned
queues" and no more; docs/schedulers.md says why the default):

* ``keep`` (default): in its place in the policy's order (AFCFS: ahead of every gang that
  arrived after it; LGFS: by its size);
* ``first``: before every other gang, interrupted gangs in the order they were interrupted;
* ``tail``: back in line as if it had just arrived.

Without ``hold`` (default) its PEs serve other gangs until all of them happen to be available
at once, as for any gang the scan reaches (§2.2: "the remaining processors ... execute tasks of
other jobs").  With it, an interrupted gang none of whose PEs has an owner holds them: no gang
after it in the scan starts there, so each idles, once its current gang ends, until the
interrupted gang can start (while an owner is on one of them the others serve other gangs).
"""

from __future__ import annotations

from testbed.policies.base import Action, JobRequest, Launch, Policy, Requeue
from testbed.policies.config import PolicyConfig

RESTARTS = ("keep", "first", "tail")


class Cow(Policy):
    """Per-PE queues with JSQ routing, owners, and a greedy scan in ``order``; ``restart``
    (one of ``RESTARTS``) and ``hold`` say where an interrupted gang waits and whether it
    holds its PEs."""

    fixed_mpl = 1
    time_sliced = False
    supports_owners = True

    def __init__(self, config: PolicyConfig, *, restart: str = "keep",
                 hold: bool = False) -> None:
        if config.memory is not None:
            raise ValueError(f"the {self.name} scheduler does not support memory admission")
        if restart not in RESTARTS:
            raise ValueError(f"unknown restart {restart!r} (known: {', '.join(RESTARTS)})")
        super().__init__(config)
        self.restart = restart
        self.hold_pes = hold
        self.assigned: dict[str, tuple[int, ...]] = {}
        self.requests: dict[str, JobRequest] = {}
        self.arrived: list[str] = []
        self.interrupted: list[str] = []
        self.owned: set[int] = set()
        self.lengths = [0] * self.config.pes

    def order(self, waiting: list[str]) -> list[str]:
        """The policy's order of ``waiting`` gangs (given in arrival order)."""
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
        """An owner takes ``pe``: a gang running there is interrupted (work lost, waiting as
        ``restart`` says); the PEs it frees may start others."""
        self.owned.add(pe)
        actions: list[Action] = []
        victim = self.matrix.job_at(0, pe)
        if victim is not None:
            self.matrix.remove(victim)
            self.interrupted.append(victim)
            if self.restart == "tail":
                self.arrived.remove(victim)
                self.arrived.append(victim)
            actions.append(Requeue(victim, pe))
        return actions + self._schedule()

    def owner_leave(self, pe: int, now: float) -> list[Action]:
        """The owner of ``pe`` left: start what may start."""
        self.owned.discard(pe)
        return self._schedule()

    def _schedule(self) -> list[Action]:
        launches: list[Action] = []
        busy = self.matrix.busy[0]
        free = {pe for pe in range(self.config.pes) if not busy >> pe & 1 and pe not in self.owned}
        self.arrived = [job for job in self.arrived if job in self.assigned]
        if self.restart == "first":
            waiting = [job for job in self.arrived
                       if job not in self.matrix.placed and job not in self.interrupted]
            scan = [*self.interrupted, *self.order(waiting)]
        else:
            scan = self.order([job for job in self.arrived if job not in self.matrix.placed])
        for job in scan:
            if not free:
                break
            pes = self.assigned[job]
            if free.issuperset(pes):
                self.matrix.assign(job, 0, pes)
                free.difference_update(pes)
                if job in self.interrupted:
                    self.interrupted.remove(job)
                launches.append(Launch(job, 0, pes))
            elif self.hold_pes and job in self.interrupted and self.owned.isdisjoint(pes):
                free.difference_update(pes)
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
