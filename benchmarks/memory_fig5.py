"""MEMORY Fig 5 at laptop scale: total execution time against the number of jobs, with and
without memory-aware admission, for three localities.

Two emulated nodes of one PE each, each with a memory cgroup that holds ``--fits`` jobs (4, as
in MEMORY) and a swap file to page to.  ``N`` two-rank jobs, each rank walking ``--mem-mb`` MiB
(theta 1, 1.5, 2), arrive together and are gang scheduled at MPL N.  Three configurations:
no admission (every job runs at once and the kernel pages), and admission with C = 1 and 1.5.
Writes ``fig5.csv`` and ``fig5.png`` into the output directory and prints the table.  Needs root
(memory cgroups, swapon).

Usage: ``python -m benchmarks.memory_fig5 [--counts 4,6,8] [--thetas 1,1.5,2] [--out DIR]``
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import (
    bsp_footprint_mb,
    default_out,
    line_plot,
    run_workload,
    save_figure,
    table,
    write_csv,
)

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


def main(argv: list[str] | None = None) -> int:
    """Run every (theta, jobs, configuration) and write the CSV, the plot and the table."""
    p = argparse.ArgumentParser(description="MEMORY Fig 5 at laptop scale (needs root)")
    p.add_argument("--counts", default="4,6,8", help="numbers of jobs")
    p.add_argument("--thetas", default="1,1.5,2", help="localities")
    p.add_argument("--mem-mb", type=float, default=64.0, help="MiB each rank walks over")
    p.add_argument("--fits", type=int, default=4, help="jobs a node's memory holds")
    p.add_argument("--work", type=float, default=2.0, help="seconds of work per job")
    p.add_argument("--accesses", type=int, default=100000,
                   help="walk steps per iteration (MEMORY: multiples of 100000)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    out = args.out or default_out("memory-fig5")
    out.mkdir(parents=True, exist_ok=True)
    counts = [int(c) for c in _floats(args.counts)]
    walk = Walk(args.mem_mb, args.fits, args.work, args.accesses, max(counts))
    rows = []
    for theta in _floats(args.thetas):
        for jobs in counts:
            for name, factor in CONFIGS:
                done = measure(jobs, theta, factor, walk, out / f"t{theta}-n{jobs}-{name}")
                rows.append([theta, jobs, name, round(done["total_s"], 3),
                             done["major_faults"], done["swap_in"]])
                print(table(["theta", "jobs", "config", "total s", "major faults", "swap in"],
                            [rows[-1]]).splitlines()[1], flush=True)
    header = ["theta", "jobs", "config", "total_s", "major_faults", "swap_in_pages"]
    write_csv(out / "fig5.csv", header, rows)
    node_mb = walk.fits * bsp_footprint_mb(walk.mem_mb)
    plot(rows, out / "fig5.png", node_mb)
    print(table(["theta", "jobs", "config", "total s", "major faults", "swap in"], rows))
    print(f"node memory {node_mb:.0f} MiB holds {args.fits} jobs; results in {out}")
    return 0


def plot(rows: list[list[object]], path: Path, node_mb: float) -> None:
    """Execution time (s) against jobs, one panel per theta and one line per configuration,
    from rows of ``[theta, jobs, config, total_s, ...]``, written as a PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    thetas = sorted({r[0] for r in rows})
    fig, axes = plt.subplots(1, len(thetas), figsize=(4 * len(thetas), 3.5), squeeze=False)
    names = tuple(name for name, _ in CONFIGS)
    for ax, theta in zip(axes[0], thetas, strict=True):
        line_plot(ax, [r for r in rows if r[0] == theta], names, key=2, x=1, y=3,
                  labels=("jobs", "total execution time (s)"))
        ax.set_title(f"theta = {theta:g}")
    axes[0][0].legend()
    save_figure(fig, path, f"Execution time vs jobs, {node_mb:.0f} MiB per node")


if __name__ == "__main__":
    raise SystemExit(main())
