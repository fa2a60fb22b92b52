"""Job launch overhead (THESIS Table 5.1): an empty job's response time minus its work.

Runs ``--repeats`` empty BSP jobs (``--work 0``) one after another under FCFS for N = 1 and
N = all PEs, and prints, per N, the median/min/max of response - work, and the median time from
launch until every rank process was found.  Usage:
``python -m benchmarks.launch_overhead [--repeats 7] [--gap 0.5]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil

from benchmarks.harness import events, host, jobs, median, run_workload


def measure(size: int, repeats: int, gap: float, work: float = 0.0) -> dict[str, float]:
    """Launch overhead figures (seconds) for ``repeats`` jobs of ``size`` ranks that compute
    ``work`` seconds without communicating (0: empty jobs, Table 5.1; more: Table 5.2), one
    arriving every ``gap`` + ``work`` seconds so that none waits for another."""
    text = "".join(f"{i * (gap + work):.3f} {size} bsp --work {work:g} --pattern none\n"
                   for i in range(repeats))
    run = run_workload(text, "--scheduler", "fcfs")
    try:
        rows = jobs(run)
        found = [e["after_s"] for e in events(run) if e["event"] == "pids"]
    finally:
        shutil.rmtree(run.parent)
    overhead = [float(r["response"]) - float(r["work"]) for r in rows if r["status"] == "done"]
    if len(overhead) != repeats:
        raise RuntimeError(f"only {len(overhead)} of {repeats} jobs of {work:g} s ended done")
    return {"ranks": size, "jobs": repeats, "median_s": median(overhead),
            "min_s": min(overhead), "max_s": max(overhead),
            "ranks_found_median_s": median(found)}


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures as JSON (one object)."""
    p = argparse.ArgumentParser(description="job launch overhead (THESIS Table 5.1)")
    p.add_argument("--repeats", type=int, default=7, help="empty jobs per job size (>= 1)")
    p.add_argument("--gap", type=float, default=0.5, help="seconds between arrivals")
    args = p.parse_args(argv)
    pes = len(os.sched_getaffinity(0))
    sizes = sorted({1, pes})
    result = {"benchmark": "launch_overhead", "host": host(),
              "results": [measure(n, args.repeats, args.gap) for n in sizes]}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
