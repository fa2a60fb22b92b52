"""The Ousterhout matrix: MPL time slots (rows) by PEs (columns), with allocators.

A cell holds the id of the job whose rank runs on that PE in that slot.  Allocation is done by a
buddy allocator (blocks of power-of-two size aligned to their size, as in THESIS §4.3.3 and
MEMORY) or by first fit (any free PEs, lowest first).  Each allocator lists every placement it
allows in a row, best first; a policy without further criteria takes the first one of the first
row that has one.  ``alternates`` implements alternate scheduling (T3D §3.1, THESIS Fig 2.2): in a
slot, PEs left idle may run a job from another slot whose PEs are all idle there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

Placement = tuple[int, ...]
Allocator = Callable[[list[str | None], int], Iterator[Placement]]


def buddy_fit(row: list[str | None], size: int) -> Iterator[Placement]:
    """Every free buddy block for a job of ``size`` PEs in ``row``, lowest first.

    A block has the smallest power-of-two size >= ``size``, is aligned to it, and the job gets
    its first ``size`` PEs.  A machine whose PE count is not a power of two also has a final,
    shorter block, used when it is long enough.
    """
    block = 1
    while block < size:
        block *= 2
    for start in range(0, len(row), block):
        cells = range(start, min(start + block, len(row)))
        if len(cells) >= size and all(row[pe] is None for pe in cells):
            yield tuple(cells[:size])


def first_fit(row: list[str | None], size: int) -> Iterator[Placement]:
    """Every run of ``size`` consecutive free PEs of ``row``, lowest first.

    Consecutive means next to each other among the free PEs (taken PEs in between are skipped),
    so the first run is the ``size`` lowest free PEs, plain first fit, and the others are first
    fit started at each later free PE.
    """
    free = [pe for pe, cell in enumerate(row) if cell is None]
    for start in range(len(free) - size + 1):
        yield tuple(free[start:start + size])


ALLOCATORS: dict[str, Allocator] = {"buddy": buddy_fit, "first-fit": first_fit}


class Matrix:
    """An Ousterhout matrix of ``mpl`` slots by ``pes`` PEs."""

    def __init__(self, mpl: int, pes: int, allocator: str = "buddy") -> None:
        if mpl < 1:
            raise ValueError(f"MPL must be at least 1, got {mpl}")
        self.rows: list[list[str | None]] = [[None] * pes for _ in range(mpl)]
        self.fit = ALLOCATORS[allocator]
        self.placed: dict[str, tuple[int, Placement]] = {}

    @property
    def mpl(self) -> int:
        """Number of time slots."""
        return len(self.rows)

    def candidates(self, size: int) -> Iterator[tuple[int, Placement]]:
        """Every ``(slot, pes)`` where a job of ``size`` PEs could go: the placements the
        allocator allows in each row, by row and then in the allocator's order.  The first one is
        the allocator's choice in the first row with room."""
        for slot, row in enumerate(self.rows):
            for pes in self.fit(row, size):
                yield slot, pes

    def assign(self, job: str, slot: int, pes: Placement) -> None:
        """Put ``job`` on ``pes`` of row ``slot`` (which must be free)."""
        for pe in pes:
            assert self.rows[slot][pe] is None, f"PE {pe} of row {slot} is taken"
            self.rows[slot][pe] = job
        self.placed[job] = (slot, pes)

    def remove(self, job: str) -> None:
        """Free the cells of ``job``."""
        slot, pes = self.placed.pop(job)
        for pe in pes:
            self.rows[slot][pe] = None

    def jobs_in(self, slot: int) -> list[str]:
        """Jobs whose home is ``slot``, in placement order."""
        return [job for job, (s, _) in self.placed.items() if s == slot]

    def occupied_slots(self) -> list[int]:
        """Slots that hold at least one job."""
        return sorted({slot for slot, _ in self.placed.values()})

    def alternates(self, slot: int, prefer: Iterable[str] = ()) -> list[str]:
        """Jobs from other slots that can also run in ``slot`` on its idle PEs.

        A job qualifies when all its PEs are idle in ``slot`` and not taken by an alternate
        already chosen.  Jobs in ``prefer`` (those running now) are tried first, so that a job
        keeps running across slots instead of being switched out and back.
        """
        busy = {pe for pe, cell in enumerate(self.rows[slot]) if cell is not None}
        preferred = [job for job in prefer if job in self.placed]
        order = preferred + [job for job in self.placed if job not in preferred]
        chosen = []
        for job in order:
            home, pes = self.placed[job]
            if home != slot and busy.isdisjoint(pes):
                chosen.append(job)
                busy.update(pes)
        return chosen
