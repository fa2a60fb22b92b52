"""One small emulated experiment (2 schedulers x 3 repeats of a 2-job workload) run locally and
through ``--slurm`` on the same machine: the wall time of each, from the command's start until
every run is complete (``--slurm``: submission, the shared-filesystem check job, the blocks'
queueing and start, ``experiment status --wait``).  The two are run ``--rounds`` times,
interleaved (which goes first alternates), and compared as pairs (the ratio slurm / local with
its interval, ``testbed.experiments.stats``).  Needs a running Slurm (``scripts/slurm-local``
and its ``SLURM_CONF``).  Usage: ``python -m benchmarks.reliability.slurm_experiment [--rounds 3]``;
prints a table and the figures as JSON (one object).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import parser
from benchmarks.overheads import paired_walls

EXPERIMENT = """
repeats = 3
[[workload]]
name = "w"
file = "w.txt"
[factors]
scheduler = ["fcfs", "gang"]
"""
WORKLOAD = "0 1 bsp --work 0.3\n0 2 bsp --work 0.2\n"
TESTBED = [sys.executable, "-m", "testbed.cli"]


def _run(args: list[str], cwd: Path) -> None:
    done = subprocess.run([*TESTBED, *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"testbed {' '.join(args)}: exit {done.returncode}: "
                           f"{done.stderr.strip()[-500:]}")


def local(cwd: Path, out: str) -> float:
    """Seconds to run the experiment here into ``out``."""
    began = time.monotonic()
    _run(["experiment", "run", "e.toml", "--out", out], cwd)
    return time.monotonic() - began


def through_slurm(cwd: Path, out: str) -> float:
    """Seconds from submitting the experiment with ``--slurm`` into ``out`` until all its
    runs are complete."""
    began = time.monotonic()
    _run(["experiment", "run", "e.toml", "--out", out, "--slurm"], cwd)
    _run(["experiment", "status", out, "--wait"], cwd)
    wall = time.monotonic() - began
    if len(list((cwd / out).glob("*/*/run.json"))) != 6:
        raise RuntimeError(f"{out}: not every run of the experiment completed through Slurm")
    return wall


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures (a table, then JSON)."""
    p = parser("benchmarks.reliability.slurm_experiment",
               "an experiment's wall time, locally and via Slurm",
               json_help=None, out_help=None, markdown_help=None)
    p.add_argument("--rounds", type=int, default=3, help="interleaved pairs (>= 1)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="testbed-slurm-bench-") as tmp:
        cwd = Path(tmp)
        (cwd / "w.txt").write_text(WORKLOAD)
        (cwd / "e.toml").write_text(EXPERIMENT)
        walls = paired_walls.interleaved(args.rounds, {
            "local": lambda out: local(cwd, out), "slurm": lambda out: through_slurm(cwd, out)})
    record = {**paired_walls.figures(walls, "slurm", "local"), "runs_per_experiment": 6}
    paired_walls.report(walls, record, "way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
