"""Deriving the results: the seconds ``jobs.csv`` and ``summary.json`` take from a saved log.

``python -m benchmarks.simulator.derive --against CHECKOUT [--jobs 100000] [--pes 1024]
[--policies easy,gang] [--repeats 3] [--json]`` simulates a Lublin-Feitelson workload under each
policy once with this checkout (``benchmarks.simulator.speed``'s workload and settings), keeps each
event log, then derives the results of each log ``--repeats`` times with this checkout's
``testbed.results.report.write_results`` and as many with ``CHECKOUT``'s, each a fresh process
timing the call alone (reading the log, building the columns, writing both files), the two
sides taking turns.  It gives each side's median seconds with its interval and this side's
over the other's (``testbed.experiments.stats``; with fewer than 6 runs an interval is the
runs' range with its own, lower confidence), and says whether both sides wrote the same
bytes.  The sides take turns a log at a time (which goes first alternating,
``benchmarks.overheads.paired_walls``) and the ratio pairs them by turn.  Exit 1 when they did not.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, checkout_type, commit_of, emit, host, parser, table
from benchmarks.overheads import paired_walls
from benchmarks.simulator.speed import lublin_workload, simulate
from testbed.experiments.stats import median_interval, ratio_interval

TIMED = ("import sys, time\n"
         "from pathlib import Path\n"
         "from testbed.results.report import write_results\n"
         "began = time.perf_counter()\n"
         "write_results(Path(sys.argv[1]))\n"
         "print(time.perf_counter() - began)\n")


def derive_in(checkout: Path, run_dir: Path) -> tuple[float, str]:
    """Derive ``run_dir``'s results with ``checkout``'s testbed in a fresh process: the
    seconds ``write_results`` took and a digest of the two files it wrote."""
    done = subprocess.run([sys.executable, "-c", TIMED, str(run_dir)], cwd=checkout,
                          env={**os.environ, "PYTHONPATH": str(checkout)}, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"deriving {run_dir} with {checkout} exited {done.returncode}: "
                           f"{done.stderr.strip()[-500:]}")
    digest = hashlib.sha256()
    for name in ("jobs.csv", "summary.json"):
        digest.update((run_dir / name).read_bytes())
        (run_dir / name).unlink()
    return float(done.stdout.strip().splitlines()[-1]), digest.hexdigest()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The logs made once, then derived ``args.repeats`` times a side, sides taking turns."""
    sides = {"this": REPO, "against": args.against.resolve()}
    runs: dict[str, dict[str, list[float]]] = {}
    digests: dict[str, set[str]] = {p: set() for p in args.policies}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="testbed-derive-") as tmp:
        workload = lublin_workload(args.jobs, args.pes)
        for policy in args.policies:
            out = Path(tmp) / policy
            out.mkdir()
            simulate(workload, policy, args.pes, out)
            sizes[policy] = (out / "events.jsonl").stat().st_size
        for policy in args.policies:
            def side(checkout: Path, policy: str = policy) -> Callable[[str], float]:
                def derive(_: str) -> float:
                    seconds, digest = derive_in(checkout, Path(tmp) / policy)
                    digests[policy].add(digest)
                    return round(seconds, 3)
                return derive

            runs[policy] = paired_walls.interleaved(
                args.repeats, {name: side(checkout) for name, checkout in sides.items()})
    summary = []
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
    p.add_argument("--against", type=checkout_type("testbed/results/report.py"), required=True,
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
                    [[s["policy"], s["log_mib"], _interval(s["this"]), _interval(s["against"]),
                      _interval(s["this_over_against"]), "yes" if s["same_files"] else "NO"]
                     for s in document["summary"]]))
        print(f"host: {document['host']}")
    return 0 if all(s["same_files"] for s in document["summary"]) else 1


if __name__ == "__main__":
    sys.exit(main())
