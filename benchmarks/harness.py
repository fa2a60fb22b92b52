"""What the benchmarks share: run a workload text through ``testbed run`` and read the results."""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def run_workload(text: str, *options: str) -> Path:
    """Run ``text`` as a workload with ``testbed run OPTIONS``; return the run directory.

    The directory is a fresh temporary one that the caller may delete.
    """
    work = Path(tempfile.mkdtemp(prefix="testbed-bench-"))
    (work / "workload.txt").write_text(text)
    subprocess.run([sys.executable, "-m", "testbed.cli", "run", "workload.txt", *options,
                    "--out", "run"], cwd=work, check=True, stdout=subprocess.DEVNULL)
    return work / "run"


def jobs(run_dir: Path) -> list[dict[str, str]]:
    """The rows of ``jobs.csv``."""
    with open(run_dir / "jobs.csv") as f:
        return list(csv.DictReader(f))


def events(run_dir: Path) -> list[dict[str, Any]]:
    """The events of ``events.jsonl``."""
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def host() -> dict[str, Any]:
    """The host the figures were measured on."""
    return {"cpus": len(os.sched_getaffinity(0)), "python": sys.version.split()[0],
            "uname": " ".join(os.uname())}


def median(values: list[float]) -> float:
    """The median of ``values``."""
    return statistics.median(values)
