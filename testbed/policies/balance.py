"""T3E psched's load balancer (Blakeborough and Welcome 1999, Figure 4): migrations that cut
the number of parties (matrix rows in use) and let jobs run without competition.

At every balance time one job is moved at most (psched does not plan multi-step moves): the
job in the highest occupied row that fits on PEs free in a lower row (the lowest such row, the
allocator's first placement there).  Moving it empties its cells, so the rows it shared no
longer compete with it, and a row that empties stops being a party.  A job whose migration
failed, or that was moved by hand, is not chosen again for ``delay_s`` seconds (psched's error
delay and its delay after a manual migration).  In an unbounded matrix a job only moves into
an occupied lower row: a new row would cut no party.
"""

from __future__ import annotations

from collections.abc import Callable

from testbed.policies.matrix import Matrix, Placement

Allowed = Callable[[str, Placement], bool]


def best_move(matrix: Matrix, blocked: set[str],
              allowed: Allowed | None = None) -> tuple[str, int, Placement] | None:
    """The one migration to make now, as (job, new row, new PEs), or None: the job in the
    highest occupied row (latest placed first) that fits in a lower row, on PEs that
    ``allowed(job, pes)`` accepts (any, without it; psched's per-PE application limits)."""
    for slot in reversed(matrix.occupied_slots()):
        for job in reversed(matrix.jobs_in(slot)):
            if job in blocked:
                continue
            size = len(matrix.placed[job][1])
            for to_slot, pes in matrix.candidates(size, grow=False):
                if to_slot >= slot:
                    break
                if allowed is None or allowed(job, pes):
                    return job, to_slot, pes
    return None


class Balancer:
    """When to balance and which jobs to leave alone; times in seconds."""

    def __init__(self, interval_s: float, delay_s: float) -> None:
        self.interval_s = interval_s
        self.delay_s = delay_s
        self.next_at = interval_s
        self.until: dict[str, float] = {}

    def hold_off(self, job: str, now: float) -> None:
        """Leave ``job`` alone until ``now + delay_s`` (a failed or a manual migration)."""
        self.until[job] = now + self.delay_s

    def blocked(self, now: float) -> set[str]:
        """The jobs still within their delay at ``now``."""
        self.until = {job: t for job, t in self.until.items() if t > now}
        return set(self.until)

    def due(self, now: float) -> bool:
        """Whether a balance pass is due at ``now``; if so, the next is scheduled."""
        if now < self.next_at:
            return False
        self.next_at = now + self.interval_s
        return True
