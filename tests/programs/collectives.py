"""Every wrapped collective a few times, then point-to-point, with mpi4py; prints "ok"."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
buf = np.full(4, rank, dtype="i")
for _ in range(20):
    comm.Barrier()
    comm.Bcast(buf, root=0)
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    comm.gather(rank, root=0)
    comm.allgather(rank)
    comm.alltoall(list(range(size)))
    comm.scatter(list(range(size)) if rank == 0 else None, root=0)
    comm.Sendrecv(buf, (rank + 1) % size, 0, np.empty_like(buf), (rank - 1) % size, 0)
if rank == 0:
    print("ok", flush=True)
