"""The Ousterhout matrix and its allocators."""

from __future__ import annotations

import random

import pytest

from testbed.policies.matrix import UNBOUNDED, Matrix, buddy_fit, first_fit, mask_of


def _fit(allocator, row: list[str | None], size: int) -> list[tuple[int, ...]]:
    """The allocator's placements in ``row`` (a row of cells)."""
    busy = mask_of(pe for pe, cell in enumerate(row) if cell is not None)
    return list(allocator(busy, [pe for pe, cell in enumerate(row) if cell is None], len(row),
                          size))


def place(m: Matrix, job: str, size: int):
    """Put ``job`` where a policy without memory admission would: the first candidate."""
    where = next(m.candidates(size), None)
    if where is not None:
        m.assign(job, *where)
    return where


def test_buddy_lists_every_free_block_aligned_to_its_size():
    row: list[str | None] = [None] * 8
    row[0] = "a"
    assert _fit(buddy_fit, row, 1) == [(pe,) for pe in range(1, 8)]
    assert _fit(buddy_fit, row, 2) == [(2, 3), (4, 5), (6, 7)]
    assert _fit(buddy_fit, row, 3) == [(4, 5, 6)]
    assert _fit(buddy_fit, row, 4) == [(4, 5, 6, 7)]
    assert _fit(buddy_fit, row, 8) == []


def test_first_fit_lists_every_run_of_free_pes_skipping_taken_ones():
    row: list[str | None] = ["a", None, "b", None, None]
    assert _fit(first_fit, row, 2) == [(1, 3), (3, 4)]
    assert _fit(first_fit, row, 3) == [(1, 3, 4)]
    assert _fit(first_fit, row, 4) == []


def test_buddy_handles_a_non_power_of_two_machine():
    assert _fit(buddy_fit, [None] * 6, 2) == [(0, 1), (2, 3), (4, 5)]
    assert _fit(buddy_fit, [None] * 6, 4) == [(0, 1, 2, 3)]
    row: list[str | None] = ["a"] * 4 + [None] * 2
    assert _fit(buddy_fit, row, 2) == [(4, 5)]


def test_candidates_cover_every_row_in_row_then_pe_order():
    m = Matrix(mpl=2, pes=4)
    place(m, "a", 1)          # slot 0, PE 0
    assert list(m.candidates(2)) == [(0, (2, 3)), (1, (0, 1)), (1, (2, 3))]
    m = Matrix(mpl=2, pes=4, allocator="first-fit")
    place(m, "a", 1)
    assert list(m.candidates(3)) == [(0, (1, 2, 3)), (1, (0, 1, 2)), (1, (1, 2, 3))]


def test_place_uses_the_first_slot_that_fits_and_remove_frees():
    m = Matrix(mpl=2, pes=4)
    assert place(m, "a", 4) == (0, (0, 1, 2, 3))
    assert place(m, "b", 2) == (1, (0, 1))
    assert place(m, "c", 4) is None
    m.remove("a")
    assert place(m, "c", 4) == (0, (0, 1, 2, 3))
    assert m.occupied_slots() == [0, 1]


def test_alternates_fill_idle_pes_without_conflicts():
    m = Matrix(mpl=3, pes=4)
    place(m, "a", 2)          # slot 0, PEs 0-1
    place(m, "b", 4)          # slot 1
    place(m, "c", 2)          # slot 0, PEs 2-3
    m.remove("c")
    place(m, "d", 2)          # slot 0, PEs 2-3
    place(m, "e", 2)          # slot 2, PEs 0-1
    place(m, "f", 2)          # slot 2, PEs 2-3
    assert m.alternates(0) == []
    m.remove("d")
    assert m.alternates(0) == ["f"]
    assert m.alternates(0, prefer=["b"]) == ["f"]
    m.remove("a")
    assert m.alternates(0, prefer=["e"]) == ["e", "f"]


def _alternates_by_full_pass(m: Matrix, slot: int, prefer: list[str]) -> list[str]:
    """``alternates`` found the plain way: every placed job looked at, PE by PE."""
    taken = {pe for home, pes in m.placed.values() if home == slot for pe in pes}
    chosen = []
    preferred = [job for job in prefer if job in m.placed]
    for job in preferred + [job for job in m.placed if job not in preferred]:
        home, pes = m.placed[job]
        if home != slot and not taken & set(pes):
            chosen.append(job)
            taken |= set(pes)
    return chosen


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mpl", [3, UNBOUNDED])
@pytest.mark.parametrize("allocator", ["buddy", "first-fit"])
def test_alternates_kept_as_jobs_come_and_go_match_a_full_pass(seed, mpl, allocator):
    rng = random.Random(seed)
    m = Matrix(mpl=mpl, pes=16, allocator=allocator)
    names = iter(range(10**6))
    for _ in range(250):
        step = rng.random()
        if step < 0.45 or not m.placed:
            where = list(m.candidates(rng.randint(1, 16)))
            if where:
                m.assign(f"j{next(names)}", *rng.choice(where))
        elif step < 0.8:
            m.remove(rng.choice(list(m.placed)))
        else:                       # a job moved elsewhere (a migration), when it has room
            job = rng.choice(list(m.placed))
            size = len(m.placed[job][1])
            m.remove(job)
            where = list(m.candidates(size))
            if where:
                m.assign(job, *rng.choice(where))
        for slot in m.occupied_slots():
            prefer = rng.sample(sorted(m.placed), min(2, len(m.placed))) + ["gone"]
            assert m.alternates(slot, prefer) == _alternates_by_full_pass(m, slot, prefer)


def test_mpl_must_be_positive_or_unbounded():
    with pytest.raises(ValueError, match="or 0 for no limit"):
        Matrix(mpl=-1, pes=2)
    assert Matrix(mpl=UNBOUNDED, pes=2).mpl == 0


def test_an_unbounded_matrix_grows_a_row_only_when_a_job_fits_in_no_occupied_row():
    m = Matrix(mpl=UNBOUNDED, pes=4)
    assert list(m.candidates(4)) == [(0, (0, 1, 2, 3))]        # the first row, new
    assert place(m, "a", 2) == (0, (0, 1))
    assert place(m, "b", 4) == (1, (0, 1, 2, 3))
    assert place(m, "c", 1) == (0, (2,))                       # row 0 still has room
    assert list(m.candidates(2)) == [(2, (0, 1)), (2, (2, 3))]  # no room: only a new row
    assert place(m, "d", 2) == (2, (0, 1))
    assert (m.mpl, m.occupied_slots()) == (3, [0, 1, 2])
    assert [m.job_at(2, pe) for pe in range(4)] == ["d", "d", None, None]
    assert list(m.candidates(5)) == []


def test_an_unbounded_matrix_drops_empty_rows_and_reuses_their_numbers():
    m = Matrix(mpl=UNBOUNDED, pes=4)
    for job, size in (("a", 4), ("b", 4), ("c", 2)):
        place(m, job, size)                 # rows 0, 1, 2
    m.remove("b")
    assert m.occupied_slots() == [0, 2] and m.jobs_in(1) == []
    # The empty row 1 is no row to pack into: a job that fits in row 2 goes there ...
    assert place(m, "d", 2) == (2, (2, 3))
    # ... and a new row takes the lowest free number, below the occupied row 2.
    assert list(m.candidates(4)) == [(1, (0, 1, 2, 3))]
    assert place(m, "e", 4) == (1, (0, 1, 2, 3))
    m.remove("c")
    m.remove("d")                           # row 2, the top one, empties: it is dropped
    assert (m.mpl, m.occupied_slots(), m.jobs_in(2)) == (2, [0, 1], [])
    m.remove("a")                           # row 0 empties below row 1: kept, but empty
    assert (m.mpl, m.occupied_slots()) == (2, [1])
    m.remove("e")
    assert (m.mpl, m.placed) == (0, {})
    assert place(m, "f", 1) == (0, (0,))


def test_a_bounded_matrix_keeps_packing_into_its_first_empty_row():
    m = Matrix(mpl=3, pes=4)
    for job, size in (("a", 4), ("b", 4), ("c", 2)):
        place(m, job, size)
    m.remove("b")
    assert place(m, "d", 2) == (1, (0, 1))          # unlike the unbounded matrix
    assert m.mpl == 3


def test_without_grow_an_unbounded_matrix_offers_its_occupied_rows_only():
    m = Matrix(mpl=UNBOUNDED, pes=4)
    place(m, "a", 2)
    assert list(m.candidates(2, grow=False)) == [(0, (2, 3))]
    assert list(m.candidates(4, grow=False)) == []


def test_an_unbounded_matrix_takes_a_job_put_back_in_a_dropped_row():
    m = Matrix(mpl=UNBOUNDED, pes=2)
    place(m, "a", 2)
    place(m, "b", 2)
    place(m, "c", 2)
    m.remove("b")
    m.remove("c")                           # rows 2 and then 1 are dropped
    assert m.mpl == 1
    m.assign("c", 2, (0, 1))                # as a failed migration puts a job back
    assert (m.mpl, m.occupied_slots(), m.jobs_in(2)) == (3, [0, 2], ["c"])


def _reference_buddy(row: list[str | None], size: int) -> list[tuple[int, ...]]:
    block = 1
    while block < size:
        block *= 2
    return [tuple(range(start, start + size)) for start in range(0, len(row), block)
            if min(start + block, len(row)) - start >= size
            and all(cell is None for cell in row[start:start + block])]


def test_the_bit_mask_allocators_agree_with_a_pass_over_the_cells():
    rng = random.Random(7)
    for _ in range(300):
        pes = rng.randint(1, 40)
        row = [None if rng.random() < 0.6 else "x" for _ in range(pes)]
        size = rng.randint(1, pes)
        assert _fit(buddy_fit, row, size) == _reference_buddy(row, size)
        free = [pe for pe, cell in enumerate(row) if cell is None]
        expected = [tuple(free[i:i + size]) for i in range(len(free) - size + 1)]
        assert _fit(first_fit, row, size) == expected


def test_the_rows_agree_with_a_grid_of_cells_whatever_is_placed_and_removed():
    rng = random.Random(11)
    for allocator in ("first-fit", "buddy"):
        m = Matrix(mpl=3, pes=37, allocator=allocator)
        cells: list[list[str | None]] = [[None] * 37 for _ in range(3)]
        for step in range(1500):
            if m.placed and rng.random() < 0.45:
                job = rng.choice(list(m.placed))
                slot, pes = m.placed[job]
                m.remove(job)
                for pe in pes:
                    cells[slot][pe] = None
            else:
                job, slot = f"j{step}", rng.randrange(3)
                free = [pe for pe, cell in enumerate(cells[slot]) if cell is None]
                if not free:
                    continue
                where: tuple[int, tuple[int, ...]] | None
                draw = rng.random()
                if draw < 0.2:              # the lowest free PEs (the batch policies')
                    size = rng.randint(1, len(free))
                    where = (slot, m.assign_lowest(job, slot, size))
                    assert where[1] == tuple(free[:size])
                else:
                    if draw < 0.6:          # the allocator's choice: a run of the free PEs
                        where = next(m.candidates(rng.randint(1, len(free))), None)
                    else:                   # any free PEs in any order (a migration's)
                        where = (slot, tuple(rng.sample(free, rng.randint(1, len(free)))))
                    if where is None:
                        continue
                    m.assign(job, *where)
                for pe in where[1]:
                    cells[where[0]][pe] = job
            for slot, row in enumerate(cells):
                free = [pe for pe, cell in enumerate(row) if cell is None]
                assert m.free_pes[slot] == free
                assert m.busy[slot] == mask_of(set(range(37)) - set(free))
                assert [m.job_at(slot, pe) for pe in range(37)] == row


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mpl", [3, UNBOUNDED])
@pytest.mark.parametrize("allocator", ["buddy", "first-fit"])
def test_first_is_the_first_candidate_while_jobs_come_and_go(seed, mpl, allocator):
    # sizes asked again with nothing changed, or bigger than one that found no room, use what
    # an earlier search found: each answer must still be the one a full search gives
    rng = random.Random(seed)
    pes = rng.choice([16, 24, 37])
    m = Matrix(mpl=mpl, pes=pes, allocator=allocator)
    for step in range(400):
        if m.placed and rng.random() < 0.4:
            m.remove(rng.choice(list(m.placed)))
        else:
            size = rng.randint(1, pes)
            where = m.first(size)
            assert where == next(m.candidates(size), None)
            if where is not None:
                m.assign(f"j{step}", *where)
        for size in rng.sample(range(1, pes + 1), 4) * 2:
            assert m.first(size) == next(m.candidates(size), None)
