"""Batsim ``jobs.csv`` export from a hand-written event log: columns, interval sets, states."""

from __future__ import annotations

import csv
import json
import sys

import pytest

from testbed.results.batsim import (
    BATSIM_FIELDS,
    batsim_job_id,
    batsim_rows,
    interval_set,
    profile_name,
    write_batsim,
)

BSP = [sys.executable, "-m", "testbed.jobs.bsp", "--work", "2", "--timeslice", "0.2"]


def _arrival(t: float, job: str, argv: list[str], limit: float | None = None) -> dict:
    return {"t": t, "event": "arrival", "job": job, "due": t, "pes": 1, "work": None,
            "limit": limit, "estimate": None, "user": "", "argv": argv, "mem_mb": None,
            "mem_source": "none"}


def _finish(t: float, job: str, status: str, code: int | None) -> dict:
    return {"t": t, "event": "finish", "job": job, "status": status, "exit_code": code,
            "reason": "", "swap_in": 0, "swap_out": 0, "cpu_s": None}


# Six PEs, --job-timeout 100.
# j1: 5 PEs, bsp, arrives 0, starts 1 on [5, 0, 1, 2, 3], ends 4: done.
# j2: 1 PE, /usr/bin/hostname, arrives 1, runs 1..2 on PE 4, exits 1: failed.
# j3: 1 PE, limit 2, arrives 2, runs 4..6 on PE 4, reaches its limit: timeout.
# j4: 1 PE, arrives 2, runs 4..4 on PE 4 and is killed at once (shutdown): killed, stretch inf.
# j5: 2 PEs, arrives 5, never starts (the run was interrupted): left out.
# j6: in the workload, never arrives: left out.
EVENTS = [
    {"t": 0.0, "event": "run_start", "run_id": "r", "wall_time": 0.0,
     "config": {"scheduler": "gang", "job_timeout": 100.0,
                "machine": {"pes": 6, "oversubscribed": False}}},
    {"t": 0.0, "event": "workload", "path": "/tmp/wl/small-mix.workload", "meta": {}, "jobs": [
        {"job": "j1", "arrival": 0.0, "pes": 5, "work": 2.0, "limit": None},
        {"job": "j2", "arrival": 1.0, "pes": 1, "work": None, "limit": None},
        {"job": "j3", "arrival": 2.0, "pes": 1, "work": None, "limit": 2.0},
        {"job": "j4", "arrival": 2.0, "pes": 1, "work": None, "limit": None},
        {"job": "j5", "arrival": 5.0, "pes": 2, "work": None, "limit": None},
        {"job": "j6", "arrival": 50.0, "pes": 1, "work": None, "limit": None}]},
    _arrival(0.0, "j1", BSP),
    {"t": 1.0, "event": "start", "job": "j1", "slot": 0, "pes": [5, 0, 1, 2, 3], "cpus": None},
    _arrival(1.0, "j2", ["/usr/bin/hostname", "-s"]),
    {"t": 1.0, "event": "start", "job": "j2", "slot": 0, "pes": [4], "cpus": None},
    _finish(2.0, "j2", "failed", 1),
    _arrival(2.0, "j3", ["sleep", "10"], limit=2.0),
    _arrival(2.0, "j4", ["sleep", "10"]),
    _finish(4.0, "j1", "done", 0),
    {"t": 4.0, "event": "start", "job": "j3", "slot": 0, "pes": [4], "cpus": None},
    {"t": 4.0, "event": "start", "job": "j4", "slot": 1, "pes": [4], "cpus": None},
    _finish(4.0, "j4", "killed", -9),
    _arrival(5.0, "j5", BSP),
    {"t": 6.0, "event": "limit", "job": "j3", "limit": 2.0},
    _finish(6.0, "j3", "timeout", -9),
    {"t": 7.0, "event": "run_end", "status": "interrupted", "swept": 0},
]


def test_interval_set_is_canonical():
    assert interval_set([0, 1, 2, 3, 5]) == "0-3 5"
    assert interval_set([5, 3, 1, 2, 0, 2]) == "0-3 5"
    assert interval_set([7]) == "7"
    assert interval_set([1, 3, 5, 6]) == "1 3 5-6"
    assert interval_set([]) == ""


def test_job_ids_and_profiles():
    assert batsim_job_id("j12") == "12"
    assert batsim_job_id("custom") == "custom"
    assert profile_name(BSP) == "bsp"
    assert profile_name(["/usr/bin/hostname", "-s"]) == "hostname"
    assert profile_name(None) == ""


def test_rows_follow_batsim_columns_and_conventions():
    rows = batsim_rows(EVENTS)
    assert [r["job_id"] for r in rows] == ["1", "2", "3", "4"]  # j5, j6 never started
    assert all(tuple(r) == BATSIM_FIELDS for r in rows)
    j1 = rows[0]
    assert j1 == {
        "job_id": "1", "workload_name": "small-mix", "profile": "bsp",
        "submission_time": "0.000000", "requested_number_of_resources": "5",
        "requested_time": "100.000000", "success": "1", "final_state": "COMPLETED_SUCCESSFULLY",
        "starting_time": "1.000000", "execution_time": "3.000000", "finish_time": "4.000000",
        "waiting_time": "1.000000", "turnaround_time": "4.000000", "stretch": "1.333333",
        "allocated_resources": "0-3 5", "consumed_energy": "-1.000000", "metadata": ""}


def test_final_states_and_success():
    rows = {r["job_id"]: r for r in batsim_rows(EVENTS)}
    states = {job: (r["final_state"], r["success"]) for job, r in rows.items()}
    assert states == {"1": ("COMPLETED_SUCCESSFULLY", "1"), "2": ("COMPLETED_FAILED", "0"),
                      "3": ("COMPLETED_WALLTIME_REACHED", "0"), "4": ("COMPLETED_KILLED", "0")}
    assert rows["2"]["profile"] == "hostname" and rows["2"]["allocated_resources"] == "4"
    assert rows["3"]["requested_time"] == "2.000000"  # its own limit over --job-timeout
    assert rows["4"]["execution_time"] == "0.000000" and rows["4"]["stretch"] == "inf"


def test_requested_time_is_minus_one_without_any_limit():
    events = json.loads(json.dumps(EVENTS))
    events[0]["config"]["job_timeout"] = None
    rows = {r["job_id"]: r for r in batsim_rows(events)}
    assert rows["1"]["requested_time"] == "-1.000000"
    assert rows["3"]["requested_time"] == "2.000000"


def test_a_limit_event_makes_a_killed_job_walltime_reached():
    events = [ev if not (ev["event"] == "finish" and ev["job"] == "j3")
              else {**ev, "status": "killed"} for ev in EVENTS]
    row = next(r for r in batsim_rows(events) if r["job_id"] == "3")
    assert row["final_state"] == "COMPLETED_WALLTIME_REACHED"


def test_unknown_status_is_an_error():
    events = [ev if not (ev["event"] == "finish" and ev["job"] == "j2")
              else {**ev, "status": "vanished"} for ev in EVENTS]
    with pytest.raises(ValueError, match="vanished"):
        batsim_rows(events)


def test_file_reads_back_with_csv(tmp_path):
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(ev) + "\n" for ev in EVENTS))
    path = write_batsim(tmp_path)
    assert path == tmp_path / "batsim_jobs.csv"
    text = path.read_text()
    assert text.splitlines()[0] == ",".join(BATSIM_FIELDS)
    assert "\r" not in text
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == BATSIM_FIELDS
        read = list(reader)
    assert read == batsim_rows(EVENTS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batsim_jobs.csv", "events.jsonl"]
