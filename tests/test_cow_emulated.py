"""COW on real processes: owners as pinned CPU-bound processes, interrupted gangs killed and
launched again from scratch, in the same order of events as the simulator."""

from __future__ import annotations

import sys

import pytest
from conftest import PROGRAMS, events, jobs_csv, run_id, run_processes, run_testbed

from testbed.events import read_events
from testbed.machine import build_machine
from testbed.results.trace import build_trace

pytestmark = pytest.mark.realtime

ORDERED = ("start", "interrupt", "owner_start", "owner_end", "finish")


def _order(evs) -> list[tuple[str, str | int]]:
    return [(ev["event"], ev.get("job", ev.get("pe"))) for ev in evs if ev["event"] in ORDERED]


def test_an_interrupted_gang_restarts_in_the_simulators_order(tmp_path, workload):
    path = workload("0 2 bsp --work 1.5\n"
                    "0.3 1 bsp --work 0.8\n"
                    "owner 0.7 1 3\n"
                    "1.0 2 bsp --work 0.5\n")
    for scheduler in ("afcfs",):             # lgfs: benchmarks.papers.cow_emulated's test
        real, sim = tmp_path / scheduler, tmp_path / f"sim-{scheduler}"
        for command, out in (("run", real), ("simulate", sim)):
            done = run_testbed(command, str(path), "--scheduler", scheduler, "--pes", "2",
                               "--out", str(out), cwd=tmp_path)
            assert done.returncode == 0, done.stderr
        assert _order(events(real)) == _order(read_events(sim / "events.jsonl"))
        rows = jobs_csv(real)
        assert [rows[j]["restarts"] for j in ("j1", "j2", "j3")] == ["1", "0", "0"]
        assert 0.4 < float(rows["j1"]["lost_s"]) < 1.5
        assert all(row["status"] == "done" for row in rows.values())
        assert run_processes(run_id(real)) == []


def test_nothing_of_an_interrupted_gang_is_left_and_the_owner_is_pinned(tmp_path, workload):
    cpu = build_machine(2).cpus[1]
    path = workload("0 2 bsp --work 5\n"
                    f"0.2 1 {sys.executable} {PROGRAMS / 'cow_check.py'} j1 {cpu} 0.3\n"
                    "owner 1 1 1\n")
    out = tmp_path / "run"
    done = run_testbed("run", str(path), "--scheduler", "afcfs", "--pes", "2", "--out", str(out),
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = jobs_csv(out)
    assert rows["j2"]["status"] == "done", (out / "jobs" / "j2.err").read_text()
    assert (rows["j1"]["status"], rows["j1"]["restarts"]) == ("done", "1")
    evs = events(out)
    assert _order(evs) == [("start", "j1"), ("owner_start", 1), ("interrupt", "j1"),
                           ("start", "j2"), ("finish", "j2"), ("owner_end", 1), ("start", "j1"),
                           ("finish", "j1")]
    assert len([ev for ev in evs if ev["event"] == "pids" and ev["job"] == "j1"]) == 2
    marks = [(e["name"], e["tid"]) for e in build_trace(evs)["traceEvents"]
             if e.get("cat") == "owner"]
    assert sorted(marks) == [("interrupted", 0), ("interrupted", 1), ("owner", 1)]
    assert run_processes(run_id(out)) == []
