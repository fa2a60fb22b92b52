"""Gang scheduling (THESIS §4.4.1, T3D): one matrix row at a time, switched every timeslice.

On each heartbeat the next occupied row becomes current; its jobs run, and so do alternates:
jobs of other rows whose PEs are all idle in the current row (T3D §3.1, THESIS Fig 2.2).  When
the current row empties between heartbeats the next occupied row takes over at once.  Empty
rows are skipped, so with k occupied rows the cycle is k timeslices and a job runs in at least
one of them (its own row's), more when it is an alternate; with an unbounded matrix
(``mpl`` 0) a job never waits for a row (memory admission aside), and k is the number of
rows the jobs present need.

With ``balance_s`` a load balancer moves one job at a time to free PEs of a lower row (T3E
psched, ``testbed.policies.balance``); jobs may also be moved by hand (``migrate``).
"""

from __future__ import annotations

from itertools import chain

from testbed.policies.balance import Balancer, best_move
from testbed.policies.base import Action, Migrate, Policy, Run
from testbed.policies.config import PolicyConfig


class Gang(Policy):
    """Coordinated time slicing over the Ousterhout matrix."""

    name = "gang"

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self.balancer = (Balancer(config.balance_s, config.migration_delay_s)
                         if config.balance_s > 0 else None)
        # the last run set found: the matrix's change count and the row it was found for, the
        # run set it was found preferring, and the set
        self._found_changes = -1
        self._found_slot: int | None = None
        self._found_preferring: frozenset[str] = frozenset()
        self._found_run_set: frozenset[str] = frozenset()

    def running(self) -> frozenset[str]:
        """The current row's jobs plus alternates, preferring those running now.

        The set is found again only when the matrix, the row or the jobs running have changed
        since it was last found: otherwise the search would give the same answer.  It would also
        give it preferring the set it found (its alternates are all still free and clear of
        each other, and each job it passed over clashes with them or with the row), so the set
        stays valid once it is the one running."""
        matrix, slot, current = self.matrix, self.slot, self.current
        if (matrix.changes == self._found_changes and slot == self._found_slot
                and (current is self._found_run_set or current is self._found_preferring)):
            return self._found_run_set
        if slot is None:
            run_set: frozenset[str] = frozenset()
        else:
            run_set = frozenset(chain(matrix.jobs_in(slot), matrix.alternates(slot, current)))
        self._found_changes, self._found_slot = matrix.changes, slot
        self._found_preferring, self._found_run_set = current, run_set
        return run_set

    def tick(self, now: float) -> list[Action]:
        """Switch to the next occupied row; always answer with the run set (the heartbeat)."""
        self._advance()
        self.current = self.running()
        if self.held:
            self.current -= self.held
        return [Run(self.current, self.slot)]

    def refresh(self) -> None:
        """Keep an occupied row current: an idle machine or an emptied row moves on at once."""
        if self.slot is None or not self.matrix.holds(self.slot):
            self._advance()

    def wake_at(self) -> float | None:
        """The next load-balancer pass while jobs are placed (None without a balancer)."""
        if self.balancer is None or not self.matrix.placed:
            return None
        return self.balancer.next_at

    def wake(self, now: float) -> list[Action]:
        """A balance pass: at most one migration, then admit what fits."""
        actions: list[Action] = []
        if self.balancer is not None and self.balancer.due(now):
            move = best_move(self.matrix, self.balancer.blocked(now), self._may_move)
            if move is not None:
                actions += self._move(*move)
        return actions + self._admit(now)

    def migrate(self, job: str, pes: tuple[int, ...], now: float) -> list[Action]:
        """Move placed ``job`` to ``pes`` by hand (the first row where they are free; in an
        unbounded matrix a new row when none is); the balancer leaves it alone for
        ``migration_delay_s``."""
        placed = self.matrix.placed.get(job)
        if placed is None:
            raise ValueError(f"{job} is not placed")
        if len(pes) != len(placed[1]) or len(set(pes)) != len(pes):
            raise ValueError(f"{job} has {len(placed[1])} ranks: give as many distinct PEs")
        if any(not 0 <= pe < self.config.pes for pe in pes):
            raise ValueError(f"PEs are 0..{self.config.pes - 1}")
        self.matrix.remove(job)
        mask = sum(1 << pe for pe in pes)
        slot = next((s for s, busy in enumerate(self.matrix.busy) if not busy & mask),
                    len(self.matrix.busy) if self.matrix.unbounded else None)
        self.matrix.assign(job, *placed)
        if slot is None:
            raise ValueError(f"PEs {list(pes)} are not free in any row")
        if not self._may_move(job, pes):
            raise ValueError(f"PEs {list(pes)} have no room for {job} within the limits")
        if self.balancer is not None:
            self.balancer.hold_off(job, now)
        return self._move(job, slot, tuple(pes))

    def migration_failed(self, move: Migrate, now: float) -> list[Action]:
        """Put the job back where it was; the balancer leaves it alone for a while."""
        self.matrix.remove(move.job)
        self.matrix.assign(move.job, move.from_slot, move.from_pes)
        if self.balancer is not None:
            self.balancer.hold_off(move.job, now)
        self.refresh()
        return self._run_if_changed()

    def _may_move(self, job: str, pes: tuple[int, ...]) -> bool:
        """Whether ``job`` may be moved to ``pes`` (always, for plain gang)."""
        return True

    def _move(self, job: str, slot: int, pes: tuple[int, ...]) -> list[Action]:
        from_slot, from_pes = self.matrix.placed[job]
        self.matrix.remove(job)
        self.matrix.assign(job, slot, pes)
        self.refresh()
        return [Migrate(job, slot, pes, from_slot, from_pes), *self._run_if_changed()]

    def _advance(self) -> None:
        occupied = self.matrix.occupied_slots()
        if not occupied:
            self.slot = None
            return
        after = [s for s in occupied if self.slot is None or s > self.slot]
        self.slot = after[0] if after else occupied[0]
