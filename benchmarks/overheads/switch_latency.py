"""Multi-context-switch latency: from the heartbeat to the last signal delivered.

CPU-bound jobs, each on every PE, under gang scheduling at MPL K, so that every heartbeat
stops all of one job's ranks and continues all of the next one's.  Prints p50/p99/max of the
switch latency and of the heartbeat's lag behind its due time (microseconds) of one run as
JSON (``results``).  Usage:
``python -m benchmarks.overheads.switch_latency [--work 10] [--timeslice 0.2] [--mpl 2]
[--rank-priority auto]``

A series of runs (``runs`` in the JSON): ``--mpl`` may list several MPLs (``2,3,4``),
``--repeats N`` runs each N times, and ``--sides`` measures several sides, each ``USER`` or
``USER:PRIORITY`` (the ranks' ``--rank-priority``, default ``auto``); ``self`` is this
process's user, any other user is run from root by ``benchmarks.overheads.unprivileged.as_user``.
The
sides take turns at every MPL, in reverse order every other repeat.  ``--markdown PAGE``
writes the series as a page (median and range of the runs' figures per MPL and side), with
the host, the date and the command recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
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
    run_workload,
)
from benchmarks.overheads import unprivileged
from testbed.experiments.stats import below_nominal, median_interval
from testbed.results.metrics import percentiles

SELF = "self"


def measure(work: float, timeslice: float, mpl: int = 2,
            rank_priority: str = "auto") -> dict[str, object]:
    """Switch latency and heartbeat lag figures (microseconds) for one gang run of ``mpl``
    CPU-bound jobs, each on every PE, the ranks at ``rank_priority``."""
    pes = len(os.sched_getaffinity(0))
    job = f"0 {pes} bsp --work {work} --pattern none\n"
    run = run_workload(job * mpl, "--scheduler", "gang", "--mpl", str(mpl),
                       "--timeslice", str(timeslice), "--rank-priority", rank_priority)
    try:
        evs = events(run)
    finally:
        shutil.rmtree(run.parent)
    switches = [e for e in evs if e["event"] == "switch" and e["stopped"] and e["continued"]]
    if not switches:
        raise RuntimeError("no full switch happened: is --work long enough?")
    latency = [e["latency_us"] for e in switches]
    lag = [e["lag_us"] for e in switches if e["lag_us"] is not None]
    config = evs[0]["config"]
    return {"pes": pes, "mpl": mpl, "timeslice_s": timeslice, "switches": len(switches),
            "ranks_per_switch": 2 * pes,
            "coordinator_priority": config.get("coordinator_priority", ""),
            "rank_priority": config.get("rank_priority", {}).get("applied"),
            "latency_us": percentiles(latency), "lag_us": percentiles(lag)}


def parse_side(text: str) -> tuple[str, str]:
    """A side ``USER`` or ``USER:PRIORITY`` as (user, rank priority); the priority defaults
    to ``auto``."""
    user, _, priority = text.partition(":")
    if not user:
        raise argparse.ArgumentTypeError(f"a side is USER or USER:PRIORITY, not {text!r}")
    return user, priority or "auto"


def side_label(side: tuple[str, str]) -> str:
    """How a side is named on the page: the user (``self`` resolved) and the rank priority."""
    user = pwd.getpwuid(os.geteuid()).pw_name if side[0] == SELF else side[0]
    return f"{user}, ranks {side[1]}"


def measure_as(side: tuple[str, str], work: float, timeslice: float, mpl: int
               ) -> dict[str, Any]:
    """One run's figures (``measure``) on ``side``: here for ``self``, else as that user
    (we must be root); ``RuntimeError`` with its error output when that run fails."""
    user, priority = side
    if user == SELF:
        return measure(work, timeslice, mpl, priority)
    argv = [sys.executable, "-m", "benchmarks.overheads.switch_latency", "--work", str(work),
            "--timeslice", str(timeslice), "--mpl", str(mpl), "--rank-priority", priority]
    done = unprivileged.as_user(user, argv, Path("/"))
    if done.returncode != 0:
        raise RuntimeError(f"the run failed as {user}: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)["results"]


def series(sides: list[tuple[str, str]], mpls: list[int], repeats: int, work: float,
           timeslice: float) -> list[dict[str, Any]]:
    """Every run of the series, each record ``measure``'s with its ``side`` and ``repeat``;
    the sides take turns at every MPL, in reverse order in odd repeats."""
    runs = []
    for repeat in range(repeats):
        for mpl in mpls:
            for side in sides if repeat % 2 == 0 else list(reversed(sides)):
                record = measure_as(side, work, timeslice, mpl)
                runs.append({**record, "side": side_label(side), "repeat": repeat})
                print(f"switch_latency: {side_label(side)}, MPL {mpl}, repeat {repeat + 1}: "
                      f"p99 {record['latency_us']['p99']:.0f} us", file=sys.stderr, flush=True)
    return runs


def _spread(values: list[float], scale: float) -> str:
    values = [v / scale for v in values]
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


def summary_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    """Per (MPL, side), in the order first run: runs, median switches a run, the runs'
    switch p50 and p99 and heartbeat-lag p99 (ms: median and range), the p99's median with
    its 95 % interval, and the priorities the coordinator and the ranks ran at."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["mpl"], run["side"]), []).append(run)
    rows = []
    for (mpl, side), done in sorted(groups.items(), key=lambda item: item[0][0]):
        p99 = median_interval([r["latency_us"]["p99"] / 1000 for r in done])
        interval = "" if p99.low is None else \
            f"[{p99.low:.3g}, {p99.high:.3g}]{below_nominal(p99.confidence)}"
        rows.append([mpl, side, len(done), f"{statistics.median(r['switches'] for r in done):.0f}",
                     _spread([r["latency_us"]["p50"] for r in done], 1000),
                     _spread([r["latency_us"]["p99"] for r in done], 1000), interval,
                     _spread([r["lag_us"]["p99"] for r in done], 1000),
                     done[0]["coordinator_priority"] or "-", done[0]["rank_priority"] or "-"])
    return rows


def markdown(runs: list[dict[str, Any]], work: float, timeslice: float, command: str,
             measured: str) -> str:
    """The page of a series: what ran, then per MPL and side the runs' figures."""
    pes = runs[0]["pes"]
    return "\n".join([
        *page_head("Switch latency by user and rank priority",
                   "benchmarks.overheads.switch_latency",
                   command, host(), measured),
        f"- gang at MPL K, K CPU-bound jobs of {work:g} s of work, each on all {pes} PEs (one "
        f"rank a PE, so no row holds more ranks than the machine has CPUs), timeslice "
        f"{timeslice:g} s; a switch stops {pes} ranks and continues {pes}",
        "- latency: from the heartbeat to the moment the switch's last signal is issued; lag: "
        "the heartbeat behind its due time",
        "- the sides took turns at every MPL, in reverse order every other repeat", "",
        "Per run the p50 and p99 over its switches; the table gives the median of the runs' "
        "figures and their range (ms), and the 95 % order-statistics interval of the p99's "
        "median (with 5 runs or fewer their range, its lower confidence beside it).",
        "", *markdown_table(["MPL", "side", "runs", "switches a run", "p50 ms", "p99 ms",
                             "p99 median 95 %", "heartbeat lag p99 ms", "coordinator",
                             "ranks"], summary_rows(runs)), ""])


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures as JSON (one object)."""
    p = parser("benchmarks.overheads.switch_latency", "multi-context-switch latency under gang",
               json_help=None, out_help=None,
               markdown_help="also write the series as a Markdown page")
    p.add_argument("--work", type=float, default=10.0, help="seconds of work per job")
    p.add_argument("--timeslice", type=float, default=0.2, help="seconds")
    p.add_argument("--mpl", default="2", help="jobs, each on every PE; a list runs a series "
                                              "(default 2)")
    p.add_argument("--rank-priority", default="auto", help="as testbed run's (default auto)")
    p.add_argument("--repeats", type=int, default=1, help="runs of every MPL and side")
    p.add_argument("--sides", type=parse_side, nargs="+", default=None, metavar="USER[:PRIO]",
                   help="who measures (self, or a user run from root) and the ranks' priority")
    args = p.parse_args(argv)
    mpls = [int(m) for m in args.mpl.split(",") if m]
    if not mpls or min(mpls) < 1 or args.repeats < 1:
        p.error("--mpl takes MPLs >= 1 and --repeats a count >= 1")
    sides = args.sides or [(SELF, args.rank_priority)]
    if any(user != SELF for user, _ in sides) and (os.geteuid() != 0
                                                    or unprivileged.missing_tools()):
        p.error("a side run as another user needs root, runuser and unshare")
    session = Session.start("benchmarks.overheads.switch_latency", argv, None, None)
    if len(mpls) == 1 and args.repeats == 1 and len(sides) == 1 and args.markdown is None:
        result = {"benchmark": "switch_latency", "host": host(),
                  "results": measure_as(sides[0], args.work, args.timeslice, mpls[0])}
        emit([result], True, indent=2)
        return 0
    runs = series(sides, mpls, args.repeats, args.work, args.timeslice)
    emit([{"benchmark": "switch_latency", "host": host(), "runs": runs}], True, indent=2)
    session.page(args.markdown, lambda: markdown(runs, args.work, args.timeslice,
                                                 session.command, session.measured("min")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
