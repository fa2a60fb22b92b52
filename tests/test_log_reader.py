"""The log reader (``read_log``: the job lines taken apart by pattern, their figures put in
place inline) against the events parsed as JSON and fed one by one (``from_events``), on
random logs written by the event log's writer: same columns, same types, same summary, with
odd names, edge numbers, repeated and out-of-order job lines, torn and damaged lines."""

from __future__ import annotations

import math
import random

import pytest

from testbed.events import EventLog, read_events
from testbed.results.columns import Columns, from_events, read_log

NAMES = ('q"4', "b\\s", "caf\u00e9", "x y", "a,b")
REASONS = ("", 'said "ok"', "exit code 1", "tab\there", "\u00e9t\u00e9")
ODD = ("nan", "stats", "json_line", "torn", "damaged", "again", "early", "unknown")


def _number(rng: random.Random) -> float:
    """A time or figure: mostly plain, sometimes a whole number, zero or huge."""
    return rng.choice([round(rng.uniform(0, 500), 6), float(rng.randrange(50)), 0.0, 1e17,
                       round(rng.uniform(0, 1e-3), 6)])


def _write(path, rng: random.Random, jobs: int, odd: frozenset[str]) -> None:
    """A log of ``jobs`` jobs in two workloads, their events in time order, with the ``odd``
    features asked for."""
    ids = [rng.choice(NAMES) + str(i) if rng.random() < 0.2 else f"j{i}" for i in range(jobs)]
    second_at = rng.randrange(jobs + 1)
    when = 200.0
    log = EventLog(path, flush_each=False)
    log.emit("run_start", 0.0, run_id="r", wall_time=0.0,
             config={"scheduler": "gang", "machine": {"pes": 4, "oversubscribed": False}})
    events: list[tuple[float, int, str, object]] = []
    for at, job in enumerate(ids):
        base = when if at >= second_at else 0.0
        t = base + _number(rng)
        events.append((t, 0, "arrival", job))
        if rng.random() < 0.1:
            continue
        t += _number(rng)
        events.append((t, 1, "start", job))
        for _ in range(rng.choice([0, 0, 1, 2])):
            kind = rng.choice(["suspend", "resume", "switch", "interrupt", "start", "job_class",
                               "paging", "limit", "arrival", "finish"])
            t += _number(rng)
            events.append((t, 2, kind, job))
        if rng.random() < 0.85:
            events.append((t + _number(rng), 3, "finish", job))
    events.sort(key=lambda e: (e[0], e[1]))

    def workload(t: float, given: list[str]) -> None:
        log.emit_workload(t, None, {"compress": "2"}, [
            (job, n, _number(rng), rng.randrange(1, 5),
             rng.choice([_number(rng), None, 0.0, 7]), None, rng.choice([None, 3.5]), None,
             None, rng.choice([None, "a"]), rng.random() < 0.5) for n, job in enumerate(given)])

    workload(0.0, ids[:second_at])
    second_done = False
    for t, _, kind, job in events:
        if not second_done and t >= when:
            workload(when, ids[second_at:])
            second_done = True
        _emit(log, rng, t, kind, job, odd)
    if not second_done:
        workload(when, ids[second_at:])
    if "again" in odd and ids:
        workload(when + 1, [ids[0]])
    if "stats" in odd and ids:
        log.emit("stats", when + 2, job=ids[-1], ranks=[
            {"cpu_s": 1.5, "minor_faults": 1, "major_faults": 0, "peak_rss_kib": 9,
             "comm_s": 0.5}])
    log.emit("run_end", when + 3, status="complete", swept=0)
    log.close()
    text = path.read_text().splitlines(keepends=True)
    if "json_line" in odd:
        at = rng.randrange(len(text))
        text[at] = text[at].replace(", ", ",").replace(": ", ":")
    if "damaged" in odd:
        at = rng.randrange(len(text))
        text[at] = text[at][:len(text[at]) // 2] + "\n"
    if "early" in odd and ids:
        text.insert(1, f'{{"t": 0.0, "event": "suspend", "job": "{ids[-1]}"}}\n')
    if "unknown" in odd:
        text.insert(len(text) - 1, '{"t": 9.0, "event": "suspend", "job": "nobody"}\n')
    if "torn" in odd:
        text[-1] = text[-1][:-5]
    path.write_text("".join(text))


def _emit(log: EventLog, rng: random.Random, t: float, kind: str, job: str,
          odd: frozenset[str]) -> None:
    """One event of ``kind`` about ``job`` at ``t``."""
    if kind == "arrival":
        log.emit_arrival(t, job, _number(rng), 2, rng.choice([None, 1.5]), None, None, "u",
                         ["bsp", "--work", "1"], None, "none")
    elif kind == "start":
        log.emit_start(t, job, rng.choice([0, None]), [0, 1], rng.choice([None, [2, 3]]))
    elif kind == "finish":
        cpu = rng.choice([None, _number(rng), 2, math.nan if "nan" in odd else 1.0])
        log.emit_finish(t, job, rng.choice(["done", "failed", "killed", "timeout"]),
                        rng.choice([0, 1, -9, None]), rng.choice(REASONS),
                        rng.choice([None, 4]), None, cpu)
    elif kind in ("suspend", "resume"):
        log.emit_jobs(kind, t, [job])
    elif kind == "switch":
        log.emit_switch(t, 1, rng.choice([0, None]), [job], [], [job],
                        rng.choice([12.5, 3, 0.0]), None, rng.choice([None, 1.0]))
    elif kind == "interrupt":
        log.emit("interrupt", t, job=job, pe=0, lost_s=_number(rng), cpu_s=rng.choice([None, 0.5]))
    elif kind == "job_class":
        log.emit("job_class", t, job=job, old="a", new="b")
    elif kind == "paging":
        log.emit("paging", t, job=job, direction="out", seconds=0.25, swap_kib_before=0,
                 swap_kib_after=1)
    else:
        log.emit("limit", t, job=job, limit=1.0)


def _parsed(path) -> Columns:
    """The log's events parsed as JSON and fed one by one, derived."""
    return from_events(read_events(path))


def _figures(columns: Columns) -> str:
    """Every column and fact of ``columns``, with its values' types (``repr``: 1 is not
    1.0)."""
    names = [*Columns.RAW, "config", "run_status", "ends_at", "switch_latencies", "derived"]
    return repr({name: getattr(columns, name) for name in names})


@pytest.mark.parametrize("seed", range(60))
def test_the_reader_reads_what_json_reads(tmp_path, seed):
    rng = random.Random(seed)
    odd = frozenset(o for o in ODD if rng.random() < 0.12) if seed % 3 else frozenset()
    path = tmp_path / "events.jsonl"
    _write(path, rng, rng.choice([0, 1, 5, 40]), odd)
    try:
        expected = _parsed(path)
    except KeyError:
        with pytest.raises(KeyError):
            read_log(path)
        return
    got = read_log(path)
    assert _figures(got) == _figures(expected)
    if expected.config is not None:
        assert repr(got.summary()) == repr(expected.summary())


def test_the_reader_puts_every_kind_of_job_line_in_place(tmp_path):
    """Each figure of the writer's own lines lands on its job."""
    path = tmp_path / "events.jsonl"
    log = EventLog(path, flush_each=False)
    log.emit("run_start", 0.0, run_id="r", wall_time=0.0,
             config={"scheduler": "gang", "machine": {"pes": 2, "oversubscribed": False}})
    log.emit_workload(0.0, None, {}, [("a", 1, 0.0, 1, 2.0, None, None, None, None, None, False),
                                      ('q"', 2, 0.0, 1, 3.0, None, None, None, None, None, False)])
    log.emit_arrival(0.0, "a", 0.5, 1, 2.0, None, None, "", [], None, "none")
    log.emit_arrival(0.0, 'q"', 0.25, 1, 3.0, None, None, "", [], None, "none")
    log.emit_start(1.0, "a", 0, [0], None)
    log.emit_jobs("suspend", 2.0, ["a"])
    log.emit_switch(2.0, 1, 0, ['q"'], ["a"], ['q"'], 7, None, None)
    log.emit_start(2.0, 'q"', 0, [1], None)
    log.emit_jobs("resume", 3.0, ["a"])
    log.emit_start(3.5, "a", 0, [0], None)
    log.emit_finish(4.0, "a", "done", 0, "", None, None, 1.5)
    log.emit_finish(5.0, 'q"', "failed", None, 'x "y"', 3, None, None)
    log.close()
    columns = read_log(path)
    assert (columns.arrival, columns.start, columns.end) == ([0.5, 0.25], [1.0, 2.0], [4.0, 5.0])
    assert (columns.status, columns.exit_code, columns.reason) == (
        ["done", "failed"], [0, None], ["", 'x "y"'])
    assert (columns.stops, columns.cpu_s, columns.swap_in) == ([1, 0], [1.5, None], [None, 3])
    assert columns.switch_latencies == [7] and columns.ends_at == 5.0


HEAD = [
    '{"t": 0.0, "event": "run_start", "run_id": "r", "wall_time": 0.0, "config": {}}\n',
    '{"t": 0.0, "event": "workload", "path": null, "meta": {}, "jobs": [{"job": "a", '
    '"arrival": 0.0, "pes": 1, "work": 1.0}]}\n',
    '{"t": 1.5, "event": "start", "job": "a", "slot": 0, "pes": [0], "cpus": null}\n']
FINISH = ('{"t": 3.0, "event": "finish", "job": "a", "status": "done", "exit_code": 0, '
          '"reason": "", "swap_in": null, "swap_out": null, "cpu_s": null}\n')


@pytest.mark.parametrize("damaged", ['{"t": 2.0, "event": "limit", "job": "a", "li\n',
                                     '{"t": 2.0, "event": "finish", "job": "a", "sta\n', "\n"])
def test_reading_stops_at_a_damaged_line(tmp_path, damaged):
    """A damaged line ends the log there, for the reader as for the JSON events."""
    path = tmp_path / "events.jsonl"
    path.write_text("".join([*HEAD, damaged, FINISH]))
    found = read_log(path)
    assert (found.status, found.end, found.ends_at) == (["running"], [None], 1.5)
    assert _figures(found) == _figures(_parsed(path))


def test_a_list_the_derivation_does_not_use_is_checked_by_its_brackets_only(tmp_path):
    """A start whose PE list is damaged inside its brackets is still read (the derivation
    does not use the list); one whose brackets are broken ends the log there."""
    path = tmp_path / "events.jsonl"
    inside = HEAD[2].replace('"pes": [0]', '"pes": [0, x]')
    path.write_text("".join([*HEAD[:2], inside, FINISH]))
    found = read_log(path)
    assert (found.start, found.end, found.status) == ([1.5], [3.0], ["done"])
    path.write_text("".join([*HEAD[:2], HEAD[2].replace('"pes": [0]', '"pes": [0'), FINISH]))
    found = read_log(path)
    assert (found.start, found.end, found.ends_at) == ([None], [None], 0.0)
