"""The event log's own lines for the kinds written for every job (emit_workload, emit_arrival,
...): byte for byte what emit writes for the same fields, flushed each or batched."""

from __future__ import annotations

import math

import pytest

from testbed.events import FIELDS, WORKLOAD_JOB_FIELDS, EventLog, read_events

ODD = [None, 0, 3, -1, 2.5, 16.336840603858516, math.inf, math.nan, -0.0, True, "é\"\n"]


def _events() -> list[tuple[str, float, dict]]:
    """(kind, t, fields) of every kind with its own method, with usual and odd values."""
    jobs = [dict(zip(WORKLOAD_JOB_FIELDS, ("j1", 1, 0.0, 32, 16.5, None, 16.5, None, None,
                                            None, False), strict=True)),
            dict(zip(WORKLOAD_JOB_FIELDS, ("é", 2, 1e-7, 1, None, 3.0, None, 1, 7, "x",
                                            True), strict=True))]
    out: list[tuple[str, float, dict]] = [
        ("workload", 0.0, {"path": "/w/a b.workload", "meta": {"generator": "lublin"},
                           "jobs": jobs}),
        ("workload", 2.0, {"path": None, "meta": {}, "jobs": []})]
    for i, odd in enumerate(ODD):
        t = 113.53310418949627 + i
        out += [
            ("arrival", t, {"job": f"j{i}", "due": t, "pes": 32, "work": odd, "limit": odd,
                            "estimate": odd, "user": "u", "argv": ["bsp", "--work", "2"],
                            "mem_mb": odd, "mem_source": "none"}),
            ("arrival", t, {"job": "j", "due": odd, "pes": odd, "work": 1.5, "limit": None,
                            "estimate": 2.5, "user": "", "argv": [], "mem_mb": None,
                            "mem_source": "declared"}),
            ("start", t, {"job": f"j{i}", "slot": odd, "pes": [0, 1, 2, 3], "cpus": None}),
            ("start", t, {"job": "j", "slot": 0, "pes": [5, 1, 9], "cpus": [2, 3]}),
            ("finish", t + 1e-7, {"job": f"j{i}", "status": "done", "exit_code": odd,
                                  "reason": "", "swap_in": odd, "swap_out": None,
                                  "cpu_s": odd}),
            ("switch", t, {"seq": i, "slot": odd, "jobs": ["a", "b"], "stopped": [],
                           "continued": ["b"], "latency_us": odd, "lag_us": None,
                           "slice_s": 600.0}),
            ("suspend", t, {"job": f"j{i}"}), ("resume", t, {"job": "é"})]
    return out


def _own(log: EventLog, kind: str, t: float, fields: dict) -> None:
    if kind == "workload":
        log.emit_workload(t, fields["path"], fields["meta"],
                          [tuple(job[name] for name in WORKLOAD_JOB_FIELDS)
                           for job in fields["jobs"]])
    elif kind in ("suspend", "resume"):
        log.emit_jobs(kind, t, [fields["job"]])
    else:
        getattr(log, f"emit_{kind}")(t, *fields.values())


@pytest.mark.parametrize("flush_each", [True, False])
def test_each_kind_s_own_method_writes_the_line_emit_writes(tmp_path, flush_each):
    own, generic = EventLog(tmp_path / "own.jsonl", flush_each), EventLog(tmp_path / "g.jsonl")
    for kind, t, fields in _events():
        assert kind in FIELDS
        _own(own, kind, t, fields)
        generic.emit(kind, t, **fields)
    own.close()
    generic.close()
    assert (tmp_path / "own.jsonl").read_bytes() == (tmp_path / "g.jsonl").read_bytes()


def test_a_batched_log_holds_events_back_and_writes_them_all_on_close(tmp_path):
    log = EventLog(tmp_path / "events.jsonl", flush_each=False)
    for i in range(10_000):
        log.emit_finish(i * 0.5, f"j{i}", "done", 0, "", None, None, float(i))
    assert (tmp_path / "events.jsonl").stat().st_size < 10_000 * 100
    log.close()
    events = read_events(tmp_path / "events.jsonl")
    assert [e["job"] for e in events] == [f"j{i}" for i in range(10_000)]
    assert events[-1] == {"t": 4999.5, "event": "finish", "job": "j9999", "status": "done",
                          "exit_code": 0, "reason": "", "swap_in": None, "swap_out": None,
                          "cpu_s": 9999.0}


def test_finish_lines_of_equal_but_differently_spelt_exit_codes_stay_apart(tmp_path):
    # 0, False, 0.0 and -0.0 are equal (and hash alike) but JSON spells each its own way: a
    # finish line's middle kept for one must not be written for another
    own, generic = EventLog(tmp_path / "own.jsonl"), EventLog(tmp_path / "g.jsonl")
    for i, code in enumerate([0, False, 0.0, -0.0, 0, 1, True, 1.0, None, 0]):
        fields = {"job": f"j{i}", "status": "done", "exit_code": code, "reason": "",
                  "swap_in": None, "swap_out": None, "cpu_s": 1.5}
        own.emit_finish(float(i), *fields.values())
        generic.emit("finish", float(i), **fields)
    own.close()
    generic.close()
    assert (tmp_path / "own.jsonl").read_bytes() == (tmp_path / "g.jsonl").read_bytes()
