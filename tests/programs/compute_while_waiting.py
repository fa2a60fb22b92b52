"""Rank 1 computes for 4 CPU seconds (a loop in Python, outside MPI) while rank 0 waits for it
in a barrier; then both leave the barrier."""

import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
if comm.Get_rank() == 1:
    until = time.process_time() + 4.0
    while time.process_time() < until:
        pass
comm.Barrier()
