"""Point-to-point latency in the style of osu_latency (OSU micro-benchmarks), with mpi4py.

Ranks 0 and 1 play ping-pong with blocking ``Send``/``Recv`` of numpy byte buffers for each
message size from 0 B, then 1 B doubling up to the maximum: a barrier, warm-up round trips,
then timed ones (sizes above 8 KiB use a tenth of both).  Rank 0 prints the one-way latency,
half the mean round trip, in microseconds.  Any further ranks only join the barriers.  Plain
MPI: runs under any ``mpiexec -n N`` with N >= 2.

Usage: ``mpiexec -n 2 python osu_latency.py [-i 10000] [-x 1000] [-m 1048576]``
"""

from __future__ import annotations

import argparse

import numpy as np
from mpi4py import MPI

LARGE_MESSAGE_SIZE = 8192


def main() -> None:
    """Run the size sweep and print ``size latency_us`` lines on rank 0."""
    p = argparse.ArgumentParser(description="ping-pong latency (osu_latency style)")
    p.add_argument("-i", "--iterations", type=int, default=10000,
                   help="timed round trips per size up to 8 KiB (a tenth above)")
    p.add_argument("-x", "--warmup", type=int, default=1000,
                   help="untimed round trips per size up to 8 KiB (a tenth above)")
    p.add_argument("-m", "--max-size", type=int, default=1 << 20,
                   help="largest message, bytes")
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if comm.Get_size() < 2:
        raise SystemExit("osu_latency needs at least two ranks")
    sendbuf = np.full(args.max_size, ord("a"), dtype=np.uint8)
    recvbuf = np.zeros(args.max_size, dtype=np.uint8)
    if rank == 0:
        print("# MPI Latency Test (osu_latency style, mpi4py)")
        print(f"# {'Size':<10}{'Latency (us)':>18}", flush=True)
    sizes = [0] + [1 << k for k in range(args.max_size.bit_length()) if 1 << k <= args.max_size]
    for size in sizes:
        iterations, warmup = args.iterations, args.warmup
        if size > LARGE_MESSAGE_SIZE:
            iterations, warmup = max(1, iterations // 10), warmup // 10
        send, recv = sendbuf[:size], recvbuf[:size]
        comm.Barrier()
        t_start = 0.0
        for i in range(warmup + iterations):
            if i == warmup:
                t_start = MPI.Wtime()
            if rank == 0:
                comm.Send(send, dest=1, tag=1)
                comm.Recv(recv, source=1, tag=1)
            elif rank == 1:
                comm.Recv(recv, source=0, tag=1)
                comm.Send(send, dest=0, tag=1)
        if rank == 0:
            latency = (MPI.Wtime() - t_start) * 1e6 / (2 * iterations)
            print(f"{size:<12}{latency:>18.2f}", flush=True)
    comm.Barrier()


if __name__ == "__main__":
    main()
