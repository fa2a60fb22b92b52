"""Barriers between other calls, for the drain a rank makes as it leaves a barrier meeting.

``drains.py MODE N``: N rounds of one barrier after ``collectives`` (an Allreduce and a Bcast,
blocking, every rank) or ``sends`` (rank 0 sends rank 1 a message it receives).  A completed
blocking collective leaves nothing for a peer's progress, so after the first meeting no rank
needs to drain in the first mode, and every rank must in the second.  Prints "ok" from rank 0
once every round's values were right."""

import sys

import numpy as np
from mpi4py import MPI

mode, rounds = sys.argv[1], int(sys.argv[2])
world = MPI.COMM_WORLD
rank = world.Get_rank()
total = np.zeros(1)
for i in range(rounds):
    if mode == "collectives":
        world.Allreduce(np.array([float(rank + i)]), total)
        value = world.bcast(i if rank == 0 else None)
        assert total[0] == sum(r + i for r in range(world.Get_size())) and value == i
    elif rank == 0:
        world.send(i, dest=1)
    elif rank == 1:
        assert world.recv(source=0) == i
    world.Barrier()
if rank == 0:
    print("ok", flush=True)
