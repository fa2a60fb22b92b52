"""MEMORY §2.1.3's estimator over an SWF log (benchmarks.papers.memory_estimator) and the
reproduction's row on it: tiny logs written here, with known answers."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.papers import memory_estimator
from benchmarks.papers.memory_estimator import Prediction, log_clock, replay
from benchmarks.papers.reproduce import memory
from benchmarks.papers.reproduce.claims import AGREES, CANNOT_TELL, DISAGREES
from benchmarks.papers.reproduce.context import Context
from testbed.memory_history import estimate_of
from testbed.workloads.swf import swf_columns

START = int(datetime(1995, 12, 1, tzinfo=UTC).timestamp())


def at(day: str, hour: int = 12) -> int:
    """Seconds from the log's start (1995-12-01 00:00 UTC) to noon (or ``hour``) UTC of
    ``day``."""
    return int(datetime.fromisoformat(f"{day}T{hour:02d}:00").replace(tzinfo=UTC).timestamp()
               ) - START


def line(job: int, submit: int, procs: int, mem_kb: int, user: int, executable: int) -> str:
    """An SWF job line with the fields the estimator reads; the others unknown."""
    return (f"{job} {submit} 0 60 {procs} -1 {mem_kb} {procs} -1 -1 1 {user} -1 {executable} "
            "-1 -1 -1 -1")


A, C, D, E = (7, 32, 1), (9, 16, 3), (10, 4, 5), (11, 8, 4)     # (executable, procs, user)
JOBS = [
    (1, "1995-12-20", E, 3072),       # before the window: recorded, not counted
    (2, "1996-01-03", A, 10240),      # no history: not predicted
    (3, "1996-01-05", C, 4096),
    (4, "1996-01-10", A, 12288),      # history 10 MB: predicted 10 against 12
    (5, "1996-01-15", E, 3072),       # December's 3 MB, the previous month: exact
    (6, "1996-02-02", A, 12288),      # January's 10 and 12: min(12, 11 + 3) = 12, exact
    (7, "1996-02-03", (7, 64, 1), 5120),    # A's program and user on 64 processors: unseen
    (8, "1996-02-04", (7, 32, 2), 5120),    # A's program and size, another user: unseen
    (9, "1996-02-05", D, -1),         # unknown memory: neither predicted nor recorded
    (10, "1996-02-06", D, 2048),      # so D has no history
    (11, "1996-02-07", (-1, 4, 5), 2048),   # unknown executable
    (12, "1996-03-01", C, 4096),      # C last ran in January: dropped at March
    (13, "1996-04-01", A, 12288),     # after the window
]


def write_log(tmp_path, header: str = "; TimeZoneString: UTC\n", name: str = "t.swf") -> str:
    """The jobs above as an SWF log with ``UnixStartTime`` and ``header``; its path."""
    text = (f"; Version: 2.2\n; UnixStartTime: {START}\n{header}"
            + "".join(line(job, at(day), procs, mem, user, exe) + "\n"
                      for job, day, (exe, procs, user), mem in JOBS))
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return str(path)


def replayed(path: str, first: str = "1996-01", last: str = "1996-03"):
    return replay(swf_columns(path)[1], log_clock(path), first, last)


def test_the_replay_predicts_from_the_same_identitys_last_two_months(tmp_path):
    result = replayed(write_log(tmp_path))
    assert result.predictions == [Prediction(4, 10.0, 12.0), Prediction(5, 3.0, 3.0),
                                  Prediction(6, 12.0, 12.0)]
    assert (result.jobs, result.unknown_memory, result.unknown_identity) == (11, 1, 1)


def test_the_window_counts_its_jobs_only_but_the_history_holds_the_earlier_months(tmp_path):
    result = replayed(write_log(tmp_path, name="t.swf.gz"), "1996-02", "1996-02")
    assert result.predictions == [Prediction(6, 12.0, 12.0)]
    assert (result.jobs, result.unknown_memory, result.unknown_identity) == (6, 1, 1)
    # A last ran in February: April keeps March's values and its own, so A has none
    late = replayed(write_log(tmp_path), "1996-04", "1996-09")
    assert (late.jobs, late.predictions) == (1, [])


def test_the_estimate_is_the_smaller_of_the_largest_and_mean_plus_3_sd():
    assert estimate_of([10.0, 12.0]) == 12.0                   # mean + 3 sd = 14
    # 19 x 1 and one 10: mean 1.45, variance (19 x 0.45^2 + 8.55^2) / 20 = 3.8475
    assert estimate_of([1.0] * 19 + [10.0]) == pytest.approx(1.45 + 3 * 3.8475 ** 0.5,
                                                             rel=1e-12)


def test_the_shares_and_fig_2s_histograms(tmp_path):
    record = memory_estimator.measure(write_log(tmp_path), "1996-01", "1996-03")
    assert (record["jobs"], record["predicted"]) == (11, 3)
    assert [record[key]["k"] for key in ("within_1mb", "within_5mb", "under")] == [2, 3, 1]
    assert record["under"]["share"] == pytest.approx(1 / 3)
    assert record["under"]["low"] < 1 / 3 < record["under"]["high"]
    assert record["histogram_mb"] == [[-2, 1], [0, 2]]
    assert record["histogram_percent"] == [[-50, 1], [0, 2]]      # -2 / 12 = -17 %
    assert record["time_zone"] == "UTC"


@pytest.mark.parametrize(("header", "month"), [
    ("; TimeZoneString: US/Mountain\n", "1996-01"),
    ("; TimeZone: -25200\n", "1996-01"),
    ("", "1996-02"),
])
def test_months_are_the_logs_time_zones(tmp_path, header, month):
    clock = log_clock(write_log(tmp_path, header))
    assert clock.month(at("1996-02-01", hour=3)) == month      # 20:00 on Jan 31 in Denver


@pytest.mark.parametrize(("edit", "message"), [
    (lambda text: text.replace(" 4096 ", " four ", 1), ":6: field 7 (mem) is not a number: 'four'"),
    (lambda text: text.replace(f"UnixStartTime: {START}", "UnixStartTime: soon"),
     ":2: header field UnixStartTime is not a whole number: 'soon'"),
    (lambda text: text.replace("TimeZoneString: UTC", "TimeZoneString: Mars/Olympus"),
     ":3: header field TimeZoneString is not a known time zone: 'Mars/Olympus'"),
    (lambda text: text.replace(f"; UnixStartTime: {START}\n", ""),
     ": no '; UnixStartTime:' header line, so its jobs' submit times cannot be dated"),
])
def test_a_bad_log_is_one_message_naming_file_line_and_field(tmp_path, capsys, edit, message):
    path = tmp_path / "t.swf"
    path.write_text(edit(Path(write_log(tmp_path)).read_text()))
    assert memory_estimator.main(["--log", str(path)]) == 2
    assert capsys.readouterr().err == f"memory_estimator: {path}{message}\n"


def test_a_missing_log_is_named(tmp_path, capsys):
    assert memory_estimator.main(["--log", str(tmp_path / "none.swf")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memory_estimator: {tmp_path / 'none.swf'}: cannot read: ")
    assert err.count("\n") == 1


def test_the_command_prints_json_and_writes_a_page(tmp_path, capsys):
    page = tmp_path / "page.md"
    assert memory_estimator.main(["--log", write_log(tmp_path), "--to", "1996-03", "--json",
                                  "--markdown", str(page)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["window"], record["predicted"]) == (["1996-01", "1996-03"], 3)
    assert "| within 1 MB | 0.6667 [" in page.read_text()


def test_the_window_must_be_months_in_order(tmp_path):
    with pytest.raises(SystemExit):
        memory_estimator.main(["--log", write_log(tmp_path), "--from", "1996-13"])
    with pytest.raises(SystemExit):
        memory_estimator.main(["--log", write_log(tmp_path), "--from", "1996-05", "--to",
                               "1996-04"])


def record_of(n: int, within_1mb: float, within_5mb: float, under: float) -> dict[str, object]:
    """A record as the benchmark gives it, with ``n`` jobs predicted and these shares."""
    return {"log": "given.swf", "window": ["1996-01", "1996-09"], "time_zone": "UTC",
            "jobs": n, "predicted": n, "unknown_memory": 0, "unknown_identity": 0,
            **{key: {"k": round(value * n), "n": n} for key, value in
               (("within_1mb", within_1mb), ("within_5mb", within_5mb), ("under", under))}}


@pytest.mark.parametrize(("record", "verdict"), [
    (record_of(50_000, 0.70, 0.87, 0.06), AGREES),
    (record_of(50_000, 0.72, 0.85, 0.07), AGREES),
    (record_of(50_000, 0.50, 0.87, 0.06), DISAGREES),    # a third fewer within 1 MB
    (record_of(50_000, 0.70, 0.87, 0.12), DISAGREES),    # twice the under-estimates
    (record_of(50_000, 0.70, 0.87, 0.089), CANNOT_TELL),     # on the tolerance's edge
    # past 0.09 at 95 % [0.0903, 0.0954], not at the three shares' Bonferroni 98.3 %
    (record_of(50_000, 0.70, 0.87, 0.0928), CANNOT_TELL),
    (record_of(40, 0.70, 0.87, 0.06), CANNOT_TELL),      # intervals wider than the tolerance
])
def test_the_reproduce_row_judges_the_three_shares(record, verdict):
    assert memory.estimator_finding(record).decision.verdict == verdict


def test_the_reproduce_row_needs_the_log(monkeypatch, tmp_path):
    ctx = Context("tiny", tmp_path, tmp_path)
    monkeypatch.delenv(memory.CM5_LOG, raising=False)
    found = memory._estimator(ctx)["memory-estimator"]
    assert found.decision.verdict == CANNOT_TELL and found.decision.why == memory.NO_CM5_LOG
    assert memory.CM5_LOG in memory.NO_CM5_LOG and "memory_estimator --log" in memory.NO_CM5_LOG
    monkeypatch.setenv(memory.CM5_LOG, str(tmp_path / "none.swf"))
    assert "not a readable file" in memory._estimator(ctx)["memory-estimator"].decision.why
    monkeypatch.setenv(memory.CM5_LOG, write_log(tmp_path))
    found = memory._estimator(ctx)["memory-estimator"]
    assert found.ours.startswith("3 of 12 jobs predicted; within 1 MB: 0.6667 [")
    assert found.decision.verdict == CANNOT_TELL          # 3 jobs: the intervals are wide
