"""Cross-validation: the same small workload emulated and simulated, per policy.

``python -m benchmarks.simulator.crossval [--jobs 20] [--seed 1] [--json] [--out DIR] [--markdown
PAGE]``
writes one
workload of BSP jobs that fits this machine (1 or 2 ranks on 2 PEs, work 1-3 s, Poisson
arrivals at an offered load of about 0.8), runs it with ``testbed run`` (real ranks) and
``testbed simulate`` under fcfs, gang and easy (perfect estimates), and prints the ratio of
the mean response time simulated / emulated per policy.

Each policy is simulated twice: with the bare model (a job lasts its work) and with a launch
cost: the median of (runtime - work) of the jobs emulated under fcfs, where a job runs alone on
its PEs, so that the difference is what starting ``mpiexec``, Python and MPI costs a job (the
simulator's ``--launch-cost``).  The first ratio shows the gap, the second how much of it that
one measured constant explains.  ``--markdown PAGE`` also writes the table as a page, with the
host, the date and the command recorded.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    Session,
    emit,
    host,
    jobs,
    markdown_table,
    page_head,
    parser,
    table,
    testbed,
)

POLICIES = ("fcfs", "gang", "easy")
PES = 2


def workload(count: int, seed: int) -> str:
    """The workload text: ``count`` jobs, sizes 1-2, work 1-3 s, mean gap 1.8 s."""
    rng = random.Random(seed)
    lines = [f"# testbed: generator=crossval jobs={count} seed={seed}"]
    t = 0.0
    for _ in range(count):
        lines.append(f"{t:.3f} {rng.choice((1, 2))} bsp --work {rng.uniform(1.0, 3.0):.2f}")
        t += rng.expovariate(1 / 1.8)
    return "\n".join(lines) + "\n"


def mean_response(run: Path) -> float:
    """The mean response time (s) of the run's jobs that ended done."""
    return statistics.fmean(float(r["response"]) for r in jobs(run) if r["status"] == "done")


def launch_cost(run: Path) -> float:
    """The median of runtime - work (s) over the run's done jobs."""
    return statistics.median(float(r["runtime"]) - float(r["work"]) for r in jobs(run)
                             if r["status"] == "done")


HEADER = ["policy", "emulated s", "simulated s", "sim/emu", "with launch s",
          "sim/emu with launch"]


def rows(records: list[dict[str, Any]]) -> list[list[Any]]:
    """The table's rows, one per policy."""
    return [[r["policy"], r["emulated_s"], r["simulated_s"], r["ratio"],
             r["simulated_with_launch_s"], r["ratio_with_launch"]] for r in records]


def markdown(records: list[dict[str, Any]], jobs_count: int, seed: int, command: str) -> str:
    """The results page: the mean response times emulated and simulated, per policy."""
    cost = records[0]["launch_cost_s"]
    return "\n".join([
        *page_head("Emulated against simulated", "benchmarks.simulator.crossval", command, host(),
                   time.strftime("%Y-%m-%d %H:%M %Z")),
        "", f"{jobs_count} BSP jobs of 1 or 2 ranks (seed {seed}, work 1-3 s) on {PES} PEs, "
        "each policy run on real processes and in the simulator, bare and with the launch "
        f"cost measured under fcfs ({cost:.3f} s: the median runtime - work). Mean response "
        "times (s) of one run each.", "",
        *markdown_table(HEADER, rows(records)), ""])


def main(argv: list[str] | None = None) -> int:
    """Run every policy emulated and simulated; print the ratios."""
    p = parser("benchmarks.simulator.crossval", __doc__, json_help="one JSON record per policy")
    p.add_argument("--jobs", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    session = Session.start("benchmarks.simulator.crossval", argv, args.out, "crossval")
    out = session.out
    assert out is not None
    path = out / "workload.txt"
    path.write_text(workload(args.jobs, args.seed))
    common = ["--pes", str(PES), "--mpl", "2", "--timeslice", "0.2", "--estimates", "perfect"]
    emulated = {}
    for policy in POLICIES:
        testbed("run", str(path), "--scheduler", policy, *common, "--out",
                str(out / f"{policy}-emulated"))
        emulated[policy] = mean_response(out / f"{policy}-emulated")
    cost = launch_cost(out / "fcfs-emulated")
    records: list[dict[str, Any]] = []
    for policy in POLICIES:
        simulated = {}
        for label, extra in (("bare", "0"), ("launch", f"{cost:.4f}")):
            run = out / f"{policy}-simulated-{label}"
            testbed("simulate", str(path), "--scheduler", policy, *common, "--launch-cost",
                    extra, "--out", str(run))
            simulated[label] = mean_response(run)
        records.append({"policy": policy, "emulated_s": round(emulated[policy], 3),
                        "simulated_s": round(simulated["bare"], 3),
                        "ratio": round(simulated["bare"] / emulated[policy], 3),
                        "launch_cost_s": round(cost, 3),
                        "simulated_with_launch_s": round(simulated["launch"], 3),
                        "ratio_with_launch": round(simulated["launch"] / emulated[policy], 3)})
    (out / "crossval.json").write_text(json.dumps({"host": host(), "records": records},
                                                  indent=2) + "\n")
    session.page(args.markdown, lambda: markdown(records, args.jobs, args.seed,
                                                 session.command))
    if emit(records, args.json):
        return 0
    print(table(HEADER, rows(records)))
    print(f"mean response times; launch cost {cost:.3f} s (median runtime - work under fcfs); "
          f"runs under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
