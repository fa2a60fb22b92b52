"""Runs with real mpiexec: failures are recorded and the run goes on; limits; results files."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import PROGRAMS, events, jobs_csv, run_testbed

pytestmark = pytest.mark.realtime


def test_failures_are_recorded_and_the_run_goes_on(tmp_path, workload):
    path = workload(
        "0 1 sh -c 'exit 127'\n"
        f"0 2 {sys.executable} -c 'import sys; sys.exit(3)'\n"
        f"0 2 {sys.executable} {PROGRAMS / 'lose_rank.py'}\n"
        "0 2 limit=0.8 bsp --work 20 --pattern nn\n"
        "0.1 2 bsp --work 0.3 --pattern aa\n")
    done = run_testbed("run", str(path), "--scheduler", "gang", "--pes", "2", "--out", "r",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = jobs_csv(tmp_path / "r")
    assert rows["j1"]["status"] == "failed"
    assert rows["j1"]["exit_code"] == "127" and rows["j1"]["reason"].startswith("exit code 127")
    assert rows["j2"]["status"] == "failed" and rows["j2"]["exit_code"] == "3"
    assert rows["j3"]["status"] == "failed" and rows["j3"]["reason"]
    assert rows["j4"]["status"] == "timeout" and float(rows["j4"]["runtime"]) < 5
    assert rows["j5"]["status"] == "done"
    assert float(rows["j5"]["cpu_s"]) > 0.4 and rows["j5"]["comm_wait_s"] != ""
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["done"] == 1 and summary["failed"] == 4
    finishes = [e for e in events(tmp_path / "r") if e["event"] == "finish"]
    assert len(finishes) == 5


def test_a_program_gone_by_its_launch_fails_its_job_and_the_run_goes_on(tmp_path, workload):
    """Under a scheduler with the shim (its records exist for ranks never started), a job whose
    program was removed after the workload was checked, and one whose ranks exit at once with
    127, end failed with their reasons; the run completes and reports them."""
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    path = workload(f"0 1 id=1 rm {program}\n"
                    f"0 2 after=1 {program}\n"
                    "0 2 sh -c 'exit 127'\n")
    done = run_testbed("run", str(path), "--scheduler", "ics", "--pes", "2", "--out", "r",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    rows = jobs_csv(tmp_path / "r")
    assert rows["j1"]["status"] == "done" and not program.exists()
    assert rows["j2"]["status"] == "failed"
    assert rows["j2"]["reason"] == f"no such program '{program}'"
    assert rows["j2"]["cpu_s"] == "" and rows["j2"]["peak_rss_kib"] == ""
    assert rows["j3"]["status"] == "failed" and rows["j3"]["exit_code"] == "127"
    log = events(tmp_path / "r")
    assert log[-1]["event"] == "run_end" and log[-1]["status"] == "complete"
    [counters] = [e for e in log if e["event"] == "counters" and e["job"] == "j2"]
    assert all(r["cpu_s"] is None and r["peak_rss_kib"] is None and "shim" in r
               for r in counters["ranks"].values())


def test_job_timeout_option_applies_to_every_job(tmp_path, workload):
    path = workload("0 1 bsp --work 30\n")
    done = run_testbed("run", str(path), "--scheduler", "fcfs", "--job-timeout", "0.5",
                       "--out", "r", cwd=tmp_path)
    assert done.returncode == 0
    assert jobs_csv(tmp_path / "r")["j1"]["status"] == "timeout"


def test_run_directory_is_self_describing(tmp_path, workload):
    path = workload("# testbed: compress=10 seed=4\n0 1 bsp --work 0.2\n")
    run_testbed("run", str(path), "--scheduler", "gang", "--out", "r", cwd=tmp_path)
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    assert config["scheduler"] == "gang" and config["seed"] == "4"
    assert config["mpi"]["vendor"] and config["mpi"]["mpiexec"]
    assert config["machine"]["pes"] >= 1 and "oversubscribed" in config["machine"]
    kinds = [e["event"] for e in events(tmp_path / "r")]
    assert kinds[:3] == ["run_start", "workload", "arrival"] and kinds[-1] == "run_end"
    row = jobs_csv(tmp_path / "r")["j1"]
    assert row["group"] == "short" and float(row["slowdown"]) >= 1


def test_fcfs_never_runs_two_jobs_on_one_pe(tmp_path, workload):
    path = workload("0 2 bsp --work 0.4\n0 1 bsp --work 0.3\n0.1 1 bsp --work 0.3\n"
                    "0.2 2 bsp --work 0.2\n")
    done = run_testbed("run", str(path), "--scheduler", "fcfs", "--pes", "2", "--out", "r",
                       cwd=tmp_path)
    assert done.returncode == 0
    start = {e["job"]: e for e in events(tmp_path / "r") if e["event"] == "start"}
    end = {e["job"]: e["t"] for e in events(tmp_path / "r") if e["event"] == "finish"}
    assert len(start) == len(end) == 4
    for a in start:
        for b in start:
            if a < b and set(start[a]["pes"]) & set(start[b]["pes"]):
                assert end[a] <= start[b]["t"] or end[b] <= start[a]["t"], (a, b)
