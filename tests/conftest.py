"""Shared helpers: run the real ``testbed`` command, read run directories, find run processes."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from testbed import procs

TESTBED = [sys.executable, "-m", "testbed.cli"]
PROGRAMS = Path(__file__).parent / "programs"


def run_testbed(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``testbed ARGS`` to completion; return the completed process (text output)."""
    return subprocess.run([*TESTBED, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def jobs_csv(run_dir: Path) -> dict[str, dict[str, str]]:
    """The rows of a run's ``jobs.csv`` by job id."""
    with open(run_dir / "jobs.csv") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def events(run_dir: Path) -> list[dict[str, Any]]:
    """The events of a run."""
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def run_id(run_dir: Path) -> str:
    """The run id from the first event."""
    return events(run_dir)[0]["run_id"]


def run_processes(rid: str) -> list[int]:
    """Live (not zombie) processes carrying the run's marker."""
    return procs.marked(rid)


@pytest.fixture
def workload(tmp_path: Path):
    """Write a workload file from text and return its path."""

    def write(text: str, name: str = "workload.txt") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


@pytest.fixture(autouse=True)
def _no_leftovers():
    """Every test must leave no orphaned MPI segment and no shim record behind."""
    started = time.time()
    yield
    leaked = procs.orphan_segments(since=started)
    leaked |= {name for name in os.listdir("/dev/shm") if name.startswith("testbed-")}
    assert not leaked, f"shared memory left behind: {leaked}"
