"""Deriving the results: the seconds ``testbed report`` takes on a saved log.

``python -m benchmarks.simulator.derive --against CHECKOUT [--jobs 100000] [--pes 1024]
[--policies easy,gang] [--repeats 3] [--json]`` simulates a Lublin-Feitelson workload under each
policy once with this checkout's ``testbed simulate`` (``benchmarks.simulator.speed``'s workload, as
SWF with perfect estimates, and settings), keeps each event log, then derives the results of
each log ``--repeats`` times with this checkout's ``python -m testbed report`` and as many with
``CHECKOUT``'s, each on a directory holding the log alone, timed from outside from the
command's start to its exit (starting Python, reading the log, building the columns, writing
``jobs.csv`` and ``summary.json``, and the figures and ``trace.json`` the command writes beside
them), the two sides taking turns.  The
other checkout is driven only through its command line, which every checkout has, so any
earlier one can be compared; where its ``testbed report`` fails, its row says ``lacking:``
with the command's last error line.  It gives each side's median seconds with its interval
and this side's over the other's (``testbed.experiments.stats``; with fewer than 6 runs an
interval is the runs' range with its own, lower confidence), and says whether both sides
wrote the same ``jobs.csv`` and ``summary.json``.  The sides take turns a log at a time
(which goes first alternating, ``benchmarks.overheads.paired_walls``) and the ratio pairs them by
turn.
Exit 1 when they did not write the same bytes, or the other checkout lacked the command.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import checkout_type, commit_of, emit, host, lacking, parser, table
from benchmarks.overheads import paired_walls
from benchmarks.simulator.speed import HERE, LOAD, SEED, policy_options
from testbed.experiments.stats import median_interval, ratio_interval


class Lacking(RuntimeError):
    """The other checkout's ``testbed report`` failed: what it lacks (its last error line)."""


def derive_in(checkout: Path, log: Path) -> tuple[float, str]:
    """Derive the results of the event log ``log`` with ``checkout``'s ``python -m testbed
    report``, on a fresh directory holding the log alone, in a fresh process: the seconds
    from its start to its exit and a digest of the ``jobs.csv`` and ``summary.json`` it
    wrote (the directory removed after).  ``CalledProcessError`` (with its error output) when
    the command fails."""
    run_dir = Path(tempfile.mkdtemp(prefix="derive-", dir=log.parent.parent))
    try:
        os.link(log, run_dir / "events.jsonl")
        began = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "testbed", "report", str(run_dir)],
                              cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - began
        done.check_returncode()
        digest = hashlib.sha256()
        for name in ("jobs.csv", "summary.json"):
            digest.update((run_dir / name).read_bytes())
    finally:
        shutil.rmtree(run_dir)
    return seconds, digest.hexdigest()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The logs made once, then derived ``args.repeats`` times a side, sides taking turns; a
    policy whose log the other checkout cannot derive says so (``lacking``)."""
    sides = {"this": HERE, "against": args.against.resolve()}
    runs: dict[str, dict[str, list[float]]] = {}
    lacks: dict[str, str] = {}
    digests: dict[str, set[str]] = {p: set() for p in args.policies}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="testbed-derive-") as tmp:
        swf = Path(tmp) / "lublin.swf"
        subprocess.run([sys.executable, "-m", "testbed", "workload", "lublin", "--jobs",
                        str(args.jobs), "--pes", str(args.pes), "--seed", str(SEED), "--load",
                        str(LOAD), "--format", "swf", "--output", str(swf)],
                       cwd=HERE, check=True, capture_output=True)
        for policy in args.policies:
            out = Path(tmp) / policy
            subprocess.run([sys.executable, "-m", "testbed", "simulate", str(swf), "--scheduler",
                            policy, "--pes", str(args.pes), "--estimates", "perfect",
                            *policy_options(policy), "--out", str(out)],
                           cwd=HERE, check=True, capture_output=True)
            sizes[policy] = (out / "events.jsonl").stat().st_size
        for policy in args.policies:
            def side(name: str, policy: str = policy) -> Callable[[str], float]:
                def derive(_: str) -> float:
                    try:
                        seconds, digest = derive_in(sides[name], Path(tmp) / policy /
                                                    "events.jsonl")
                    except subprocess.CalledProcessError as err:
                        if name == "this":
                            raise
                        raise Lacking(lacking(err)) from err
                    digests[policy].add(digest)
                    return round(seconds, 3)
                return derive

            try:
                runs[policy] = paired_walls.interleaved(
                    args.repeats, {name: side(name) for name in sides})
            except Lacking as err:
                lacks[policy] = str(err)
                print(f"derive: {sides['against']} lacking: {err}", file=sys.stderr)
    summary: list[dict[str, Any]] = [
        {"policy": policy, "log_mib": round(sizes[policy] / 2**20, 1), "same_files": None,
         "lacking": said} for policy, said in lacks.items()]
    for policy, found in runs.items():
        median = {side: median_interval(values) for side, values in found.items()}
        ratio = ratio_interval(found["this"], found["against"], paired=True)
        summary.append({"policy": policy, "log_mib": round(sizes[policy] / 2**20, 1),
                        "same_files": len(digests[policy]) == 1,
                        **{side: vars(m) if m else None for side, m in median.items()},
                        "this_over_against": vars(ratio) if ratio else None})
    return {"benchmark": "derive", "host": host(), "jobs": args.jobs, "pes": args.pes,
            "repeats": args.repeats,
            "checkouts": {side: {"path": str(c), "commit": commit_of(c)}
                          for side, c in sides.items()},
            "runs": runs, "summary": summary}


def _interval(found: dict[str, Any] | None, digits: int = 2) -> str:
    if found is None:
        return "-"
    if found["low"] is None:
        return f"{found['value']:.{digits}f}"
    return (f"{found['value']:.{digits}f} [{found['low']:.{digits}f}, "
            f"{found['high']:.{digits}f}] ({found['confidence']:.0%})")


def main(argv: list[str] | None = None) -> int:
    """Measure and print the seconds the results take to derive, on both sides."""
    p = parser("benchmarks.simulator.derive", __doc__, json_help="print the whole record as JSON",
               out_help=None, markdown_help=None)
    p.add_argument("--against", type=checkout_type("testbed/__main__.py"), required=True,
                   metavar="CHECKOUT")
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--pes", type=int, default=1024)
    p.add_argument("--policies", default="easy,gang")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    args.policies = [name for name in args.policies.split(",") if name]
    if args.repeats < 1 or args.jobs < 1:
        p.error("--repeats and --jobs take N >= 1")
    document = measure(args)
    if not emit([document], args.json, indent=1):
        print(table(["policy", "log MiB", "this s", "against s", "this / against",
                     "same files"],
                    [[s["policy"], s["log_mib"], "-", f"lacking: {s['lacking']}", "-", "-"]
                     if "lacking" in s else
                     [s["policy"], s["log_mib"], _interval(s["this"]), _interval(s["against"]),
                      _interval(s["this_over_against"]), "yes" if s["same_files"] else "NO"]
                     for s in document["summary"]]))
        print(f"host: {document['host']}")
    return 0 if all(s["same_files"] for s in document["summary"]) else 1


if __name__ == "__main__":
    sys.exit(main())
