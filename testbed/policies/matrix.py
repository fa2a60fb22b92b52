"""The Ousterhout matrix: MPL time slots (rows) by PEs (columns), with allocators.

A cell holds the id of the job whose rank runs on that PE in that slot.  Allocation is done by a
buddy allocator (blocks of power-of-two size aligned to their size, as in THESIS §4.3.3 and
MEMORY) or by first fit (any free PEs, lowest first).  Each allocator lists every placement it
allows in a row, best first; a policy without further criteria takes the first one of the first
row that has one.  ``alternates`` implements alternate scheduling (T3D §3.1, THESIS Fig 2.2): in a
slot, PEs left idle may run a job from another slot whose PEs are all idle there.

A matrix built with MPL ``UNBOUNDED`` (0) has no limit on its rows (T3D §3.1's simulated gang
scheduler packs jobs into slots without a stated bound): jobs are packed into occupied rows
only, a job that fits in none gets a new row (numbered with the lowest free number), and a row
whose last job leaves is dropped: never searched again, and freed once no occupied row is above
it (until then it is only a free number).  Row numbers never change while a job is in the row,
so what the event log says about a job's row stays true.

Each row also keeps its busy PEs as the bits of one integer, so that the allocators and the
alternate search cost a few big-integer operations instead of a pass over every PE: the
simulator runs the same matrix on 1,024 PEs over 100,000 jobs.  For the same reason the
alternate search keeps, per row it was asked about, the jobs whose PEs are all idle in that row
(``_idle``), updated as jobs come and go rather than found again by a pass over every placed job.
"""

from __future__ import annotations

import bisect
import functools
import operator
from collections.abc import Callable, Iterable, Iterator

Placement = tuple[int, ...]
Allocator = Callable[[int, list[int], int, int], Iterator[Placement]]
First = Callable[[int, list[int], int, int], Placement | None]
UNBOUNDED = 0


def mask_of(pes: Iterable[int]) -> int:
    """The bit mask with the bits of ``pes`` set."""
    return functools.reduce(operator.or_, map((1).__lshift__, pes), 0)


def _bits(mask: int) -> Iterator[int]:
    """The set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def buddy_fit(busy: int, free_pes: list[int], pes: int, size: int) -> Iterator[Placement]:
    """Every free buddy block for a job of ``size`` PEs in a row of ``pes`` PEs whose busy PEs
    are the bits of ``busy`` (``free_pes``, the others in order, is not needed), lowest
    first.

    A block has the smallest power-of-two size >= ``size``, is aligned to it, and the job gets
    its first ``size`` PEs.  A machine whose PE count is not a power of two also has a final,
    shorter block, used when it is long enough.
    """
    aligned, tail = _buddy_blocks(busy, pes, size)
    for start in _bits(aligned):
        yield tuple(range(start, start + size))
    if tail is not None:
        yield tuple(range(tail, tail + size))


def buddy_first(busy: int, free_pes: list[int], pes: int, size: int) -> Placement | None:
    """The first of ``buddy_fit``'s placements, None when it has none."""
    aligned, tail = _buddy_blocks(busy, pes, size)
    if aligned:
        start = (aligned & -aligned).bit_length() - 1
    elif tail is None:
        return None
    else:
        start = tail
    return tuple(range(start, start + size))


def _buddy_blocks(busy: int, pes: int, size: int) -> tuple[int, int | None]:
    """The free buddy blocks for ``size`` PEs in a row of ``pes`` PEs whose busy PEs are the
    bits of ``busy``: the first PEs of the aligned ones as the bits of a mask, and the first PE
    of the final, shorter block when it is free and long enough (else None)."""
    block = 1 << (size - 1).bit_length()
    free = ~busy & ((1 << pes) - 1)
    run, width = free, 1
    while width < block:            # bit s stays set iff PEs s .. s+2*width-1 are all free
        run &= run >> width
        width *= 2
    whole = pes // block * block
    aligned = run & _every(block, whole)
    if whole < pes and pes - whole >= size and (free >> whole) == (1 << (pes - whole)) - 1:
        return aligned, whole
    return aligned, None


@functools.cache
def _every(step: int, limit: int) -> int:
    """The mask with bits 0, step, 2*step, ... below ``limit``."""
    mask = 0
    for start in range(0, limit, step):
        mask |= 1 << start
    return mask


def first_fit(busy: int, free_pes: list[int], pes: int, size: int) -> Iterator[Placement]:
    """Every run of ``size`` consecutive free PEs in a row whose free PEs are ``free_pes``
    (ascending; ``busy`` and ``pes`` are not needed), lowest first.

    Consecutive means next to each other among the free PEs (taken PEs in between are skipped),
    so the first run is the ``size`` lowest free PEs, plain first fit, and the others are first
    fit started at each later free PE.
    """
    for start in range(len(free_pes) - size + 1):
        yield tuple(free_pes[start:start + size])


def first_fit_first(busy: int, free_pes: list[int], pes: int, size: int) -> Placement | None:
    """The first of ``first_fit``'s placements (the ``size`` lowest free PEs), None when it has
    none."""
    return tuple(free_pes[:size]) if len(free_pes) >= size else None


ALLOCATORS: dict[str, Allocator] = {"buddy": buddy_fit, "first-fit": first_fit}
FIRSTS: dict[str, First] = {"buddy": buddy_first, "first-fit": first_fit_first}


class Matrix:
    """An Ousterhout matrix of ``mpl`` slots by ``pes`` PEs (``UNBOUNDED``: as many slots as
    the jobs need).

    Each row is kept as its busy PEs (a bit mask), its free PEs (ascending) and its jobs;
    ``job_at`` reads a cell.  ``unbounded``: whether the matrix grows a row whenever a job fits
    in no occupied row.
    """

    def __init__(self, mpl: int, pes: int, allocator: str = "buddy") -> None:
        if mpl < 0:
            raise ValueError(f"MPL must be at least 1, or {UNBOUNDED} for no limit, got {mpl}")
        self.limit = mpl
        # an attribute, not a property: read on every placement and removal
        self.unbounded = mpl == UNBOUNDED
        self.pes = pes
        self.busy: list[int] = [0] * mpl
        self.full = (1 << pes) - 1
        self.free_pes: list[list[int]] = [list(range(pes)) for _ in range(mpl)]
        self.fit = ALLOCATORS[allocator]
        self.fit_first = FIRSTS[allocator]
        self.placed: dict[str, tuple[int, Placement]] = {}
        self.masks: dict[str, int] = {}
        self.slots: list[dict[str, None]] = [{} for _ in range(mpl)]
        self.all_pes = list(range(pes))
        # per row: the placed jobs (in placement order) none of whose PEs is busy in it
        self._idle: dict[int, dict[str, None]] = {}
        # bumped by every placement and removal: what was found for one count holds until then
        self.changes = 0
        # (changes, size): a job of that size had no room then
        self._no_room = (-1, 0)
        # per row: (busy, size) where a job of that size had no room while the row was so busy
        self._too_big: dict[int, tuple[int, int]] = {}

    @property
    def mpl(self) -> int:
        """Number of time slots: the fixed number, or for an unbounded matrix the rows up to
        the highest one in use (empty rows below it included, though they hold no jobs)."""
        return len(self.busy)

    def job_at(self, slot: int, pe: int) -> str | None:
        """The job in the cell of ``pe`` in row ``slot``; None when it is free."""
        if self.busy[slot] >> pe & 1:
            masks = self.masks
            return next(job for job in self.slots[slot] if masks[job] >> pe & 1)
        return None

    def candidates(self, size: int, grow: bool = True) -> Iterator[tuple[int, Placement]]:
        """Every ``(slot, pes)`` where a job of ``size`` PEs could go: the placements the
        allocator allows in each row, by row and then in the allocator's order.  The first one is
        the allocator's choice in the first row with room.  An unbounded matrix offers its
        occupied rows, then (with ``grow``) a new row: the lowest free row number."""
        unbounded = self.unbounded
        for slot, busy in enumerate(self.busy):
            if unbounded and not busy:
                continue
            free_pes = self.free_pes[slot]
            if len(free_pes) >= size:
                for pes in self.fit(busy, free_pes, self.pes, size):
                    yield slot, pes
        if unbounded and grow:
            new = next((slot for slot, busy in enumerate(self.busy) if not busy), len(self.busy))
            for pes in self.fit(0, self.all_pes, self.pes, size):
                yield new, pes

    def first(self, size: int) -> tuple[int, Placement] | None:
        """The first of ``candidates(size)``, None when there is none; the answer that there is
        none is kept until the matrix changes, so a queue head that does not fit is not
        searched for again on every arrival behind it."""
        if self._no_room == (self.changes, size):
            return None
        fit_first, pes_count, unbounded = self.fit_first, self.pes, self.unbounded
        too_big = self._too_big
        for slot, busy in enumerate(self.busy):
            if unbounded and not busy:
                continue
            free_pes = self.free_pes[slot]
            if len(free_pes) < size:
                continue
            # a job with no room in a row has none while the row is as busy, nor has a bigger
            # one: both allocators' blocks for a size hold blocks for every smaller size
            known = too_big.get(slot)
            if known is not None and known[1] <= size and known[0] == busy:
                continue
            pes = fit_first(busy, free_pes, pes_count, size)
            if pes is not None:
                return slot, pes
            too_big[slot] = (busy, size)
        if unbounded and (pes := fit_first(0, self.all_pes, pes_count, size)) is not None:
            return next((slot for slot, busy in enumerate(self.busy) if not busy),
                        len(self.busy)), pes
        self._no_room = (self.changes, size)
        return None

    def assign(self, job: str, slot: int, pes: Placement) -> None:
        """Put ``job`` on ``pes`` of row ``slot`` (which must be free; an unbounded matrix
        grows to hold row ``slot``)."""
        if slot >= len(self.busy) and self.unbounded:
            self._grow(slot + 1)
        size, first = len(pes), pes[0]
        busy = self.busy[slot]
        free_pes = self.free_pes[slot]
        at = bisect.bisect_left(free_pes, first)
        if free_pes[at:at + size] == list(pes):     # first fit and buddy blocks: one run
            del free_pes[at:at + size]
            # every free PE from the first to the last is the job's
            mask = ((1 << (pes[-1] + 1)) - (1 << first)) & ~busy
        else:
            mask = mask_of(pes)
            assert not busy & mask, f"PEs {pes} of row {slot} are not all free"
            for pe in pes:
                del free_pes[bisect.bisect_left(free_pes, pe)]
        self.busy[slot] = busy | mask
        self.placed[job] = (slot, pes)
        self.masks[job] = mask
        self.slots[slot][job] = None
        self._placed_idle(job, slot, mask)
        self.changes += 1

    def assign_lowest(self, job: str, slot: int, size: int) -> Placement:
        """Put ``job`` on the ``size`` lowest free PEs of row ``slot`` (first fit's choice
        there; there must be as many); its PEs."""
        free_pes = self.free_pes[slot]
        pes = tuple(free_pes[:size])
        assert len(pes) == size, f"row {slot} has {len(free_pes)} free PEs, not {size}"
        del free_pes[:size]
        busy = self.busy[slot]
        # every free PE from the first to the last is the job's
        mask = ((1 << (pes[-1] + 1)) - (1 << pes[0])) & ~busy
        self.busy[slot] = busy | mask
        self.placed[job] = (slot, pes)
        self.masks[job] = mask
        self.slots[slot][job] = None
        if self._idle:
            self._placed_idle(job, slot, mask)
        self.changes += 1
        return pes

    def _placed_idle(self, job: str, slot: int, mask: int) -> None:
        """Keep ``_idle`` true after ``job`` took the PEs of ``mask`` in row ``slot``: jobs
        on those PEs are no longer idle there, and ``job`` (the latest placed) is idle in each
        other kept row where its PEs are free."""
        busy = self.busy
        for row, idle in self._idle.items():
            if row == slot:
                masks = self.masks
                self._idle[row] = {other: None for other in idle if not mask & masks[other]}
            elif not busy[row] & mask:
                idle[job] = None

    def remove(self, job: str) -> None:
        """Free the cells of ``job`` (an unbounded matrix then drops the empty rows at its
        top; an empty row below an occupied one holds no job and is skipped)."""
        slot, pes = self.placed.pop(job)
        mask = self.masks.pop(job)
        self.busy[slot] ^= mask
        free_pes = self.free_pes[slot]
        first = pes[0]
        if mask == ((1 << len(pes)) - 1) << first:        # PEs first, first + 1, ...
            at = bisect.bisect_left(free_pes, first)
            free_pes[at:at] = range(first, first + len(pes))
        else:                                   # merge them with the free PEs among them
            at = bisect.bisect_left(free_pes, min(pes))
            end = bisect.bisect_left(free_pes, max(pes), at)
            free_pes[at:end] = sorted([*free_pes[at:end], *pes])
        del self.slots[slot][job]
        self.changes += 1
        idle_rows = self._idle
        if idle_rows:
            idle_rows.pop(slot, None)   # jobs may be idle there now: found again when asked
            for idle in idle_rows.values():
                idle.pop(job, None)
        if self.unbounded:
            while self.slots and not self.slots[-1]:
                for rows in (self.busy, self.free_pes, self.slots):
                    rows.pop()
                idle_rows.pop(len(self.busy), None)

    def _grow(self, rows: int) -> None:
        """Add empty rows up to ``rows``."""
        for _ in range(rows - len(self.busy)):
            self.busy.append(0)
            self.free_pes.append(list(self.all_pes))
            self.slots.append({})

    def jobs_in(self, slot: int) -> list[str]:
        """Jobs whose home is ``slot``, in placement order (none in a dropped row)."""
        return list(self.slots[slot]) if slot < len(self.slots) else []

    def holds(self, slot: int) -> bool:
        """Whether row ``slot`` holds a job (a dropped row holds none)."""
        return slot < len(self.slots) and bool(self.slots[slot])

    def occupied_slots(self) -> list[int]:
        """Slots that hold at least one job."""
        return [slot for slot, jobs in enumerate(self.slots) if jobs]

    def alternates(self, slot: int, prefer: Iterable[str] = ()) -> list[str]:
        """Jobs from other slots that can also run in ``slot`` on its idle PEs.

        A job qualifies when all its PEs are idle in ``slot`` and not taken by an alternate
        already chosen.  Jobs in ``prefer`` (those running now) are tried first, so that a job
        keeps running across slots instead of being switched out and back.
        """
        busy = self.busy[slot]
        full = self.full
        if busy == full:
            return []
        masks = self.masks
        idle = self._idle.get(slot)
        if idle is None:
            idle = self._idle[slot] = {job: None for job, mask in masks.items()
                                       if not busy & mask}
        chosen: list[str] = []
        if not idle:
            return chosen
        for job in prefer:
            if job in idle and not busy & (mask := masks[job]):
                chosen.append(job)
                busy |= mask
                if busy == full:
                    return chosen
        # the others in placement order (a chosen one clashes with itself now)
        for job in idle:
            if not busy & (mask := masks[job]):
                chosen.append(job)
                busy |= mask
                if busy == full:
                    break
        return chosen
