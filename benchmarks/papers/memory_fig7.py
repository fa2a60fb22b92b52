"""MEMORY Fig 7 at laptop scale: response time and slowdown against load, with and without
memory-aware admission, on a generated workload.  Slowdown is MEMORY's (response time / runtime
on a dedicated machine): ``response_slowdown`` in ``summary.json``.

Two emulated nodes of one PE each, each with a memory cgroup that holds ``--fits`` jobs' ranks
and a swap file.  For each load, the THESIS §4.6 mix (``--jobs`` jobs, compressed) is generated
with the same seed and every job walks ``--mem-mb`` MiB per rank at locality ``--theta``,
declaring its footprint with ``mem=``.  Gang scheduling at MPL ``--mpl`` runs it once without
admission (the kernel pages) and once with admission at C = 1.  Writes ``fig7.csv`` and
``fig7.png`` and prints the table.  Needs root (memory cgroups, swapon).

Usage: ``python -m benchmarks.papers.memory_fig7 [--loads 0.6,1.0,1.4] [--theta 1] [--out DIR]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.harness import (
    Session,
    bsp_footprint_mb,
    line_plot,
    parser,
    run_workload,
    save_figure,
    table,
    write_csv,
)
from testbed.workloads.mix import MixParams, generate_mix


def workload(load: float, args: argparse.Namespace) -> str:
    """The mix for ``load``, every job walking memory and declaring its footprint."""
    text = generate_mix(MixParams(args.jobs, 2, load, args.seed, args.compress, 10.0,
                                  args.work_max))
    mem = f"mem={bsp_footprint_mb(args.mem_mb):.0f}M"
    walk = f"--mem-mb {args.mem_mb} --theta {args.theta} --accesses {args.accesses}"
    lines = []
    for line in text.splitlines():
        if line.startswith("#"):
            lines.append(line)
            continue
        arrival, pes, command = line.split(" ", 2)
        lines.append(f"{arrival} {pes} {mem} {command} {walk}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run every (load, configuration) and write the CSV, the plot and the table."""
    p = parser("benchmarks.papers.memory_fig7", "MEMORY Fig 7 at laptop scale (needs root)",
               json_help=None, markdown_help=None)
    p.add_argument("--loads", default="0.6,1.0,1.4")
    p.add_argument("--jobs", type=int, default=12)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--compress", type=float, default=100.0)
    p.add_argument("--work-max", type=float, default=900.0, help="s, before compression")
    p.add_argument("--mem-mb", type=float, default=64.0)
    p.add_argument("--theta", type=float, default=1.0)
    p.add_argument("--accesses", type=int, default=100000)
    p.add_argument("--fits", type=int, default=2, help="jobs' ranks a node's memory holds")
    p.add_argument("--mpl", type=int, default=8)
    args = p.parse_args(argv)
    out = Session.start("benchmarks.papers.memory_fig7", argv, args.out, "memory-fig7").out
    assert out is not None
    node_mb = args.fits * bsp_footprint_mb(args.mem_mb)
    swap_mb = 2 * args.mpl * bsp_footprint_mb(args.mem_mb) * 1.5
    rows = []
    for load in (float(x) for x in args.loads.split(",") if x):
        for name, factor in (("unlimited", None), ("C=1", 1.0)):
            options = ["--scheduler", "gang", "--mpl", str(args.mpl), "--pes", "2", "--nodes",
                       "2", "--node-mem", f"{node_mb:.0f}M", "--swap", f"{swap_mb:.0f}M"]
            if factor is not None:
                options += ["--memory-admission", str(factor),
                            "--memory-history", str(out / "history.json")]
            run = run_workload(workload(load, args), *options, out=out / f"load{load}-{name}")
            summary = json.loads((run / "summary.json").read_text())
            metrics = summary["metrics"]
            rows.append([load, name, round(metrics["response"]["all"]["mean"], 3),
                         round(metrics["response_slowdown"]["all"]["mean"], 3),
                         round(metrics["wait"]["all"]["mean"], 3), summary["major_faults"]])
            print(table(["load", "config", "response", "response slowdown", "wait", "major faults"],
                        [rows[-1]]).splitlines()[1], flush=True)
    header = ["load", "config", "mean_response_s", "mean_response_slowdown", "mean_wait_s",
              "major_faults"]
    write_csv(out / "fig7.csv", header, rows)
    plot(rows, out / "fig7.png", args.theta)
    print(table(["load", "config", "response", "response slowdown", "wait", "major faults"], rows))
    print(f"node memory {node_mb:.0f} MiB holds {args.fits} jobs' ranks; results in {out}")
    return 0


def plot(rows: list[list[object]], path: Path, theta: float) -> None:
    """Mean response time (s) and slowdown against load, one line per configuration, from
    rows of ``[load, config, response, slowdown, ...]``, written as a PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
    for column, ax, label in ((2, axes[0], "mean response time (s)"),
                              (3, axes[1], "mean response slowdown")):
        line_plot(ax, rows, ("unlimited", "C=1"), key=1, x=0, y=column,
                  labels=("offered load", label))
    axes[0].legend()
    save_figure(fig, path, f"Response and slowdown vs load (theta = {theta:g})")


if __name__ == "__main__":
    raise SystemExit(main())
