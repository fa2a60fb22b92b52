"""What keeping MPI's semantics costs ordinary programs: an IMB pair under gang, ics and fcs,
this checkout against another, interleaved, with intervals.

Every run is one ``testbed run`` of a workload of two copies of the Intel MPI Benchmarks'
``IMB-MPI1 PingPong Allreduce Barrier Alltoall`` (sizes up to 1 KiB), both arriving at 0 with
one rank per PE (MPL 2 on 2 PEs), run by the ``testbed`` of one checkout (``PYTHONPATH``: its
coordinator, node managers and shim).  IMB-MPI1 is Intel's binary from ``scripts/setup-mpi
impi`` (``--imb``; MPICH-ABI, so it runs on the MPICH mpi4py loads); where it is missing,
``benchmarks/clients/imb_style.c`` (the same four tests, IMB's tables, built with that MPI's
``mpicc``) stands in, and the document says which ran.

Figures of one run: ``makespan`` (s, ``summary.json``), ``pingpong_us`` (the mean over sizes of
``t[usec]``), ``allreduce_us`` and ``alltoall_us`` (the mean over sizes of ``t_avg``) and
``barrier_us`` (``t_avg``), each the median of the two copies; beside them, for reading, the
shim's counters summed over every rank (``shim``: blocks, seconds blocked, sleeps ended by a
ring and by the safety net, barrier meetings).  The rounds take every
(checkout, scheduler) once, shuffled by a PRNG seeded with the round, so drift of the machine
spreads over all.  Tables (``testbed.experiments.comparison``: medians with 95 % intervals,
ratios with theirs, exact rank tests Holm-corrected over each table's comparisons): every
scheduler of this checkout against the same scheduler of the other (``--against``), and this
checkout's ics and fcs against its gang.  The other checkout is driven only through its command
line (``python -m testbed run``, ``harness.testbed``); when it cannot run the pair (a scheduler
or an option it lacks), the benchmark stops with exit 2 and says ``lacking:`` with the
command's last error line.

Usage: ``python -m benchmarks.programs.progress_cost [--against CHECKOUT] [--rounds 5]
[--schedulers gang,ics,fcs] [--iter 50000] [--time 10] [--imb PATH] [--quick] [--out DIR]
[--json] [--markdown PAGE]``.
"""

from __future__ import annotations

import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    CLIENTS,
    REPO,
    checkout_type,
    commit_of,
    default_out,
    emit,
    events,
    host,
    invocation,
    jobs,
    lacking,
    now_iso,
    page_head,
    parser,
    run_workload,
    write_page,
)
from benchmarks.programs.real_clients import build_c_client, run_order
from testbed.emulation.mpi_info import detect_mpi
from testbed.experiments import comparison

HERE = REPO
IMB = HERE / ".venv-impi" / "bin" / "IMB-MPI1"
STAND_IN = CLIENTS / "imb_style.c"
TESTS = ("PingPong", "Allreduce", "Barrier", "Alltoall")
METRICS = ("makespan", "pingpong_us", "allreduce_us", "barrier_us", "alltoall_us")
SCHEDULERS = ("gang", "ics", "fcs")
SEED = 1
MPL = 2
COPIES = 2
MSGLOG = 10
# The column of IMB's tables that holds the mean time per test: t[usec] for PingPong,
# t_avg for the collectives (Barrier has no bytes column).
TIME_COLUMN = {"PingPong": 2, "Barrier": 3, "Allreduce": 4, "Alltoall": 4}


def parse_imb(text: str) -> dict[str, list[float]]:
    """IMB's tables in ``text``: test name -> the mean time of each row (us), in order.
    A table starts at ``# Benchmarking NAME``; its rows are the lines of numbers after it."""
    tables: dict[str, list[float]] = {}
    current: str | None = None
    for line in text.splitlines():
        words = line.split()
        if line.startswith("# Benchmarking"):
            current = words[2] if len(words) > 2 and words[2] in TIME_COLUMN else None
            if current is not None:
                tables[current] = []
            continue
        if current is None or not words or words[0].startswith("#"):
            continue
        try:
            tables[current].append(float(words[TIME_COLUMN[current]]))
        except (ValueError, IndexError):
            continue
    return tables


def figures_of(outputs: list[str], makespan: float) -> dict[str, float | None]:
    """One run's figures from its copies' outputs (see the module's docstring)."""
    per_copy = [parse_imb(text) for text in outputs]
    figures: dict[str, float | None] = {"makespan": makespan}
    for test in TESTS:
        means = [statistics.fmean(t[test]) for t in per_copy if t.get(test)]
        figures[f"{test.lower()}_us"] = statistics.median(means) if means else None
    return figures


def program(imb: Path | None, iterations: int, seconds: float) -> tuple[list[str], str]:
    """The command line of one copy and the name of what it runs: IMB-MPI1 when ``imb``
    exists (with the MPI's library directory first on its library path: Intel's binaries have
    no run path), else the stand-in built here."""
    if imb is not None and imb.exists():
        library = detect_mpi().library
        argv = [str(imb), *TESTS, "-msglog", f"0:{MSGLOG}", "-iter", str(iterations),
                "-time", f"{seconds:g}", "-npmin", "2"]
        if library:
            argv = ["env", f"LD_LIBRARY_PATH={Path(library).parent}", *argv]
        return argv, "IMB-MPI1"
    return ([str(build_c_client(STAND_IN)), "-iter", str(iterations), "-msglog", str(MSGLOG)],
            "imb_style")


def run_one(checkout: Path, scheduler: str, argv: list[str], out: Path) -> dict[str, Any]:
    """Run the pair under ``scheduler`` with the testbed of ``checkout`` into ``out``; its
    figures, the copies' statuses and the shim's counters (``CalledProcessError`` if the
    run fails; its errors go to stderr)."""
    run_workload(f"0 {MPL} {shlex.join(argv)}\n" * COPIES, "--scheduler", scheduler,
                 "--mpl", str(MPL), "--pes", str(MPL), out=out, checkout=checkout)
    rows = jobs(out)
    outputs = [(out / "jobs" / f"{row['id']}.out").read_text() for row in rows]
    makespan = json.loads((out / "summary.json").read_text())["makespan"]
    return {"figures": figures_of(outputs, makespan),
            "statuses": [row["status"] for row in rows], "shim": shim_totals(out)}


SHIM_COUNTERS = ("blocks", "blocked_s", "wakes_rung", "wakes_timed", "meetings", "drains")


def shim_totals(run: Path) -> dict[str, float]:
    """The shim's counters of ``SHIM_COUNTERS`` summed over every rank of the run (from its
    ``counters`` events; empty where no rank had the shim)."""
    totals: dict[str, float] = {}
    for event in events(run):
        if event.get("event") != "counters":
            continue
        for rank in event["ranks"].values():
            for name in SHIM_COUNTERS:
                if name in rank.get("shim", {}):
                    totals[name] = round(totals.get(name, 0) + rank["shim"][name], 6)
    return totals


def plan(sides: list[str], schedulers: list[str], rounds: int) -> list[tuple[int, str, str]]:
    """Every run as (round, side, scheduler): each round all pairs once, shuffled by a PRNG
    seeded with the round (``real_clients.run_order``'s random order)."""
    return run_order(sides, schedulers, rounds, "random", SEED)


class Lacking(RuntimeError):
    """The other checkout's ``testbed run`` cannot run the pair: what it lacks."""


def measure(checkouts: dict[str, Path], schedulers: list[str], rounds: int, argv: list[str],
            runs: Path, progress: Any = None) -> list[dict[str, Any]]:
    """Every run of the plan, as rows: round, side, scheduler, figures, statuses.
    ``Lacking`` when a side other than ``this`` cannot run the pair."""
    rows = []
    for number, side, scheduler in plan(list(checkouts), schedulers, rounds):
        if progress is not None:
            progress(f"round {number} of {rounds}: {side} {scheduler}")
        try:
            done = run_one(checkouts[side], scheduler, argv,
                           runs / f"{side}-{scheduler}-{number}")
        except subprocess.CalledProcessError as err:
            if side == "this":
                raise
            raise Lacking(f"{checkouts[side]} lacking: {lacking(err)}") from err
        rows.append({"round": number, "side": side, "scheduler": scheduler, **done})
    return rows


def records(rows: list[dict[str, Any]], labels: list[str],
            reference: str) -> list[comparison.Record]:
    """The comparison of the runs of ``labels`` (``side:scheduler``) with ``reference``,
    runs paired by round."""
    groups = {label: comparison.Group(label, label.split(":")[1]) for label in labels}
    for row in rows:
        label = f"{row['side']}:{row['scheduler']}"
        if label in groups:
            groups[label].add(row["figures"], False, row["round"])
    return comparison.summarize(list(groups.values()), list(METRICS), reference)


def tables(rows: list[dict[str, Any]], sides: list[str],
           schedulers: list[str]) -> list[tuple[str, list[comparison.Record], str]]:
    """The tables: per scheduler this side against the baseline side (when there is one),
    then this side's other schedulers against its gang (when gang ran)."""
    out = []
    if "baseline" in sides:
        for s in schedulers:
            out.append((f"{s}: this checkout against the baseline",
                        records(rows, [f"baseline:{s}", f"this:{s}"], f"baseline:{s}"),
                        f"baseline:{s}"))
    if "gang" in schedulers and len(schedulers) > 1:
        labels = [f"this:{s}" for s in schedulers]
        out.append(("this checkout: every scheduler against gang",
                    records(rows, labels, "this:gang"), "this:gang"))
    return out


def render(doc: dict[str, Any]) -> str:
    """The tables as text."""
    blocks = []
    for title, found, reference in tables(doc["runs"], list(doc["checkouts"]),
                                          doc["schedulers"]):
        blocks.append(f"== {title} ==\n{comparison.format_table(found, reference, True)}")
    by_label: dict[str, list[dict[str, float]]] = {}
    for run in doc["runs"]:
        if run.get("shim"):
            by_label.setdefault(f"{run['side']}:{run['scheduler']}", []).append(run["shim"])
    if by_label:
        lines = ["shim counters, summed over the ranks of a run, median over its runs:"]
        for label, totals in sorted(by_label.items()):
            lines.append(f"  {label}: " + ", ".join(
                f"{name} {statistics.median(t.get(name, 0) for t in totals):g}"
                for name in SHIM_COUNTERS))
        blocks.append("\n".join(lines))
    failed = [r for r in doc["runs"] if any(s != "done" for s in r["statuses"])]
    if failed:
        blocks.append("runs with a copy not done: " + ", ".join(
            f"{r['side']}:{r['scheduler']} round {r['round']}" for r in failed))
    if doc["quick"]:
        blocks.append("quick mode: tiny sweeps, the figures mean nothing")
    return "\n\n".join(blocks)


def markdown(doc: dict[str, Any], text: str, command: str) -> str:
    """A Markdown page of ``doc``: command, host, date, settings, the tables."""
    commits = ", ".join(f"{side} {c}" for side, c in doc["commits"].items())
    limit = f", -time {doc['time']:g} s" if doc["program"] == "IMB-MPI1" else ""
    return "\n".join([
        *page_head("The cost of MPI's semantics: an IMB pair under gang, ics and fcs",
                   "benchmarks.programs.progress_cost", command, doc["host"], doc["date"]),
        f"- program: {doc['program']} ({' '.join(TESTS)}, sizes up to {2 ** MSGLOG} B, "
        f"{doc['iter']} repetitions{limit}); "
        f"{COPIES} copies at MPL {MPL} on {MPL} PEs; {doc['rounds']} rounds in random order",
        f"- checkouts: {commits}",
        "",
        "Medians with 95 % intervals, ratios with theirs, runs paired by round; `*`: a "
        "difference called (exact rank test, Holm-corrected over the table).",
        "", "```", text, "```", ""])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0, or 1 when a copy did not end done."""
    p = parser("benchmarks.programs.progress_cost", __doc__, raw=True,
               quick="2 rounds of tiny sweeps (shows that it works)")
    p.add_argument("--against", type=checkout_type("testbed/__main__.py"), default=None,
                   help="another checkout (e.g. a git worktree of an earlier commit)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--schedulers", default=",".join(SCHEDULERS))
    p.add_argument("--iter", type=int, default=50000, help="repetitions per size")
    p.add_argument("--time", type=float, default=10.0, help="IMB's -time (s per size)")
    p.add_argument("--imb", type=Path, default=IMB, help=f"IMB-MPI1 (default {IMB})")
    args = p.parse_args(argv)
    schedulers = [s for s in args.schedulers.split(",") if s]
    rounds, iterations = (2, 200) if args.quick else (args.rounds, args.iter)
    command = invocation("benchmarks.programs.progress_cost", argv)
    out = args.out or default_out("progress-cost")
    checkouts = {"this": HERE, **({"baseline": args.against.resolve()} if args.against else {})}
    started = time.time()
    copy, name = program(args.imb, iterations, args.time)
    try:
        rows = measure(checkouts, schedulers, rounds, copy, out / "runs",
                       lambda m: print(m, file=sys.stderr))
    except Lacking as err:
        print(f"progress_cost: {err}", file=sys.stderr)
        return 2
    doc = {"benchmark": "progress_cost", "host": host(), "date": now_iso(),
           "seconds": round(time.time() - started, 1), "quick": args.quick,
           "program": name, "argv": copy, "iter": iterations, "time": args.time,
           "rounds": rounds, "schedulers": schedulers,
           "checkouts": {side: str(path) for side, path in checkouts.items()},
           "commits": {side: commit_of(path) for side, path in checkouts.items()},
           "runs": rows}
    (out / "progress-cost.json").write_text(json.dumps(doc, indent=2) + "\n")
    text = render(doc)
    if not emit([doc], args.json):
        print(text)
    write_page(args.markdown, lambda: markdown(doc, text, command))
    return 1 if any(s != "done" for r in rows for s in r["statuses"]) else 0


if __name__ == "__main__":
    sys.exit(main())
