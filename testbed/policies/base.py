"""What every policy shares: the events it sees, the actions it returns, the admission queue.

Policies are pure: they never touch processes, signals or the wall clock.  Time comes in as a
number of seconds since the start of the run.

Admission is strict FCFS (the queue's head blocks those behind it) and a job takes the
allocator's first placement in the first row with room, unless the policy has a
``MemoryAdmission`` (MEMORY §2-3): then a job is placed only where every node it would use
satisfies eq. 1, ``mem <= capacity * C - used`` (``mem`` for each of its processes there, ``used``
the estimates of the processes already placed on that node, in any row); of all the placements
the allocator allows in all rows, the one whose fullest node would be least full after the job
is added wins (MEMORY §3.2: the least loaded nodes), ties going to the earlier row, then the
lower PEs; the queue is scanned in order, a job that does not fit is skipped, a job skipped
``skip_limit`` (15) times blocks those behind it, and on an empty machine the head job runs
regardless of eq. 1.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from dataclasses import dataclass
from typing import NamedTuple

from testbed.policies.config import MemoryAdmission, PolicyConfig
from testbed.policies.matrix import Matrix, Placement
from testbed.policies.node import GangNode
from testbed.policies.spin import Spin


class JobRequest(NamedTuple):
    """A job as a policy sees it: id, number of ranks, arrival time (s), the memory each
    process is estimated to need (MiB; None when there is no estimate), its runtime estimate
    (s; None when unknown), its class (``class=``; empty for the default), whether it was
    submitted interactively (through the service) and whether it is a prime job (``prime``,
    T3E psched).  Immutable; a named tuple rather than a frozen dataclass, which takes
    several times longer to make (one is made for every job, as is every ``Launch``)."""

    id: str
    size: int
    arrival: float
    mem_mb: float | None = None
    estimate: float | None = None
    job_class: str = ""
    interactive: bool = False
    prime: bool = False


class Launch(NamedTuple):
    """Start ``job``'s ranks on ``pes`` (one rank per PE, in order); its home row is ``slot``;
    ``running`` says whether it runs at once or starts stopped (its row is not current)."""

    job: str
    slot: int
    pes: tuple[int, ...]
    running: bool = True


@dataclass(frozen=True)
class Run:
    """Exactly ``jobs`` should be running from now on; ``slot`` is the current row, if any."""

    jobs: frozenset[str]
    slot: int | None


@dataclass(frozen=True)
class Requeue:
    """Kill ``job`` because an owner took its PE ``pe`` (COW): its work is lost and it will be
    launched again from the start."""

    job: str
    pe: int


@dataclass(frozen=True)
class Migrate:
    """Move ``job``'s ranks to ``pes`` (rank i to ``pes[i]``), its home row becoming
    ``slot`` (T3E psched's load balancer, or an operator's ``testbed migrate``)."""

    job: str
    slot: int
    pes: tuple[int, ...]
    from_slot: int
    from_pes: tuple[int, ...]


Action = Launch | Run | Requeue | Migrate


class Policy:
    """Base policy: a matrix, an arrival-ordered queue, and strict FCFS admission.

    Subclasses choose the MPL (``fixed_mpl``), whether there is a heartbeat
    (``time_sliced``), and which of the placed jobs run now (``running``).

    What a policy *is* is data on its class, read before any instance exists:

    * ``simulable``: the simulator can run it (not local, ics, fcs, whose effect depends on
      how real ranks communicate);
    * ``uses_estimates``: it plans with runtime estimates (the batch policies);
    * ``supports_owners``: it has workstation owners (COW);
    * ``pages_preempted``: a job it stops is a preemption whose memory the emulation moves to
      swap when node memory is emulated (T3D);
    * ``uses_shim``, ``coscheduled``, ``spin``, ``native_collectives``: what the emulation
      sets up for its ranks.

    The driver calls, every round or on its events: ``arrive``, ``refuse``, ``finish``,
    ``tick`` (every ``timeslice`` seconds while ``busy``), ``wake`` (at ``wake_at``), ``idle``,
    ``observe_switch``, ``states``, ``cancel``, ``migration_failed``, ``owner_arrive`` and
    ``owner_leave``; an operator's commands (``testbed.control``) call ``hold``, ``release``,
    ``held``, ``set_class``, ``migrate``, ``placements`` and ``running_now``; the emulation
    executor also calls ``node_policy`` and ``spin_settings``.
    """

    name = "base"
    uses_shim = False
    coscheduled = True
    simulable = True
    uses_estimates = False
    supports_owners = False
    pages_preempted = False
    fixed_mpl: int | None = None
    time_sliced = True
    spin: Spin | None = None
    native_collectives = False

    def __init__(self, config: PolicyConfig) -> None:
        self.config = config
        self.memory: MemoryAdmission | None = config.memory
        self.matrix = Matrix(self.fixed_mpl or config.mpl, config.pes, config.allocator)
        self.timeslice: float | None = config.timeslice if self.time_sliced else None
        self.queue: deque[JobRequest] = deque()
        self.held: set[str] = set()
        self.current: frozenset[str] = frozenset()
        self.slot: int | None = None
        self.used_mb: dict[str, dict[int, float]] = {}
        self.skips: Counter[str] = Counter()

    def spin_settings(self) -> dict[str, dict[str, float | str]] | None:
        """The shim's spin settings by kind of process (for ``config.json``), None without it."""
        return {"all": dataclasses.asdict(self.spin)} if self.spin else None

    def node_policy(self) -> GangNode:
        """A fresh node-level policy for one node manager."""
        return GangNode(self.coscheduled)

    def running(self) -> frozenset[str]:
        """The jobs that should run now (all placed jobs unless a subclass says otherwise)."""
        return frozenset(self.matrix.placed)

    @property
    def mpl(self) -> int:
        """The number of rows the policy uses (``UNBOUNDED``, 0: as many as its jobs need)."""
        return self.matrix.limit

    def observe_switch(self, seconds: float) -> None:
        """A heartbeat that stopped and continued jobs took ``seconds``: with a ``variation``
        the next slice is ``timeslice + seconds x variation`` (T3E psched's adaptive slice:
        long when switching meant swapping, back to the configured slice when it did not)."""
        if self.timeslice is not None and self.config.variation > 0:
            self.timeslice = self.config.timeslice + seconds * self.config.variation

    def refuse(self, request: JobRequest) -> str | None:
        """Why ``request`` could never run under this policy (it then fails at arrival); None
        if it could."""
        return None

    def busy(self) -> bool:
        """Whether any job is placed (the heartbeat runs only then)."""
        return bool(self.matrix.placed)

    def idle(self) -> bool:
        """Whether no job is queued or placed."""
        return not self.queue and not self.matrix.placed

    def arrive(self, job: JobRequest, now: float) -> list[Action]:
        """A job arrived at ``now`` (s): queue it and admit what fits."""
        self.queue.append(job)
        return self._admit(now)

    def finish(self, job: str, now: float) -> list[Action]:
        """``job`` ended (any status) at ``now`` (s): free its cells and admit what fits."""
        self.held.discard(job)
        self.matrix.remove(job)
        self.used_mb.pop(job, None)
        return self._admit(now)

    def tick(self, now: float) -> list[Action]:
        """A timeslice expired at ``now`` (s; only called when ``timeslice`` is set)."""
        return []

    def placements(self) -> dict[str, int]:
        """Each placed job's home row."""
        return {job: slot for job, (slot, _) in self.matrix.placed.items()}

    def running_now(self) -> frozenset[str]:
        """The jobs the last run set let run."""
        return self.current

    def cancel(self, job: str, now: float) -> list[Action] | None:
        """Take ``job`` out of the queue at ``now`` (s) and admit what may start instead; None
        if it is not queued (a placed job is killed by the caller and ends by ``finish``)."""
        for request in self.queue:
            if request.id == job:
                self.queue.remove(request)
                self.skips.pop(job, None)
                return self._admit(now)
        return None

    def hold(self, job: str) -> list[Action]:
        """Keep placed ``job`` stopped until ``release`` (an operator's suspend, T3D Fig 8)."""
        self.held.add(job)
        return self._run_if_changed()

    def release(self, job: str) -> list[Action]:
        """Let a held job run again when the policy would run it."""
        self.held.discard(job)
        return self._run_if_changed()

    def set_class(self, job: str, name: str, now: float) -> tuple[str, list[Action]]:
        """Move ``job`` to class ``name`` at ``now`` (s): its old class and the actions that
        follow; raises ``ValueError`` saying why not."""
        raise ValueError(f"the {self.name} scheduler has no job classes")

    def states(self) -> dict[str, str] | None:
        """Each known job's state letter for policies that keep T3D's states, else None."""
        return None

    def migrate(self, job: str, pes: tuple[int, ...], now: float) -> list[Action]:
        """Move placed ``job`` to ``pes`` by hand at ``now`` (s); ``ValueError`` saying why not."""
        raise ValueError(f"the {self.name} scheduler does not migrate jobs")

    def migration_failed(self, move: Migrate, now: float) -> list[Action]:
        """The executor could not carry out ``move``: put the job back."""
        raise ValueError(f"the {self.name} scheduler does not migrate jobs")

    def owner_arrive(self, pe: int, now: float) -> list[Action]:
        """A workstation owner took ``pe`` at ``now`` (s); only COW policies have owners."""
        raise NotImplementedError(f"the {self.name} scheduler has no workstation owners")

    def owner_leave(self, pe: int, now: float) -> list[Action]:
        """The owner of ``pe`` left at ``now`` (s)."""
        raise NotImplementedError(f"the {self.name} scheduler has no workstation owners")

    def wake_at(self) -> float | None:
        """When (s) the policy next wants ``wake`` called regardless of events; None: never."""
        return None

    def wake(self, now: float) -> list[Action]:
        """The time asked for by ``wake_at`` has come (``now``, s)."""
        return self._admit(now)

    def refresh(self) -> None:
        """Hook: the matrix changed (jobs placed or removed); update derived state."""

    def _admit(self, now: float) -> list[Action]:
        actions: list[Launch] = []
        if self.memory is None:             # strict FCFS: start heads while they fit
            queue, first = self.queue, self.matrix.first
            while queue and (where := first(queue[0].size)) is not None:
                job = queue.popleft()
                self.skips.pop(job.id, None)
                self.matrix.assign(job.id, *where)
                self.used_mb[job.id] = {}
                actions.append(Launch(job.id, *where))
            return self._launched(actions)
        passed: list[JobRequest] = []
        memory = self.memory
        for job in list(self.queue):
            empty_machine_head = not self.matrix.placed and job is self.queue[0]
            where = self._fit(job, check_memory=not empty_machine_head)
            if where is None:
                passed.append(job)
                continue
            if any(self.skips[p.id] >= memory.skip_limit for p in passed):
                break
            self.skips.update(p.id for p in passed)
            self.queue.remove(job)
            self.skips.pop(job.id, None)
            self.matrix.assign(job.id, *where)
            self.used_mb[job.id] = self._demand(job, where[1])
            actions.append(Launch(job.id, *where))
        return self._launched(actions)

    def _launched(self, launches: list[Launch]) -> list[Action]:
        """After placing jobs: refresh, mark each launch running or not, add the run set."""
        self.refresh()
        run = self._run_if_changed()
        if not launches:
            return run
        current = self.current
        return [Launch(job, slot, pes, job in current) for job, slot, pes, _ in launches] + run

    def _demand(self, job: JobRequest, pes: Placement) -> dict[int, float]:
        if self.memory is None or job.mem_mb is None:
            return {}
        per_node = Counter(self.memory.node_of_pe[pe] for pe in pes)
        return {node: count * job.mem_mb for node, count in per_node.items()}

    def _fit(self, job: JobRequest, check_memory: bool) -> tuple[int, Placement] | None:
        """Where ``job`` goes under memory admission, as ``(slot, pes)``, or None if nowhere
        (without it a job takes the matrix's first candidate, ``Matrix.first``).

        Of every candidate in every row (those satisfying eq. 1 on all their nodes, when
        ``check_memory``), the one that minimises the largest fraction (used + the job's demand,
        MiB) / capacity (MiB) over the nodes it touches; the first such candidate, so ties go to
        the earlier row, then the lower PEs.
        """
        memory = self.memory
        assert memory is not None, "without memory admission a job takes Matrix.first"
        options = self.matrix.candidates(job.size)
        used: Counter[int] = Counter()
        for demand in self.used_mb.values():
            used.update(demand)

        def fits(where: tuple[int, Placement]) -> bool:
            return all(need <= memory.capacity_mb[node] * memory.factor - used[node]
                       for node, need in self._demand(job, where[1]).items())

        def load(where: tuple[int, Placement]) -> float:
            demand = self._demand(job, where[1])
            return max((used[node] + demand.get(node, 0.0)) / memory.capacity_mb[node]
                       for node in {memory.node_of_pe[pe] for pe in where[1]})

        allowed = filter(fits, options) if check_memory else options
        return min(allowed, key=load, default=None)

    def _run_if_changed(self) -> list[Action]:
        now_running = self.running()
        if self.held:
            now_running -= self.held
        if now_running == self.current:
            return []
        self.current = now_running
        return [Run(now_running, self.slot)]
