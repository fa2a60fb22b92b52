"""All-to-all latency in the style of osu_alltoall (OSU micro-benchmarks), with mpi4py.

For each message size (bytes sent to every peer) from 1 B to the maximum, doubling: a barrier,
then ``warm-up + iterations`` calls of ``MPI_Alltoall`` on numpy byte buffers, each timed on
its own and followed by a barrier (not timed); sizes above 8 KiB use a tenth of the iterations
and warm-up.  Rank 0 prints, per size, the mean over ranks of each rank's mean time per call,
in microseconds.  Plain MPI: runs under any ``mpiexec -n N``.

Usage: ``mpiexec -n N python osu_alltoall.py [-i 1000] [-x 200] [-m 1048576]``
"""

from __future__ import annotations

import argparse

import numpy as np
from mpi4py import MPI

LARGE_MESSAGE_SIZE = 8192


def main() -> None:
    """Run the size sweep and print ``size latency_us`` lines on rank 0."""
    p = argparse.ArgumentParser(description="MPI_Alltoall latency (osu_alltoall style)")
    p.add_argument("-i", "--iterations", type=int, default=1000,
                   help="timed calls per size up to 8 KiB (a tenth above)")
    p.add_argument("-x", "--warmup", type=int, default=200,
                   help="untimed calls per size up to 8 KiB (a tenth above)")
    p.add_argument("-m", "--max-size", type=int, default=1 << 20,
                   help="largest message per peer, bytes")
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    rank, nprocs = comm.Get_rank(), comm.Get_size()
    sendbuf = np.full(args.max_size * nprocs, rank % 256, dtype=np.uint8)
    recvbuf = np.zeros(args.max_size * nprocs, dtype=np.uint8)
    if rank == 0:
        print("# MPI All-to-All Latency Test (osu_alltoall style, mpi4py)")
        print(f"# {'Size':<10}{'Avg Latency(us)':>18}", flush=True)
    size = 1
    while size <= args.max_size:
        iterations, warmup = args.iterations, args.warmup
        if size > LARGE_MESSAGE_SIZE:
            iterations, warmup = max(1, iterations // 10), warmup // 10
        send, recv = sendbuf[: size * nprocs], recvbuf[: size * nprocs]
        comm.Barrier()
        timer = 0.0
        for i in range(warmup + iterations):
            t_start = MPI.Wtime()
            comm.Alltoall(send, recv)
            t_stop = MPI.Wtime()
            if i >= warmup:
                timer += t_stop - t_start
            comm.Barrier()
        latency = timer * 1e6 / iterations
        total = comm.reduce(latency, op=MPI.SUM, root=0)
        if rank == 0:
            print(f"{size:<12}{total / nprocs:>18.2f}", flush=True)
        size *= 2
    comm.Barrier()


if __name__ == "__main__":
    main()
