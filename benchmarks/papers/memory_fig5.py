"""MEMORY Fig 5 at laptop scale: total execution time against the number of jobs, with and
without memory-aware admission, for three localities.

Two emulated nodes of one PE each, each with a memory cgroup that holds ``--fits`` jobs (4, as
in MEMORY) and a swap file to page to.  ``N`` two-rank jobs, each rank walking ``--mem-mb`` MiB
(theta 1, 1.5, 2), arrive together and are gang scheduled at MPL N.  Three configurations:
no admission (every job runs at once and the kernel pages), and admission with C = 1 and 1.5.
Writes ``fig5.csv`` and ``fig5.png`` into the output directory and prints the table.  Needs root
(memory cgroups, swapon).  ``--repeats N`` runs every point N times, the configurations taking
turns within each repeat (each repeat in a directory of its own, with its own admission
history); ``--markdown PAGE`` writes a page of the medians with their 95 % intervals
and each admission configuration's ratio to no admission, with the host, the date and the
command recorded.

Usage: ``python -m benchmarks.papers.memory_fig5 [--counts 4,6,8] [--thetas 1,1.5,2] [--repeats N]
[--out DIR] [--markdown PAGE]``
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    Session,
    bsp_footprint_mb,
    host,
    line_plot,
    markdown_table,
    page_head,
    parser,
    run_workload,
    save_figure,
    table,
    write_csv,
)
from testbed.experiments.stats import Interval, below_nominal, median_interval, ratio_interval

CONFIGS = (("unlimited", None), ("C=1", 1.0), ("C=1.5", 1.5))


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


@dataclass(frozen=True)
class Walk:
    """The jobs' memory walk and the machine's memory: MiB each rank walks over, jobs a
    node's memory holds, seconds of work per job, walk steps per iteration, and the most jobs
    any run has (the swap file is sized for them)."""

    mem_mb: float
    fits: int
    work: float
    accesses: int
    most_jobs: int


def workload(jobs: int, mem_mb: float, theta: float, work: float, accesses: int) -> str:
    """``jobs`` identical two-rank walking jobs arriving at 0, each declaring its footprint."""
    mem = bsp_footprint_mb(mem_mb)
    return "".join(f"0 2 mem={mem:.0f}M bsp --work {work} --pattern nn --granularity 0.5 "
                   f"--mem-mb {mem_mb} --theta {theta} --accesses {accesses} --seed {i}\n"
                   for i in range(jobs))


def measure(jobs: int, theta: float, factor: float | None, walk: Walk, out: Path
            ) -> dict[str, float]:
    """Run ``jobs`` walking jobs at locality ``theta`` under gang at MPL ``jobs`` on two
    one-PE nodes, with memory-aware admission at factor ``factor`` (None: none), into the run
    directory ``out`` (the history file goes beside it); the total execution time (s), major
    faults and pages swapped in."""
    node_mb = walk.fits * bsp_footprint_mb(walk.mem_mb)
    swap_mb = 2 * walk.most_jobs * bsp_footprint_mb(walk.mem_mb) * 1.5
    options = ["--scheduler", "gang", "--mpl", str(jobs), "--pes", "2", "--nodes", "2",
               "--node-mem", f"{node_mb:.0f}M", "--swap", f"{swap_mb:.0f}M"]
    if factor is not None:
        options += ["--memory-admission", str(factor),
                    "--memory-history", str(out.parent / "history.json")]
    run = run_workload(workload(jobs, walk.mem_mb, theta, walk.work, walk.accesses), *options,
                       out=out)
    summary = json.loads((run / "summary.json").read_text())
    return {"total_s": summary["makespan"], "major_faults": summary["major_faults"],
            "swap_in": summary["swap_in"]}


HEADER = ["theta", "jobs", "config", "total_s", "major_faults", "swap_in_pages", "repeat"]


def _interval(interval: Interval | None, unit: str = "") -> str:
    if interval is None:
        return "-"
    if interval.low is None:
        return f"{interval.value:.3g}{unit}"
    return (f"{interval.value:.3g}{unit} [{interval.low:.3g}, {interval.high:.3g}]"
            + below_nominal(interval.confidence))


def summary_rows(rows: list[list[Any]]) -> list[list[Any]]:
    """Per (theta, jobs, config), from rows of ``HEADER``: theta, jobs, config, runs, the
    median total time (s) [95 % interval], its range, the median major faults, and the ratio
    of the medians to no admission's at the same point [95 % interval]."""
    points: dict[tuple[Any, Any], dict[str, list[list[Any]]]] = {}
    for row in rows:
        points.setdefault((row[0], row[1]), {}).setdefault(row[2], []).append(row)
    out = []
    for (theta, jobs), configs in points.items():
        unlimited = [r[3] for r in configs.get("unlimited", [])]
        for name, runs in configs.items():
            totals = [r[3] for r in runs]
            ratio = "" if name == "unlimited" or not unlimited else \
                _interval(ratio_interval(totals, unlimited))
            out.append([f"{theta:g}", jobs, name, len(runs),
                        _interval(median_interval(totals), " s"),
                        f"{min(totals):.3g}-{max(totals):.3g} s",
                        f"{statistics.median(r[4] for r in runs):.0f}", ratio])
    return out


def markdown(rows: list[list[Any]], walk: Walk, command: str, measured: str) -> str:
    """The results page: the sizes, then per point and configuration the median total
    execution time with its interval and range, and the ratio to no admission."""
    node_mb = walk.fits * bsp_footprint_mb(walk.mem_mb)
    return "\n".join([
        *page_head("MEMORY Fig 5: execution time with and without memory-aware admission",
                   "benchmarks.papers.memory_fig5", command, host(), measured),
        f"- two emulated nodes of one PE and {node_mb:.0f} MiB each (holds {walk.fits} jobs), "
        "a swap file to page to; every job has two ranks, one a node, each walking "
        f"{walk.mem_mb:g} MiB ({walk.accesses} steps an iteration, {walk.work:g} s of work); "
        "the jobs arrive together and are gang scheduled at MPL = jobs, so no row holds more "
        "ranks than the machine has PEs",
        "- configurations: no admission (`unlimited`: every job is resident and the kernel "
        "pages) and memory-aware admission with C = 1 and 1.5, taking turns in each repeat",
        "", "Total execution time (makespan): median [95 % order-statistics interval; with 5 "
        "runs or fewer their range, its lower confidence beside it] and range over the runs; "
        "the ratio is the configuration's over no admission's (Hodges-Lehmann) [95 % "
        "interval].", "",
        *markdown_table(["theta", "jobs", "config", "runs", "total time", "range",
                         "major faults (median)", "over unlimited"], summary_rows(rows)), ""])


def main(argv: list[str] | None = None) -> int:
    """Run every (theta, jobs, configuration) ``--repeats`` times and write the CSV, the plot,
    the table and (``--markdown``) the page."""
    p = parser("benchmarks.papers.memory_fig5", "MEMORY Fig 5 at laptop scale (needs root)",
               json_help=None, markdown_help="also write the medians as a Markdown page")
    p.add_argument("--counts", default="4,6,8", help="numbers of jobs")
    p.add_argument("--thetas", default="1,1.5,2", help="localities")
    p.add_argument("--mem-mb", type=float, default=64.0, help="MiB each rank walks over")
    p.add_argument("--fits", type=int, default=4, help="jobs a node's memory holds")
    p.add_argument("--work", type=float, default=2.0, help="seconds of work per job")
    p.add_argument("--accesses", type=int, default=100000,
                   help="walk steps per iteration (MEMORY: multiples of 100000)")
    p.add_argument("--repeats", type=int, default=1, help="runs of every point (default 1)")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    session = Session.start("benchmarks.papers.memory_fig5", argv, args.out, "memory-fig5")
    out = session.out
    assert out is not None
    counts = [int(c) for c in _floats(args.counts)]
    walk = Walk(args.mem_mb, args.fits, args.work, args.accesses, max(counts))
    rows = []
    for theta in _floats(args.thetas):
        for jobs in counts:
            for repeat in range(args.repeats):
                where = out if args.repeats == 1 else out / f"r{repeat}"
                for name, factor in CONFIGS:
                    done = measure(jobs, theta, factor, walk,
                                   where / f"t{theta}-n{jobs}-{name}")
                    rows.append([theta, jobs, name, round(done["total_s"], 3),
                                 done["major_faults"], done["swap_in"], repeat])
                    print(table(HEADER, [rows[-1]]).splitlines()[1], flush=True)
    write_csv(out / "fig5.csv", HEADER, rows)
    node_mb = walk.fits * bsp_footprint_mb(walk.mem_mb)
    plot(rows, out / "fig5.png", node_mb)
    print(table(HEADER, rows))
    print(f"node memory {node_mb:.0f} MiB holds {args.fits} jobs; results in {out}")
    session.page(args.markdown,
                 lambda: markdown(rows, walk, session.command, session.measured("min")))
    return 0


def plot(rows: list[list[Any]], path: Path, node_mb: float) -> None:
    """Execution time (s) against jobs, one panel per theta and one line per configuration
    (the median over repeats), from rows of ``[theta, jobs, config, total_s, ...]``, written
    as a PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs: dict[tuple[Any, Any, Any], list[float]] = {}
    for r in rows:
        runs.setdefault((r[0], r[1], r[2]), []).append(float(r[3]))
    medians = [[*key, statistics.median(totals)] for key, totals in runs.items()]
    thetas = sorted({r[0] for r in rows})
    fig, axes = plt.subplots(1, len(thetas), figsize=(4 * len(thetas), 3.5), squeeze=False)
    names = tuple(name for name, _ in CONFIGS)
    for ax, theta in zip(axes[0], thetas, strict=True):
        line_plot(ax, [r for r in medians if r[0] == theta], names, key=2, x=1, y=3,
                  labels=("jobs", "total execution time (s)"))
        ax.set_title(f"theta = {theta:g}")
    axes[0][0].legend()
    save_figure(fig, path, f"Execution time vs jobs, {node_mb:.0f} MiB per node")


if __name__ == "__main__":
    raise SystemExit(main())
