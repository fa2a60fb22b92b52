"""THESIS §5.3 at laptop scale: how FCS classifies six different jobs.

Six jobs on 4 PEs split into two emulated nodes of 2 PEs, all arriving together, at MPL 4.
The buddy allocator rebuilds the Fig 5.2 matrix from the arrival order: row 0 holds jobs 1 and
2, row 1 jobs 3 and 4, row 2 job 5, row 3 job 6.  The jobs (all-to-all where they communicate):

1. 2 PEs, medium grain (G = 0.5), no variance;
2. 2 PEs, fine grain (G = 0.1), no variance;
3. 3 PEs, fine grain, rank 2 computes 1.5x as much (a slow or loaded machine);
4. 1 PE, no communication;
5. 4 PEs, medium grain, 75 % variance on ranks 0 and 1;
6. 4 PEs, coarse grain (G = 2.5: THESIS "low grain"), 10 % variance.

Prints each process's class history and final class, and writes the run directory.  On a
2-core machine the 4 PEs are oversubscribed (two PEs per CPU), which the table notes: that run
mostly measures the oversubscription.  ``--variant fit`` runs the same six kinds of job scaled to
2 PEs (one node of 2 PEs, MPL 6), so no row holds more processes than a 2-core machine has CPUs
and, as in Fig 5.2, the two ranks of job 1 share a node and are switched by one node manager
(the thesis's 4-PE jobs 5 and 6 span both its nodes; here no job crosses a node):

1. 2 PEs, medium grain; 2. 2 PEs, fine grain; 3. 2 PEs, fine grain, rank 1 computes 1.5x;
4. 1 PE, no communication; 5. 2 PEs, medium grain, 75 % variance on rank 0;
6. 2 PEs, coarse grain, 10 % variance; 7. 1 PE, no communication, in job 4's row.

Job 7 fills the PE job 4 leaves free in its row, as Fig 5.2's matrix is full (job 3 shares job
4's row there): every PE then holds one process of every row.  Without it PE 0 holds one
process more than PE 1, and in the phases where a job's ranks are not coscheduled (INIT_DC, DC)
the rank on PE 0 shares its CPU with one more process and is late at every exchange: the rank
on PE 1 does all the waiting, ends CS on its W_DC / W_CS ratio while its partner ends DC, and
then waits in its own slot for a partner that is not coscheduled (W_CS far above F_thresh):
medium-grained job 1 ended F on rank 1 in every run of the quick report of 2026-12-06.

Usage: ``python -m benchmarks.papers.fcs_classification [--variant thesis|fit] [--work 8]
[--timeslice 0.1] [--out DIR]``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness import Session, events, parser, run_workload, table

JOBS = (
    "2 bsp --work {w} --granularity 0.5 --pattern aa",
    "2 bsp --work {w} --granularity 0.1 --pattern aa",
    "3 bsp --work {w} --granularity 0.1 --pattern aa --imbalance 2:1.5",
    "1 bsp --work {w} --pattern none",
    "4 bsp --work {w} --granularity 0.5 --pattern aa --rank-variance 0:0.75 --rank-variance 1:0.75",
    "4 bsp --work {w} --granularity 2.5 --pattern aa --variance 0.1",
)
FIT_JOBS = (
    "2 bsp --work {w} --granularity 0.5 --pattern aa",
    "2 bsp --work {w} --granularity 0.1 --pattern aa",
    "2 bsp --work {w} --granularity 0.1 --pattern aa --imbalance 1:1.5",
    "1 bsp --work {w} --pattern none",
    "2 bsp --work {w} --granularity 0.5 --pattern aa --rank-variance 0:0.75",
    "2 bsp --work {w} --granularity 2.5 --pattern aa --variance 0.1",
    "1 bsp --work {w} --pattern none",
)
VARIANTS = {
    "thesis": (JOBS, ("--pes", "4", "--nodes", "2", "--mpl", "4"), 2),
    "fit": (FIT_JOBS, ("--pes", "2", "--nodes", "1", "--mpl", "6"), 2),
}


def classify(variant: str, work: float, timeslice: float, out: Path
             ) -> tuple[list[dict[str, Any]], bool]:
    """Run the jobs of ``variant`` (``work`` seconds each, timeslice in seconds) under fcs
    into the run directory ``out``.  Per process, in job and rank order: job, rank, PE, node,
    matrix row, class history (from INIT_CS on), final class and the job's runtime (s); and
    whether the machine was oversubscribed."""
    jobs, machine, pes_per_node = VARIANTS[variant]
    text = "".join(f"0 {job.format(w=work)}\n" for job in jobs)
    run = run_workload(text, "--scheduler", "fcs", *machine, "--timeslice", str(timeslice),
                       out=out)
    evs = events(run)
    starts = {e["job"]: e for e in evs if e["event"] == "start"}
    history: dict[tuple[str, int], list[str]] = {}
    for e in evs:
        if e["event"] == "class":
            history.setdefault((e["job"], e["rank"]), ["INIT_CS"]).append(e["new"])
    runtimes = {e["job"]: e["t"] - starts[e["job"]]["t"] for e in evs if e["event"] == "finish"}
    processes = []
    for job, start in sorted(starts.items(), key=lambda kv: int(kv[0][1:])):
        for rank, pe in enumerate(start["pes"]):
            classes = history.get((job, rank), ["INIT_CS"])
            processes.append({"job": job, "rank": rank, "pe": pe, "node": pe // pes_per_node,
                              "row": start["slot"], "history": classes, "final": classes[-1],
                              "runtime": runtimes.get(job, float("nan"))})
    return processes, bool(evs[0]["config"]["machine"]["oversubscribed"])


def main(argv: list[str] | None = None) -> int:
    """Run the experiment and print the class table."""
    p = parser("benchmarks.papers.fcs_classification",
               "THESIS §5.3: FCS classification of six jobs",
               json_help=None, markdown_help=None)
    p.add_argument("--work", type=float, default=8.0, help="seconds of work per job")
    p.add_argument("--timeslice", type=float, default=0.1, help="seconds")
    p.add_argument("--variant", choices=sorted(VARIANTS), default="thesis",
                   help="thesis: 4 PEs as in §5.3; fit: 2 PEs, never more processes than CPUs")
    args = p.parse_args(argv)
    out = Session.start("benchmarks.papers.fcs_classification", argv, args.out,
                        f"fcs-classification-{args.variant}").out
    assert out is not None
    processes, oversubscribed = classify(args.variant, args.work, args.timeslice, out)
    print(table(["job", "rank", "PE", "node", "row", "class history", "final", "runtime"],
                [[q["job"], q["rank"], q["pe"], q["node"], q["row"], " > ".join(q["history"]),
                  q["final"], round(q["runtime"], 2)] for q in processes]))
    if oversubscribed:
        print("note: more PEs than CPUs (oversubscribed): PEs share CPUs")
    print(f"run directory: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
