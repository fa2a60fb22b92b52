"""Event logs cut or damaged anywhere: the results read up to the last whole event, say the run
is incomplete and when its log ends, and count unfinished jobs as unfinished, never failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_testbed

from testbed.driver import Driver
from testbed.events import EventLog, read_events
from testbed.policies import PolicyConfig, make_policy
from testbed.results.metrics import job_rows, summarize
from testbed.results.report import format_table, write_results
from testbed.results.trace import build_trace
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads.files import load_workload

WORKLOAD = ("0 2 bsp --work 3\n0 1 bsp --work 2\n1 2 limit=1.5 bsp --work 4\n"
            "2 1 bsp --work 1\n4 2 bsp --work 2\n")


@pytest.fixture(scope="module")
def whole_log(tmp_path_factory) -> bytes:
    """The event log of a simulated gang run of WORKLOAD: four jobs done, one timed out."""
    tmp = tmp_path_factory.mktemp("whole")
    (tmp / "w.txt").write_text(WORKLOAD)
    workload = load_workload(tmp / "w.txt", 1.0)
    policy = make_policy("gang", PolicyConfig(2, 2, 1.0, "buddy"))
    executor = SimulationExecutor({j.id: j.work for j in workload.jobs}, 0.0)
    (tmp / "run").mkdir()
    config = {"scheduler": "gang", "mpl": 2, "timeslice": 1.0,
              "machine": {"pes": 2, "oversubscribed": False}}
    Driver(workload, policy, executor, tmp / "run", config,
           log=EventLog(tmp / "run" / "events.jsonl", flush_each=False)).run()
    return (tmp / "run" / "events.jsonl").read_bytes()


def test_the_whole_log_has_one_failure_and_no_unfinished_job(whole_log, tmp_path):
    (tmp_path / "events.jsonl").write_bytes(whole_log)
    summary = summarize(read_events(tmp_path / "events.jsonl"))
    assert (summary["status"], summary["done"], summary["failed"], summary["unfinished"]) == \
        ("complete", 4, 1, 0)


def test_a_log_cut_anywhere_after_the_start_counts_what_had_not_ended_as_unfinished(whole_log,
                                                                                   tmp_path):
    lines = whole_log.splitlines(keepends=True)
    first = len(lines[0])
    ends = {json.loads(line)["job"]: json.loads(line)["status"]
            for line in lines if json.loads(line)["event"] == "finish"}
    cuts = range(first, len(whole_log), max(1, (len(whole_log) - first) // 400))
    for cut in cuts:
        (tmp_path / "events.jsonl").write_bytes(whole_log[:cut])
        events = read_events(tmp_path / "events.jsonl")
        summary = summarize(events)
        rows = {row.id: row for row in job_rows(events)}
        # the jobs the log knows of so far (those yet to arrive are not in it)
        assert summary["done"] + summary["failed"] + summary["unfinished"] == \
            summary["jobs"] == len(rows) <= 5, cut
        assert summary["failed"] <= 1 and summary["done"] <= 4, cut
        for job, row in rows.items():
            assert row.end is None or row.status == ends[job], (cut, job)
        ended = sum(e["event"] == "finish" for e in events)
        assert summary["unfinished"] == len(rows) - ended, cut
        if not any(e["event"] == "run_end" for e in events):
            assert summary["status"] == "incomplete" and \
                summary["log_ends_at"] == events[-1]["t"]
            table = format_table({"gang": summary})
            assert f"incomplete, log ends at {events[-1]['t']:.3f} s" in table
            assert ("jobs unfinished" in table) == (summary["unfinished"] > 0)
        build_trace(events)


def test_a_damaged_line_ends_the_reading_there(whole_log, tmp_path):
    lines = whole_log.splitlines(keepends=True)
    middle = len(lines) // 2
    damaged = b"".join(lines[:middle]) + b'{"t": 1.0, "ev\x00\xff\n' + b"".join(lines[middle:])
    (tmp_path / "events.jsonl").write_bytes(damaged)
    assert len(read_events(tmp_path / "events.jsonl")) == middle
    (tmp_path / "events.jsonl").write_bytes(b"".join(lines[:middle]) + b"[1, 2]\n"
                                            + b"".join(lines[middle:]))
    assert len(read_events(tmp_path / "events.jsonl")) == middle


@pytest.mark.realtime
def test_a_log_without_its_start_is_one_clear_message(whole_log, tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / "events.jsonl").write_bytes(whole_log[:len(whole_log.splitlines()[0]) // 2])
    with pytest.raises(ValueError, match="no whole run_start event"):
        write_results(run)
    done = run_testbed("report", "r", cwd=tmp_path)
    assert done.returncode == 2 and "no whole run_start event" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.realtime
def test_report_on_a_cut_log_says_incomplete_and_unfinished(whole_log, tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    cut = len(whole_log) // 2 + 7
    (run / "events.jsonl").write_bytes(whole_log[:cut])
    done = run_testbed("report", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "incomplete, log ends at" in done.stdout and "jobs unfinished" in done.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["unfinished"] > 0 and summary["failed"] <= 1
    assert Path(run / "jobs.csv").read_text().count("\n") == 6
