"""testbed report: tables, figures, Chrome trace, on finished and interrupted runs."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest
from conftest import TESTBED, events, live_events, run_testbed

pytestmark = pytest.mark.realtime

FILES = ("jobs.csv", "summary.json", "trace.json", "gantt.png", "gantt.svg",
         "runtime_vs_work.png", "runtime_vs_work.svg", "wait_vs_arrival.png",
         "wait_vs_arrival.svg")


def _check_trace(run_dir, pes):
    trace = json.loads((run_dir / "trace.json").read_text())["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in trace if e["name"] == "thread_name"}
    assert tracks == {pe: f"PE {pe}" for pe in range(pes)}
    slices = [e for e in trace if e["ph"] == "X"]
    assert slices and all(e["tid"] in tracks and e["dur"] > 0 and e["ts"] >= 0 for e in slices)
    return slices


def test_report_writes_every_file_for_a_finished_run(tmp_path, workload):
    path = workload("0 2 bsp --work 0.6 --pattern aa\n0 2 bsp --work 0.6 --pattern nn\n"
                    "0.2 1 bsp --work 0.2\n")
    assert run_testbed("run", str(path), "--scheduler", "gang", "--pes", "2", "--out", "r",
                       cwd=tmp_path).returncode == 0
    done = run_testbed("report", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in FILES:
        assert (tmp_path / "r" / name).stat().st_size > 0, name
    slices = _check_trace(tmp_path / "r", 2)
    assert {e["name"] for e in slices} == {"j1", "j2", "j3"}
    switches = sum(e["event"] == "switch" for e in events(tmp_path / "r"))
    assert len([e for e in slices if e["name"] == "j1"]) >= switches // 4


def test_report_handles_an_interrupted_run(tmp_path, workload):
    path = workload("0 2 bsp --work 30 --pattern nn\n0 2 bsp --work 30\n5 1 bsp --work 1\n")
    proc = subprocess.Popen([*TESTBED, "run", str(path), "--pes", "2", "--out", "r"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while sum(e["event"] == "pids" for e in live_events(tmp_path / "r")) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    done = run_testbed("report", "r", "--swf", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in (*FILES, "jobs.swf"):
        assert (tmp_path / "r" / name).exists(), name
    _check_trace(tmp_path / "r", 2)
    assert "interrupted" in done.stdout


@pytest.mark.parametrize("names", [("fcfs", "gang")])
def test_compare_report_puts_schedulers_side_by_side(tmp_path, workload, names):
    path = workload("0 1 bsp --work 0.3\n0 1 bsp --work 0.3\n0 2 bsp --work 0.2\n")
    assert run_testbed("compare", str(path), "--schedulers", ",".join(names), "--pes", "2",
                       "--out", "c", cwd=tmp_path).returncode == 0
    done = run_testbed("report", "c", cwd=tmp_path)
    assert done.returncode == 0 and all(n in done.stdout.splitlines()[0] for n in names)
    for name in ("gantt.png", "runtime_vs_work.svg", "wait_vs_arrival.png"):
        assert (tmp_path / "c" / name).exists()


def test_live_view_shows_the_matrix_states_and_progress(tmp_path, workload):
    path = workload("0 2 bsp --work 1 --pattern nn\n0 2 bsp --work 1\n0.3 1 bsp --work 0.2\n")
    done = run_testbed("run", str(path), "--live", "--pes", "2", "--out", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    frames = [f for f in done.stdout.split("gang  MPL 2  2 PEs") if f.strip()]
    assert len(frames) >= 2 and "row" in frames[0]
    assert any("running:" in f and "stopped:" in f for f in frames), frames[:3]
    final = run_testbed("top", "r", "--once", cwd=tmp_path).stdout
    assert "3/3 jobs" in final and "(complete)" in final and "done: j1 j2 j3" in final
