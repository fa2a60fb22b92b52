"""The scheduling is real: sampled process states and the jobs' own times under gang and local.

Every figure a test compares comes from one run, and from the same stretch of it, so a machine
busy with other work slows both sides alike; no test compares the runtimes of separate runs.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTBED, events, jobs_csv, live_events, run_testbed

pytestmark = pytest.mark.realtime

# A fine-grained job: 1 ms iterations (G = 0.005 of T = 0.2 s), fine next to the kernel's own
# time slice (a few ms).
JOB = "bsp --work 2.5 --granularity 0.005 --pattern aa"
# A medium-grained, high-variance partner from the THESIS mix: a partner whose ranks behave
# alike on both CPUs lets the kernel's per-CPU schedules phase-lock and hides the effect of
# local scheduling.
PARTNER = "bsp --work 2.5 --granularity 0.5 --pattern nn --variance 0.75 --seed 1"
SIGSTOP_BIT = 1 << (signal.SIGSTOP - 1)


def _rank_pes(run_dir: Path) -> dict[int, int]:
    """pid -> PE for every rank the run has reported so far."""
    evs = live_events(run_dir)
    pes = {e["job"]: e["pes"] for e in evs if e["event"] == "start"}
    return {pid: pes[e["job"]][int(rank)] for e in evs if e["event"] == "pids"
            for rank, pid in e["pids"].items()}


def _may_run(pid: int) -> bool | None:
    """False when ``pid`` is stopped or a SIGSTOP is pending for it, True when it may run, None
    when it is gone.

    A SIGSTOP takes effect only when its process next gets a CPU: on a loaded machine a rank
    the node manager has stopped can still read as running for a few milliseconds.
    """
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    if fields["State"].split()[0] in ("T", "t", "Z", "X"):
        return False
    pending = int(fields["ShdPnd"], 16) | int(fields["SigPnd"], 16)
    return not pending & SIGSTOP_BIT


def _snapshot(pids: list[int]) -> dict[int, bool | None] | None:
    """pid -> may run, or None when two reads in a row disagree.

    One read of several processes is not one instant: when a switch falls between reading the
    outgoing rank and the incoming one, both read as running.  A switch changes each process at
    most once, so when a second read agrees with the first, every state read held at once.
    """
    first = {pid: _may_run(pid) for pid in pids}
    return first if first == {pid: _may_run(pid) for pid in pids} else None


def _stats(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Each job's benchmark records, one per rank."""
    return {e["job"]: e["ranks"] for e in events(run_dir) if e["event"] == "stats"}


def test_gang_never_runs_two_jobs_on_one_pe_at_once(tmp_path, workload):
    path = workload("0 2 bsp --work 1.5 --pattern none\n0 2 bsp --work 1.5 --pattern none\n")
    coordinator = subprocess.Popen([*TESTBED, "run", str(path), "--scheduler", "gang", "--mpl",
                                    "2", "--pes", "2", "--out", "r"], cwd=tmp_path,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = overlaps = 0
    while coordinator.poll() is None:
        ranks = _rank_pes(tmp_path / "r")
        if len(ranks) == 4 and (states := _snapshot(list(ranks))) is not None:
            samples += 1
            running = Counter(ranks[pid] for pid, may_run in states.items() if may_run)
            overlaps += any(count > 1 for count in running.values())
        time.sleep(0.003)
    assert coordinator.returncode == 0
    assert samples > 100
    assert overlaps <= samples * 0.02, f"{overlaps} of {samples} samples ran two jobs on a PE"
    rows = jobs_csv(tmp_path / "r")
    for row in rows.values():
        assert float(row["cpu_s"]) < 1.2 * float(row["runtime"])


def test_gang_stops_a_job_half_of_its_life_while_another_shares_its_pes(tmp_path, workload):
    # Two like jobs on every PE at MPL 2 take turns a timeslice each, so the one that finishes
    # first spent about half of its life stopped: its runtime doubled.  Both of its figures
    # (wall time, time stopped) are its own, measured over the same stretch of the run.
    path = workload(f"0 2 {JOB}\n0 2 {JOB}\n")
    done = run_testbed("run", str(path), "--scheduler", "gang", "--pes", "2", "--out", "r",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    finishes = [e for e in events(tmp_path / "r") if e["event"] == "finish"]
    first = min(finishes, key=lambda e: e["t"])["job"]
    ranks = _stats(tmp_path / "r")[first]
    assert len(ranks) == 2
    for r in ranks:
        assert 1.6 <= r["wall_s"] / (r["wall_s"] - r["stopped_s"]) <= 2.6, ranks


def test_local_lets_a_fine_grained_job_wait_for_its_descheduled_peers(tmp_path, workload):
    # Local scheduling loses when a rank reaches a synchronization while its peer is
    # descheduled: the job's ranks spend much of their time waiting in the exchange (alone or
    # coscheduled on an idle machine, a few per cent).  Other load on the machine only
    # deschedules the peers more often.
    path = workload(f"0 2 {JOB}\n0 2 {PARTNER}\n")
    done = run_testbed("run", str(path), "--scheduler", "local", "--pes", "2", "--out", "r",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ranks = _stats(tmp_path / "r")["j1"]
    assert len(ranks) == 2
    for r in ranks:
        assert r["stopped_s"] == 0 and r["comm_s"] >= 0.25 * r["wall_s"], ranks
