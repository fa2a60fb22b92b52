"""No process, record or segment outlives a run: Ctrl-C, SIGTERM and SIGKILL of the coordinator.

(The autouse fixture in conftest.py fails any test that leaves a shim record or an orphaned MPI
segment in /dev/shm.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import (
    TESTBED,
    events,
    jobs_csv,
    launch_dirs,
    live_events,
    run_id,
    run_processes,
)

from testbed.emulation.launch_tmp import hydra_files

pytestmark = pytest.mark.realtime

LONG = "0 2 bsp --work 60 --pattern nn\n0 2 bsp --work 60 --pattern aa\n"


def _start(tmp_path: Path, path: Path, scheduler: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start a run; return once both jobs' ranks are known and a rank is seen stopped.

    Seen, not assumed after a sleep: a SIGSTOP takes effect only when the rank next runs, which
    on a loaded machine can be a while, and around a switch no rank may be stopped yet.
    """
    proc = subprocess.Popen([*TESTBED, "run", str(path), "--scheduler", scheduler, "--pes", "2",
                             "--out", "r"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if sum(e["event"] == "pids" for e in live_events(tmp_path / "r")) == 2:
            rid = run_id(tmp_path / "r")
            if _stopped(rid):
                return proc, rid
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("the jobs never started, or no rank of theirs was ever stopped")


def _stopped(rid: str) -> list[int]:
    from testbed.emulation import procs
    return [pid for pid in run_processes(rid) if procs.state(pid) in ("T", "t")]


@pytest.mark.parametrize(("sig", "scheduler"), [(signal.SIGINT, "gang"), (signal.SIGTERM, "gang"),
                                                (signal.SIGINT, "fcs")])
def test_interrupt_kills_everything_and_says_so(tmp_path, workload, sig, scheduler):
    before = hydra_files()
    proc, rid = _start(tmp_path, workload(LONG), scheduler)  # a job is stopped mid-run
    assert rid in launch_dirs().values()
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == 130
    assert run_processes(rid) == []
    assert rid not in launch_dirs().values() and hydra_files() <= before
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert {row["status"] for row in jobs_csv(tmp_path / "r").values()} == {"killed"}
    assert events(tmp_path / "r")[-1] == {**events(tmp_path / "r")[-1], "event": "run_end",
                                          "status": "interrupted"}


@pytest.mark.parametrize("scheduler", ["gang", "fcs"])
def test_sigkill_of_the_coordinator_leaves_nothing_within_5s(tmp_path, workload, scheduler):
    before = hydra_files()
    proc, rid = _start(tmp_path, workload(LONG), scheduler)  # a job is stopped mid-run
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while run_processes(rid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run_processes(rid) == []
    while any(n.startswith(f"testbed-{rid}") for n in os.listdir("/dev/shm")):
        assert time.monotonic() < deadline, "shim records outlived the run"
        time.sleep(0.05)
    while rid in launch_dirs().values() or not hydra_files() <= before:
        assert time.monotonic() < deadline, "launch directories or hydra's files outlived it"
        time.sleep(0.05)
    assert not (tmp_path / "r" / "summary.json").exists(), "a killed run must not look complete"
