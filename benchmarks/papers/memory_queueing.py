"""MEMORY §4.3's queueing at the paper's size, simulated: the share of jobs that memory-aware
admission keeps waiting in the queue, against load.

The paper measured it on ParPar (a master and 16 nodes, 1000 jobs of 10 MB each from Lublin's
model, the memory load limited to 100 % of the real memory).  With the limit held, no node
ever holds more than its memory, so nothing pages and a job runs as it would alone under gang
scheduling: the queueing is the policy's decision alone, which the simulator makes with the
same policy (gang with ``MemoryAdmission`` at C = 1) on 16 nodes of one PE, each holding
``--fits`` jobs' ranks (the paper's §4.2: "the available memory on a node can contain 4 jobs
at most").  Loads are the paper's: average runtime x average nodes over average
inter-arrival time x total nodes (``lublin``'s ``means`` rule; its ``work`` rule, the
machine's share of work, is 1.06 to 1.54 times that number on this model, whose larger jobs
run longer).  A job is *queued* when it waited longer than ``QUEUED_AFTER`` seconds between
arrival and start (a job the policy starts on arrival starts at once).  Prints one JSON
object: per load and seed, the queued fraction.

Usage: ``python -m benchmarks.papers.memory_queueing [--loads 0.3,0.5,0.8] [--seeds 5]``
"""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.harness import emit, parser
from testbed import run
from testbed.events import EventLog, read_events
from testbed.policies import PolicyConfig, make_policy
from testbed.policies.config import MemoryAdmission
from testbed.policies.matrix import UNBOUNDED
from testbed.results.metrics import job_rows
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads import lublin
from testbed.workloads.files import JobSpec, Workload

NODES = 16
JOB_MB = 10.0
FITS = 4
TIMESLICE = 60.0
QUEUED_AFTER = 1e-3
LOADS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def workload(jobs: int, load: float, seed: int) -> Workload:
    """Lublin's model for 16 PEs at MEMORY's ``load``, every rank declaring ``JOB_MB`` MiB."""
    generated = lublin.generate(jobs, NODES, seed, load, load_rule="means")
    return Workload(f"<lublin {jobs} jobs, load {load}, seed {seed}>",
                    [JobSpec(f"j{i}", i, job.arrival, job.size, (), job.runtime,
                             mem_mb=JOB_MB, estimate=job.runtime)
                     for i, job in enumerate(generated, start=1)],
                    {"generator": "lublin", "load": str(load), "seed": str(seed)})


def queued_fraction(waits: list[float]) -> float:
    """The share of jobs that waited (s) longer than ``QUEUED_AFTER``."""
    return sum(1 for w in waits if w > QUEUED_AFTER) / len(waits)


def point(jobs: int, load: float, seed: int, fits: int = FITS) -> dict[str, Any]:
    """Simulate one load and seed under gang with admission at C = 1; its record: load,
    seed, jobs done and the queued fraction."""
    admission = MemoryAdmission(capacity_mb=(fits * JOB_MB,) * NODES, factor=1.0,
                                node_of_pe=tuple(range(NODES)))
    policy = make_policy("gang", PolicyConfig(NODES, UNBOUNDED, TIMESLICE, "buddy",
                                              memory=admission))
    work = workload(jobs, load, seed)
    executor = SimulationExecutor({j.id: j.work or 0.0 for j in work.jobs})
    out = Path(tempfile.mkdtemp(prefix="memory-queueing-"))
    try:
        run.drive(work, policy, executor, out,
                  {"scheduler": "gang", "machine": {"pes": NODES}},
                  log=EventLog(out / "events.jsonl", flush_each=False))
        rows = [r for r in job_rows(read_events(out / "events.jsonl")) if r.status == "done"]
    finally:
        shutil.rmtree(out)
    waits = [r.wait for r in rows if r.wait is not None]
    return {"load": load, "seed": seed, "jobs": jobs, "done": len(rows),
            "queued": queued_fraction(waits) if waits else None}


def _point(task: tuple[int, float, int, int]) -> dict[str, Any]:
    return point(*task)


def run_points(jobs: int, loads: tuple[float, ...], seeds: int, workers: int = 1,
               fits: int = FITS) -> list[dict[str, Any]]:
    """Every (load, seed) point, spread over ``workers`` processes; records in load and seed
    order."""
    tasks = [(jobs, load, seed, fits) for load in loads for seed in range(1, seeds + 1)]
    if workers <= 1:
        return [_point(t) for t in tasks]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_point, tasks))


def main(argv: list[str] | None = None) -> int:
    """Simulate every point and print the records as JSON."""
    p = parser("benchmarks.papers.memory_queueing",
               "MEMORY §4.3: queued jobs against load, simulated",
               json_help=None, out_help=None, markdown_help=None)
    p.add_argument("--loads", default=",".join(f"{x:g}" for x in LOADS))
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--fits", type=int, default=FITS, help="jobs' ranks a node's memory holds")
    p.add_argument("--workers", type=int, default=1)
    args = p.parse_args(argv)
    try:
        loads = tuple(float(x) for x in args.loads.split(","))
    except ValueError:
        p.error(f"--loads: not a comma-separated list of numbers: {args.loads!r}")
    if args.jobs < 1 or args.seeds < 1 or args.fits < 1 or any(x <= 0 for x in loads):
        p.error("--jobs, --seeds and --fits must be >= 1 and every load > 0")
    emit([{"benchmark": "memory_queueing",
           "points": run_points(args.jobs, loads, args.seeds, args.workers, args.fits)}],
         True, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
