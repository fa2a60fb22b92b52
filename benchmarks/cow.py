"""COW §3 in the simulator: AFCFS and LGFS on 16 workstations with owners (Karatza 2001).

``python -m benchmarks.cow --set 1|2 [--quick] [--json] [--out DIR]``

* set 1: 1/λ = 1, 1/μ = 1/μ' = 1, 1/λ' in 1, 0.8, 0.6, 0.4;
* set 2: 1/λ in 1, 0.8, 0.6, with (1/λ', 1/μ') in (1, 1), (2, 2), (4, 4), (8, 8).

Gangs arrive Poisson (mean gap 1/λ), have a size uniform in 1..16 and an exponential demand of
mean 1/μ = 1, the same for all their tasks; owners arrive Poisson (mean gap 1/λ') at a
workstation without an owner and stay an exponential time of mean 1/μ' (``OwnerStream``).  An
interrupted gang starts again from the beginning (COW §2.1: "all work ... must be redone").
COW does not say whether the restart needs the same demand or a new draw.  With the same
demand (``--redo same``) a gang of n tasks interrupted at rate r needs E[(e^(rS) - 1)/r], which
is infinite once r >= μ: for 16-task gangs already at 1/λ' = 1, so the means never settle
(COW reports intervals within 5 %).  The default (``--redo fresh``) draws a new demand of the
same law at each restart: the lost work still counts in U, but the expected demand stays 1/μ.
RT is the mean response time (arrival at the queues to completion), U the mean processor
utilization counting the repeated work (busy PE time of gangs, aborted runs included, over
16 x the span; owners' own work not counted), restarts the mean number of interruptions per
gang.  Each cell is ``--replications`` independent replications (different seeds for gangs and
owners) of ``--jobs`` gangs, the first 10 % of completions dropped as warm-up; the interval is
the 95 % t interval over the replications (COW §3.1).  The RT ratio is LGFS over AFCFS.

Writes ``cow-setN.json`` and ``cow-setN.png`` under ``--out`` and prints a table, or with
``--json`` one record per cell: ``{"policy", "inv_lambda", "inv_lambda_owner",
"inv_mu_owner", "rt", "rt_ci", "u", "u_ci", "restarts"}``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import default_out, host, table
from testbed.driver import Driver, OwnerStream
from testbed.events import EventLog, read_events
from testbed.policies import PolicyConfig, make_policy
from testbed.results.metrics import job_rows
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads.files import JobSpec, Workload

PES = 16
POLICIES = ("afcfs", "lgfs")
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086)


def cells(which: int) -> list[tuple[float, float, float]]:
    """The (1/λ, 1/λ', 1/μ') of an experiment set."""
    if which == 1:
        return [(1.0, inv, 1.0) for inv in (1.0, 0.8, 0.6, 0.4)]
    return [(inv, owner, owner) for inv in (1.0, 0.8, 0.6) for owner in (1.0, 2.0, 4.0, 8.0)]


def gangs(count: int, inv_lambda: float, seed: int) -> Workload:
    """``count`` gangs: Poisson arrivals of mean gap ``inv_lambda``, sizes uniform in 1..16,
    exponential demands of mean 1."""
    rng = random.Random(seed)
    t, specs = 0.0, []
    for i in range(1, count + 1):
        t += rng.expovariate(1 / inv_lambda)
        specs.append(JobSpec(f"j{i}", i, t, rng.randint(1, PES), (), rng.expovariate(1.0)))
    return Workload(f"<cow gangs 1/lambda={inv_lambda} seed={seed}>", specs)


def replication(policy: str, cell: tuple[float, float, float], jobs: int, seed: int,
                tmp: Path, redo: str = "fresh") -> tuple[float, float, float]:
    """One replication: mean RT, U and restarts per gang after the warm-up; ``redo`` says
    whether a restarted gang needs the same demand or a fresh one."""
    inv_lambda, inv_owner, mean_owner = cell
    workload = gangs(jobs, inv_lambda, seed)
    out = Path(tempfile.mkdtemp(dir=tmp))
    draws = random.Random(seed + 2_000_003)
    redraw = (lambda _job: draws.expovariate(1.0)) if redo == "fresh" else None
    Driver(workload, make_policy(policy, PolicyConfig(PES)),
           SimulationExecutor({j.id: j.work or 0.0 for j in workload.jobs}, redraw=redraw), out,
           {"scheduler": policy, "machine": {"pes": PES}},
           log=EventLog(out / "events.jsonl", flush_each=False),
           owners=OwnerStream(1 / inv_owner, mean_owner, seed + 1_000_003)).run()
    rows = sorted((r for r in job_rows(read_events(out / "events.jsonl"))
                   if r.status == "done"), key=lambda r: r.end or 0.0)
    kept = rows[len(rows) // 10:]
    span = max(r.end or 0.0 for r in kept) - min(r.arrival for r in kept)
    busy = sum(r.cpu_s or 0.0 for r in kept)
    return (statistics.fmean(r.response or 0.0 for r in kept), busy / (PES * span),
            statistics.fmean(r.restarts for r in kept))


def interval(values: list[float]) -> float:
    """The 95 % t half-width of the mean of ``values``."""
    n = len(values)
    t = T975[n - 2] if n - 1 <= len(T975) else 1.96
    return t * statistics.stdev(values) / math.sqrt(n)


def plot(records: list[dict[str, Any]], which: int, path: Path) -> None:
    """RT (log) and the RT ratio against 1/λ', one curve per policy (and per 1/λ in set 2)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for inv_lambda in sorted({r["inv_lambda"] for r in records}):
        for policy in POLICIES:
            mine = [r for r in records if r["policy"] == policy and r["inv_lambda"] == inv_lambda]
            left.errorbar([r["inv_lambda_owner"] for r in mine], [r["rt"] for r in mine],
                          yerr=[r["rt_ci"] for r in mine], marker="o", capsize=3,
                          label=f"{policy} 1/λ={inv_lambda:g}")
        pairs = {(r["inv_lambda_owner"]): r["rt"] for r in records
                 if r["policy"] == "afcfs" and r["inv_lambda"] == inv_lambda}
        ratio = [(r["inv_lambda_owner"], r["rt"] / pairs[r["inv_lambda_owner"]])
                 for r in records if r["policy"] == "lgfs" and r["inv_lambda"] == inv_lambda]
        right.plot([x for x, _ in ratio], [y for _, y in ratio], marker="o",
                   label=f"1/λ={inv_lambda:g}")
    left.set_yscale("log")
    left.set_xlabel("1/λ' (and 1/μ' in set 2)")
    left.set_ylabel("mean response time RT")
    left.legend(fontsize=7)
    right.axhline(1.0, color="grey", linewidth=0.8)
    right.set_xlabel("1/λ' (and 1/μ' in set 2)")
    right.set_ylabel("RT ratio LGFS / AFCFS")
    right.legend(fontsize=7)
    fig.suptitle(f"COW set {which}, simulated: 16 workstations with owners")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run every cell of a set under both policies; print, plot and save."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.cow", description=__doc__)
    p.add_argument("--set", type=int, choices=(1, 2), required=True)
    p.add_argument("--quick", action="store_true", help="3 replications of 1,000 gangs")
    p.add_argument("--replications", type=int, default=5)
    p.add_argument("--jobs", type=int, default=3000, help="gangs per replication")
    p.add_argument("--redo", choices=("fresh", "same"), default="fresh",
                   help="a restarted gang's demand: a new draw, or the same again")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    reps, jobs = (3, 1000) if args.quick else (args.replications, args.jobs)
    out = args.out or default_out(f"cow-set{args.set}")
    out.mkdir(parents=True, exist_ok=True)
    records = []
    with tempfile.TemporaryDirectory(prefix="testbed-cow-") as tmp:
        for cell in cells(args.set):
            for policy in POLICIES:
                results = [replication(policy, cell, jobs, seed, Path(tmp), args.redo)
                           for seed in range(1, reps + 1)]
                rts, us, restarts = (list(x) for x in zip(*results, strict=True))
                records.append({"policy": policy, "inv_lambda": cell[0],
                                "inv_lambda_owner": cell[1], "inv_mu_owner": cell[2],
                                "rt": round(statistics.fmean(rts), 3),
                                "rt_ci": round(interval(rts), 3),
                                "u": round(statistics.fmean(us), 4),
                                "u_ci": round(interval(us), 4),
                                "restarts": round(statistics.fmean(restarts), 3)})
    (out / f"cow-set{args.set}.json").write_text(json.dumps(
        {"host": host(), "replications": reps, "jobs": jobs, "redo": args.redo,
         "records": records}, indent=2)
        + "\n")
    plot(records, args.set, out / f"cow-set{args.set}.png")
    if args.json:
        for record in records:
            print(json.dumps(record))
        return 0
    afcfs = {(r["inv_lambda"], r["inv_lambda_owner"]): r["rt"] for r in records
             if r["policy"] == "afcfs"}
    print(table(["policy", "1/λ", "1/λ'", "1/μ'", "RT", "±95%", "RT ratio", "U", "±95%",
                 "restarts"],
                [[r["policy"], r["inv_lambda"], r["inv_lambda_owner"], r["inv_mu_owner"],
                  r["rt"], r["rt_ci"],
                  round(r["rt"] / afcfs[(r["inv_lambda"], r["inv_lambda_owner"])], 3),
                  r["u"], r["u_ci"], r["restarts"]] for r in records]))
    print(f"{reps} replications of {jobs} gangs each; figure and records under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
