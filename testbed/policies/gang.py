"""Gang scheduling (THESIS §4.4.1, T3D): one matrix row at a time, switched every timeslice.

On each heartbeat the next occupied row becomes current; its jobs run, and so do alternates:
jobs of other rows whose PEs are all idle in the current row (T3D §3.1, THESIS Fig 2.2).  When
the current row empties between heartbeats the next occupied row takes over at once.
"""

from __future__ import annotations

from testbed.policies.base import Action, Policy, Run


class Gang(Policy):
    """Coordinated time slicing over the Ousterhout matrix."""

    name = "gang"

    def running(self) -> frozenset[str]:
        """The current row's jobs plus alternates, preferring those running now."""
        if self.slot is None:
            return frozenset()
        jobs = self.matrix.jobs_in(self.slot) + self.matrix.alternates(self.slot, self.current)
        return frozenset(jobs)

    def tick(self, now: float) -> list[Action]:
        """Switch to the next occupied row; always answer with the run set (the heartbeat)."""
        self._advance()
        self.current = self.running() - self.held
        return [Run(self.current, self.slot)]

    def refresh(self) -> None:
        """Keep an occupied row current: an idle machine or an emptied row moves on at once."""
        if self.slot is None or not self.matrix.jobs_in(self.slot):
            self._advance()

    def _advance(self) -> None:
        occupied = self.matrix.occupied_slots()
        if not occupied:
            self.slot = None
            return
        after = [s for s in occupied if self.slot is None or s > self.slot]
        self.slot = after[0] if after else occupied[0]
