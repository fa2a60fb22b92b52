"""Rank 0 waits in Recv for rank 1, which sends once the file named by argv[1] exists."""

import os
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 0:
    comm.recv(source=1)
else:
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.005)
    comm.send("go", dest=0)
