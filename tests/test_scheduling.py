"""The scheduling is real: sampled process states and runtimes under gang and local."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from conftest import TESTBED, events, jobs_csv, run_testbed

from testbed import procs


def _rank_pes(run_dir: Path) -> dict[int, int]:
    """pid -> PE for every rank the run has reported so far."""
    evs = events(run_dir) if (run_dir / "events.jsonl").exists() else []
    pes = {e["job"]: e["pes"] for e in evs if e["event"] == "start"}
    return {pid: pes[e["job"]][int(rank)] for e in evs if e["event"] == "pids"
            for rank, pid in e["pids"].items()}


def test_gang_never_runs_two_jobs_on_one_pe_at_once(tmp_path, workload):
    path = workload("0 2 bsp --work 1.5 --pattern none\n0 2 bsp --work 1.5 --pattern none\n")
    coordinator = subprocess.Popen([*TESTBED, "run", str(path), "--scheduler", "gang", "--mpl",
                                    "2", "--pes", "2", "--out", "r"], cwd=tmp_path,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = overlaps = 0
    while coordinator.poll() is None:
        ranks = _rank_pes(tmp_path / "r")
        live: dict[int, int] = {}
        for pid, pe in ranks.items():
            if procs.state(pid) not in (None, "T", "t", "Z"):
                live[pe] = live.get(pe, 0) + 1
        if len(ranks) == 4:
            samples += 1
            overlaps += any(count > 1 for count in live.values())
        time.sleep(0.003)
    assert coordinator.returncode == 0
    assert samples > 100
    # A signal is delivered within microseconds; a sample can catch one switch in flight.
    assert overlaps <= samples * 0.02, f"{overlaps} of {samples} samples ran two jobs on a PE"
    rows = jobs_csv(tmp_path / "r")
    for row in rows.values():
        assert float(row["cpu_s"]) < 1.2 * float(row["runtime"])


def test_fine_grained_job_gang_doubles_and_local_is_worse(tmp_path, workload):
    # Local scheduling loses when a rank reaches a synchronization while its peer is
    # descheduled.  "Fine-grained" must be fine next to the kernel's time slice (a few ms),
    # hence 1 ms iterations (G = 0.005 of T = 0.2 s).  The second job is a medium-grained,
    # high-variance one from the THESIS mix: a partner whose ranks behave alike on both CPUs
    # lets the kernel's per-CPU schedules phase-lock and hides the effect.
    job = "bsp --work 2.5 --granularity 0.005 --pattern aa"
    partner = "bsp --work 2.5 --granularity 0.5 --pattern nn --variance 0.75 --seed 1"
    alone = workload(f"0 2 {job}\n", "alone.txt")
    shared = workload(f"0 2 {job}\n0 2 {partner}\n", "shared.txt")
    runtime = {}
    for scheduler, path in (("fcfs", alone), ("gang", shared), ("local", shared)):
        done = run_testbed("run", str(path), "--scheduler", scheduler, "--pes", "2",
                           "--out", scheduler, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        runtime[scheduler] = float(jobs_csv(tmp_path / scheduler)["j1"]["runtime"])
    assert 1.6 <= runtime["gang"] / runtime["fcfs"] <= 2.6, runtime
    assert runtime["local"] > runtime["gang"], runtime
