"""T3E psched (Blakeborough and Welcome 1999): gang scheduling under the GRM's per-PE
application limits, with prime jobs.

* **GRM limits.** At most ``abs_app_max`` applications share a PE (the matrix has that many
  rows) and at most ``app_max`` of them are not prime.  NERSC ran app_max=1 and abs_app_max=2:
  one normal application per PE, and a prime one may join it.
* **Launch order.** Prime applications come first, then the others, each in arrival order
  (FIFO).  The first one that does not fit blocks those behind it, except that a later one is
  still launched if it fits on PEs no application occupies (the GRM launches "in FIFO order
  unless an application lower on the list will fit into unoccupied PEs").  A job goes where it
  shares the fewest PEs with other applications: of the placements in every row that keep to
  the limits, the one with the fewest occupied PEs, then the earlier row, then the allocator's
  order.
* **No competition from normal work.** Every slice runs prime jobs first (those of the current
  row, then those running now, then the others, while their PEs are free) and only then the
  current row's other jobs and alternates on the PEs left.  Prime jobs that share a PE take
  turns as the rows rotate; a normal job that shares a PE with a prime job is stopped while the
  prime job runs (prime jobs "preempt non-prime work").
* The adaptive slice (``variation``) and the load balancer (``balance_s``) are gang's; a
  migration, by the balancer or by hand, must keep to the limits too.
"""

from __future__ import annotations

import dataclasses
import functools
import operator

from testbed.policies.base import Action, JobRequest, Launch
from testbed.policies.config import PolicyConfig
from testbed.policies.gang import Gang
from testbed.policies.matrix import Placement, mask_of


class Psched(Gang):
    """Gang scheduling with GRM application limits per PE and prime jobs (T3E psched)."""

    name = "psched"

    def __init__(self, config: PolicyConfig) -> None:
        if config.memory is not None:
            raise ValueError("the psched scheduler does not support memory admission")
        if not 1 <= config.app_max <= config.abs_app_max:
            raise ValueError(f"need 1 <= app_max <= abs_app_max, got app_max={config.app_max}, "
                             f"abs_app_max={config.abs_app_max}")
        super().__init__(dataclasses.replace(config, mpl=config.abs_app_max))
        self.prime: set[str] = set()

    def arrive(self, job: JobRequest, now: float) -> list[Action]:
        """Queue ``job`` (noting whether it is prime) and launch what the GRM allows."""
        if job.prime:
            self.prime.add(job.id)
        return super().arrive(job, now)

    def finish(self, job: str, now: float) -> list[Action]:
        """Free ``job``'s cells and launch what the GRM allows."""
        actions = super().finish(job, now)
        self.prime.discard(job)
        return actions

    def cancel(self, job: str, now: float) -> list[Action] | None:
        """Take queued ``job`` out of the GRM queue; None if it is not queued."""
        actions = super().cancel(job, now)
        if actions is not None:
            self.prime.discard(job)
        return actions

    def running(self) -> frozenset[str]:
        """Prime jobs first (current row, running now, the rest), then the current row's
        other jobs and alternates, each while its PEs are free."""
        if self.slot is None:
            return frozenset()
        placed = self.matrix.placed
        here = self.matrix.jobs_in(self.slot)
        now = [job for job in self.current if job in placed]
        every = [*here, *now, *placed]
        order = [job for job in every if job in self.prime] + every
        busy = 0
        chosen: set[str] = set()
        for job in order:
            mask = self.matrix.masks[job]
            if job not in chosen and not busy & mask:
                chosen.add(job)
                busy |= mask
        return frozenset(chosen)

    def _admit(self, now: float) -> list[Action]:
        launches: list[Launch] = []
        blocked = False
        for job in sorted(self.queue, key=lambda request: not request.prime):
            where = self._place(job, unoccupied_only=blocked)
            if where is None:
                blocked = True
                continue
            self.queue.remove(job)
            self.matrix.assign(job.id, *where)
            launches.append(Launch(job.id, *where))
        return self._launched(launches)

    def _place(self, job: JobRequest, unoccupied_only: bool) -> tuple[int, Placement] | None:
        """Where the GRM launches ``job``: the allowed placement sharing the fewest PEs with
        other applications (only unshared ones when ``unoccupied_only``), earliest first."""
        occupied = functools.reduce(operator.or_, self.matrix.busy, 0)
        if unoccupied_only and self.matrix.pes - occupied.bit_count() < job.size:
            return None
        best: tuple[int, tuple[int, Placement]] | None = None
        for slot, pes in self.matrix.candidates(job.size):
            shared = (mask_of(pes) & occupied).bit_count()
            if (unoccupied_only and shared) or (best is not None and shared >= best[0]):
                continue
            if job.prime or self._room_for_normal(job.id, pes):
                best = (shared, (slot, pes))
                if not shared:
                    break
        return None if best is None else best[1]

    def _room_for_normal(self, job: str, pes: Placement) -> bool:
        """Whether each of ``pes`` holds fewer than ``app_max`` normal applications besides
        ``job``."""
        for pe in pes:
            normal = sum(1 for row in self.matrix.rows
                         if (other := row[pe]) is not None and other != job
                         and other not in self.prime)
            if normal >= self.config.app_max:
                return False
        return True

    def _may_move(self, job: str, pes: Placement) -> bool:
        """A migration keeps to the limits: a normal job only to PEs with room for it."""
        return job in self.prime or self._room_for_normal(job, pes)
