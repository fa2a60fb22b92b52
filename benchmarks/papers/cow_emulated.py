"""COW on this machine: the same seeded gangs and owners emulated and simulated (Karatza 2001).

``python -m benchmarks.papers.cow_emulated [--seed N] [--gangs N] [--owners RATE:MEAN] [--json]
[--markdown PAGE]``

Writes a workload of ``--gangs`` benchmark gangs for 2 PEs (COW's model scaled down: Poisson
arrivals of mean gap ``--inv-lambda`` s, sizes uniform in 1..2, exponential work of mean
``--mean-work`` s), then runs it under ``afcfs`` and ``lgfs`` twice each: on real processes
(``testbed run``, owners as pinned CPU-bound processes from ``--owners`` with ``--owner-seed``)
and in the simulator (``testbed simulate`` with the same owner stream and ``--launch-cost``, the
seconds a real launch adds to a job).  It prints both runs' starts, interruptions, owner visits
and ends side by side, says whether their order is the same, and draws each run's Gantt chart
(``testbed report``).  With ``--json`` (the side-by-side lists go to stderr), one record per
policy: ``{"policy", "same_order", "events", "first_difference", "interrupts", "rt_emulated",
"rt_simulated"}``.  ``--markdown PAGE`` also writes the records as a page, with the host,
the date and the command recorded.

Events of the two runs closer than a real launch's spread (tens of ms) may trade places; the
defaults space them further apart.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    Session,
    emit,
    events,
    host,
    markdown_table,
    page_head,
    parser,
    table,
    testbed,
)
from testbed.results.metrics import job_rows

POLICIES = ("afcfs", "lgfs")
ORDERED = ("start", "interrupt", "owner_start", "owner_end", "finish")
PES = 2


def workload(gangs: int, inv_lambda: float, mean_work: float, seed: int) -> str:
    """The workload text: ``gangs`` benchmark gangs with COW's laws on 2 PEs (s)."""
    rng = random.Random(seed)
    t, lines = 0.0, [f"# testbed: seed={seed} cow-emulated inv_lambda={inv_lambda}"]
    for _ in range(gangs):
        t += rng.expovariate(1 / inv_lambda)
        work = max(0.2, rng.expovariate(1 / mean_work))
        lines.append(f"{t:.3f} {rng.randint(1, PES)} bsp --work {work:.3f}")
    return "\n".join(lines) + "\n"


def order(evs: list[dict[str, Any]]) -> list[tuple[float, str, str]]:
    """The run's COW events in order: (time s, kind, job or PE)."""
    return [(ev["t"], ev["event"], str(ev.get("job", ev.get("pe")))) for ev in evs
            if ev["event"] in ORDERED]


def compare(policy: str, path: Path, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Emulate and simulate ``path`` under ``policy``; the comparison record."""
    owners = ["--owners", args.owners, "--owner-seed", str(args.owner_seed)]
    real, sim = out / policy, out / f"sim-{policy}"
    testbed("run", str(path), "--scheduler", policy, "--pes", str(PES), *owners, "--out", str(real))
    testbed("simulate", str(path), "--scheduler", policy, "--pes", str(PES), *owners,
            "--launch-cost", str(args.launch_cost), "--out", str(sim))
    for run in (real, sim):
        testbed("report", str(run))
    real_ev, sim_ev = events(real), events(sim)
    a, b = order(real_ev), order(sim_ev)
    keys_a, keys_b = [e[1:] for e in a], [e[1:] for e in b]
    differ = next((i for i, (x, y) in enumerate(zip(keys_a, keys_b, strict=False)) if x != y),
                  None if len(a) == len(b) else min(len(a), len(b)))
    shown = sys.stderr if args.json else sys.stdout
    print(f"\n{policy}: emulated {real}, simulated {sim}", file=shown)
    rows = [[f"{x[0]:.3f}" if x else "", f"{y[0]:.3f}" if y else "",
             " ".join(x[1:]) if x else "", " ".join(y[1:]) if y else "",
             "" if x and y and x[1:] == y[1:] else "<>"]
            for x, y in _pairs(a, b)]
    print(table(["t emulated", "t simulated", "emulated", "simulated", ""], rows), file=shown)
    rt = {name: statistics.fmean(r.response or 0.0 for r in job_rows(evs))
          for name, evs in (("real", real_ev), ("sim", sim_ev))}
    return {"policy": policy, "same_order": differ is None, "events": len(a),
            "first_difference": differ,
            "interrupts": sum(1 for e in a if e[1] == "interrupt"),
            "rt_emulated": round(rt["real"], 3), "rt_simulated": round(rt["sim"], 3)}


def _pairs(a: list[Any], b: list[Any]) -> list[tuple[Any, Any]]:
    return [(a[i] if i < len(a) else None, b[i] if i < len(b) else None)
            for i in range(max(len(a), len(b)))]


def markdown(records: list[dict[str, Any]], args: argparse.Namespace, command: str,
             measured: str) -> str:
    """The results page: per policy, whether the emulated and simulated runs' events came in
    the same order, the interruptions, and the mean response times (s) of both."""
    rows = [[r["policy"], r["events"], "yes" if r["same_order"] else
             f"no, from event {r['first_difference']}", r["interrupts"], r["rt_emulated"],
             r["rt_simulated"]] for r in records]
    return "\n".join([
        *page_head("COW on real processes against the simulator", "benchmarks.papers.cow_emulated",
                   command, host(), measured),
        f"- {args.gangs} gangs of 1-{PES} tasks on {PES} PEs (seed {args.seed}): Poisson "
        f"arrivals of mean gap {args.inv_lambda:g} s, exponential work of mean "
        f"{args.mean_work:g} s; owners {args.owners} (visits per s : mean visit s, seed "
        f"{args.owner_seed}), each a CPU-bound process pinned to its PE",
        f"- simulated with a launch cost of {args.launch_cost:g} s a job; one run of each", "",
        "Events compared: gang starts, interruptions, owner arrivals and departures, ends.", "",
        *markdown_table(["policy", "events", "same order", "interruptions",
                         "RT emulated (s)", "RT simulated (s)"], rows), ""])


def main(argv: list[str] | None = None) -> int:
    """Write the workload, emulate and simulate it under both policies, compare."""
    p = parser("benchmarks.papers.cow_emulated", __doc__, raw=True,
               json_help="one JSON record per policy (the side-by-side lists go to stderr)")
    p.add_argument("--seed", type=int, default=1, help="seed of the gangs")
    p.add_argument("--gangs", type=int, default=8)
    p.add_argument("--inv-lambda", type=float, default=2.0, help="mean gap between gangs (s)")
    p.add_argument("--mean-work", type=float, default=1.5, help="mean work of a gang (s)")
    p.add_argument("--owners", default="0.25:1.5", help="owner stream RATE:MEAN (per s, s)")
    p.add_argument("--owner-seed", type=int, default=1)
    p.add_argument("--launch-cost", type=float, default=0.27,
                   help="seconds a real launch adds to a job, for the simulator")
    args = p.parse_args(argv)
    session = Session.start("benchmarks.papers.cow_emulated", argv, args.out, "cow-emulated")
    out = session.out
    assert out is not None
    path = out / "workload.txt"
    path.write_text(workload(args.gangs, args.inv_lambda, args.mean_work, args.seed))
    records = [compare(policy, path, out, args) for policy in POLICIES]
    (out / "cow-emulated.json").write_text(json.dumps(records, indent=1))
    session.page(args.markdown, lambda: markdown(records, args, session.command,
                                                 session.measured()))
    if not emit(records, args.json):
        print()
        print(table(list(records[0]), [list(r.values()) for r in records]))
        print(f"\nGantt charts: {out}/*/gantt.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
