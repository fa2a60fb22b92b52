"""The driver over the simulation executor, and the seam between the two executors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import run
from testbed.driver import Driver
from testbed.events import EventLog, SchemaError, read_events
from testbed.policies import PolicyConfig, make_policy
from testbed.policies.matrix import UNBOUNDED
from testbed.ports import Ended, Interrupted
from testbed.results import top
from testbed.results.metrics import job_rows
from testbed.results.plots import gantt_figure, write_plots
from testbed.results.timeline import matrix_rows
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads.files import load_workload

TESTBED = [sys.executable, "-m", "testbed.cli"]


def _simulate(tmp_path: Path, text: str, scheduler: str = "gang", pes: int = 2, mpl: int = 2,
              timeslice: float = 1.0, switch_cost: float = 0.0, name: str = "run",
              kill_at_estimate: bool = False) -> list[dict]:
    path = tmp_path / f"{name}.txt"
    path.write_text(text)
    workload = load_workload(path, timeslice)
    policy = make_policy(scheduler, PolicyConfig(pes, mpl, timeslice, "buddy"))
    executor = SimulationExecutor({j.id: j.work for j in workload.jobs}, switch_cost)
    run_dir = tmp_path / name
    run_dir.mkdir()
    Driver(workload, policy, executor, run_dir, {"machine": {"pes": pes}},
           log=EventLog(run_dir / "events.jsonl", flush_each=False),
           kill_at_estimate=kill_at_estimate).run()
    return read_events(run_dir / "events.jsonl")


def _rows(events: list[dict]) -> dict[str, object]:
    return {row.id: row for row in job_rows(events)}


def test_fcfs_in_virtual_time_runs_jobs_back_to_back(tmp_path):
    rows = _rows(_simulate(tmp_path, "0 2 bsp --work 10\n1 2 bsp --work 5\n2 1 bsp --work 1\n",
                           "fcfs"))
    assert (rows["j1"].start, rows["j1"].end) == (0.0, 10.0)
    assert (rows["j2"].start, rows["j2"].end) == (10.0, 15.0)
    assert (rows["j3"].start, rows["j3"].end) == (15.0, 16.0)   # strict FCFS: no backfill


def test_gang_advances_a_job_only_while_its_row_runs(tmp_path):
    rows = _rows(_simulate(tmp_path, "0 2 bsp --work 3\n0 2 bsp --work 3\n"))
    # Rows alternate every second: j1 runs [0,1) [2,3) [4,5), j2 runs [1,2) [3,4) [5,6).
    assert rows["j1"].end == pytest.approx(5.0)
    assert rows["j2"].end == pytest.approx(6.0)
    assert rows["j1"].cpu_s == pytest.approx(6.0)                 # 3 s on 2 PEs


def test_a_switch_cost_is_paid_on_every_continue(tmp_path):
    rows = _rows(_simulate(tmp_path, "0 2 bsp --work 3\n0 2 bsp --work 3\n",
                           switch_cost=0.5))
    # j1: [0,1) runs 1 s; continued at 2 and 4 (0.5 s lost each): 1 + 0.5 + 0.5 ... ends later
    assert rows["j1"].end > 5.0
    assert rows["j2"].end > rows["j1"].end


def test_a_job_ends_when_its_work_is_done_despite_rounding(tmp_path):
    """With T = 0.2 the heartbeats and a job's end drift apart by an ulp; a job whose last
    slice ends at a heartbeat still ends then, not stopped with nothing left to do."""
    rows = _rows(_simulate(tmp_path, "0 2 limit=1.8 bsp --work 1\n0 1 bsp --work 2\n",
                           timeslice=0.2))
    # j1 runs [0,.2) [.4,.6) [.8,1) [1.2,1.4) [1.6,1.8): done at 1.8, on its limit
    assert (rows["j1"].status, rows["j1"].end) == ("done", 1.8)
    assert rows["j2"].end == 3.0                     # 0.8 s by 1.8, then alone on PE 0


def test_a_successor_arrives_its_think_time_after_its_predecessor_ends(tmp_path):
    text = "0 1 id=1 bsp --work 4\n2 1 id=2 after=1 bsp --work 1\n0 1 id=3 bsp --work 1\n"
    rows = _rows(_simulate(tmp_path, text, "fcfs", pes=1))
    assert rows["j1"].end == 4.0
    assert rows["j3"].start == 4.0                                 # j2 was not there yet
    assert rows["j2"].arrival == 4.0 + 2.0
    assert rows["j2"].start == 6.0


def test_a_job_is_killed_at_its_estimate_when_asked(tmp_path):
    rows = _rows(_simulate(tmp_path, "0 1 estimate=2 bsp --work 5\n", "fcfs", pes=1,
                           kill_at_estimate=True))
    assert (rows["j1"].status, rows["j1"].end) == ("timeout", 2.0)


def test_the_run_goes_on_after_a_job_is_killed(tmp_path):
    """A killed job's heap entries from before its kill come up after it has gone."""
    rows = _rows(_simulate(tmp_path, "0 1 limit=1 bsp --work 3\n0 1 bsp --work 5\n", "fcfs"))
    assert (rows["j1"].status, rows["j1"].end, rows["j2"].end) == ("timeout", 1.0, 5.0)


def test_a_stopped_job_killed_at_its_limit_counts_only_the_time_it_ran(tmp_path):
    rows = _rows(_simulate(tmp_path, "0 2 limit=1 bsp --work 3\n0 2 bsp --work 3\n",
                           name="gang"))
    # j1 runs [0,1), is stopped by the heartbeat at 1 and then killed; j2 runs from 1
    assert (rows["j1"].status, rows["j1"].end, rows["j1"].cpu_s) == ("timeout", 1.0, 2.0)
    assert rows["j2"].end == 4.0


class _SignalledWhileReaping(SimulationExecutor):
    """A signal arrives during the wait in which the first job ends (as the emulation's
    ``advance`` sees it: ``check`` raises from then on)."""

    signalled = False

    def check(self) -> None:
        if self.signalled:
            raise Interrupted

    def advance(self, until: float) -> list[Ended]:
        self.check()
        ended = super().advance(until)
        self.signalled = self.signalled or bool(ended)
        return ended


def test_nothing_starts_after_a_signal_and_the_run_says_interrupted(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 1 bsp --work 1\n1 1 bsp --work 1\n")
    workload = load_workload(path, 1.0)
    executor = _SignalledWhileReaping({j.id: j.work for j in workload.jobs})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    status = Driver(workload, make_policy("fcfs", PolicyConfig(1, 1, 1.0)), executor, run_dir,
                    {}, log=EventLog(run_dir / "events.jsonl", flush_each=False)).run()
    events = read_events(run_dir / "events.jsonl")
    assert status == "interrupted"
    assert [ev["job"] for ev in events if ev["event"] == "start"] == ["j1"]   # j2 was due at 1


@pytest.mark.realtime
@pytest.mark.parametrize("scheduler", ["easy", "conservative", "prime"])
def test_simulate_kills_a_job_at_its_given_estimate_by_default(tmp_path, scheduler):
    """``--overrun kill`` (the default) under a batch policy; ``run`` lets it run on."""
    path = tmp_path / "w.txt"
    path.write_text("0 1 estimate=2 bsp --work 5\n")
    ends = {}
    for overrun in ("kill", "run"):
        out = tmp_path / overrun
        done = subprocess.run([*TESTBED, "simulate", str(path), "--scheduler", scheduler,
                               "--pes", "1", "--overrun", overrun, "--out", str(out)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        row = _rows(read_events(out / "events.jsonl"))["j1"]
        ends[overrun] = (row.status, row.end)
    assert ends == {"kill": ("timeout", 2.0), "run": ("done", 5.0)}


def test_simulation_is_deterministic(tmp_path):
    text = "".join(f"{i * 0.3:.1f} {1 + i % 2} bsp --work {1 + (i * 7) % 5}\n" for i in range(30))
    first = _simulate(tmp_path, text, name="a")
    second = _simulate(tmp_path, text, name="b")
    varying = ("wall_time", "run_id", "path")
    assert [{k: v for k, v in ev.items() if k not in varying} for ev in first] == \
        [{k: v for k, v in ev.items() if k not in varying} for ev in second]


def test_the_log_refuses_an_event_that_breaks_the_schema(tmp_path):
    log = EventLog(tmp_path / "events.jsonl")
    with pytest.raises(SchemaError):
        log.emit("start", 0.0, job="j1")
    with pytest.raises(SchemaError):
        log.emit("no_such_event", 0.0)
    log.close()


@pytest.mark.realtime
def test_simulate_refuses_policies_without_a_model(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 1 bsp --work 1\n")
    for scheduler in ("local", "ics", "fcs"):
        done = subprocess.run([*TESTBED, "simulate", str(path), "--scheduler", scheduler,
                               "--out", str(tmp_path / scheduler)], capture_output=True,
                              text=True)
        assert done.returncode == 2
        assert "no model" in done.stderr
        assert not (tmp_path / scheduler).exists()


@pytest.mark.realtime
def test_simulate_needs_each_jobs_work(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 1 bsp --work 1\n0 1 hostname\n")
    done = subprocess.run([*TESTBED, "simulate", str(path), "--out", str(tmp_path / "r")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert f"{path}:2: field 'command'" in done.stderr


@pytest.mark.realtime
def test_simulate_runs_an_swf_trace_with_reports(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 4\n"
                     "1 0 -1 100 4 -1 -1 4 200 -1 1 1 -1 -1 1 -1 -1 -1\n"
                     "2 10 -1 50 2 -1 -1 2 60 -1 1 1 -1 -1 1 -1 -1 -1\n"
                     "3 20 -1 30 2 -1 -1 2 60 -1 1 1 -1 -1 1 -1 2 5\n")
    out = tmp_path / "run"
    done = subprocess.run([*TESTBED, "simulate", str(trace), "--scheduler", "fcfs", "--pes", "4",
                           "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["executor"] == "simulation"
    rows = _rows(read_events(out / "events.jsonl"))
    assert rows["j2"].start == 100.0 and rows["j2"].end == 150.0
    assert rows["j3"].arrival == 155.0                             # after job 2, think 5 s
    done = subprocess.run([*TESTBED, "report", str(out), "--swf", "--batsim"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (out / "jobs.swf").exists() and (out / "trace.json").exists()
    with open(out / "batsim_jobs.csv") as f:
        batsim = {row["job_id"]: row for row in csv.DictReader(f)}
    assert [batsim[job]["starting_time"] for job in "123"] == ["0.000000", "100.000000",
                                                             "155.000000"]


@pytest.mark.realtime
@pytest.mark.parametrize("scheduler", ["fcfs", "gang", "easy"])
def test_both_executors_start_the_jobs_in_the_same_order(tmp_path, scheduler):
    """The seam: one policy, the same tiny workload, emulated and simulated."""
    path = tmp_path / "w.txt"
    # Under easy j5 backfills ahead of j4 in both, with a margin of ~0.7 s for launch costs.
    path.write_text("0 2 bsp --work 1\n0.05 1 bsp --work 0.3\n0.1 1 bsp --work 1.5\n"
                    "0.15 2 bsp --work 0.3\n0.2 1 bsp --work 0.3\n")
    orders = []
    for command in ("run", "simulate"):
        out = tmp_path / command
        done = subprocess.run([*TESTBED, command, str(path), "--scheduler", scheduler, "--pes",
                               "2", "--mpl", "2", "--estimates", "perfect", "--out", str(out)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        orders.append([ev["job"] for ev in read_events(out / "events.jsonl")
                       if ev["event"] == "start"])
    assert orders[0] == orders[1]
    expected = ["j1", "j2", "j3", "j5", "j4"] if scheduler == "easy" else sorted(orders[0])
    assert orders[0] == expected


def test_unbounded_gang_runs_every_job_at_once_sharing_the_time(tmp_path):
    text = "0 2 bsp --work 2.5\n" * 3
    bounded = _rows(_simulate(tmp_path, text, mpl=2, name="bounded"))
    unbounded = _rows(_simulate(tmp_path, text, mpl=UNBOUNDED, name="unbounded"))
    # MPL 2: j3 waits for j1's row: j1 runs [0,1) [2,3) [4,4.5), j2 [1,2) [3,4) [5,5.5), j3
    # [4.5,5) [5.5,7.5).
    assert [(bounded[j].start, bounded[j].end) for j in ("j1", "j2", "j3")] == [
        (0.0, 4.5), (0.0, 5.5), (4.5, 7.5)]
    # Unbounded: three rows from the start, a slice in three each: j1 [0,1) [3,4) [6,6.5),
    # j2 [1,2) [4,5) [6.5,7) (row 0 emptied), j3 [2,3) [5,6) [7,7.5).
    assert [(unbounded[j].start, unbounded[j].end) for j in ("j1", "j2", "j3")] == [
        (0.0, 6.5), (0.0, 7.0), (0.0, 7.5)]


def test_an_unbounded_run_records_mpl_0_and_its_views_show_the_rows_used(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 2 bsp --work 2\n0 2 bsp --work 2\n0 1 bsp --work 1\n")
    options = run.Options(scheduler="gang", mpl=UNBOUNDED, timeslice=0.5)
    run_dir = run.new_run_dir(tmp_path / "r", "unused")
    assert run.simulate(run.simulated_workload(path, options, 2), options, 2, run_dir) == \
        "complete"
    events = read_events(run_dir / "events.jsonl")
    assert events[0]["config"]["mpl"] == 0 and matrix_rows(events) == 3
    view = top.render(events)
    assert "gang  MPL unbounded  2 PEs" in view
    assert [line.split()[0].rstrip("*") for line in view.splitlines()
            if line[:3].strip().isdigit()] == ["0", "1", "2"]
    (tmp_path / "plots").mkdir()
    written = write_plots({"gang": events}, tmp_path / "plots")
    assert all(path.stat().st_size > 0 for path in written)


def test_schedules_side_by_side_span_the_longest_run_not_the_last(tmp_path):
    logs = {}
    for name, work in (("long", 6), ("short", 2)):
        path = tmp_path / f"{name}.txt"
        path.write_text(f"0 2 bsp --work {work}\n")
        options = run.Options(executor="simulation", scheduler="fcfs", pes=2)
        result = run.execute(run.prepare(options, path), tmp_path / name)
        logs[name] = read_events(result.run_dir / "events.jsonl")
    figure = gantt_figure(logs)
    assert [ax.get_xlim()[1] for ax in figure.axes] == pytest.approx([6.0, 6.0], abs=0.01)
