"""Metrics derived from a hand-written event log: the two slowdowns, bounded slowdown, the two
utilizations, and how jobs.csv, summary.json and the table name them."""

from __future__ import annotations

import csv
import json

import pytest

from testbed.events import EventLog, read_events
from testbed.results.columns import Columns, from_events, read_log
from testbed.results.metrics import job_rows, summarize
from testbed.results.report import format_table, write_results


def _usage(cpu_s: float, **extra: float) -> dict[str, float]:
    return {"cpu_s": cpu_s, "minor_faults": 10, "major_faults": 0, "peak_rss_kib": 1000,
            "comm_s": 0.1, **extra}


# compress=10: tau = 1 s, short = work under 6 s.  Two PEs.
# j1: 2 PEs, work 2, arrives 0, runs 1..4; its benchmark estimates 2.5 s dedicated (max of ranks).
# j2: 1 PE, work 1, arrives 1, runs 4..6; no benchmark records, so dedicated = work.
# j3: 1 PE, work 3, arrives 0, runs 0..2 and fails: in no metric and no useful work.
EVENTS = [
    {"t": 0.0, "event": "run_start",
     "config": {"scheduler": "gang", "machine": {"pes": 2, "oversubscribed": False}}},
    {"t": 0.0, "event": "workload", "meta": {"compress": "10"}, "jobs": [
        {"job": "j1", "arrival": 0.0, "pes": 2, "work": 2.0},
        {"job": "j2", "arrival": 1.0, "pes": 1, "work": 1.0},
        {"job": "j3", "arrival": 0.0, "pes": 1, "work": 3.0}]},
    {"t": 0.0, "event": "arrival", "job": "j1", "due": 0.0},
    {"t": 0.0, "event": "arrival", "job": "j3", "due": 0.0},
    {"t": 0.0, "event": "start", "job": "j3"},
    {"t": 1.0, "event": "start", "job": "j1"},
    {"t": 1.0, "event": "arrival", "job": "j2", "due": 1.0},
    {"t": 2.0, "event": "finish", "job": "j3", "status": "failed", "exit_code": 1,
     "reason": "exit code 1"},
    {"t": 4.0, "event": "finish", "job": "j1", "status": "done", "exit_code": 0, "reason": ""},
    {"t": 4.0, "event": "stats", "job": "j1",
     "ranks": [_usage(2.0, dedicated_s=2.4), _usage(2.0, dedicated_s=2.5)]},
    {"t": 4.0, "event": "start", "job": "j2"},
    {"t": 6.0, "event": "counters", "job": "j2", "ranks": {"0": _usage(1.5)}},
    {"t": 6.0, "event": "finish", "job": "j2", "status": "done", "exit_code": 0, "reason": ""},
    {"t": 6.0, "event": "run_end", "status": "complete"},
]


def test_slowdowns_follow_the_thesis_and_memory_t3d_definitions():
    rows = {r.id: r for r in job_rows(EVENTS)}
    j1, j2 = rows["j1"], rows["j2"]
    assert (j1.runtime, j1.response, j1.work, j1.dedicated) == (3.0, 4.0, 2.0, 2.5)
    assert j1.slowdown == pytest.approx(1.5)  # runtime / work
    assert j1.response_slowdown == pytest.approx(1.6)  # response / dedicated
    assert j1.bounded_slowdown == pytest.approx(1.6)  # max(1, response / max(dedicated, tau))
    assert j2.dedicated == 1.0  # no estimate: the job's work
    assert j2.slowdown == pytest.approx(2.0)
    assert j2.response_slowdown == pytest.approx(5.0)
    assert j2.bounded_slowdown == pytest.approx(5.0)


def test_bounded_slowdown_uses_tau_for_short_dedicated_runtimes():
    events = [dict(ev) for ev in EVENTS]
    events[1] = {**events[1], "meta": {}}  # compress 1: tau = 10 s
    j1 = job_rows(events)[0]
    assert j1.response_slowdown == pytest.approx(1.6)
    assert j1.bounded_slowdown == 1.0  # max(1, 4 / max(2.5, 10))


def test_summary_has_both_slowdowns_and_both_utilizations():
    summary = summarize(EVENTS)
    assert summary["makespan"] == 6.0 and summary["done"] == 2
    assert summary["metrics"]["slowdown"]["all"]["mean"] == pytest.approx((1.5 + 2.0) / 2)
    assert summary["metrics"]["response_slowdown"]["all"]["mean"] == pytest.approx(3.3)
    assert summary["utilization"] == pytest.approx((2.0 + 2.0 + 1.5) / (2 * 6.0))
    # work x size of the done jobs: 2 x 2 + 1 x 1; the failed j3 counts for nothing
    assert summary["useful_utilization"] == pytest.approx(5.0 / (2 * 6.0))


def test_useful_utilization_is_unknown_when_a_done_job_has_no_work():
    events = json.loads(json.dumps(EVENTS))
    events[1]["jobs"][1]["work"] = None
    summary = summarize(events)
    assert summary["useful_utilization"] is None and summary["utilization"] is not None


def test_results_files_and_table_use_the_same_names(tmp_path):
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(ev) + "\n" for ev in EVENTS))
    summary = write_results(tmp_path)
    with open(tmp_path / "jobs.csv") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == "j1")
    assert (row["dedicated"], row["slowdown"], row["response_slowdown"]) == ("2.5", "1.5", "1.6")
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    table = {line.rsplit(maxsplit=1)[0]: line.split()[-1]
             for line in format_table({"gang": summary}).splitlines()[1:]}
    assert table["response slowdown mean (all)"] == "3.300"
    assert table["slowdown mean (all)"] == "1.750"
    assert table["useful utilization"] == f"{5.0 / 12:.3f}"
    assert table["utilization"] == f"{5.5 / 12:.3f}"


@pytest.mark.parametrize(("ranks", "cpu_s", "peak"), [
    ({"0": _usage(1.5, peak_rss_kib=2000), "1": dict.fromkeys(_usage(0.0))}, 1.5, 2000),
    ({"0": dict.fromkeys(_usage(0.0)), "1": dict.fromkeys(_usage(0.0))}, None, None),
    ({"0": {"shim": {"pid": 0}}, "1": {"shim": {"pid": 0}}}, None, None),   # older logs
])
def test_ranks_never_found_count_as_unknown_not_as_zero(ranks, cpu_s, peak):
    events = [e if e["event"] != "counters" else {**e, "ranks": ranks} for e in EVENTS]
    j2 = {r.id: r for r in job_rows(events)}["j2"]
    assert (j2.cpu_s, j2.peak_rss_kib) == (cpu_s, peak)
    assert j2.minor_faults == (None if cpu_s is None else 10)


def _columns_as_dicts(columns) -> dict:
    names = [*Columns.RAW, "config", "run_status", "ends_at", "switch_latencies", "derived"]
    return {name: getattr(columns, name) for name in names}


def _written(tmp_path, emit) -> str:
    """The line ``emit(log)`` writes with the event log's writer."""
    path = tmp_path / f"line-{len(list(tmp_path.iterdir()))}.jsonl"
    log = EventLog(path, flush_each=False)
    emit(log)
    log.close()
    return path.read_text()


def test_the_one_pass_reader_reads_what_json_reads(tmp_path):
    """Lines in the writer's own format (taken apart by pattern) and others (parsed as JSON:
    escaped names, other spacing, an int time) give the same columns, up to a torn last line."""
    events = [dict(ev) for ev in EVENTS]
    events[1] = {**events[1], "jobs": [*events[1]["jobs"],
                                       {"job": 'q"4', "arrival": 0.5, "pes": 1, "work": 7.0}]}
    lines = []
    for ev in events:
        kind = ev["event"]
        if kind == "arrival":
            lines.append(_written(tmp_path, lambda log, ev=ev: log.emit_arrival(
                ev["t"], ev["job"], ev["due"], 1, None, None, None, "", [], None, "none")))
        elif kind == "start":
            lines.append(_written(tmp_path, lambda log, ev=ev: log.emit_start(
                ev["t"], ev["job"], 0, [0, 1], None)))
        elif kind == "finish":
            lines.append(_written(tmp_path, lambda log, ev=ev: log.emit_finish(
                ev["t"], ev["job"], ev["status"], ev["exit_code"], ev["reason"], None, None,
                1.25)))
        else:
            lines.append(json.dumps(ev) + "\n")
    job = 'q"4'
    lines += [_written(tmp_path, lambda log: log.emit_arrival(6.5, job, 0.5, 1, 7.0, None, 7.0,
                                                               "", ["a b"], None, "none")),
              _written(tmp_path, lambda log: log.emit_start(6.5, job, 0, [1], None)),
              _written(tmp_path, lambda log: log.emit_jobs("suspend", 6.75, [job])),
              '{"t":7,"event":"suspend","job":"q\\"4"}\n',
              _written(tmp_path, lambda log: log.emit_switch(7.0, 1, 0, [job], [], [job], 12.5,
                                                              None, 1.0)),
              _written(tmp_path, lambda log: log.emit_finish(8.0, job, "done", 0, 'said "ok"',
                                                              None, None, 0.5)),
              '{"t": 9.0, "event": "finish", "job": "j1"']
    log = tmp_path / "events.jsonl"
    log.write_text("".join(lines))
    fast = read_log(log)
    parsed = from_events(read_events(log))
    assert _columns_as_dicts(fast) == _columns_as_dicts(parsed)
    assert fast.summary() == parsed.summary()
    at = fast.index[job]
    assert (fast.start[at], fast.end[at], fast.stops[at], fast.reason[at]) == \
        (6.5, 8.0, 2, 'said "ok"')
    assert fast.switch_latencies == [12.5] and fast.ends_at == 8.0
    assert fast.derived["wait"][at] == 6.0 and fast.cpu_s[2] == 1.25


def test_a_job_given_again_by_a_later_workload_is_made_afresh_in_its_place():
    start = EVENTS[0]
    events = [start,
              {"t": 0.0, "event": "workload", "meta": {}, "jobs": [
                  {"job": "a", "arrival": 0.0, "pes": 1, "work": 1.0},
                  {"job": "b", "arrival": 0.0, "pes": 1, "work": 2.0}]},
              {"t": 0.0, "event": "arrival", "job": "b", "due": 0.0},
              {"t": 0.0, "event": "start", "job": "b"},
              {"t": 1.0, "event": "workload", "meta": {}, "jobs": [
                  {"job": "c", "arrival": 0.0, "pes": 2, "work": 3.0},
                  {"job": "b", "arrival": 0.5, "pes": 2, "work": 4.0}]}]
    rows = job_rows(events)
    assert [(r.id, r.size, r.work, r.status, r.start) for r in rows] == [
        ("a", 1, 1.0, "not started", None), ("b", 2, 4.0, "not started", None),
        ("c", 2, 3.0, "not started", None)]
