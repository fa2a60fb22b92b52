"""Simulator speed: simulated jobs per wall second on a Lublin workload.

``python -m benchmarks.simulator [--jobs 100000] [--pes 1024] [--policies easy,conservative,gang]
[--json] [--profile]`` generates one Lublin-Feitelson workload (seed 1, load 0.7, uncompressed;
runtime estimates perfect), simulates it under each policy through the same driver and event
log a ``testbed simulate`` run uses (gang with a 600 s quantum and MPL 8, the batch policies
first-fit), and prints jobs / wall second of the simulation (driver, policy, executor, and
writing ``events.jsonl``), and apart from it the seconds ``jobs.csv`` and ``summary.json``
take to derive from the log.  Generating the workload is not timed.  ``--profile`` prints
where the time goes (the functions with the most time of their own).  Anchor: pyss did
~2,500 jobs/s with EASY on a 550 MHz Pentium III.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import host, table
from testbed.driver import Driver
from testbed.events import EventLog
from testbed.policies import PolicyConfig, make_policy
from testbed.results.report import write_results
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads import lublin
from testbed.workloads.files import JobSpec, Workload

GANG_QUANTUM_S = 600.0
GANG_MPL = 8


def lublin_workload(jobs: int, pes: int, seed: int = 1, load: float = 0.7) -> Workload:
    """A Lublin-Feitelson workload of ``jobs`` jobs for ``pes`` PEs with perfect estimates."""
    specs = [JobSpec(f"j{i}", i, job.arrival, job.size, (), job.runtime, estimate=job.runtime)
             for i, job in enumerate(lublin.generate(jobs, pes, seed, load), start=1)]
    return Workload(f"<lublin jobs={jobs} pes={pes} seed={seed} load={load}>", specs,
                    {"generator": "lublin", "seed": str(seed), "load": str(load)})


def simulate(workload: Workload, scheduler: str, pes: int, out: Path) -> tuple[float, float]:
    """Simulate ``workload`` under ``scheduler`` into ``out``; the wall seconds the simulation
    took (driver, policy, executor and event log) and those the results took (``jobs.csv`` and
    ``summary.json`` derived from the log)."""
    allocator = "buddy" if scheduler == "gang" else "first-fit"
    config = PolicyConfig(pes, GANG_MPL, GANG_QUANTUM_S, allocator)
    policy = make_policy(scheduler, config)
    executor = SimulationExecutor({job.id: job.work or 0.0 for job in workload.jobs})
    began = time.perf_counter()
    Driver(workload, policy, executor, out, {"scheduler": scheduler, "machine": {"pes": pes,
           "oversubscribed": False}}, log=EventLog(out / "events.jsonl", flush_each=False)).run()
    simulated = time.perf_counter()
    write_results(out)
    return simulated - began, time.perf_counter() - simulated


def main(argv: list[str] | None = None) -> int:
    """Measure and print simulated jobs per second for each policy."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.simulator", description=__doc__)
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--pes", type=int, default=1024)
    p.add_argument("--policies", default="easy,conservative,gang")
    p.add_argument("--json", action="store_true", help="one JSON record per policy")
    p.add_argument("--profile", action="store_true", help="print where the time goes")
    args = p.parse_args(argv)
    workload = lublin_workload(args.jobs, args.pes)
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="testbed-simbench-") as tmp:
        for scheduler in args.policies.split(","):
            out = Path(tmp) / scheduler
            out.mkdir()
            profiler = cProfile.Profile() if args.profile else None
            if profiler is not None:
                profiler.enable()
            seconds, report_s = simulate(workload, scheduler, args.pes, out)
            if profiler is not None:
                profiler.disable()
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
                print(f"--- {scheduler}\n{text.getvalue()}")
            records.append({"policy": scheduler, "jobs": args.jobs, "pes": args.pes,
                            "seconds": round(seconds, 3),
                            "jobs_per_s": round(args.jobs / seconds),
                            "report_s": round(report_s, 3)})
    if args.json:
        for record in records:
            print(json.dumps(record))
        return 0
    print(table(["policy", "jobs", "pes", "seconds", "jobs/s", "results s"],
                [[r["policy"], r["jobs"], r["pes"], r["seconds"], r["jobs_per_s"], r["report_s"]]
                 for r in records]))
    print(f"host: {host()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
