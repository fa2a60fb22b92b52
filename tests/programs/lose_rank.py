"""An MPI program whose rank 1 dies by SIGKILL after the first barrier."""

import os
import signal
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 1:
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(0.2)
comm.Barrier()
