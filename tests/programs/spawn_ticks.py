"""A job whose one process spawns a child that keeps a clock: the child writes the monotonic
time every 5 ms until it has written ``TICKS`` of them, to the file named by its argument,
then meets its parent in a barrier.  A child stopped with its parent's job shows gaps in its
ticks as long as the slots it was kept out of."""

import sys
import time

from mpi4py import MPI

TICKS = 300

parent = MPI.Comm.Get_parent()
if parent == MPI.COMM_NULL:
    children = MPI.COMM_WORLD.Spawn(sys.executable, [__file__, sys.argv[1]], maxprocs=1)
    children.Barrier()
    children.Disconnect()
else:
    with open(sys.argv[1], "w") as out:
        for _ in range(TICKS):
            out.write(f"{time.monotonic()}\n")
            time.sleep(0.005)
    parent.Barrier()
    parent.Disconnect()
