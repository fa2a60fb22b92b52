"""Multi-context-switch latency: from the heartbeat to the last signal delivered.

Two CPU-bound jobs, each on every PE, under gang scheduling at MPL 2, so that every heartbeat
stops all of one job's ranks and continues all of the other's.  Prints p50/p99/max of the
switch latency and of the heartbeat's lag behind its due time (microseconds).  Usage:
``python -m benchmarks.switch_latency [--work 10] [--timeslice 0.2] [--mpl 2]
[--rank-priority auto]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil

from benchmarks.harness import events, host, run_workload
from testbed.results.metrics import percentiles


def measure(work: float, timeslice: float, mpl: int = 2,
            rank_priority: str = "auto") -> dict[str, object]:
    """Switch latency and heartbeat lag figures (microseconds) for one gang run of ``mpl``
    CPU-bound jobs, each on every PE, the ranks at ``rank_priority``."""
    pes = len(os.sched_getaffinity(0))
    job = f"0 {pes} bsp --work {work} --pattern none\n"
    run = run_workload(job * mpl, "--scheduler", "gang", "--mpl", str(mpl),
                       "--timeslice", str(timeslice), "--rank-priority", rank_priority)
    try:
        evs = events(run)
    finally:
        shutil.rmtree(run.parent)
    switches = [e for e in evs if e["event"] == "switch" and e["stopped"] and e["continued"]]
    if not switches:
        raise RuntimeError("no full switch happened: is --work long enough?")
    latency = [e["latency_us"] for e in switches]
    lag = [e["lag_us"] for e in switches if e["lag_us"] is not None]
    config = evs[0]["config"]
    return {"pes": pes, "mpl": mpl, "timeslice_s": timeslice, "switches": len(switches),
            "ranks_per_switch": 2 * pes,
            "coordinator_priority": config.get("coordinator_priority", ""),
            "rank_priority": config.get("rank_priority", {}).get("applied"),
            "latency_us": percentiles(latency), "lag_us": percentiles(lag)}


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures as JSON (one object)."""
    p = argparse.ArgumentParser(description="multi-context-switch latency under gang, MPL 2")
    p.add_argument("--work", type=float, default=10.0, help="seconds of work per job")
    p.add_argument("--timeslice", type=float, default=0.2, help="seconds")
    p.add_argument("--mpl", type=int, default=2, help="jobs, each on every PE (default 2)")
    p.add_argument("--rank-priority", default="auto", help="as testbed run's (default auto)")
    args = p.parse_args(argv)
    result = {"benchmark": "switch_latency", "host": host(),
              "results": measure(args.work, args.timeslice, args.mpl, args.rank_priority)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
