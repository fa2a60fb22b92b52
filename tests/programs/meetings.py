"""Barriers, which meet on arrival counts, and the collectives around them, checked for their
results: on MPI_COMM_WORLD, on communicators split from it, on more communicators at once than
there are slots (the rest keep the nonblocking form), on communicators made after others were
freed (slots used again), and with a large send pending on a rank that enters a barrier before
its peer has received it (the meeting must let MPI progress it).  Two or more ranks; rank 0
prints "ok" and the number of barriers each rank must have made as meetings at least."""

import time

import numpy as np
from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
assert size >= 2
meetings = 0


def check(comm: MPI.Comm) -> int:
    """A barrier and the collectives that exchange with every rank once on ``comm``, results
    checked; how many barriers it made."""
    me, n = comm.Get_rank(), comm.Get_size()
    comm.Barrier()
    total = np.array([me + 1], dtype="i")
    comm.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
    assert total[0] == n * (n + 1) // 2, total
    everyone = np.empty(n, dtype="i")
    comm.Allgather(np.array([me], dtype="i"), everyone)
    assert list(everyone) == list(range(n)), everyone
    got = np.empty(n, dtype="i")
    comm.Alltoall(np.arange(n, dtype="i") + 100 * me, got)
    assert list(got) == [me + 100 * k for k in range(n)], got
    counts = np.arange(1, n + 1, dtype="i")
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype("i")
    gathered = np.empty(int(counts.sum()), dtype="i")
    comm.Allgatherv(np.full(me + 1, me, dtype="i"), [gathered, counts, displs, MPI.INT])
    assert list(gathered) == [k for k in range(n) for _ in range(k + 1)], gathered
    sent = np.full(n, me, dtype="i")
    ones = np.ones(n, dtype="i")
    offsets = np.arange(n, dtype="i")
    received = np.empty(n, dtype="i")
    comm.Alltoallv([sent, ones, offsets, MPI.INT], [received, ones, offsets, MPI.INT])
    assert list(received) == list(range(n)), received
    return 1


meetings += check(world)
halves = world.Split(rank % 2, -rank)
meetings += check(halves) if halves.Get_size() > 1 else 0
many = [world.Dup() for _ in range(70)]
for comm in many:
    check(comm)
for comm in many:
    comm.Free()
again = [world.Dup() for _ in range(10)]
for comm in again:
    meetings += check(comm)

big = np.full(1 << 20, rank, dtype="d")
if rank == 0:
    pending = world.Isend(big, dest=1, tag=7)
    world.Barrier()
    pending.Wait()
elif rank == 1:
    time.sleep(0.05)
    world.Recv(big, source=0, tag=7)
    assert big[0] == 0.0 and big[-1] == 0.0
    world.Barrier()
else:
    world.Barrier()
meetings += 1
world.Barrier()
meetings += 1
if rank == 0:
    print("ok", meetings, flush=True)
