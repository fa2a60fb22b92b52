"""benchmarks.programs.conformance: reading mpi4py's runner output per rank, comparing modes with
plain,
and a quick run of a tiny part of the suite under plain, gang and ics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.programs.conformance import (
    NOT_RUN,
    ModuleRun,
    RankLog,
    all_modes,
    cache_dir,
    category,
    counts,
    difference_lines,
    differences,
    exit_differences,
    hangs,
    identical,
    installed_mpi4py,
    markdown,
    module_of,
    obtain_suite,
    outcomes,
    parse_log,
    parse_mode,
    render,
    render_all,
    summarise,
)
from testbed.policies import POLICIES

ROOT = Path(__file__).resolve().parent.parent

# One rank's stderr under ``main.py -v`` (Python 3.11's unittest), with a banner, a test's own
# output between its name and its status, a docstring line, subtests that fail and the
# error section after the run.
LOG = """\
[0@vm] Python 3.11.7 (/venv/bin/python)
[0@vm] MPI 5.0 (MPICH 5.0.2)
testSend (test_p2p_buf.TestP2PBufWorld.testSend) ... ok
testCuPy (test_msgspec.TestMessageCuPy.testCuPy) ... skipped 'cupy'
testProbe (test_p2p_obj.TestP2PObjWorld.testProbe) ... something the test printed
ok
testDoc (test_comm.TestCommWorld.testDoc)
The first line of its docstring ... FAIL
testBad (test_comm.TestCommWorld.testBad) ... ERROR
testKnown (test_op.TestOp.testKnown) ... expected failure
testLucky (test_op.TestOp.testLucky) ... unexpected success
testGetFortranInfo (test_mpiabi.TestMPIABI.testGetFortranInfo) ...\x20
  testGetFortranInfo (test_mpiabi.TestMPIABI.testGetFortranInfo) (typename='real2') ... FAIL
  testGetFortranInfo (test_mpiabi.TestMPIABI.testGetFortranInfo) (typename='complex4') ... ERROR
setUpClass (test_win.TestWinCreate) ... skipped 'no windows'

======================================================================
FAIL: testDoc (test_comm.TestCommWorld.testDoc)
----------------------------------------------------------------------
Traceback (most recent call last):
AssertionError: x ... ok
----------------------------------------------------------------------
Ran 9 tests in 0.210s

FAILED (failures=2, errors=2, skipped=2, expected failures=1, unexpected successes=1)
"""

OUTCOMES = {
    "test_p2p_buf.TestP2PBufWorld.testSend": "passed",
    "test_msgspec.TestMessageCuPy.testCuPy": "skipped",
    "test_p2p_obj.TestP2PObjWorld.testProbe": "passed",
    "test_comm.TestCommWorld.testDoc": "failed",
    "test_comm.TestCommWorld.testBad": "error",
    "test_op.TestOp.testKnown": "expected failure",
    "test_op.TestOp.testLucky": "unexpected success",
    "test_mpiabi.TestMPIABI.testGetFortranInfo (typename='real2')": "failed",
    "test_mpiabi.TestMPIABI.testGetFortranInfo (typename='complex4')": "error",
    "setUpClass (test_win.TestWinCreate)": "skipped",
}


def test_a_finished_log_gives_every_test_its_outcome_and_a_subtest_its_own_id():
    log = parse_log(LOG)
    assert log.outcomes == OUTCOMES
    assert log.finished and log.ran == 9


def test_a_log_cut_in_a_test_marks_that_test_unfinished():
    cut = LOG[:LOG.index("testBad")] + "testBad (test_comm.TestCommWorld.testBad) ... "
    log = parse_log(cut)
    assert not log.finished and log.ran is None
    assert log.outcomes["test_comm.TestCommWorld.testBad"] == "unfinished"
    assert log.outcomes["test_comm.TestCommWorld.testDoc"] == "failed"
    assert "test_op.TestOp.testKnown" not in log.outcomes
    assert parse_log("").outcomes == {} and not parse_log("").finished


def test_a_test_whose_status_never_came_has_no_outcome():
    text = ("testA (m.C.testA) ... \nsome output\ntestB (m.C.testB) ... ok\n"
            "Ran 2 tests in 0.1s\n")
    assert parse_log(text).outcomes == {"m.C.testA": "no outcome", "m.C.testB": "passed"}


def _run(module: str, *ranks: dict[str, str], code: int | None = 0,
         timed_out: bool = False) -> ModuleRun:
    return ModuleRun(module, 1, 1.0, code, timed_out,
                     [RankLog(dict(r), finished=not timed_out) for r in ranks])


def test_outcomes_are_per_rank_and_a_test_one_rank_did_not_print_is_not_run():
    run = _run("m", {"m.C.a": "passed", "m.C.b": "skipped"}, {"m.C.a": "failed"})
    assert outcomes([run]) == {"m.C.a": ("passed", "failed"), "m.C.b": ("skipped", NOT_RUN)}


def test_categories_and_counts():
    assert category(("passed", "expected failure")) == "passed"
    assert category(("passed", "unexpected success")) == "failed"
    assert category(("error", "skipped")) == "failed"
    assert category(("skipped", "skipped")) == "skipped"
    assert category(("passed", "skipped")) == "other"
    assert category(("passed", "unfinished")) == "other"
    found = {"a": ("passed", "passed"), "b": ("failed", "passed"), "c": ("skipped", "skipped"),
             "d": (NOT_RUN, "passed")}
    assert counts(found) == {"tests": 4, "passed": 1, "failed": 1, "skipped": 1, "other": 1}


def test_differences_name_every_test_whose_outcome_on_some_rank_changed():
    plain = {"a": ("passed", "passed"), "b": ("failed", "failed"), "c": ("passed", "passed")}
    mode = {"a": ("passed", "passed"), "b": ("failed", "error"), "d": ("skipped", "skipped")}
    assert differences(plain, mode) == [
        {"test": "b", "plain": ["failed", "failed"], "mode": ["failed", "error"]},
        {"test": "c", "plain": ["passed", "passed"], "mode": [NOT_RUN, NOT_RUN]},
        {"test": "d", "plain": [NOT_RUN, NOT_RUN], "mode": ["skipped", "skipped"]}]
    assert differences(plain, dict(plain)) == []


def test_a_mode_with_a_hang_a_crash_or_a_changed_outcome_is_not_identical():
    ok = {"m.C.a": "passed", "m.C.b": "passed"}
    plain = [_run("m", ok, ok), _run("n", {"n.C.x": "skipped"}, {"n.C.x": "skipped"})]
    same = summarise(parse_mode("gang"), [[_run("m", ok, ok), _run("n", {"n.C.x": "skipped"},
                                                                    {"n.C.x": "skipped"})]],
                     4.0, plain, 2.0)
    assert same["identical"] and same["ratio"] == 2.0 and not same["slow"]
    assert same["copies"][0]["counts"] == {"tests": 3, "passed": 2, "failed": 0, "skipped": 1,
                                           "other": 0}
    hung = _run("m", {"m.C.a": "passed", "m.C.b": "unfinished"}, {"m.C.a": "passed"},
                code=None, timed_out=True)
    crashed = _run("n", {}, {}, code=255)
    record = summarise(parse_mode("ics"), [[hung, crashed]], 7.0, plain, 2.0)
    assert not record["identical"] and record["slow"] and record["ratio"] == 3.5
    copy = record["copies"][0]
    assert copy["hangs"] == [{"module": "m", "copy": 1, "seconds": 1.0,
                              "running": ["m.C.b", None]}]
    assert copy["exit_differences"] == [{"module": "m", "plain": 0, "mode": None},
                                        {"module": "n", "plain": 0, "mode": 255}]
    assert [d["test"] for d in copy["differences"]] == ["m.C.b", "n.C.x"]
    pair = summarise(parse_mode("pair-gang"), [[plain[0]], [plain[0]]], 8.0, plain[:1], 2.0)
    assert pair["ratio"] == 2.0 and pair["identical"]
    assert exit_differences(plain, plain) == [] and hangs(plain) == []
    doc = {"modes": [summarise(parse_mode("plain"), [plain], 2.0, plain, 2.0), record, pair]}
    text = render(doc)
    assert "m: HANG, stopped after 1.0 s (rank 0: m.C.b, rank 1: -)" in text
    assert "n: exit code 0 under plain, 255 here" in text
    assert "m.C.b: passed under plain, unfinished|not run here" in text
    assert "n: 1 tests not run here (under plain: 1 skipped)" in text
    page = markdown({**doc, "command": "python -m benchmarks.programs.conformance --quick",
                     "host": {"uname": "Linux vm", "cpus": 2, "python": "3.11.7"},
                     "date": "2026-11-27T06:00:00+0000", "wall_s": 12.0, "commit": "abc",
                     "mpi": {"version": "MPICH Version: 5.0.2", "standard": "5.0",
                             "library": "/lib/libmpi.so.12", "mpi4py": "4.1.2"},
                     "suite": {"version": "4.1.2", "from": "pip download (PyPI)",
                               "file": "mpi4py-4.1.2.tar.gz", "sha256": "0" * 64},
                     "modules": ["m", "n"], "ranks": 2, "extra": [], "time_limit": 3.0},
                    "python -m benchmarks.programs.conformance --from x.json")
    assert "Written by `python -m benchmarks.programs.conformance --from x.json`" in page
    assert "- run by `python -m benchmarks.programs.conformance --quick`" in page
    assert ("| ics | 1 | 2 | 1 | 0 | 0 | 1 | NO (2 tests differ) | 7.0 | 3.50 | 1 hangs, slow"
            in page)
    assert "## ics" in page and "## pair-gang" not in page
    other = {**doc, "command": "c", "host": {"uname": "Linux vm", "cpus": 2, "python": "3"},
             "date": "d", "wall_s": 1.0, "commit": "abc", "suite": {
                 "version": "4.1.2", "from": "f", "file": "x", "sha256": "0"},
             "modules": ["m"], "ranks": 2, "extra": [], "time_limit": 3.0}
    both = {"command": "c", "host": other["host"], "date": "d", "wall_s": 2.0, "mpis": [
        {**other, "mpi": {"version": "MPICH 5", "standard": "5.0", "library": "l",
                          "mpi4py": "4"}},
        {**other, "modes": doc["modes"][:1], "mpi": {"version": "Open MPI 5", "standard": "3.1",
                                                     "library": "l", "mpi4py": "4"}}]}
    page = markdown(both, "c")
    assert "| MPICH 5 | 1 | 2 |" in page and "| Open MPI 5 | 0 | 0 |" in page
    assert "## MPICH 5" in page and "### ics" in page and "## Open MPI 5" in page
    assert not identical(both) and identical(both["mpis"][1])
    assert "=== Open MPI 5 ===" in render_all(both)


def test_the_tests_a_crashed_module_never_ran_are_counted_per_module():
    gone = [{"test": f"test_rma.TestRMAWorld.test{i}", "plain": ["passed", "passed"],
             "mode": [NOT_RUN, NOT_RUN]} for i in range(3)]
    gone.append({"test": "setUpClass (test_rma.TestRMASelf)", "plain": ["skipped", "skipped"],
                 "mode": [NOT_RUN, NOT_RUN]})
    half = {"test": "test_spawn.T.testA", "plain": ["passed", "passed"],
            "mode": [NOT_RUN, "passed"]}
    copy = {"hangs": [], "exit_differences": [], "differences": [*gone, half]}
    lines = difference_lines({"error": None, "copies": [copy, copy]})
    assert lines == ["copy 1: test_spawn.T.testA: passed under plain, not run|passed here",
                     "copy 1: test_rma: 4 tests not run here (under plain: 3 passed, 1 skipped)",
                     "copy 2: test_spawn.T.testA: passed under plain, not run|passed here",
                     "copy 2: test_rma: 4 tests not run here (under plain: 3 passed, 1 skipped)"]
    assert module_of("test_mpiabi.T.testX (typename='real2')") == "test_mpiabi"


def test_modes_are_named_after_the_registry():
    assert parse_mode("plain").launch == "plain"
    assert parse_mode("ics") == parse_mode("ics") and parse_mode("ics").launch == "exec"
    assert parse_mode("prime").options == ("--prime-shift", "0.5")
    assert parse_mode("mpirun-gang").launch == "mpirun" and parse_mode("pair-ics").copies == 2
    for bad in ("nope", "pair-nope", "exec-gang", "plain-gang"):
        with pytest.raises(ValueError):
            parse_mode(bad)
    assert set(POLICIES) < set(all_modes()) and all_modes()[0] == "plain"


@pytest.mark.realtime
def test_quick_run_of_small_modules_is_identical_under_gang_and_ics(tmp_path):
    """test_rma and test_util_sync (passive-target RMA) hung under ics before its barrier
    meetings ran MPI's progress engine; test_cco_obj and test_p2p_buf_matched cover
    collectives and matched probes."""
    try:
        obtain_suite(cache_dir(), installed_mpi4py())
    except RuntimeError as err:
        pytest.skip(f"mpi4py's test suite cannot be fetched here: {err}")
    out = tmp_path / "conformance.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.programs.conformance", "--quick",
                           "--modules", "test_cco_obj,test_p2p_buf_matched,test_rma,test_util_sync",
                           "--modes", "gang,ics", "--runs", str(tmp_path / "runs"),
                           "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    assert doc["modules"] == ["test_cco_obj", "test_p2p_buf_matched", "test_rma",
                              "test_util_sync"]
    assert [r["mode"] for r in doc["modes"]] == ["plain", "gang", "ics"]
    plain = doc["modes"][0]["copies"][0]
    assert plain["counts"]["passed"] >= 40 and plain["counts"]["other"] == 0
    for record in doc["modes"]:
        assert record["identical"], record
        assert record["copies"][0]["counts"] == plain["counts"]
        assert all(run["ranks_finished"] == [True, True] for run in record["copies"][0]["runs"])
    assert (tmp_path / "runs" / "ics" / "1" / "test_cco_obj" / "run" / "events.jsonl").exists()
