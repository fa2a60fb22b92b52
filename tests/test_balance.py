"""T3E psched's load balancer and migrations (Blakeborough and Welcome 1999, Figure 4)."""

from __future__ import annotations

import sys

import pytest
from conftest import PROGRAMS, events, jobs_csv, run_id, run_processes, run_testbed

from testbed.machine import build_machine
from testbed.policies import JobRequest, Launch, Migrate, PolicyConfig, Run, make_policy
from testbed.policies.balance import best_move
from testbed.policies.matrix import Matrix


def _gang(pes: int = 4, balance: float = 1.0, delay: float = 10.0):
    return make_policy("gang", PolicyConfig(pes, mpl=2, balance_s=balance,
                                            migration_delay_s=delay))


def test_figure_4_the_competing_job_moves_to_the_idle_pes():
    matrix = Matrix(2, 4)
    matrix.assign("a", 0, (0, 1))
    matrix.assign("b", 1, (0, 1))
    assert best_move(matrix, set()) == ("b", 0, (2, 3))
    assert best_move(matrix, {"b"}) is None                 # a is in the lowest row already
    full = Matrix(2, 2)
    full.assign("a", 0, (0, 1))
    full.assign("b", 1, (0, 1))
    assert best_move(full, set()) is None                   # nowhere better


def test_one_move_per_pass_fewer_parties_and_no_competition():
    policy = _gang(pes=2)
    policy.arrive(JobRequest("a", 1, 0), 0)                 # row 0, PE 0
    policy.arrive(JobRequest("b", 1, 0), 0)                 # row 0, PE 1
    policy.arrive(JobRequest("c", 1, 0), 0)                 # row 1, PE 0: competes with a
    policy.finish("b", 0.5)
    assert policy.wake_at() == 1.0
    actions = policy.wake(1.0)
    moves = [a for a in actions if isinstance(a, Migrate)]
    assert moves == [Migrate("c", 0, (1,), 1, (0,))]
    assert policy.matrix.occupied_slots() == [0]             # one party left
    assert [a.jobs for a in actions if isinstance(a, Run)] == [frozenset({"a", "c"})]
    assert policy.wake_at() == 2.0


def test_a_failed_or_manual_migration_holds_the_job_off_for_the_delay():
    policy = _gang(pes=2, delay=5.0)
    for job in ("a", "b", "c"):
        policy.arrive(JobRequest(job, 1, 0), 0)
    policy.finish("b", 0.5)
    (move,) = [a for a in policy.wake(1.0) if isinstance(a, Migrate)]
    policy.migration_failed(move, 1.0)
    assert policy.matrix.placed["c"] == (1, (0,))           # put back
    assert not [a for a in policy.wake(2.0) if isinstance(a, Migrate)]      # within 5 s
    assert [a for a in policy.wake(6.5) if isinstance(a, Migrate)]          # after it
    hand = _gang(pes=2, delay=5.0)
    for job in ("a", "b"):
        hand.arrive(JobRequest(job, 1, 0), 0)
    actions = hand.migrate("b", (0,), 1.0)                  # by hand onto a's PE, row 1
    assert [a for a in actions if isinstance(a, Migrate)] == [Migrate("b", 1, (0,), 0, (1,))]
    assert not [a for a in hand.wake(2.0) if isinstance(a, Migrate)]        # not moved back
    assert [a for a in hand.wake(7.0) if isinstance(a, Migrate)]
    full = _gang(pes=2)
    for job in ("a", "b", "c", "d"):                        # both rows full
        full.arrive(JobRequest(job, 1, 0), 0)
    with pytest.raises(ValueError, match="not free"):
        full.migrate("a", (1,), 1.0)
    with pytest.raises(ValueError, match="not placed"):
        full.migrate("zz", (1,), 1.0)


def test_without_a_balancer_nothing_moves():
    policy = make_policy("gang", PolicyConfig(2))
    for job in ("a", "b", "c"):
        policy.arrive(JobRequest(job, 1, 0), 0)
    policy.finish("b", 0.5)
    assert policy.wake_at() is None
    assert not any(isinstance(a, Launch | Migrate) for a in policy.wake(1.0))


@pytest.mark.realtime
def test_simulated_migration_shortens_the_makespan(tmp_path, workload):
    path = workload("0 1 bsp --work 6\n0 1 bsp --work 1\n0.1 1 bsp --work 4\n")
    spans = {}
    for balance in ("0", "1"):
        out = tmp_path / f"b{balance}"
        done = run_testbed("simulate", str(path), "--pes", "2", "--balance", balance,
                           "--out", str(out), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        spans[balance] = max(e["t"] for e in events(out) if e["event"] == "finish")
    assert spans == {"0": pytest.approx(10.0), "1": pytest.approx(6.4)}


@pytest.mark.realtime
def test_a_migrated_rank_runs_on_its_new_cpu(tmp_path, workload):
    cpus = build_machine(2).cpus
    path = workload("0 1 bsp --work 6\n0 1 bsp --work 1\n"
                    f"0.1 1 {sys.executable} {PROGRAMS / 'affinity_at_end.py'} 4\n")
    out = tmp_path / "run"
    done = run_testbed("run", str(path), "--pes", "2", "--balance", "0.5", "--out", str(out),
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    moves = [e for e in events(out) if e["event"] == "migrate" and e["job"] == "j3"]
    assert moves and moves[-1]["error"] is None and moves[-1]["pes"] == [1]
    assert jobs_csv(out)["j3"]["status"] == "done"
    assert (out / "jobs" / "j3.out").read_text().split()[-1] == str(cpus[1])
    assert run_processes(run_id(out)) == []
