"""benchmarks.papers.cow's figures and readings, from small simulations run in-process."""

from __future__ import annotations

import dataclasses
import json
import pickle
import random

import pytest

from benchmarks.papers import cow
from testbed.driver import Driver
from testbed.events import EventLog, read_events
from testbed.policies import PolicyConfig
from testbed.policies.cow import Afcfs
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads.files import JobSpec, Owner, Workload


def _events(tmp_path):
    """j1 (2 PEs, 2 s) from 0, interrupted by an owner on PE 1 from 0.5 to 1.5, again from
    1.5 to 3.5; j2 (1 PE, 1 s) from 4 to 5.  The event log's path."""
    workload = Workload("<test>", [JobSpec("j1", 1, 0.0, 2, (), 2.0),
                                   JobSpec("j2", 2, 4.0, 1, (), 1.0)],
                        owners=[Owner(0.5, 1, 1.0)])
    Driver(workload, Afcfs(PolicyConfig(2)), SimulationExecutor({"j1": 2.0, "j2": 1.0}),
           tmp_path, {}, log=EventLog(tmp_path / "events.jsonl")).run()
    return tmp_path / "events.jsonl"


def test_utilization_counts_what_the_reading_says(tmp_path):
    events = _events(tmp_path)
    capacity = cow.PES * 5.0                                       # 16 PEs from 0 to 5
    gangs = cow.summarize(events, "gangs")
    assert gangs.u == pytest.approx((2.5 * 2 + 1) / capacity)      # the lost 0.5 s on 2 PEs too
    assert gangs.u_repeated == pytest.approx(0.5 * 2 / capacity)
    assert gangs.u_owners == pytest.approx(1.0 / capacity)
    assert cow.summarize(events, "useful").u == pytest.approx(5 / capacity)
    assert cow.summarize(events, "all").u == pytest.approx(7 / capacity)
    assert gangs.rt == pytest.approx((3.5 + 1) / 2)
    assert gangs.restarts == 0.5
    # in the system: j1 all of [0, 2], 1.5 s of [2, 4]
    assert gangs.growth == pytest.approx(0.75)
    # the work offered over [0, 4] (first to last arrival), delivered over [0, 5]
    assert gangs.delivered == pytest.approx(0.8)


def test_the_bound_is_twenty_times_the_last_arrival():
    assert cow.horizon(3000.0) == 60000.0
    assert not cow.past(59999.999, 60000.0)
    assert cow.past(60000.0, 60000.0) and cow.past(61000.0, 60000.0)


def _bounded_run(tmp_path, work: float, bounded: bool):
    """A gang of 2 PEs arriving at 0 s needing ``work`` s and one of 1 PE at 2 s needing 1 s,
    owners on PE 0 from 0.5 to 1 s and from 1.5 to 2 s; the run's status and its event log."""
    workload = Workload("<test>", [JobSpec("j1", 1, 0.0, 2, (), work),
                                   JobSpec("j2", 2, 2.0, 1, (), 1.0)],
                        owners=[Owner(0.5, 0, 0.5), Owner(1.5, 0, 0.5)])
    durations = {"j1": work, "j2": 1.0}
    executor = (cow.Bounded(durations, cow.horizon(2.0)) if bounded
                else SimulationExecutor(durations))
    status = Driver(workload, Afcfs(PolicyConfig(2)), executor, tmp_path, {}, run_id="r",
                    log=EventLog(tmp_path / "events.jsonl")).run()
    return status, tmp_path / "events.jsonl"


def test_a_run_ended_before_its_horizon_is_the_unbounded_run(tmp_path):
    logs = []
    for bounded in (False, True):
        (tmp_path / str(bounded)).mkdir()
        status, log = _bounded_run(tmp_path / str(bounded), 3.0, bounded)
        assert status == "complete"
        logs.append([ev for ev in read_events(log) if ev["event"] != "run_start"])
    assert logs[0] == logs[1]
    assert isinstance(cow.summarize(log, "gangs"), cow.Replication)


def test_a_run_still_busy_at_its_horizon_is_stopped_there(tmp_path):
    status, log = _bounded_run(tmp_path, 1000.0, True)
    assert status == "interrupted"
    # at 20 x j2's arrival, j1 still runs on both PEs and j2 waits
    assert cow.summarize(log, "gangs") == cow.Stopped(40.0, 2)


def test_a_cell_with_a_stopped_replication_has_no_figures():
    ran = cow.Replication(10.0, 0.5, 0.1, 0.05, 0.4, 1.0, 1.0, 9.0, 11.0)
    assert cow.figures([ran, ran])["rt"] == 10.0
    record = cow.figures([ran, cow.Stopped(60000.0004, 12)])
    assert record["settled"] is False
    assert record["stopped_at"] == [60000.0] and record["left"] == [12]
    assert all(record[name] is None for name in cow.FIGURES)


def test_demands_are_one_per_gang_or_the_longest_task():
    rng, again = random.Random(4), random.Random(4)
    assert cow.demand(rng, 5, "together") == again.expovariate(1.0)
    assert cow.demand(rng, 3, "apart") == max(again.expovariate(1.0) for _ in range(3))


def test_readings_change_one_choice_each_and_unknown_values_are_refused():
    default = cow.Reading()
    found = cow.readings(default)
    assert len(found) == 1 + 1 + 2 + 1 + 2                         # tasks redo restart hold pick
    for label, reading in found:
        changed = [f.name for f in dataclasses.fields(reading)
                   if getattr(reading, f.name) != getattr(default, f.name)]
        assert changed == [label.split("=")[0]]
    with pytest.raises(ValueError, match="owner_pick"):
        cow.Reading(owner_pick="nearest")


def test_run_set_gives_the_records_benchmarks_read():
    records = cow.run_set(1, replications=2, jobs=40, restart="first")
    assert [(r["policy"], r["inv_lambda_owner"]) for r in records] == [
        (p, inv) for inv in (1.0, 0.8, 0.6, 0.4) for p in ("afcfs", "lgfs")]
    for r in records:
        assert {"policy", "inv_lambda", "inv_lambda_owner", "inv_mu_owner", "rt", "rt_ci", "u",
                "u_ci", "restarts"} <= set(r)
        assert r["restart"] == "first" and r["hold"] is False and r["rt"] > 0


def _record(policy: str, owner: float, rt: float, u: float, delivered: float = 0.99,
            rts: list[float] | None = None):
    """A record of three replications whose RTs spread by the seed (1 below the mean, at it,
    1 above) unless ``rts`` gives them."""
    return {"policy": policy, "inv_lambda": 1.0, "inv_lambda_owner": owner, "inv_mu_owner": 1.0,
            "rt": rt, "rt_ci": 1.0, "u": u, "u_ci": 0.01, "u_repeated": 0.1, "u_owners": 0.05,
            "restarts": 0.5, "growth": 1.0, "delivered": delivered,
            "rts": rts or [rt - 1, rt, rt + 1],
            "us": [u] * 3}


def _stopped(policy: str, owner: float):
    return {**_record(policy, owner, 0.0, 0.0), **dict.fromkeys(cow.FIGURES),
            "settled": False, "stopped_at": [60000.0, 59000.5], "left": [12, 3]}


def test_a_cell_that_did_not_settle_is_shown_so_and_left_out_of_the_claims():
    records = [_record("afcfs", 1.0, 10, 0.5), _record("lgfs", 1.0, 5, 0.6),
               _record("afcfs", 0.4, 20, 0.5), _stopped("lgfs", 0.4)]
    shown = cow.rows(records)
    assert shown[1][6] == 0.5
    assert shown[2][4:7] == [20, 1.0, "–"]
    assert shown[3][4:] == ["did not settle (stopped at 60000 and 59000 s, 12 and 3 gangs "
                            "left)", *["–"] * 9]
    lines = cow.claims({1: records})
    assert lines[0] == ("- LGFS's RT below AFCFS's: 1 of 1 cells (1 where the 95 % interval of "
                        "the replications' paired difference lies below 0)")
    assert lines[2] == ("- settled (delivered at least 0.95 of the work offered, both policies): "
                        "1 of 2 cells")
    assert lines[3] == ("- set 1: RT rises as owners come more often: not judged, a cell did "
                        "not settle (AFCFS 10, 20; LGFS 5, did not settle)")
    assert lines[-1] == ("- did not settle (a replication stopped at 20 x its last arrival): "
                         "1 of 2 cells, left out of the counts above")


def test_the_readings_table_says_which_readings_did_not_settle():
    default, sizes = cow.Reading(), (2, 50)
    ran = cow.Replication(10.0, 0.5, 0.1, 0.05, 0.4, 1.0, 1.0, 9.0, 11.0)
    done = {run: cow.Stopped(1000.0, 7) if run.reading.redo == "same" else ran
            for _, reading in [("default", default), *cow.readings(default)]
            for run in cow.plan(cow.PROBE, *sizes, reading)}
    found = cow.compare_readings(default, done=done, sizes=sizes)
    same = [row for row in found if row[0] == "redo=same"]
    assert len(same) == len(cow.PROBE) and len(found) == 8 * len(cow.PROBE)
    assert all(row[4:] == ["did not settle (stopped at 1000 and 1000 s, 7 and 7 gangs left)",
                           "–"] * 2 for row in same)
    assert all(row[4:] == [10.0, 1.0, 10.0, 1.0] for row in found if row[0] != "redo=same")
    records = [_record("afcfs", 1.0, 10, 0.5), _record("lgfs", 1.0, 5, 0.6)]
    meta = {"host": {"uname": "Linux x", "cpus": 2, "python": "3.11"}, "replications": 5,
            "jobs": 3000, "reading": dataclasses.asdict(default), "records": records,
            "date": "now", "seconds": 30.0, "workers": 2}
    page = cow.markdown({1: meta}, {"rows": found, "replications": 2, "jobs": 50,
                                    "date": "later", "seconds": 60.0, "workers": 2}, "cmd")
    assert ("| redo=same | 1 | 0.4 | 1 | did not settle (stopped at 1000 and 1000 s, 7 and 7 "
            "gangs left) | – |") in page
    assert "2 replications of 50 gangs per cell, fewer than the sets' 3000" in page


def test_claims_are_counted_over_the_cells():
    records = [_record("afcfs", 1.0, 10, 0.5), _record("lgfs", 1.0, 5, 0.6),
               _record("afcfs", 0.8, 20, 0.5),
               _record("lgfs", 0.8, 19.5, 0.4, delivered=0.8, rts=[19, 20.5, 19])]
    lines = cow.claims({1: records})
    assert lines[0] == ("- LGFS's RT below AFCFS's: 2 of 2 cells (1 where the 95 % interval of "
                        "the replications' paired difference lies below 0)")
    assert lines[1] == "- U higher with LGFS: 1 of 2 cells"
    assert lines[2] == ("- settled (delivered at least 0.95 of the work offered, both policies): "
                        "1 of 2 cells")
    assert lines[3].startswith("- set 1: RT rises as owners come more often: yes")


def test_set_2_claims_follow_the_curves_over_the_owners_stay():
    records = [{**_record(policy, k, rt, 0.5), "inv_lambda": inv, "inv_mu_owner": k}
               for inv, base in ((1.0, 10.0), (0.6, 100.0)) for k in (1.0, 2.0, 4.0, 8.0)
               for policy, rt in (("afcfs", base * k), ("lgfs", base * (9 - k)))]
    lines = cow.claims({2: records})
    assert lines[3] == "- set 2: RT rises as owners stay longer (and come more rarely): 2 of 4 " \
                       "curves (1/λ and policy)"
    assert lines[4] == "- set 2: mean RT over owners and policies by 1/λ: 1: 45, 0.6: 450"


def _tiny_cells():
    return [(1.0, 1.0, 1.0), (0.8, 2.0, 2.0)]


def test_runs_spread_in_any_order_give_the_same_records():
    reading = cow.Reading(restart="tail")
    serial = cow.run_cells(_tiny_cells(), 2, 40, reading)
    runs = cow.plan(_tiny_cells(), 2, 40, reading)
    assert [(r.cell, r.policy, r.seed) for r in runs] == [
        (cell, p, seed) for cell in _tiny_cells() for p in ("afcfs", "lgfs") for seed in (1, 2)]
    lines: list[str] = []
    backwards = cow.simulate(runs + runs[:3], progress=lines.append,     # repeats run once
                             spread=lambda work, todo: map(work, reversed(todo)))
    assert len(backwards) == len(runs) and len(lines) == len(runs)
    assert lines[0].startswith(f"1/{len(runs)} lgfs 0.8/2/2 seed 2 40 gangs restart=tail: ")
    assert cow.assemble(_tiny_cells(), 2, 40, reading, backwards) == serial


def test_what_a_worker_process_gets_and_returns_pickles(tmp_path):
    run = cow.Run("lgfs", (1.0, 0.8, 1.0), 30, 3, cow.Reading(hold=True))
    done = cow.timed(run)
    assert pickle.loads(pickle.dumps(cow.timed)) is cow.timed
    assert pickle.loads(pickle.dumps(done))[:2] == done[:2] and done[0] == run
    assert done[1] == cow.replication("lgfs", (1.0, 0.8, 1.0), 30, 3, tmp_path,
                                      cow.Reading(hold=True))


def test_known_cells_are_not_planned_and_keep_their_records():
    known = [{"policy": p, "inv_lambda": 1.0, "inv_lambda_owner": 1.0, "inv_mu_owner": 1.0,
              "rt": rt} for p, rt in (("afcfs", 3.0), ("lgfs", 2.0))]
    runs = cow.plan(_tiny_cells(), 2, 40, cow.Reading(), known)
    assert {r.cell for r in runs} == {(0.8, 2.0, 2.0)}
    records = cow.assemble(_tiny_cells(), 2, 40, cow.Reading(), cow.simulate(runs), known)
    assert records[:2] == known and [r["policy"] for r in records[2:]] == ["afcfs", "lgfs"]


def test_a_set_is_reused_only_when_run_with_the_same_sizes_and_reading(tmp_path):
    path = tmp_path / "cow-set1.json"
    assert cow.reused(path, 5, 3000, cow.Reading()) is None
    path.write_text(json.dumps({"date": "then", "replications": 5, "jobs": 3000,
                                "reading": dataclasses.asdict(cow.Reading()), "records": []}))
    assert cow.reused(path, 5, 3000, cow.Reading())["reused"] == "cow-set1.json"
    assert cow.reused(path, 5, 1000, cow.Reading()) is None
    assert cow.reused(path, 4, 3000, cow.Reading()) is None
    assert cow.reused(path, 5, 3000, cow.Reading(utilization="all")) is None


def test_the_page_says_which_sets_were_simulated_and_which_reused():
    records = [_record("afcfs", 1.0, 10, 0.5), _record("lgfs", 1.0, 5, 0.6)]
    meta = {"host": {"uname": "Linux x", "cpus": 2, "python": "3.11"}, "replications": 5,
            "jobs": 3000, "reading": dataclasses.asdict(cow.Reading()), "records": records}
    sets = {1: {**meta, "date": "then", "reused": "cow-set1.json", "seconds": 30.0,
                "workers": 1},
            2: {**meta, "date": "now", "seconds": 150.0, "workers": 2}}
    compared = {"rows": [["default", 1.0, 1.0, 1.0, 10.0, 1.0, 5.0, 1.0]], "replications": 2,
                "jobs": 3000, "date": "later", "seconds": 1800.0, "workers": 2}
    page = cow.markdown(sets, compared, "python -m benchmarks.papers.cow --readings")
    assert "- set 2: simulated in 2.5 min by 2 worker processes" in page
    assert ("- set 1: the records of `cow-set1.json`, written then by an earlier run with the "
            "same replications, gangs and reading (that run's sets simulated in 0.5 min by 1 "
            "worker process); "
            "not simulated again") in page
    assert "Ended later, simulated in 30.0 min by 2 worker processes." in page
    assert "| default | 1 | 1 | 1 | 10 | 1 | 5 | 1 |" in page


@pytest.mark.realtime
def test_worker_processes_give_the_records_of_one_process():
    reading = cow.Reading(owner_pick="idle")
    assert cow.run_cells(_tiny_cells(), 2, 60, reading, workers=2) == \
        cow.run_cells(_tiny_cells(), 2, 60, reading)
