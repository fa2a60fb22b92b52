"""THESIS §5.2.3 / Table 5.3 at laptop scale: granularity and variance of one job.

One 2-PE all-to-all job of ``--work`` seconds, five ways: G = 2.5, 0.5, 0.1 with V = 0, then
G = 0.1 with V = 0.1 and 0.75.  The five run one after another under FCFS (each has the
machine to itself) in one run directory.  Prints runtime and communication wait (mean per rank,
seconds).  Usage: ``python -m benchmarks.papers.granularity [--work 5] [--scheduler fcfs] [--out
DIR]``
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.harness import Session, jobs, parser, run_workload, table

CASES = ((2.5, 0.0), (0.5, 0.0), (0.1, 0.0), (0.1, 0.1), (0.1, 0.75))


def measure(work: float, scheduler: str, out: Path) -> list[dict[str, float]]:
    """Run the five cases (``work`` seconds each) into the run directory ``out``; per case in
    ``CASES`` order: G, V, work, runtime and mean communication wait per rank (seconds)."""
    text = "".join(f"0 2 bsp --work {work} --granularity {g} --variance {v} --pattern aa "
                   f"--seed {i}\n" for i, (g, v) in enumerate(CASES, start=1))
    run = run_workload(text, "--scheduler", scheduler, "--pes", "2", out=out)
    return [{"g": g, "v": v, "work": float(r["work"]), "runtime": float(r["runtime"]),
             "comm_wait": float(r["comm_wait_s"])}
            for (g, v), r in zip(CASES, jobs(run), strict=True)]


def main(argv: list[str] | None = None) -> int:
    """Run the five cases and print the table."""
    p = parser("benchmarks.papers.granularity", "THESIS Table 5.3: granularity and variance",
               json_help=None, markdown_help=None)
    p.add_argument("--work", type=float, default=5.0, help="seconds of work per job")
    p.add_argument("--scheduler", default="fcfs")
    args = p.parse_args(argv)
    out = Session.start("benchmarks.papers.granularity", argv, args.out, "granularity").out
    assert out is not None
    cases = measure(args.work, args.scheduler, out)
    rows = [[i, c["g"], c["v"], c["work"], c["runtime"], c["comm_wait"]]
            for i, c in enumerate(cases, start=1)]
    print(table(["#", "G", "V", "work", "runtime", "comm wait"], rows))
    print(f"run directory: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
