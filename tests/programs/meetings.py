"""Barriers, which meet on arrival counts, and the collectives around them: on MPI_COMM_WORLD,
on communicators split from it, on more communicators at once than there are slots (the rest
keep the nonblocking form), on communicators freed right after a barrier that a late peer is
still in and made again (slots used again), and with a large send pending on a rank that
enters a barrier before its peer has received it (the meeting must let MPI progress it).

Each barrier is checked to be one: every rank leaves a marker file in argv[1] before it and
finds all the others' after it.  Two or more ranks; rank 0 prints "ok" and then, per rank, how
many of its barriers must have met on arrival counts (the slot agreement of
``native/arrival.c`` followed by hand)."""

import os
import sys
import time

import numpy as np
from mpi4py import MPI

SLOTS = 64
markers = sys.argv[1]
world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
assert size >= 2
used: list[set[int]] = [set() for _ in range(size)]
meetings = [0] * size


class Agreed:
    """The slot a communicator of ``members`` (world ranks) gets at its first barrier: the
    lowest free on every member, or none."""

    def __init__(self, members: list[int]) -> None:
        self.members = members
        taken = set().union(*(used[m] for m in members))
        free = [s for s in range(SLOTS) if s not in taken]
        self.slot = free[0] if len(members) > 1 and free else None
        for m in members if self.slot is not None else ():
            used[m].add(self.slot)

    def barrier(self) -> None:
        for m in self.members if self.slot is not None else ():
            meetings[m] += 1

    def free(self) -> None:
        for m in self.members if self.slot is not None else ():
            used[m].discard(self.slot)


def barrier(comm: MPI.Comm, agreed: Agreed, name: str) -> None:
    """A barrier on ``comm`` (``name``: unique in the run), checked to hold every rank back
    until all have entered it."""
    me = comm.Get_rank()
    open(os.path.join(markers, f"{name}-{agreed.members[me]}"), "w").close()
    comm.Barrier()
    for m in agreed.members:
        assert os.path.exists(os.path.join(markers, f"{name}-{m}")), (name, m)
    agreed.barrier()


def check(comm: MPI.Comm, agreed: Agreed, name: str) -> None:
    """A barrier and the collectives that exchange with every rank once on ``comm``, results
    checked."""
    me, n = comm.Get_rank(), comm.Get_size()
    barrier(comm, agreed, name)
    total = np.array([me + 1], dtype="i")
    comm.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
    assert total[0] == n * (n + 1) // 2, total
    everyone = np.empty(n, dtype="i")
    comm.Allgather(np.array([me], dtype="i"), everyone)
    assert list(everyone) == list(range(n)), everyone
    got = np.empty(n, dtype="i")
    comm.Alltoall(np.arange(n, dtype="i") + 100 * me, got)
    assert list(got) == [me + 100 * k for k in range(n)], got


everybody = list(range(size))
world_slot = Agreed(everybody)
check(world, world_slot, "world")

halves = world.Split(rank % 2, rank)
for parity in (0, 1):
    members = [r for r in everybody if r % 2 == parity]
    agreed = Agreed(members)
    if rank % 2 == parity and len(members) > 1:
        check(halves, agreed, f"half{parity}")

many = [world.Dup() for _ in range(SLOTS + 6)]
agreements = [Agreed(everybody) for _ in many]
for number, (comm, agreed) in enumerate(zip(many, agreements, strict=True)):
    check(comm, agreed, f"dup{number}")
for comm, agreed in zip(many, agreements, strict=True):
    comm.Free()
    agreed.free()

for turn in range(20):
    comm = world.Dup()
    agreed = Agreed(everybody)
    if rank == turn % size:
        time.sleep(0.002)
    barrier(comm, agreed, f"turn{turn}")
    comm.Free()
    agreed.free()

big = np.full(1 << 20, rank, dtype="d")
if rank == 0:
    pending = world.Isend(big, dest=1, tag=7)
    barrier(world, world_slot, "pending")
    pending.Wait()
elif rank == 1:
    time.sleep(0.05)
    world.Recv(big, source=0, tag=7)
    assert big[0] == 0.0 and big[-1] == 0.0
    barrier(world, world_slot, "pending")
else:
    barrier(world, world_slot, "pending")
if rank == 0:
    print("ok", *meetings, flush=True)
