"""The testbed's own overheads on this host, as one JSON document, and a regression check.

* job launch overhead (an empty job's response minus its work) for N = 1 ... all PEs
  (THESIS Table 5.1);
* multi-context-switch latency p50/p99 against MPL (gang, every job on every PE);
* MPL linearity (THESIS Fig 5.1): the mean runtime of k identical fine-grained all-to-all jobs
  at MPL k divided by k times the runtime of one at MPL 1, for k = 1..4 and timeslices 200,
  50, 20 and 10 ms, and the smallest timeslice at which every ratio stays within 3 %;
* the shim's ping-pong cost and spin-block wake-up latency.

``--as-user USER`` (as root) runs the suite twice, as root and then as that unprivileged user,
and reports the two side by side: a table on stderr, and ``root`` and ``unprivileged`` halves in
the JSON.  ``--baseline FILE`` compares the ratio figures (MPL linearity, shim cost) with a
stored run of this suite of the same shape and exits 1 when one is worse by more than
``--tolerance`` (default 10 %, relative).  ``--quick`` runs a tiny version to show the suite
works (CI); its figures mean nothing.

Usage: ``python -m benchmarks.overheads [--quick] [--as-user USER] [--baseline FILE]
[--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks import launch_overhead, shim_cost, switch_latency, unprivileged
from benchmarks.harness import events, host, run_workload, table

LINEARITY_LIMIT = 0.03
FULL = {"launch_repeats": 7, "switch_mpls": (2, 3, 4), "switch_work": 4.0,
        "timeslices": (0.2, 0.05, 0.02, 0.01), "mpls": (1, 2, 3, 4), "work": 2.0,
        "shim": (5, 20000, 300)}
QUICK = {"launch_repeats": 2, "switch_mpls": (2,), "switch_work": 0.6, "timeslices": (0.2,),
         "mpls": (1, 2), "work": 0.4, "shim": (1, 500, 12)}


def mean_runtime(k: int, timeslice: float, work: float) -> float:
    """Mean time (s) ``k`` identical fine-grained all-to-all jobs on every PE, at MPL k, spend
    in the benchmark (the slowest rank's ``wall_s``: launch and MPI start-up, which do not grow
    with k, are left out)."""
    pes = len(os.sched_getaffinity(0))
    job = f"0 {pes} bsp --work {work} --granularity 0.1 --pattern aa\n"
    run = run_workload(job * k, "--scheduler", "gang", "--mpl", str(k), "--timeslice",
                       str(timeslice))
    try:
        walls = [max(r["wall_s"] for r in ev["ranks"]) for ev in events(run)
                 if ev["event"] == "stats"]
    finally:
        shutil.rmtree(run.parent)
    if len(walls) != k:
        raise RuntimeError(f"only {len(walls)} of {k} jobs reported")
    return statistics.fmean(walls)


def linearity(timeslices: tuple[float, ...], mpls: tuple[int, ...],
              work: float) -> dict[str, Any]:
    """Ratios mean runtime at MPL k / (k * runtime at MPL 1), by timeslice (ms) and k."""
    ratios: dict[str, dict[str, float]] = {}
    for timeslice in timeslices:
        runtime = {k: mean_runtime(k, timeslice, work) for k in sorted({1, *mpls})}
        ratios[f"{timeslice * 1000:g}"] = {str(k): round(runtime[k] / (k * runtime[1]), 4)
                                           for k in mpls}
    within = [float(t) for t, row in ratios.items()
              if all(abs(r - 1) <= LINEARITY_LIMIT for r in row.values())]
    return {"ratios": ratios, "smallest_linear_timeslice_ms": min(within) if within else None,
            "limit": LINEARITY_LIMIT}


def measure(plan: dict[str, Any]) -> dict[str, Any]:
    """Every figure of the suite for this host."""
    pes = len(os.sched_getaffinity(0))
    return {
        "benchmark": "overheads", "host": host(),
        "launch_overhead": [launch_overhead.measure(n, plan["launch_repeats"], 0.5)
                            for n in range(1, pes + 1)],
        "switch_latency": [switch_latency.measure(plan["switch_work"], 0.2, mpl)
                           for mpl in plan["switch_mpls"]],
        "mpl_linearity": linearity(plan["timeslices"], plan["mpls"], plan["work"]),
        "shim": shim_cost.measure(*plan["shim"]),
    }


def ratio_figures(result: dict[str, Any]) -> dict[str, float]:
    """The figures compared against a baseline (larger is worse for each); those of a
    side-by-side document are named ``root:...`` and ``unprivileged:...``."""
    if "root" in result:
        return {f"{side}:{name}": value for side in SIDES
                for name, value in ratio_figures(result[side]).items()}
    figures = {f"mpl_linearity[{t}ms][k={k}]": r
               for t, row in result["mpl_linearity"]["ratios"].items() for k, r in row.items()}
    figures["shim_pingpong_ratio"] = result["shim"]["pingpong"]["ratio"]
    return figures


SIDES = ("root", "unprivileged")


def as_unprivileged(user: str, quick: bool) -> dict[str, Any]:
    """The suite's document measured by ``user`` (we must be root); ``RuntimeError`` with its
    error output if that run fails."""
    done = unprivileged.as_user(user, [sys.executable, "-m", "benchmarks.overheads",
                                       *(["--quick"] if quick else [])], Path("/"))
    if done.returncode != 0:
        raise RuntimeError(f"the suite failed as {user}: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout)
    result["user"] = user
    return result


def side_by_side(result: dict[str, Any]) -> str:
    """A table of the headline figures of a side-by-side document, root against unprivileged
    (launch overhead in s; switch latency in microseconds; linearity ratios)."""
    root, user = (result[side] for side in SIDES)
    rows: list[list[Any]] = []
    for a, b in zip(root["launch_overhead"], user["launch_overhead"], strict=True):
        rows.append([f"launch overhead, {a['ranks']} ranks (s)", a["median_s"], b["median_s"]])
    for a, b in zip(root["switch_latency"], user["switch_latency"], strict=True):
        for q in ("p50", "p99"):
            rows.append([f"switch {q}, MPL {a['mpl']} (us)", a["latency_us"][q],
                         b["latency_us"][q]])
    for t, row in root["mpl_linearity"]["ratios"].items():
        for k, r in row.items():
            if k != "1":
                rows.append([f"MPL linearity, {t} ms, k={k}", r,
                             user["mpl_linearity"]["ratios"][t][k]])
    rows.append(["shim ping-pong ratio", root["shim"]["pingpong"]["ratio"],
                 user["shim"]["pingpong"]["ratio"]])
    return table(["figure", "root", f"unprivileged ({user['user']})"], rows)


def regressions(result: dict[str, Any], baseline: dict[str, Any],
                tolerance: float) -> list[str]:
    """Ratio figures worse than the baseline's by more than ``tolerance`` (relative)."""
    now, then = ratio_figures(result), ratio_figures(baseline)
    return [f"{name}: {now[name]:.4f} > baseline {then[name]:.4f} * (1 + {tolerance:g})"
            for name in sorted(now.keys() & then.keys())
            if now[name] > then[name] * (1 + tolerance)]


def read_baseline(path: Path) -> dict[str, Any]:
    """The JSON document of an earlier run of this suite; ``ValueError`` when ``path`` cannot
    be read or holds no ratio figures."""
    try:
        baseline = json.loads(path.read_text())
        figures = ratio_figures(baseline)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: not a baseline of this suite ({err!r})") from err
    odd = sorted(name for name, value in figures.items()
                 if isinstance(value, bool) or not isinstance(value, int | float))
    if odd:
        raise ValueError(f"{path}: not a baseline of this suite (not numbers: {', '.join(odd)})")
    return baseline


def compare(result: dict[str, Any], baseline: dict[str, Any], tolerance: float) -> int:
    """Print each regression of ``result`` against ``baseline`` to stderr; the exit status:
    1 when there is one, else 0."""
    found = regressions(result, baseline, tolerance)
    for line in found:
        print(f"regression: {line}", file=sys.stderr)
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    """Run the suite, print (and optionally save) the JSON, compare with a baseline."""
    p = argparse.ArgumentParser(description="the testbed's overhead regression suite")
    p.add_argument("--quick", action="store_true", help="tiny runs: shows the suite works")
    p.add_argument("--baseline", type=Path, default=None, help="JSON of an earlier run")
    p.add_argument("--tolerance", type=float, default=0.10, help="relative, default 0.10")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    p.add_argument("--as-user", default=None, metavar="USER",
                   help="as root: also measure as this unprivileged user, side by side")
    args = p.parse_args(argv)
    if args.as_user is not None and (os.geteuid() != 0 or unprivileged.missing_tools()):
        print("overheads: --as-user needs root, runuser and unshare", file=sys.stderr)
        return 2
    baseline = None
    if args.baseline is not None:
        try:
            baseline = read_baseline(args.baseline)
        except ValueError as err:
            print(f"overheads: {err}", file=sys.stderr)
            return 2
    result = measure(QUICK if args.quick else FULL)
    result["quick"] = args.quick
    if args.as_user is not None:
        result = {"benchmark": "overheads", "host": result["host"], "quick": args.quick,
                  "root": result, "unprivileged": as_unprivileged(args.as_user, args.quick)}
        print(side_by_side(result), file=sys.stderr)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0 if baseline is None else compare(result, baseline, args.tolerance)


if __name__ == "__main__":
    raise SystemExit(main())
