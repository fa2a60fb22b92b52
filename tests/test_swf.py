"""SWF: reading with clear errors, import, and import -> run -> export."""

from __future__ import annotations

import re

import pytest
from conftest import run_testbed

from testbed.workloads.swf import (
    FIELDS,
    INTEGER_FIELDS,
    ImportOptions,
    SwfError,
    read_swf,
    to_workload,
    trace_workload,
)

TRACE = """; Version: 2.2
; MaxProcs: 4
1 0 5 40 2 -1 -1 2 60 -1 1 3 1 1 1 -1 -1 -1
2 30 -1 25 -1 -1 -1 1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
3 60 -1 -1 -1 -1 -1 -1 -1 -1 0 -1 -1 -1 -1 -1 -1 -1
4 90 -1 10 8 -1 -1 8 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
"""


def test_unknown_fields_are_accepted_and_unusable_jobs_skipped(tmp_path):
    (tmp_path / "t.swf").write_text(TRACE)
    header, jobs = read_swf(tmp_path / "t.swf")
    assert header[0] == "; Version: 2.2" and len(jobs) == 4
    text, skipped = to_workload(jobs, ImportOptions(pes=4, compress=10), "t.swf")
    assert skipped == 1
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert [line.split()[:3] for line in lines] == [["0.000", "2", "id=1"], ["3.000", "1", "id=2"],
                                                    ["9.000", "4", "id=4"]]
    assert "--work 4.000" in lines[0]


@pytest.mark.realtime
@pytest.mark.parametrize(("line", "message"), [
    ("1 0 5 40 2", "expected 18 fields, got 5"),
    ("1 0 5 forty 2 -1 -1 2 60 -1 1 3 1 1 1 -1 -1 -1", "field 4 (run) is not a number"),
])
def test_malformed_lines_are_reported_with_their_line_number(tmp_path, line, message):
    (tmp_path / "t.swf").write_text("; header\n" + line + "\n")
    with pytest.raises(SwfError, match=re.escape(f":2: {message}")):
        read_swf(tmp_path / "t.swf")
    done = run_testbed("workload", "from-swf", "t.swf", "--pes", "2", cwd=tmp_path)
    assert done.returncode == 2 and f"t.swf:2: {message}" in done.stderr


@pytest.mark.realtime
def test_import_run_export_keeps_ids_sizes_and_times(tmp_path):
    (tmp_path / "t.swf").write_text(TRACE)
    done = run_testbed("workload", "from-swf", "t.swf", "--pes", "2", "--compress", "100",
                       "--pattern", "none", "-o", "w.txt", cwd=tmp_path)
    assert done.returncode == 0 and "1 of 4 jobs skipped" in done.stderr
    assert run_testbed("run", "w.txt", "--scheduler", "gang", "--pes", "2", "--out", "r",
                       cwd=tmp_path).returncode == 0
    assert run_testbed("report", "r", "--swf", cwd=tmp_path).returncode == 0
    _, exported = read_swf(tmp_path / "r" / "jobs.swf")
    assert [(j.job, j.procs, j.submit, j.status) for j in exported] == \
        [(1, 2, 0, 1), (2, 1, 30, 1), (4, 2, 90, 1)]
    for job in exported:
        assert job.run >= {1: 40, 2: 25, 4: 10}[job.job] * 0.8


GOOD = "1 0 5 40 2 -1 -1 2 60 -1 1 3 1 1 1 -1 -1 -1"


@pytest.mark.parametrize(("lines", "message"), [
    ([GOOD, GOOD.replace(" 40 ", " inf "), GOOD.replace(" 40 ", " forty ")],
     ":3: field 4 (run) is not a finite number: 'inf'"),
    ([GOOD, GOOD.replace(" 40 ", " forty "), GOOD.replace(" 40 ", " nan ")],
     ":3: field 4 (run) is not a number: 'forty'"),
    ([GOOD, GOOD, GOOD.replace(" 2 -1 -1 2 ", " 2.5 -1 -1 2 ")],
     ":4: field 5 (procs) is not a whole number: '2.5'"),
    ([GOOD, "", GOOD + " 7"], ":4: expected 18 fields, got 19"),
    ([GOOD, GOOD.replace(" 40 ", " forty "), "1 2 3"],
     ":3: field 4 (run) is not a number: 'forty'"),
])
def test_the_first_bad_line_is_named(tmp_path, lines, message):
    (tmp_path / "t.swf").write_text("; header\n" + "\n".join(lines) + "\n")
    with pytest.raises(SwfError, match=re.escape(message)):
        read_swf(tmp_path / "t.swf")


def test_a_trace_read_field_by_field_keeps_each_fields_type(tmp_path):
    (tmp_path / "t.swf").write_text(TRACE)
    _, jobs = read_swf(tmp_path / "t.swf")
    assert [type(value) for value in vars(jobs[0]).values()] == [
        int if name in INTEGER_FIELDS else float for name in FIELDS]
    assert (jobs[0].job, jobs[0].run, jobs[0].procs, jobs[1].wait) == (1, 40.0, 2, -1.0)


@pytest.mark.parametrize("perfect", [False, True])
def test_a_trace_workloads_estimates(tmp_path, perfect):
    (tmp_path / "t.swf").write_text(TRACE)
    jobs = trace_workload(tmp_path / "t.swf", 4, perfect).jobs
    assert [(job.work, job.estimate) for job in jobs] == (
        [(40.0, 40.0), (25.0, 25.0), (10.0, 10.0)] if perfect
        else [(40.0, 60.0), (25.0, None), (10.0, None)])
    assert all(job.estimate is job.work for job in jobs) == perfect


def test_a_gzipped_trace_reads_as_the_plain_one(tmp_path):
    import gzip

    (tmp_path / "t.swf").write_text(TRACE)
    with gzip.open(tmp_path / "t.swf.gz", "wt") as f:
        f.write(TRACE)
    assert read_swf(tmp_path / "t.swf.gz") == read_swf(tmp_path / "t.swf")
    (tmp_path / "bad.swf.gz").write_text(TRACE)
    with pytest.raises(SwfError, match=re.escape("bad.swf.gz: cannot read: ")):
        read_swf(tmp_path / "bad.swf.gz")
