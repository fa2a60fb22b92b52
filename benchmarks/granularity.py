"""THESIS §5.2.3 / Table 5.3 at laptop scale: granularity and variance of one job.

One 2-PE all-to-all job of ``--work`` seconds, five ways: G = 2.5, 0.5, 0.1 with V = 0, then
G = 0.1 with V = 0.1 and 0.75.  The five run one after another under FCFS (each has the
machine to itself) in one run directory.  Prints runtime and communication wait (mean per rank,
seconds).  Usage: ``python -m benchmarks.granularity [--work 5] [--scheduler fcfs] [--out DIR]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.harness import default_out, jobs, run_workload, table

CASES = ((2.5, 0.0), (0.5, 0.0), (0.1, 0.0), (0.1, 0.1), (0.1, 0.75))


def main(argv: list[str] | None = None) -> int:
    """Run the five cases and print the table."""
    p = argparse.ArgumentParser(description="THESIS Table 5.3: granularity and variance")
    p.add_argument("--work", type=float, default=5.0, help="seconds of work per job")
    p.add_argument("--scheduler", default="fcfs")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    text = "".join(f"0 2 bsp --work {args.work} --granularity {g} --variance {v} --pattern aa "
                   f"--seed {i}\n" for i, (g, v) in enumerate(CASES, start=1))
    run = run_workload(text, "--scheduler", args.scheduler, "--pes", "2",
                       out=args.out or default_out("granularity"))
    rows = [[i, g, v, float(r["work"]), float(r["runtime"]), float(r["comm_wait_s"])]
            for i, ((g, v), r) in enumerate(zip(CASES, jobs(run), strict=True), start=1)]
    print(table(["#", "G", "V", "work", "runtime", "comm wait"], rows))
    print(f"run directory: {run}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
