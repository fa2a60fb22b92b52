"""Shared helpers: run the real ``testbed`` command, read run directories, find run processes."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from testbed.emulation import procs

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


def live_events(run_dir: Path) -> list[dict[str, Any]]:
    """The events a run still going has written so far (none before its log exists).

    A line the coordinator is writing may be seen in part (a write that crosses a page
    boundary becomes visible a page at a time): only complete lines are read.
    """
    try:
        text = (run_dir / "events.jsonl").read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.split("\n")[:-1]]


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


LAUNCH_DIR = re.compile(r"testbed-(.+)-nm\d+-[^-]+")


def launch_dirs() -> dict[str, str]:
    """The launches' temporary directories in the temporary directory, by name: their run."""
    found = {}
    for name in os.listdir(tempfile.gettempdir()):
        if match := LAUNCH_DIR.fullmatch(name):
            found[name] = match.group(1)
    return found


def leftovers(started: float) -> set[str]:
    """MPI segments created since ``started``, shim records that no live process maps, and
    launch directories of runs with no live process.

    A record some live process maps belongs to a run still going (perhaps another test run on
    the same machine): the node manager maps its ranks' records until it removes them.
    """
    records = {procs.SHM_PREFIX + name for name in os.listdir(procs.SHM_PREFIX)
               if name.startswith("testbed-")}
    if records:
        for pid in psutil.pids():
            records -= procs.shm_segments(pid)
    dirs = {name for name, rid in launch_dirs().items() if not procs.marked(rid)}
    return procs.orphan_segments(since=started) | records | dirs


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "realtime: starts real processes (ranks, mpiexec, the testbed command, a "
        "service); `pytest -m 'not realtime'` runs the pure tests alone")


def _refuse_processes(nodeid: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make starting a process fail in test ``nodeid`` (it is not marked realtime)."""

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError(f"{nodeid} starts a process: mark it realtime")

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    for name in ("fork", "posix_spawn", "posix_spawnp"):
        monkeypatch.setattr(os, name, refuse)


@pytest.fixture(autouse=True)
def _no_leftovers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """A test not marked realtime must start no process; a realtime test must leave no
    orphaned MPI segment, shim record or launch directory behind."""
    if request.node.get_closest_marker("realtime") is None:
        _refuse_processes(request.node.nodeid, monkeypatch)
        yield
        return
    started = time.time()
    yield
    # Another run on the machine may be between unmapping a record and removing it (or its
    # watchdog between killing the ranks and removing their records): a leftover of this test
    # is still there seconds later.
    deadline = time.monotonic() + 10
    while (leaked := leftovers(started)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leaked, f"shared memory or launch directories left behind: {leaked}"


def fast_classes(tmp_path: Path) -> Path:
    """T3D's shipped class table with every time a tenth (a production job of n PEs may be
    preempted after n seconds), written under ``tmp_path``."""
    from testbed.class_tables import DEFAULT_TABLE

    table = tmp_path / "fast.toml"
    table.write_text(DEFAULT_TABLE.read_text().replace("time_scale = 1.0", "time_scale = 0.1"))
    return table
