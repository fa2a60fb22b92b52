"""The synthetic BSP benchmark (THESIS Fig 4.4 and §4.5).

Every rank loops ``iterations`` times over three phases:

1. compute for ``w * (1 + V * u)`` seconds of *CPU time*, ``u`` uniform in [-1, 1]
   (a stopped rank makes no progress);
2. write ``B`` blocks of 1 KB synchronously (``O_DSYNC``) to a per-rank scratch file;
3. exchange 4 KB messages: ``none``, ``nn`` (both ring neighbours) or ``aa`` (every peer);
4. with ``--mem-mb``, make ``--accesses`` steps of a fractal memory walk over an array of that
   size (MEMORY §4.1: jumps with Pr[X > u] = u^-theta, one byte written per step, cells of
   ``--stride`` bytes); the array is touched once at start so all of it is resident.

One iteration lasts ``G * T`` seconds on a dedicated machine: the cost of one exchange, one I/O
block and one iteration's walk is calibrated at start-up and subtracted from the iteration
length to give ``w``, so a dedicated run without paging takes about ``W`` seconds.  Each rank
reports one JSON record; rank 0 writes them all, one line each, to ``--stats`` or to stdout.

Run standalone: ``mpiexec -n 4 python -m benchmarks.bsp --work 2 --pattern aa``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any

MESSAGE_BYTES = 4096
IO_BLOCK_BYTES = 1024
PATTERNS = ("none", "nn", "aa")
CALIBRATION_ROUNDS = 20
CALIBRATION_IO_BLOCKS = 8


def _rank_value(text: str, allow_zero: bool) -> tuple[int, float]:
    rank, sep, value = text.partition(":")
    try:
        if not sep:
            raise ValueError
        parsed = int(rank), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RANK:VALUE, got {text!r}") from None
    if parsed[0] < 0 or parsed[1] < 0 or (parsed[1] == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise argparse.ArgumentTypeError(f"RANK must be >= 0 and VALUE {bound}, got {text!r}")
    return parsed


def _imbalance(text: str) -> tuple[int, float]:
    return _rank_value(text, allow_zero=False)


def _rank_variance(text: str) -> tuple[int, float]:
    return _rank_value(text, allow_zero=True)


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def build_parser(cls: type[argparse.ArgumentParser] = argparse.ArgumentParser
                 ) -> argparse.ArgumentParser:
    """Return the benchmark's argument parser (times in seconds), an instance of ``cls``."""
    p = cls(prog="python -m benchmarks.bsp",
                                description=(__doc__ or "").split("\n")[0])
    p.add_argument("--work", type=_non_negative, default=1.0, help="total work W, seconds")
    p.add_argument("--granularity", type=_positive, default=0.5,
                   help="iteration length G as a fraction of the timeslice")
    p.add_argument("--timeslice", type=_positive, default=0.2, help="timeslice T, seconds")
    p.add_argument("--variance", type=_non_negative, default=0.0,
                   help="V: compute varies uniformly within w*(1 +- V)")
    p.add_argument("--pattern", choices=PATTERNS, default="nn")
    p.add_argument("--io-blocks", type=_count, default=0,
                   help="B: 1 KB synchronous writes per iteration")
    p.add_argument("--imbalance", type=_imbalance, action="append", default=[],
                   metavar="RANK:FACTOR", help="that rank computes FACTOR times as much")
    p.add_argument("--rank-variance", type=_rank_variance, action="append", default=[],
                   metavar="RANK:V", help="that rank's variance instead of --variance")
    p.add_argument("--mem-mb", type=_non_negative, default=0.0,
                   help="MiB of memory each rank walks over (0: no walk)")
    p.add_argument("--theta", type=float, default=1.5,
                   help="locality of the walk, 1 (least) to 2 (most)")
    p.add_argument("--accesses", type=int, default=100000, help="walk steps per iteration")
    p.add_argument("--stride", type=int, default=1024, help="bytes per walk cell")
    p.add_argument("--seed", type=int, default=0, help="seed of the per-rank PRNG streams")
    p.add_argument("--stats", help="file for the JSON records (default: stdout)")
    p.add_argument("--scratch-dir", default=None, help="where the per-rank I/O files go")
    return p


@dataclass
class RankRecord:
    """What one rank reports; times in seconds, RSS in KiB."""

    rank: int
    size: int
    iterations: int
    work_s: float
    compute_target_s: float
    compute_s: float
    comm_s: float
    io_s: float
    walk_s: float
    cpu_s: float
    wall_s: float
    calib_exchange_s: float
    calib_io_block_s: float
    calib_walk_s: float
    minor_faults: int
    major_faults: int
    peak_rss_kib: int


def burn_cpu(seconds: float) -> None:
    """Consume ``seconds`` of this thread's CPU time (not wall time)."""
    end = time.thread_time() + seconds
    x = 1.0
    while time.thread_time() < end:
        for _ in range(100):
            x = x * 1.0000001 + 1e-9


class Exchange:
    """One round of the communication pattern with 4 KB messages."""

    def __init__(self, comm: Any, pattern: str) -> None:
        self.comm = comm
        rank, size = comm.Get_rank(), comm.Get_size()
        if pattern == "none" or size == 1:
            self.peers: list[tuple[int, int]] = []
        elif pattern == "nn":
            right, left = (rank + 1) % size, (rank - 1) % size
            self.peers = [(right, left), (left, right)] if size > 2 else [(right, left)]
        else:
            self.peers = [((rank + k) % size, (rank - k) % size) for k in range(1, size)]
        self.send = bytearray(MESSAGE_BYTES)
        self.recv = bytearray(MESSAGE_BYTES)

    def run(self) -> None:
        """Exchange one message with every peer of the pattern (blocking)."""
        for dest, source in self.peers:
            self.comm.Sendrecv(self.send, dest, 0, self.recv, source, 0)


class ScratchFile:
    """A per-rank file written with O_DSYNC, removed by ``close``."""

    def __init__(self, directory: str | None, rank: int) -> None:
        fd, self.path = tempfile.mkstemp(prefix=f"testbed-bsp-r{rank}-", dir=directory)
        os.close(fd)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_DSYNC)
        self.block = b"\xa5" * IO_BLOCK_BYTES

    def write_blocks(self, count: int) -> None:
        """Write ``count`` 1 KB blocks synchronously."""
        for i in range(count):
            os.pwrite(self.fd, self.block, i * IO_BLOCK_BYTES)

    def close(self) -> None:
        """Close and remove the file."""
        os.close(self.fd)
        os.unlink(self.path)


def calibrate(comm: Any, exchange: Exchange, scratch: ScratchFile | None) -> tuple[float, float]:
    """Measure one exchange round and one I/O block (seconds, max over ranks)."""
    from mpi4py import MPI

    exchange_s = 0.0
    if exchange.peers:
        exchange.run()
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(CALIBRATION_ROUNDS):
            exchange.run()
        exchange_s = (time.perf_counter() - t0) / CALIBRATION_ROUNDS
    io_s = 0.0
    if scratch is not None:
        t0 = time.perf_counter()
        scratch.write_blocks(CALIBRATION_IO_BLOCKS)
        io_s = (time.perf_counter() - t0) / CALIBRATION_IO_BLOCKS
    worst = comm.allreduce((exchange_s, io_s), op=MPI.MAX) if comm.Get_size() > 1 else None
    return worst if worst is not None else (exchange_s, io_s)


def run(args: argparse.Namespace, comm: Any) -> RankRecord:
    """Run the benchmark loop on this rank and return its record."""
    rank, size = comm.Get_rank(), comm.Get_size()
    started = time.perf_counter()
    cpu_started = time.process_time()
    exchange = Exchange(comm, args.pattern)
    scratch = ScratchFile(args.scratch_dir, rank) if args.io_blocks > 0 else None
    walk = None
    if args.mem_mb > 0:
        from testbed.walk import Walk

        walk = Walk(args.mem_mb, args.theta, args.stride, args.seed * 65537 + rank)
    try:
        exchange_s, io_block_s = calibrate(comm, exchange, scratch)
        walk_cost = 0.0
        if walk is not None:
            t0 = time.perf_counter()
            walk.run(args.accesses)
            walk_cost = time.perf_counter() - t0
        slot = args.granularity * args.timeslice
        iterations = max(1, round(args.work / slot)) if args.work > 0 else 0
        length = args.work / iterations if iterations else 0.0
        base = max(0.0, length - exchange_s - args.io_blocks * io_block_s - walk_cost)
        factor = dict(args.imbalance).get(rank, 1.0)
        variance = dict(args.rank_variance).get(rank, args.variance)
        prng = random.Random(f"{args.seed}/{rank}")
        compute_target = compute_s = comm_s = io_s = walk_s = 0.0
        for _ in range(iterations):
            amount = base * factor * (1.0 + variance * (2.0 * prng.random() - 1.0))
            t0 = time.perf_counter()
            burn_cpu(amount)
            t1 = time.perf_counter()
            if scratch is not None:
                scratch.write_blocks(args.io_blocks)
            t2 = time.perf_counter()
            exchange.run()
            t3 = time.perf_counter()
            if walk is not None:
                walk.run(args.accesses)
                walk_s += time.perf_counter() - t3
            compute_target += amount
            compute_s += t1 - t0
            io_s += t2 - t1
            comm_s += t3 - t2
    finally:
        if scratch is not None:
            scratch.close()
        if walk is not None:
            walk.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return RankRecord(
        rank=rank, size=size, iterations=iterations, work_s=args.work,
        compute_target_s=round(compute_target, 6), compute_s=round(compute_s, 6),
        comm_s=round(comm_s, 6), io_s=round(io_s, 6), walk_s=round(walk_s, 6),
        cpu_s=round(time.process_time() - cpu_started, 6),
        wall_s=round(time.perf_counter() - started, 6),
        calib_exchange_s=exchange_s, calib_io_block_s=io_block_s, calib_walk_s=walk_cost,
        minor_faults=usage.ru_minflt, major_faults=usage.ru_majflt, peak_rss_kib=usage.ru_maxrss,
    )


def write_records(records: list[dict[str, Any]], path: str | None) -> None:
    """Write one JSON line per rank to ``path`` (atomically) or to stdout."""
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    if path is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _terminate(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Parse options, run the benchmark on every rank, report; abort the job on an error."""
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if args.mem_mb > 0 and not (1.0 <= args.theta <= 2.0 and args.accesses >= 0
                                and args.stride >= 1):
        if comm.Get_rank() == 0:
            print("bsp: need 1 <= --theta <= 2, --accesses >= 0, --stride >= 1", file=sys.stderr)
        return 2
    if any(r >= comm.Get_size() for r, _ in args.imbalance + args.rank_variance):
        if comm.Get_rank() == 0:
            print(f"bsp: a RANK is >= the job size {comm.Get_size()}", file=sys.stderr)
        return 2
    try:
        record = run(args, comm)
    except Exception:
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)
        return 1
    records = comm.gather(asdict(record), root=0)
    if comm.Get_rank() == 0:
        write_records(records, args.stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
