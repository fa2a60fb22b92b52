"""Node-level scheduling: which of a node's processes run now (pure, like every policy).

The machine manager's heartbeat says which jobs run; a node policy turns that into the set of
this node's processes to run and, for each, whether it runs coscheduled (the flag the shim uses
to split its counters).  ``GangNode`` follows the heartbeat exactly; FCS (``policies/fcs.py``)
deviates from it locally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from testbed.policies.spin import Counters, Spin

ProcKey = tuple[str, int]


@dataclass
class Proc:
    """A process as a node policy sees it: job, rank, its PE and its home row."""

    job: str
    rank: int
    pe: int
    slot: int

    @property
    def key(self) -> ProcKey:
        """(job, rank)."""
        return self.job, self.rank


@dataclass(frozen=True)
class ClassChange:
    """A process changed class (FCS), with the statistics that made it change."""

    job: str
    rank: int
    old: str
    new: str
    stats: dict[str, Any]


class GangNode:
    """Run every process of the jobs in the heartbeat; ``coscheduled`` is the flag they get."""

    def __init__(self, coscheduled: bool = True) -> None:
        self.coscheduled = coscheduled
        self.procs: dict[ProcKey, Proc] = {}
        self.jobs: frozenset[str] = frozenset()
        self.slot: int | None = None

    def add(self, proc: Proc) -> None:
        """A process was launched on this node."""
        self.procs[proc.key] = proc

    def remove(self, job: str) -> None:
        """``job`` ended: forget its processes."""
        for key in [k for k in self.procs if k[0] == job]:
            del self.procs[key]

    def heartbeat(self, jobs: frozenset[str], slot: int | None) -> None:
        """The MM says ``jobs`` run now; ``slot`` is the current row."""
        self.jobs, self.slot = jobs, slot

    def set_blocked(self, key: ProcKey, blocked: bool) -> None:
        """The shim reported a block or unblock (gang scheduling ignores it)."""

    def update(self, key: ProcKey, counters: Counters, cpu_s: float) -> ClassChange | None:
        """Fresh counters for a process (gang scheduling does not classify)."""
        return None

    def spin_of(self, key: ProcKey, coscheduled: bool) -> Spin | None:
        """How the process's waits should spin now; None keeps the spin it was launched with."""
        return None

    def decide(self) -> dict[ProcKey, bool]:
        """Processes to run now, each mapped to its coscheduled flag."""
        return {k: self.coscheduled for k, p in self.procs.items() if p.job in self.jobs}
