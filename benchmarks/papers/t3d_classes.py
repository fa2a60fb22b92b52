"""T3D's class experiment in miniature: a class mix on this machine under t3d, gang and fcfs.

``python -m benchmarks.papers.t3d_classes [--quick] [--seed N] [--span S] [--json] [--out DIR]
[--markdown PAGE]``

A seeded mix over ``--span`` seconds on 2 PEs (BSP jobs): interactive jobs (1 PE, work 0.5-3 s,
Poisson arrivals of mean gap 6 s, ``class=interactive``), production jobs (1 or 2 PEs, work
6-16 s, mean gap 12 s, the batch default) and standby jobs (2 PEs, work 8 s, mean gap 30 s,
``class=standby``): about 0.8 of the machine.  It runs on real processes under ``t3d`` (T3D's
daytime table with ``time_scale`` 0.1, so a production job of n PEs may be preempted after
n seconds and waits at most 6 minutes), ``gang`` (MPL 2, 0.2 s) and ``fcfs``.

Reported per scheduler, for the interactive jobs (T3D Fig 12): mean and median response time,
mean bounded slowdown with the threshold scaled like the table (10 s x 0.1 = 1 s), and their
histograms; for every job: how often it was stopped, and the mean time quantum (an
uninterrupted stretch of running) by job size, for all jobs and for the jobs ever stopped (T3D
Fig 15).  Writes ``t3d-classes.json`` and ``t3d-classes.png`` under ``--out``; with ``--json``,
one record per scheduler: ``{"scheduler", "interactive", "response_mean", "response_median",
"bsld_mean", "stopped_fraction", "quantum_by_size", "quantum_by_size_stopped", "makespan"}``.
``--markdown PAGE`` also writes the table as a page, with the host, the date and the command
recorded.
"""

from __future__ import annotations

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
from testbed.class_tables import DEFAULT_TABLE
from testbed.results.metrics import job_rows
from testbed.results.timeline import intervals

SCHEDULERS = ("t3d", "gang", "fcfs")
TIME_SCALE = 0.1
TAU = 10 * TIME_SCALE
PES = 2


def mix(span: float, seed: int, scale: float = 1.0) -> str:
    """The workload text: interactive, production and standby streams over ``span`` s, every
    time (arrivals and work) multiplied by ``scale``."""
    rng = random.Random(seed)
    lines = []
    for kind, gap in (("interactive", 6.0), ("production", 12.0), ("standby", 30.0)):
        t = rng.expovariate(1 / gap)
        while t < span:
            if kind == "interactive":
                line = f"1 class=interactive bsp --work {rng.uniform(0.5, 3) * scale:.2f}"
            elif kind == "production":
                line = f"{rng.choice((1, 2))} bsp --work {rng.uniform(6, 16) * scale:.2f}"
            else:
                line = f"2 class=standby bsp --work {8 * scale:.2f}"
            lines.append((t * scale, line))
            t += rng.expovariate(1 / gap)
    header = f"# testbed: seed={seed} benchmark=t3d_classes span={span}\n"
    return header + "".join(f"{t:.2f} {rest}\n" for t, rest in sorted(lines))


def quanta(evs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each job's running stretches (s)."""
    out: dict[str, list[float]] = {}
    for span in intervals(evs):
        if span.running:
            out.setdefault(span.job, []).append(span.end - span.start)
    return out


def measure(run: Path, scheduler: str) -> dict[str, Any]:
    """The record of one run (see the module's docstring)."""
    evs = events(run)
    rows = job_rows(evs)
    interactive = [r for r in rows if r.job_class == "interactive" and r.response is not None]
    responses = [r.response or 0.0 for r in interactive]
    bsld = [max(1.0, (r.response or 0.0) / max(r.work or 0.0, TAU)) for r in interactive]
    stretches = quanta(evs)
    sizes = {r.id: r.size for r in rows}
    stopped = {r.id for r in rows if r.stops}

    def by_size(jobs: set[str]) -> dict[str, float]:
        found: dict[int, list[float]] = {}
        for job in jobs:
            found.setdefault(sizes[job], []).extend(stretches.get(job, []))
        return {str(size): round(statistics.fmean(v), 3) for size, v in sorted(found.items())
                if v}

    summary = json.loads((run / "summary.json").read_text())
    return {"scheduler": scheduler, "interactive": len(interactive),
            "response_mean": _rounded(statistics.fmean, responses),
            "response_median": _rounded(statistics.median, responses),
            "bsld_mean": _rounded(statistics.fmean, bsld),
            "stopped_fraction": round(len(stopped) / len(rows), 3),
            "quantum_by_size": by_size(set(sizes)),
            "quantum_by_size_stopped": by_size(stopped),
            "makespan": round(summary["makespan"], 3),
            "responses": [round(x, 3) for x in responses], "bslds": [round(x, 3) for x in bsld]}


def _rounded(stat: Any, values: list[float]) -> float | None:
    return round(stat(values), 3) if values else None


HEADER = ["scheduler", "interactive", "response mean", "median", "bsld mean", "stopped",
          "quantum by size", "quantum (stopped jobs)", "makespan"]


def rows(records: list[dict[str, Any]]) -> list[list[Any]]:
    """The table's rows, one per scheduler (times in s; quanta as size:seconds)."""
    return [[r["scheduler"], r["interactive"], r["response_mean"], r["response_median"],
             r["bsld_mean"], r["stopped_fraction"],
             " ".join(f"{k}:{v:.1f}" for k, v in r["quantum_by_size"].items()),
             " ".join(f"{k}:{v:.1f}" for k, v in r["quantum_by_size_stopped"].items()),
             r["makespan"]] for r in records]


def markdown(records: list[dict[str, Any]], span: float, seed: int, scale: float,
             command: str, measured: str) -> str:
    """The results page: the mix, then one row per scheduler."""
    return "\n".join([
        *page_head("T3D's job classes on 2 PEs: t3d against gang and fcfs",
                   "benchmarks.papers.t3d_classes", command, host(), measured),
        f"- a seeded mix (seed {seed}) over {span:g} s of arrivals, every time x {scale:g}, on "
        f"{PES} PEs, real processes, one run of each scheduler: interactive jobs (1 PE), "
        "production jobs (1-2 PEs) and standby jobs (2 PEs), about 0.8 of the machine; no "
        "matrix row holds more processes than the machine has CPUs",
        f"- t3d: T3D's daytime table with time_scale {TIME_SCALE:g}; gang: MPL 2, 0.2 s "
        "slices; fcfs", "",
        "Interactive jobs: their count, mean and median response time (s) and mean bounded "
        f"slowdown (threshold {TAU:g} s, T3D's 10 s scaled like the table). Every job: the "
        "fraction ever stopped, and the mean time quantum (an uninterrupted stretch of "
        "running, s) by job size (PEs), over all jobs and over the jobs ever stopped; the "
        "makespan (s).", "", *markdown_table(HEADER, rows(records)), ""])


def plot(records: list[dict[str, Any]], path: Path) -> None:
    """Histograms of the interactive jobs' response and bounded slowdown per scheduler, and
    the mean quantum by job size."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for r in records:
        axes[0].hist(r["responses"], bins=12, histtype="step", label=r["scheduler"])
        axes[1].hist(r["bslds"], bins=12, histtype="step", label=r["scheduler"])
        sizes = sorted(r["quantum_by_size"], key=int)
        axes[2].plot([int(s) for s in sizes], [r["quantum_by_size"][s] for s in sizes],
                     marker="o", label=r["scheduler"])
    axes[0].set_xlabel("interactive response time (s)")
    axes[1].set_xlabel(f"interactive bounded slowdown (threshold {TAU:g} s)")
    axes[2].set_xlabel("job size (PEs)")
    axes[2].set_ylabel("mean time quantum (s)")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.suptitle("T3D job classes on 2 PEs: t3d against gang and fcfs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Write the mix and the scaled table, run each scheduler, print and save."""
    p = parser("benchmarks.papers.t3d_classes", __doc__, raw=True,
               quick="a 20 s mix: shows that it works", json_help="one JSON record per scheduler")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--span", type=float, default=90.0, help="seconds of arrivals")
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every arrival and work by this (a smaller mix)")
    args = p.parse_args(argv)
    session = Session.start("benchmarks.papers.t3d_classes", argv, args.out, "t3d-classes")
    out = session.out
    assert out is not None
    workload = out / "workload.txt"
    span = 20.0 if args.quick else args.span
    workload.write_text(mix(span, args.seed, args.scale))
    classes = out / "classes.toml"
    classes.write_text(DEFAULT_TABLE.read_text().replace("time_scale = 1.0",
                                                         f"time_scale = {TIME_SCALE}"))
    records = []
    for scheduler in SCHEDULERS:
        run = out / scheduler
        options = ["--classes", str(classes)] if scheduler == "t3d" else []
        testbed("run", str(workload), "--scheduler", scheduler, "--pes", str(PES), *options,
                "--out", str(run))
        records.append(measure(run, scheduler))
    (out / "t3d-classes.json").write_text(json.dumps(records, indent=1))
    plot(records, out / "t3d-classes.png")
    session.page(args.markdown, lambda: markdown(records, span, args.seed, args.scale,
                                                 session.command, session.measured("min")))
    if emit(({k: v for k, v in r.items() if k not in ("responses", "bslds")} for r in records),
            args.json):
        return 0
    print(table(HEADER, rows(records)))
    print(f"\nfigure: {out / 't3d-classes.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
