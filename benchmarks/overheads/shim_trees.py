"""One unmodified C client under one scheduler, run from two code trees (this one and a
baseline checkout, e.g. ``git archive main``), interleaved round by round: does a change of the
shim make a real program faster or slower?

Every run is one ``python -m testbed run`` from a tree (its command line, with the tree on
``PYTHONPATH``: its own coordinator and shim, compiled from that tree's sources; nothing of the
baseline is imported here) of a workload holding two copies of the client with one
rank per PE (MPL 2), as ``benchmarks.programs.real_clients`` runs them; the client is the same
executable for both trees.  Round r runs the trees in turn, the first one alternating with
the round, so that drift of the machine spreads over both.

Figures of one run, per test and message size the client prints (``size time_us`` tables,
``real_clients.parse_latencies``): the time in us, the median over the two copies.  Per figure
the runs of each tree make one sample, paired by round, summed up by
``testbed.experiments.comparison`` against the baseline (median with its interval, ratio with
its interval, ``*`` where a difference is called).  When the baseline's ``testbed run``
cannot run the workload (an option it lacks), it stops with exit 2 and says ``lacking:`` with
the command's last error line.  Beside them, per tree, the shim's counts
summed over the rounds and copies for each rank: blocks, sleeps ended by a ring
(``wakes_rung``) and by the safety net (``wakes_timed``), from the runs' ``counters`` events.

Usage: ``python -m benchmarks.overheads.shim_trees --baseline TREE [--client overlap_test.c]
[--args "-i 200"] [--scheduler ics] [--rounds 5] [--runs DIR] [--out FILE|-]``
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Session, host, lacking, median, parser, testbed
from benchmarks.programs.real_clients import CLIENTS, build_c_client, parse_latencies
from testbed.experiments import comparison

HERE = REPO
COPIES = 2
MPL = 2
WAKES = ("blocks", "wakes_rung", "wakes_timed")


def run_tree(tree: Path, argv: list[str], pes: int, scheduler: str, out: Path) -> None:
    """Run two copies of ``argv`` (``pes`` ranks each) under ``scheduler`` with the ``testbed``
    command of ``tree`` into run directory ``out``; ``CalledProcessError`` (with its error
    output) when it fails."""
    out.parent.mkdir(parents=True, exist_ok=True)
    workload = out.with_name(f"{out.name}.workload")
    workload.write_text(f"# testbed: benchmark=shim_trees copies={COPIES}\n"
                        + f"0 {pes} {shlex.join(argv)}\n" * COPIES)
    testbed("run", str(workload), "--scheduler", scheduler, "--mpl", str(MPL), "--out",
            str(out), checkout=tree)


def read_run(run: Path) -> tuple[dict[str, float | None], dict[str, dict[str, int]]]:
    """A finished run's figures (``TEST@SIZE`` -> us, the median over the copies; tests are
    numbered by the order the client prints them) and the shim's counts per rank summed over
    the copies (rank -> ``WAKES`` name -> count; a job's last ``counters`` event holds its
    totals)."""
    tables = [parse_latencies(out.read_text()) for out in sorted((run / "jobs").glob("*.out"))]
    figures: dict[str, float | None] = {}
    for index in range(max((len(t) for t in tables), default=0)):
        sizes = sorted({size for t in tables if len(t) > index for size in t[index]})
        for size in sizes:
            values = [t[index][size] for t in tables if len(t) > index and size in t[index]]
            figures[f"test{index + 1}@{size}"] = median(values) if values else None
    last: dict[str, dict[str, Any]] = {}
    for line in (run / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "counters":
            last[event["job"]] = event["ranks"]
    counts: dict[str, dict[str, int]] = {}
    for ranks in last.values():
        for rank, values in ranks.items():
            shim = values.get("shim") or {}
            total = counts.setdefault(rank, dict.fromkeys(WAKES, 0))
            for name in WAKES:
                total[name] += int(shim.get(name, 0))
    return figures, counts


def main(argv: list[str] | None = None) -> int:
    """Run the rounds, print the comparison table and the shim's counts, write the JSON."""
    p = parser("benchmarks.overheads.shim_trees", "one client under one scheduler from two trees",
               json_help=None, out_help=None, markdown_help=None)
    p.add_argument("--baseline", type=Path, required=True, help="the other code tree")
    p.add_argument("--client", default="overlap_test.c", help="a C source under clients/")
    p.add_argument("--args", default="", help="the client's arguments, one string")
    p.add_argument("--scheduler", default="ics")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=Path, help="directory for the runs (default runs/...)")
    p.add_argument("--out", help="JSON file, or - for stdout (default RUNS/shim_trees.json)")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    if not (args.baseline / "testbed" / "__main__.py").is_file():
        p.error(f"--baseline {args.baseline}: not a testbed tree (no testbed/__main__.py)")
    trees = {"this": HERE, "baseline": args.baseline.resolve()}
    client = [str(build_c_client(CLIENTS / args.client)), *shlex.split(args.args)]
    pes = len(os.sched_getaffinity(0))
    runs = Session.start("benchmarks.overheads.shim_trees", argv, args.runs, "shim-trees").out
    assert runs is not None
    groups = {label: comparison.Group(label, args.scheduler) for label in trees}
    counts: dict[str, dict[str, dict[str, int]]] = {label: {} for label in trees}
    order = []
    for number in range(1, args.rounds + 1):
        labels = list(trees) if number % 2 else list(reversed(trees))
        for label in labels:
            out = runs / f"{label}-{number}"
            try:
                run_tree(trees[label], client, pes, args.scheduler, out)
            except subprocess.CalledProcessError as err:
                if label == "this":
                    raise
                print(f"shim_trees: {trees[label]} lacking: {lacking(err)}", file=sys.stderr)
                return 2
            figures, run_counts = read_run(out)
            groups[label].add(figures, False, key=number)
            for rank, values in run_counts.items():
                total = counts[label].setdefault(rank, dict.fromkeys(WAKES, 0))
                for name in WAKES:
                    total[name] += values[name]
            order.append(f"{label}-{number}")
            print(f"round {number} {label}: " + ", ".join(
                f"{k} {v:.1f} us" for k, v in figures.items() if v is not None), flush=True)
    metrics = sorted({m for g in groups.values() for m in g.samples})
    records = comparison.summarize(list(groups.values()), metrics, "baseline", paired=True)
    print(comparison.format_table(records, "baseline", paired=True))
    for label, per_rank in counts.items():
        print(f"shim counts ({label}, summed over rounds and copies): " + "; ".join(
            f"rank {rank} " + " ".join(f"{k} {v}" for k, v in values.items())
            for rank, values in sorted(per_rank.items())))
    doc: dict[str, Any] = {
        "host": host(), "scheduler": args.scheduler, "client": client, "rounds": args.rounds,
        "trees": {k: str(v) for k, v in trees.items()}, "order": order,
        "records": [r.as_dict() for r in records], "counts": counts,
        "samples": {label: g.samples for label, g in groups.items()}}
    text = json.dumps(doc, indent=2) + "\n"
    if args.out == "-":
        print(text, end="")
    else:
        target = Path(args.out) if args.out else runs / "shim_trees.json"
        target.write_text(text)
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
