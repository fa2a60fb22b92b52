"""The wall time of one benchmark command in two code trees: ``python -m
benchmarks.overheads.versions
--baseline DIR [--rounds 3] -- MODULE [ARGS...]`` runs ``python -m MODULE ARGS`` (each with its
own ``--out`` under a temporary directory, added at the end) in the baseline tree ``DIR`` (for
example ``git archive COMMIT | tar -x -C DIR``) and in this one, ``--rounds`` times each,
interleaved (which goes first alternates), and compares them as pairs: the ratio this / baseline
with its interval and the signed-rank test (``testbed.experiments.stats``).  Both run with this
interpreter.  Prints a table and the figures as JSON (one object).  Run it under the machine's
timing lock on a shared machine.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import REPO, parser
from benchmarks.overheads import paired_walls

HERE = REPO


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
    p = parser("benchmarks.overheads.versions", __doc__, raw=True, json_help=None, out_help=None,
               markdown_help=None)
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
    with tempfile.TemporaryDirectory(prefix="testbed-versions-") as tmp:
        walls = paired_walls.interleaved(args.rounds, {
            which: (lambda out, tree=tree: timed(tree, args.command, Path(tmp) / out))
            for which, tree in trees.items()})
    record = {**paired_walls.figures(walls, "this", "baseline"), "command": args.command,
              "baseline": str(trees["baseline"])}
    paired_walls.report(walls, record, "code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
