"""The synthetic BSP benchmark (THESIS Fig 4.4 and §4.5).

Every rank loops ``iterations`` times over three phases:

1. compute for ``w * (1 + V * u)`` seconds of *CPU time*, ``u`` uniform in [-1, 1]
   (a stopped rank makes no progress);
2. write ``B`` blocks of 1 KB synchronously (``O_DSYNC``) to a per-rank scratch file;
3. exchange 4 KB messages: ``none``, ``nn`` (both ring neighbours) or ``aa`` (every peer);
4. with ``--mem-mb``, make ``--accesses`` steps of a fractal memory walk over an array of that
   size (MEMORY §4.1: jumps with Pr[X > u] = u^-theta, one byte written per step, cells of
   ``--stride`` bytes); the array is touched once at start so all of it is resident.

The iteration count follows THESIS §4.5 item 6: the basic work per iteration is
``w = G * T - (exchange + B * io_block + walk)``, the costs calibrated at start-up, and the
iteration count is ``W / w`` rounded; every rank then computes exactly ``W`` seconds of CPU time
in all (``W / iterations`` per iteration, times its imbalance factor, with variance).  The
calibration only sets how finely the work is cut: it is never subtracted from the work, so
paging, contention and descheduling always show up as a longer runtime.  Calibration is made
where it cannot be disturbed: the exchange first (the median of 20 rounds, so a round that
straddles a stop does not count), the I/O block likewise, and the walk on a small resident
array before the walk's own array is touched.  A dedicated run takes about ``dedicated_s``
(reported): ``iterations * G * T`` up to the expected extra compute of the slowest rank.

Times the testbed keeps the rank stopped (its record's ``stopped_s``) count in no phase: the
phases are timed on a clock that stops with the rank, and ``stopped_s`` reports the total.
Each rank reports one JSON record; rank 0 writes them all, one line each, to ``--stats`` or to
stdout.

Run standalone: ``mpiexec -n 4 python -m testbed.jobs.bsp --work 2 --pattern aa``.

Modules only some runs need (calibration statistics, scratch files, tracebacks) are imported
where they are used, and the record is a plain dict (no dataclasses, no typing): every import
at the top is paid by every rank of every job before its work starts, and counts in the
launch overhead (THESIS Table 5.1).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
from collections.abc import Callable

from testbed.bsp_options import build_parser
from testbed.exit_codes import exit_on_sigterm

TYPE_CHECKING = False       # typing itself would cost every rank its import
if TYPE_CHECKING:
    from typing import Any

RankRecord = dict[str, float]
"""What one rank reports (``run``'s fields); times in seconds, RSS in KiB."""

MESSAGE_BYTES = 4096
IO_BLOCK_BYTES = 1024
CALIBRATION_ROUNDS = 20
CALIBRATION_IO_BLOCKS = 8
CALIBRATION_WALK_MB = 4.0
MIN_WORK_FRACTION = 0.1


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
        import tempfile

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


def _median_time(clock: Callable[[], float], action: Callable[[], object], rounds: int) -> float:
    """The median of ``rounds`` timings of ``action`` (seconds on ``clock``)."""
    import statistics

    times = []
    for _ in range(rounds):
        t0 = clock()
        action()
        times.append(clock() - t0)
    return statistics.median(times)


def calibrate(comm: Any, exchange: Exchange, scratch: ScratchFile | None,
              clock: Callable[[], float]) -> tuple[float, float]:
    """One exchange round and one I/O block (seconds, the median of several, max over ranks)."""
    from mpi4py import MPI

    exchange_s = io_s = 0.0
    if exchange.peers:
        exchange.run()
        comm.Barrier()
        exchange_s = _median_time(clock, exchange.run, CALIBRATION_ROUNDS)
    if scratch is not None:
        io_s = _median_time(clock, lambda: scratch.write_blocks(1), CALIBRATION_IO_BLOCKS)
    worst = comm.allreduce((exchange_s, io_s), op=MPI.MAX) if comm.Get_size() > 1 else None
    return worst if worst is not None else (exchange_s, io_s)


def calibrate_walk(args: argparse.Namespace, seed: int, clock: Callable[[], float]) -> float:
    """One iteration's walk (seconds) on a small resident array, made before the real array
    exists so that paging cannot inflate it (this rank's figure; ``run`` takes the max over
    ranks)."""
    from testbed.jobs.walk import Walk

    probe = Walk(min(args.mem_mb, CALIBRATION_WALK_MB), args.theta, args.stride, seed)
    try:
        probe.run(args.accesses)
        return _median_time(clock, lambda: probe.run(args.accesses), 3)
    finally:
        probe.close()


def plan(work: float, slot: float, cost: float) -> tuple[int, float]:
    """THESIS §4.5 item 6: the iteration count and the work per iteration (seconds) for total
    work ``work``, iterations of ``slot`` seconds, and ``cost`` seconds of exchange, I/O and
    walk per iteration.  The compute per iteration is kept at least a tenth of the slot."""
    if work <= 0:
        return 0, 0.0
    basic = max(slot - cost, MIN_WORK_FRACTION * slot)
    iterations = max(1, round(work / basic))
    return iterations, work / iterations


def dedicated_runtime(iterations: int, per_iteration: float, cost: float, size: int,
                      factors: list[float], variances: list[float]) -> float:
    """The expected runtime (s) alone on a dedicated machine: every iteration waits for the
    slowest rank, whose compute is its factor times ``per_iteration`` times 1 + V (n-1)/(n+1),
    the expected maximum of ``size`` uniform draws in [-1, 1]."""
    spread = (size - 1) / (size + 1)
    slowest = max(f * (1.0 + v * spread) for f, v in zip(factors, variances, strict=True))
    return iterations * (per_iteration * slowest + cost)


def run(args: argparse.Namespace, comm: Any) -> RankRecord:
    """Run the benchmark loop on this rank and return its record: rank, size, iterations,
    work_s, compute_target_s, compute_s, comm_s, io_s, walk_s, cpu_s, wall_s, stopped_s,
    calib_exchange_s, calib_io_block_s, calib_walk_s, iteration_work_s, dedicated_s (s), and
    minor_faults, major_faults, peak_rss_kib (KiB)."""
    from testbed.stopped_clock import StoppedClock

    rank, size = comm.Get_rank(), comm.Get_size()
    clock = StoppedClock(rank)
    started = time.perf_counter()
    stopped_start = clock.stopped()
    cpu_started = time.process_time()
    exchange = Exchange(comm, args.pattern)
    scratch = ScratchFile(args.scratch_dir, rank) if args.io_blocks > 0 else None
    walk = None
    seed = args.seed * 65537 + rank
    try:
        exchange_s, io_block_s = calibrate(comm, exchange, scratch, clock.now)
        walk_cost = 0.0
        if args.mem_mb > 0:
            from testbed.jobs.walk import Walk

            walk_cost = calibrate_walk(args, seed, clock.now)
            if size > 1:
                # Every rank must plan the same number of iterations, or the exchange of the
                # one that plans more waits for ever on the others.
                from mpi4py import MPI
                walk_cost = comm.allreduce(walk_cost, op=MPI.MAX)
            walk = Walk(args.mem_mb, args.theta, args.stride, seed)
        cost = exchange_s + args.io_blocks * io_block_s + walk_cost
        iterations, per_iteration = plan(args.work, args.granularity * args.timeslice, cost)
        imbalance, rank_variance = dict(args.imbalance), dict(args.rank_variance)
        factor = imbalance.get(rank, 1.0)
        variance = rank_variance.get(rank, args.variance)
        dedicated = dedicated_runtime(
            iterations, per_iteration, cost, size,
            [imbalance.get(r, 1.0) for r in range(size)],
            [rank_variance.get(r, args.variance) for r in range(size)])
        prng = random.Random(f"{args.seed}/{rank}")
        compute_target = compute_s = comm_s = io_s = walk_s = 0.0
        for _ in range(iterations):
            amount = per_iteration * factor * (1.0 + variance * (2.0 * prng.random() - 1.0))
            t0 = clock.now()
            burn_cpu(amount)
            t1 = clock.now()
            if scratch is not None:
                scratch.write_blocks(args.io_blocks)
            t2 = clock.now()
            exchange.run()
            t3 = clock.now()
            if walk is not None:
                walk.run(args.accesses)
                walk_s += clock.now() - t3
            compute_target += amount
            compute_s += t1 - t0
            io_s += t2 - t1
            comm_s += t3 - t2
    finally:
        if scratch is not None:
            scratch.close()
        if walk is not None:
            walk.close()
    stopped = clock.stopped() - stopped_start
    clock.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return dict(
        rank=rank, size=size, iterations=iterations, work_s=args.work,
        compute_target_s=round(compute_target, 6), compute_s=round(compute_s, 6),
        comm_s=round(comm_s, 6), io_s=round(io_s, 6), walk_s=round(walk_s, 6),
        cpu_s=round(time.process_time() - cpu_started, 6),
        wall_s=round(time.perf_counter() - started, 6), stopped_s=round(stopped, 6),
        calib_exchange_s=exchange_s, calib_io_block_s=io_block_s, calib_walk_s=walk_cost,
        iteration_work_s=round(per_iteration, 9), dedicated_s=round(dedicated, 6),
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


def main(argv: list[str] | None = None) -> int:
    """Parse options, run the benchmark on every rank, report; abort the job on an error."""
    args = build_parser().parse_args(argv)
    exit_on_sigterm()
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
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)
        return 1
    records = comm.gather(record, root=0)
    if comm.Get_rank() == 0:
        write_records(records, args.stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
