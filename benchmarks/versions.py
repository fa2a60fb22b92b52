"""The wall time of one benchmark command in two code trees: ``python -m benchmarks.versions
--baseline DIR [--rounds 3] -- MODULE [ARGS...]`` runs ``python -m MODULE ARGS`` (each with its
own ``--out`` under a temporary directory, added at the end) in the baseline tree ``DIR`` (for
example ``git archive COMMIT | tar -x -C DIR``) and in this one, ``--rounds`` times each,
interleaved (which goes first alternates), and compares them as pairs: the ratio this / baseline
with its interval and the signed-rank test (``testbed.experiments.stats``).  Both run with this
interpreter.  Prints a table and the figures as JSON (one object).  Run it under the machine's
timing lock on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import host, median, now_iso, table
from testbed.experiments import stats

HERE = Path(__file__).resolve().parents[1]


def timed(tree: Path, command: list[str], out: Path) -> float:
    """Seconds ``python -m COMMAND --out OUT`` took in code tree ``tree``; ``RuntimeError``
    with the end of its error output when it fails."""
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", *command, "--out", str(out)], cwd=tree,
                          capture_output=True, text=True)
    wall = time.monotonic() - began
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {' '.join(command)}: exit {done.returncode}: "
                           f"{done.stderr.strip()[-500:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures (a table, then JSON)."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.versions", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", type=Path, required=True, help="the baseline code tree")
    p.add_argument("--rounds", type=int, default=3, help="interleaved pairs (>= 1)")
    p.add_argument("command", nargs="+", help="MODULE [ARGS...] after --")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds: need at least 1, got {args.rounds}")
    if not (args.baseline / args.command[0].replace(".", "/")).exists() and \
            not (args.baseline / (args.command[0].replace(".", "/") + ".py")).exists():
        p.error(f"--baseline {args.baseline}: has no module {args.command[0]}")
    trees = {"baseline": args.baseline.resolve(), "this": HERE}
    walls: dict[str, list[float]] = {"baseline": [], "this": []}
    with tempfile.TemporaryDirectory(prefix="testbed-versions-") as tmp:
        for n in range(args.rounds):
            order = ("baseline", "this") if n % 2 == 0 else ("this", "baseline")
            for which in order:
                walls[which].append(timed(trees[which], args.command,
                                          Path(tmp) / f"{which}-{n}"))
                print(f"round {n + 1} {which}: {walls[which][-1]:.1f} s", file=sys.stderr)
    ratio = stats.ratio_interval(walls["this"], walls["baseline"], paired=True)
    test = stats.signed_rank_test(walls["this"], walls["baseline"])
    record = {"host": host(), "date": now_iso(), "command": args.command,
              "baseline": str(trees["baseline"]), "rounds": args.rounds,
              "baseline_s": [round(w, 2) for w in walls["baseline"]],
              "this_s": [round(w, 2) for w in walls["this"]],
              "baseline_median_s": round(median(walls["baseline"]), 2),
              "this_median_s": round(median(walls["this"]), 2),
              "ratio": None if ratio is None else {"value": ratio.value, "low": ratio.low,
                                                   "high": ratio.high,
                                                   "confidence": ratio.confidence},
              "p": None if test is None else test.p}
    print(table(["code", "median s", "each s"],
                [[w, f"{median(v):.1f}", " ".join(f"{x:.1f}" for x in v)]
                 for w, v in walls.items()]))
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
