"""Job launch overhead (THESIS Table 5.1): an empty job's response time minus its work.

Runs ``--repeats`` empty BSP jobs (``--work 0``) one after another under FCFS for N = 1 and
N = all PEs, and prints, per N, the median/min/max of response - work, the median of runtime -
work (the overhead after the job's start, which THESIS §5.4.2's runtimes hold), and the median
time from launch until every rank process was found.

With work (Table 5.2), response - work splits in two: the *launch* part, response - the
slowest rank's time in the benchmark (start-up, MPI, teardown, the testbed's own steps), which
does not grow with the work, and the *displaced* part, the most a rank's time in the benchmark
exceeded the CPU time it ran (the benchmark computes its work in CPU time, so any other
process on its CPU, or a hypervisor's steal, lengthens it in proportion to the work).  Beside
them ``steal_share``, the share of all CPU time the hypervisor took during the jobs
(``psutil.cpu_times``; None where there is no steal).  Usage:
``python -m benchmarks.overheads.launch_overhead [--repeats 7] [--gap 0.5]``
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import psutil

from benchmarks.harness import emit, events, host, jobs, median, parser, run_workload


def measure(size: int, repeats: int, gap: float, work: float = 0.0) -> dict[str, float]:
    """Launch overhead figures (seconds) for ``repeats`` jobs of ``size`` ranks that compute
    ``work`` seconds without communicating (0: empty jobs, Table 5.1; more: Table 5.2), one
    arriving every ``gap`` + ``work`` seconds so that none waits for another.
    ``ranks_found_median_s`` is None when no job's ranks were reported found before it
    ended: node managers started by ``srun`` (inside Slurm) report an empty job's pids after
    its end."""
    text = "".join(f"{i * (gap + work):.3f} {size} bsp --work {work:g} --pattern none\n"
                   for i in range(repeats))
    before = cpu_times()
    run = run_workload(text, "--scheduler", "fcfs")
    after = cpu_times()
    try:
        rows = jobs(run)
        logged = events(run)
    finally:
        shutil.rmtree(run.parent)
    found = [e["after_s"] for e in logged if e["event"] == "pids"]
    ranks = {e["job"]: e["ranks"] for e in logged if e["event"] == "stats"}
    done = [r for r in rows if r["status"] == "done"]
    overhead = [float(r["response"]) - float(r["work"]) for r in done]
    if len(overhead) != repeats or set(ranks) != {r["id"] for r in done}:
        raise RuntimeError(f"only {len(overhead)} of {repeats} jobs of {work:g} s ended done "
                           f"and {len(ranks)} reported their ranks")
    launch = [float(r["response"]) - max(x["wall_s"] for x in ranks[r["id"]]) for r in done]
    displaced = [max(x["wall_s"] - x["cpu_s"] for x in ranks[r["id"]]) for r in done]
    return {"ranks": size, "jobs": repeats, "median_s": median(overhead),
            "runtime_median_s": median([float(r["runtime"]) - float(r["work"]) for r in done]),
            "min_s": min(overhead), "max_s": max(overhead),
            "launch_median_s": median(launch), "displaced_median_s": median(displaced),
            "steal_share": steal_share(before, after),
            "ranks_found_median_s": median(found) if found else None}


STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
"""The CPU states that together make all of a Linux machine's CPU time (guest time is counted
in user and nice)."""


def cpu_times() -> Any | None:
    """The machine's CPU time by state (``psutil.cpu_times``, s), or None where it has no
    steal (not Linux)."""
    times = psutil.cpu_times()
    return times if hasattr(times, "steal") else None


def steal_share(before: Any | None, after: Any | None) -> float | None:
    """The share of all CPU time between two ``cpu_times`` readings that the hypervisor took
    (steal); None without both readings or without time between them."""
    if before is None or after is None:
        return None
    spent = {state: getattr(after, state) - getattr(before, state) for state in STATES}
    total = sum(spent.values())
    return round(spent["steal"] / total, 5) if total > 0 else None


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures as JSON (one object)."""
    p = parser("benchmarks.overheads.launch_overhead", "job launch overhead (THESIS Table 5.1)",
               json_help=None, out_help=None, markdown_help=None)
    p.add_argument("--repeats", type=int, default=7, help="empty jobs per job size (>= 1)")
    p.add_argument("--gap", type=float, default=0.5, help="seconds between arrivals")
    args = p.parse_args(argv)
    pes = len(os.sched_getaffinity(0))
    sizes = sorted({1, pes})
    result = {"benchmark": "launch_overhead", "host": host(),
              "results": [measure(n, args.repeats, args.gap) for n in sizes]}
    emit([result], True, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
