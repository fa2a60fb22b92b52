"""``python -m benchmarks.reproduce [--quick] [--only PAPER[,PAPER]] [--workers N] [--out DIR]
[--runs DIR]``

Runs what every paper's claims need, judges each claim, and writes ``DIR/report.md`` (with the
plots beside it) and ``DIR/claims.json``.  The simulated papers (T3D, T3E, COW) run first, one
after another, each spreading its independent simulations over ``--workers`` processes (default:
one per core; the figures are the same whatever the number); the emulated ones (THESIS, MEMORY)
after them, one run at a time, as timing runs must (run the whole under the machine's timing
lock on a shared machine).  ``--quick`` runs smaller versions that finish in about 25 minutes
on 2 cores; rows whose intervals are then too wide say "cannot tell".  Without it, the full
sizes take about ``estimate`` says (printed at the start).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from benchmarks.harness import exit_on_sigterm, invocation
from benchmarks.reproduce import claims, cow, memory, report, t3d, t3e, thesis
from benchmarks.reproduce.claims import Finding, Row
from benchmarks.reproduce.context import SIZES, Context, sized


@dataclass(frozen=True)
class Paper:
    """A paper's module, whether its runs are emulated (real processes, timed), and roughly
    how long its rows take at each size (tiny, quick, full): seconds on 2 cores when
    emulated, else CPU seconds."""

    name: str
    module: ModuleType
    emulated: bool
    seconds: tuple[float, float, float]


PAPERS = (Paper("THESIS", thesis, True, (90.0, 560.0, 1900.0)),
          Paper("MEMORY", memory, True, (60.0, 520.0, 2200.0)),
          Paper("T3D", t3d, False, (5.0, 420.0, 2150.0)),
          Paper("T3E", t3e, False, (5.0, 35.0, 90.0)),
          Paper("COW", cow, False, (5.0, 200.0, 700.0)))


def choose(only: str | None) -> list[Paper]:
    """The papers named in ``only`` (comma-separated, any case; all when None), in the
    report's order; ``ValueError`` for an unknown name."""
    if only is None:
        return list(PAPERS)
    names = [n.strip().upper() for n in only.split(",") if n.strip()]
    known = {p.name for p in PAPERS}
    for name in names:
        if name not in known:
            raise ValueError(f"--only: unknown paper {name!r} (known: {', '.join(known)})")
    return [p for p in PAPERS if p.name in names]


def estimate(papers: list[Paper], size: str, workers: int) -> float:
    """Roughly how long the run takes (s): the emulated papers one after another, the
    simulated ones each spread over ``workers`` processes."""
    emulated = sum(sized(size, *p.seconds) for p in papers if p.emulated)
    simulated = sum(sized(size, *p.seconds) for p in papers if not p.emulated)
    return emulated + simulated / max(1, workers)


def measure(name: str, ctx: Context) -> dict[str, Finding]:
    """The findings of the paper called ``name``; a paper that cannot run here, or fails,
    gets every claim "cannot tell" with the reason."""
    paper = next(p for p in PAPERS if p.name == name)
    why = paper.module.unavailable() if hasattr(paper.module, "unavailable") else None
    if why is not None:
        return {s.key: Finding("-", claims.unavailable(why)) for s in paper.module.SPECS}
    return ctx.attempt(paper.module.run, [s.key for s in paper.module.SPECS])


def run_all(papers: list[Paper], ctx: Context) -> list[Row]:
    """Every chosen paper's rows: the simulated papers first, then the emulated ones, one
    paper after another (a simulated paper spreads its runs over ``ctx.workers``)."""
    found: dict[str, dict[str, Finding]] = {}
    for paper in sorted(papers, key=lambda p: p.emulated):
        found[paper.name] = measure(paper.name, ctx)
    return [row for p in papers
            for row in claims.rows(p.module.SPECS, found[p.name],
                                   f"not measured at size {ctx.size}")]


def main(argv: list[str] | None = None) -> int:
    """Reproduce the chosen papers and write the report."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.reproduce", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smaller runs: about 25 minutes on 2 cores")
    p.add_argument("--only", default=None, help="comma-separated papers: "
                   + ",".join(paper.name for paper in PAPERS))
    p.add_argument("--out", type=Path, default=None,
                   help="where report.md, claims.json and the plots go "
                        "(default: runs/reproduce-TIME)")
    p.add_argument("--runs", type=Path, default=None,
                   help="where the run directories go (default: OUT/runs)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes for the simulated papers' runs (default: one per core)")
    p.add_argument("--size", choices=SIZES, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    exit_on_sigterm()
    try:
        papers = choose(args.only)
    except ValueError as err:
        p.error(str(err))
    size = args.size or ("quick" if args.quick else "full")
    out = args.out or Path("runs") / f"reproduce-{time.strftime('%Y%m%d-%H%M%S')}"
    runs = args.runs or out / "runs"
    cores = len(os.sched_getaffinity(0))
    workers = args.workers or cores
    if workers < 1:
        p.error(f"--workers: need at least 1, got {workers}")
    print(f"reproducing {', '.join(paper.name for paper in papers)} at size {size}: about "
          f"{estimate(papers, size, workers) / 60:.0f} min on {cores} cores, {workers} "
          "workers", file=sys.stderr, flush=True)
    began = time.monotonic()
    header = report.head(invocation("benchmarks.reproduce", argv), size, 0.0)
    ctx = Context(size, runs.resolve(), out.resolve(), workers)
    rows = run_all(papers, ctx)
    seconds = time.monotonic() - began
    report.write(rows, {**header, "seconds": round(seconds, 1)}, out)
    tally = report.counts(rows)
    for row in rows:
        print(f"{row.spec.paper:7} {row.spec.where:22} {row.finding.decision.verdict:12} "
              f"{row.spec.claim}")
    print(", ".join(f"{tally[v]} {v}" for v in claims.VERDICTS)
          + f"; {seconds:.0f} s ({seconds / 60:.1f} min); report: {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
