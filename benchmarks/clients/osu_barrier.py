"""Barrier latency in the style of osu_barrier (OSU micro-benchmarks), with mpi4py.

A barrier, then ``warm-up + iterations`` calls of ``MPI_Barrier``, timed together.  Rank 0
prints the mean over ranks of each rank's mean time per call, in microseconds, as one line of
a size table (size 0: a barrier carries no data), so that it reads like the other clients.
Plain MPI: runs under any ``mpiexec -n N``.

Usage: ``mpiexec -n N python osu_barrier.py [-i 10000] [-x 1000]``
"""

from __future__ import annotations

import argparse

from mpi4py import MPI


def main() -> None:
    """Time the barriers and print one ``0 latency_us`` line on rank 0."""
    p = argparse.ArgumentParser(description="MPI_Barrier latency (osu_barrier style)")
    p.add_argument("-i", "--iterations", type=int, default=10000, help="timed barriers")
    p.add_argument("-x", "--warmup", type=int, default=1000, help="untimed barriers first")
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    rank, nprocs = comm.Get_rank(), comm.Get_size()
    if rank == 0:
        print("# MPI Barrier Latency Test (osu_barrier style, mpi4py)")
        print(f"# {'Size':<10}{'Avg Latency(us)':>18}", flush=True)
    comm.Barrier()
    for _ in range(args.warmup):
        comm.Barrier()
    t_start = MPI.Wtime()
    for _ in range(args.iterations):
        comm.Barrier()
    latency = (MPI.Wtime() - t_start) * 1e6 / args.iterations
    total = comm.reduce(latency, op=MPI.SUM, root=0)
    if rank == 0:
        print(f"{0:<12}{total / nprocs:>18.2f}", flush=True)


if __name__ == "__main__":
    main()
