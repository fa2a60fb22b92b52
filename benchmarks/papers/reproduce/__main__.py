"""``python -m benchmarks.papers.reproduce [--quick] [--only PAPER[,PAPER]] [--resume] [--workers N]
[--out DIR] [--runs DIR] [--slurm [--partition P] [--account A] [--time T] [--sbatch OPT]]``

Runs what every paper's claims need, judges each claim, writes each paper's findings to
``DIR/papers/NAME.json`` as soon as that paper is done, and rebuilds ``DIR/report.md`` (with
the plots beside it) and ``DIR/claims.json`` from every paper file in ``DIR``.  So a
reproduction can be run in parts: ``--only T3D,T3E,COW`` anywhere (they are simulated and
deterministic), then ``--only THESIS,MEMORY`` with the same ``--out`` on a quiet machine; a
rerun of a paper replaces only that paper's file, ``--resume`` skips the papers whose file is
already there, and one ``DIR`` holds one size (a run at another size is refused).  The
report's header says for each paper when, where and at which commit it ran.  Ctrl-C stops
the run with one line and exit status 130 (1 when the death of a simulated paper's worker,
which the Ctrl-C reaches too, is seen first); the papers already done stay in ``DIR``, and the
one interrupted is not kept.

The simulated papers (T3D, T3E, COW) run first, one after another, each spreading its
independent simulations over ``--workers`` processes (default: one per core; the figures are
the same whatever the number); the emulated ones (THESIS, MEMORY) after them, one run at a
time, as timing runs must (run those under the machine's timing lock on a shared machine).
``--quick`` runs smaller versions that finish in about 25 minutes on 2 cores; rows whose
intervals are then too wide say "cannot tell".  Without it, the full sizes take about what
``estimate`` says (printed at the start).

``--slurm`` spreads the reproduction over a Slurm cluster (``--out`` must be on a file system
the nodes share): the emulated papers each run as one job on one exclusive node (a timed run
alone on its machine, as here), side by side, each writing its paper file into ``--out``; the
simulated papers' runs (T3D's Fig 6 points, COW's replications) become one-CPU tasks of job
arrays.  What stays on the machine the command was started on: T3E's seeds (a minute and a
half of CPU at full size, over ``--workers``), T3D's production figures (real processes, at
tiny and full size) and the judging.  ``--partition``, ``--account``, ``--time`` and
``--sbatch`` go to every ``sbatch``.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from benchmarks.harness import Session, parser
from benchmarks.papers.reproduce import (
    claims,
    cluster,
    cow,
    memory,
    parts,
    report,
    t3d,
    t3e,
    thesis,
)
from benchmarks.papers.reproduce.claims import Finding, Row
from benchmarks.papers.reproduce.context import SIZES, Context, sized
from benchmarks.papers.reproduce.parts import Part
from testbed.exit_codes import exit_on_sigterm
from testbed.experiments import load, slurm_spread
from testbed.experiments.slurm import Settings, SlurmError


@dataclass(frozen=True)
class Paper:
    """A paper's module, whether its runs are emulated (real processes, timed), and roughly
    how long its rows take at each size (tiny, quick, full): seconds on 2 cores when
    emulated, else CPU seconds (T3D's full size counts its production figures, real processes
    for about 610 s, as twice that, so that the estimate over 2 workers gives their wall time);
    the full figures are the last full run's parts (docs/results/reproduce-full)."""

    name: str
    module: ModuleType
    emulated: bool
    seconds: tuple[float, float, float]


PAPERS = (Paper("THESIS", thesis, True, (90.0, 560.0, 1580.0)),
          Paper("MEMORY", memory, True, (62.0, 780.0, 1720.0)),
          Paper("T3D", t3d, False, (5.0, 290.0, 3700.0)),
          Paper("T3E", t3e, False, (6.0, 44.0, 210.0)),
          Paper("COW", cow, False, (5.0, 100.0, 730.0)))


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


def run_paper(paper: Paper, ctx: Context, command: str, began: str) -> Part:
    """Run ``paper`` and give its part: its rows and its header (``report.head`` with its
    wall time, ``began`` (when the invocation began) and what else used the CPUs)."""
    header = report.head(command, ctx.size, 0.0, ctx.out)
    start, before = time.monotonic(), load.snapshot()
    watch = load.JobWatch().start()
    try:
        found = measure(paper.name, ctx)
    finally:
        job_cpu = watch.stop()
    disturbance = load.disturbance(before, load.snapshot(), job_cpu=job_cpu)
    rows = claims.rows(paper.module.SPECS, found, f"not measured at size {ctx.size}")
    return Part(paper.name, {**header, "seconds": round(time.monotonic() - start, 1),
                             "began": began, "load": disturbance}, tuple(rows))


def run_all(papers: list[Paper], ctx: Context, command: str,
            on_part: Callable[[Part], None]) -> list[Part]:
    """Run every chosen paper, the simulated first, then the emulated, one after another (a
    simulated paper spreads its runs over ``ctx.workers``); each part is handed to
    ``on_part`` as soon as it is done; the parts."""
    began = datetime.datetime.now(datetime.UTC).isoformat()
    done = []
    for paper in sorted(papers, key=lambda p: p.emulated):
        part = run_paper(paper, ctx, command, began)
        on_part(part)
        done.append(part)
    return done


def invocation_runs(base: Path, began: datetime.datetime) -> Path:
    """This invocation's own directory for run directories under ``base``: named by when it
    began (UTC), with a suffix when another invocation of the same second has it, so that a
    paper run again never meets the run directories of an earlier run (``testbed run`` never
    overwrites one)."""
    stamp = began.strftime("%Y%m%dT%H%M%SZ")
    path, n = base / stamp, 1
    while path.exists():
        n += 1
        path = base / f"{stamp}-{n}"
    return path


def rebuild(out: Path, command: str) -> list[Row]:
    """Rebuild ``out``'s report.md and claims.json from every paper file in it; the rows."""
    found = parts.present(out, [p.name for p in PAPERS])
    rows, header = report.assemble(list(found.values()), command)
    report.write(rows, header, out)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Reproduce the chosen papers, write each paper's file and rebuild the report."""
    p = parser("benchmarks.papers.reproduce", __doc__, raw=True,
               quick="smaller runs: about 25 minutes on 2 cores", json_help=None,
               out_help="where the paper files, report.md, claims.json and the plots go "
                        "(default: runs/reproduce-TIME)", markdown_help=None)
    p.add_argument("--only", default=None, help="comma-separated papers: "
                   + ",".join(paper.name for paper in PAPERS))
    p.add_argument("--resume", action="store_true",
                   help="skip the papers whose file is already in --out (at the same size)")
    p.add_argument("--runs", type=Path, default=None,
                   help="where the run directories go, in a directory of this invocation's "
                        "own (default: OUT/runs)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes for the simulated papers' runs (default: one per core)")
    p.add_argument("--slurm", action="store_true",
                   help="spread the reproduction over a Slurm cluster (see above)")
    p.add_argument("--partition", default=None, help="--slurm: sbatch's --partition")
    p.add_argument("--account", default=None, help="--slurm: sbatch's --account")
    p.add_argument("--time", default=None, help="--slurm: each job's time limit (sbatch --time)")
    p.add_argument("--sbatch", action="append", default=[], metavar="OPT",
                   help="--slurm: one more sbatch option (--sbatch=--constraint=ib); repeatable")
    p.add_argument("--size", choices=SIZES, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args.slurm and (args.partition or args.account or args.time or args.sbatch):
        p.error("--partition, --account, --time and --sbatch go with --slurm")
    exit_on_sigterm()
    try:
        papers = choose(args.only)
    except ValueError as err:
        p.error(str(err))
    size = args.size or ("quick" if args.quick else "full")
    cores = len(os.sched_getaffinity(0))
    workers = args.workers or cores
    if workers < 1:
        p.error(f"--workers: need at least 1, got {workers}")
    session = Session.start("benchmarks.papers.reproduce", argv, args.out, "reproduce")
    out = session.out
    assert out is not None
    runs = invocation_runs(args.runs or out / "runs", datetime.datetime.now(datetime.UTC))
    try:
        kept = parts.present(out, [paper.name for paper in PAPERS])
    except parts.PartError as err:
        print(f"benchmarks.papers.reproduce: {err}", file=sys.stderr)
        return 2
    clash = parts.mixed(kept, size)
    if clash is not None:
        print(f"benchmarks.papers.reproduce: {out}: {clash}", file=sys.stderr)
        return 2
    if args.resume:
        papers = [paper for paper in papers if paper.name not in kept]
    command = session.command
    print(f"reproducing {', '.join(paper.name for paper in papers) or 'nothing new'} at size "
          f"{size}: about {estimate(papers, size, workers) / 60:.0f} min on {cores} cores, "
          f"{workers} workers", file=sys.stderr, flush=True)
    ctx = Context(size, runs.resolve(), out.resolve(), workers)

    def keep(part: Part) -> None:
        ctx.log(f"{part.name} done: {parts.save(out, part)}")
        rebuild(out, command)

    failed: list[str] = []
    try:
        if args.slurm:
            settings = Settings(args.partition, args.account, args.time, tuple(args.sbatch))
            ctx.spreading = functools.partial(slurm_spread.spreading, settings,
                                              out.resolve() / "slurm", log=ctx.log)
            with cluster.on_nodes([p.name for p in papers if p.emulated], settings, size,
                                  out.resolve(), runs.resolve(), ctx.log) as wait:
                run_all([p for p in papers if not p.emulated], ctx, command, keep)
                failed = wait()
        else:
            run_all(papers, ctx, command, keep)
    except SlurmError as err:
        print(f"benchmarks.papers.reproduce: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"benchmarks.papers.reproduce: interrupted; the papers done are kept in {out} "
              "(the same command with --resume goes on)", file=sys.stderr)
        return 130
    except BrokenProcessPool:
        print(f"benchmarks.papers.reproduce: a worker process died (interrupted, or killed); "
              f"the papers done are kept in {out} (the same command with --resume goes on)",
              file=sys.stderr)
        return 1
    for line in failed:
        print(f"benchmarks.papers.reproduce: {line}", file=sys.stderr)
    rows = rebuild(out, command)
    seconds = time.time() - session.started
    tally = report.counts(rows)
    for row in rows:
        print(f"{row.spec.paper:7} {row.spec.where:22} {row.finding.decision.verdict:12} "
              f"{row.spec.claim}")
    print(", ".join(f"{tally[v]} {v}" for v in claims.VERDICTS)
          + f"; {seconds:.0f} s ({seconds / 60:.1f} min) this time; report: "
          f"{out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
