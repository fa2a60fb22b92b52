"""Every wait the shim trusts its doorbell for, with the other rank late by argv[1] seconds, so
that the waiting rank blocks first; on MPI_COMM_WORLD and on a communicator of its own (split
in reverse order, so that its ranks are not the world's).  Two ranks; prints "ok"."""

import sys
import time

import numpy as np
from mpi4py import MPI

late = float(sys.argv[1])
world = MPI.COMM_WORLD
assert world.Get_size() == 2
reverse = world.Split(0, -world.Get_rank())
for comm in (world, reverse):
    rank = comm.Get_rank()
    peer = 1 - rank
    small = np.zeros(16, dtype="i")
    for waiter in (0, 1):
        waits, acts = rank == waiter, rank != waiter
        if acts:
            time.sleep(late)
        if waits:
            comm.Recv(small, source=peer, tag=1)
            comm.Recv(small, source=MPI.ANY_SOURCE, tag=2)
            comm.Probe(source=peer, tag=3)
            comm.Recv(small, source=peer, tag=3)
            comm.recv(source=peer, tag=4)
        else:
            comm.Send(small, dest=peer, tag=1)
            time.sleep(late)
            comm.Send(small, dest=peer, tag=2)
            time.sleep(late)
            comm.Send(small, dest=peer, tag=3)
            time.sleep(late)
            comm.send("go", dest=peer, tag=4)
        for collective in ("Barrier", "Allreduce", "Bcast", "Alltoall", "Sendrecv"):
            if acts:
                time.sleep(late)
            if collective == "Barrier":
                comm.Barrier()
            elif collective == "Allreduce":
                comm.Allreduce(MPI.IN_PLACE, small, op=MPI.SUM)
            elif collective == "Bcast":
                comm.Bcast(small, root=peer if waits else rank)
            elif collective == "Alltoall":
                comm.Alltoall(np.arange(2, dtype="i"), np.empty(2, dtype="i"))
            else:
                comm.Sendrecv(small, peer, 5, np.empty_like(small), peer, 5)
world.Barrier()
if world.Get_rank() == 0:
    print("ok", flush=True)
