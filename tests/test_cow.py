"""COW (Karatza 2001): per-PE queues with JSQ routing, owners, AFCFS and LGFS, simulated."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from testbed.events import read_events
from testbed.owners import OwnerStream, owner_pe
from testbed.policies import JobRequest, Launch, PolicyConfig, Requeue, make_policy
from testbed.policies.cow import Afcfs, Lgfs
from testbed.results.metrics import job_rows

TESTBED = [sys.executable, "-m", "testbed"]
COW = {"afcfs": Afcfs, "lgfs": Lgfs}


def _launched(actions) -> list[str]:
    return [a.job for a in actions if isinstance(a, Launch)]


def _policy(name: str, pes: int = 4):
    return make_policy(name, PolicyConfig(pes))


def test_jsq_routes_to_the_shortest_queues_lower_pe_on_ties():
    policy = _policy("afcfs")
    policy.arrive(JobRequest("a", 2, 0), 0)            # PEs 0, 1
    policy.arrive(JobRequest("b", 1, 0), 0)            # queues 1 1 0 0: PE 2
    assert policy.assigned == {"a": (0, 1), "b": (2,)}
    policy.arrive(JobRequest("c", 3, 0), 0)            # queues 1 1 1 0: PE 3, then 0 and 1
    assert policy.assigned["c"] == (0, 1, 3)
    assert policy.lengths == [2, 2, 1, 1]


def test_afcfs_lets_a_small_gang_pass_a_blocked_large_one_and_lgfs_orders_by_size():
    for name, first in (("afcfs", "small"), ("lgfs", "large")):
        policy = _policy(name)
        assert _launched(policy.arrive(JobRequest("all", 4, 0), 0)) == ["all"]
        policy.arrive(JobRequest("small", 1, 1), 1)
        policy.arrive(JobRequest("large", 3, 2), 2)
        started = _launched(policy.finish("all", 3))
        assert started[0] == first
    policy = _policy("afcfs")
    policy.arrive(JobRequest("left", 2, 0), 0)                     # PEs 0, 1
    policy.owner_arrive(0, 0.5)                                    # interrupts "left"
    assert _launched(policy.arrive(JobRequest("one", 1, 1), 1)) == ["one"]   # PE 2 passes it


@pytest.mark.parametrize(("name", "restart", "first"), [
    ("lgfs", "keep", "big"), ("lgfs", "first", "a"), ("lgfs", "tail", "big"),
    ("afcfs", "keep", "a"), ("afcfs", "first", "a"), ("afcfs", "tail", "big")])
def test_where_an_interrupted_gang_waits(name, restart, first):
    policy = COW[name](PolicyConfig(4), restart=restart)
    policy.arrive(JobRequest("a", 2, 0), 0)                        # PEs 0, 1, running
    policy.arrive(JobRequest("b", 2, 0), 0)                        # PEs 2, 3, running
    policy.arrive(JobRequest("big", 4, 1), 1)                      # waits everywhere
    assert policy.owner_arrive(1, 2) == [Requeue("a", 1)]          # its PE 0 is free now,
    assert _launched(policy.finish("b", 3)) == []                  # but neither may start
    assert _launched(policy.owner_leave(1, 4)) == [first]          # keep: LGFS by size,
    # AFCFS by arrival; first: the interrupted gang; tail: behind the gang that came after it


@pytest.mark.parametrize("hold", [True, False])
def test_an_interrupted_gang_holds_its_pes_only_while_none_has_an_owner(hold):
    policy = Afcfs(PolicyConfig(3), hold=hold)
    policy.arrive(JobRequest("a", 2, 0), 0)                        # PEs 0, 1
    policy.arrive(JobRequest("b", 1, 0), 0)                        # PE 2
    policy.owner_arrive(1, 1)                                      # interrupts "a"
    assert _launched(policy.arrive(JobRequest("c", 1, 2), 2)) == ["c"]   # PE 0: owner on 1
    assert _launched(policy.owner_leave(1, 3)) == []               # "a" waits for PE 0
    started = _launched(policy.arrive(JobRequest("d", 1, 4), 4))   # routed to PE 1
    assert started == ([] if hold else ["d"])
    assert _launched(policy.finish("c", 5)) == (["a"] if hold else [])


def test_an_unknown_restart_is_refused():
    with pytest.raises(ValueError, match="restart"):
        Lgfs(PolicyConfig(4), restart="later")


def test_owners_pick_their_pe_as_the_stream_says():
    draws = [owner_pe(random.Random(seed), "unowned", 4, {0, 1, 2}, set()) for seed in range(20)]
    assert set(draws) == {3}
    assert owner_pe(random.Random(1), "unowned", 4, {0, 1, 2, 3}, set()) is None
    idle = {owner_pe(random.Random(seed), "idle", 4, {1}, {0, 2}) for seed in range(20)}
    assert idle == {3}
    busy = {owner_pe(random.Random(seed), "idle", 4, {1}, {0, 2, 3}) for seed in range(50)}
    assert busy == {0, 2, 3}                                       # none idle: any unowned
    anywhere = {owner_pe(random.Random(seed), "any", 4, {0, 1, 2}, set()) for seed in range(50)}
    assert anywhere == {None, 3}                                   # drawn at an owned PE: dropped
    with pytest.raises(ValueError, match="pick"):
        OwnerStream(1.0, 1.0, pick="busy")


def test_owners_need_a_cow_scheduler():
    with pytest.raises(NotImplementedError):
        _policy("gang").owner_arrive(0, 0.0)


def _simulate(tmp_path, text: str, scheduler: str = "afcfs", pes: int = 2, *extra: str):
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "w.txt"
    path.write_text(text)
    out = tmp_path / scheduler
    done = subprocess.run([*TESTBED, "simulate", str(path), "--scheduler", scheduler, "--pes",
                           str(pes), "--out", str(out), *extra], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    events = read_events(out / "events.jsonl")
    return events, {r.id: r for r in job_rows(events)}


@pytest.mark.realtime
def test_all_work_is_lost_and_counted_as_repeated_work(tmp_path):
    events, rows = _simulate(tmp_path, "0 2 bsp --work 2\nowner 0.5 1 1\n")
    row = rows["j1"]
    assert (row.restarts, row.lost_s) == (1, 0.5)
    assert row.end == pytest.approx(1.5 + 2)                       # restarted when the owner left
    assert row.cpu_s == pytest.approx((2 + 0.5) * 2)               # repeated work counts
    assert [ev["event"] for ev in events if ev["event"] in ("start", "interrupt", "owner_start",
                                                             "owner_end", "finish")] == [
        "start", "owner_start", "interrupt", "owner_end", "start", "finish"]


@pytest.mark.realtime
def test_an_owner_arriving_as_a_job_ends_does_not_interrupt_it(tmp_path):
    _, rows = _simulate(tmp_path, "0 1 bsp --work 1\nowner 1 0 1\n", "lgfs", 1)
    assert (rows["j1"].end, rows["j1"].restarts) == (1.0, 0)


@pytest.mark.realtime
def test_a_random_owner_stream_is_seeded(tmp_path):
    text = "".join(f"{i * 0.2:.1f} {1 + i % 2} bsp --work 1\n" for i in range(20))
    runs = []
    for n, seed in enumerate(("3", "3", "4")):
        events, _ = _simulate(tmp_path / str(n), text, "lgfs", 2, "--owners", "1:0.3",
                              "--owner-seed", seed)
        runs.append([(ev["t"], ev["pe"]) for ev in events if ev["event"] == "owner_start"])
    assert runs[0] == runs[1] and runs[0] != runs[2]
    assert runs[0]


@pytest.mark.realtime
def test_owners_are_refused_by_schedulers_without_them(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 1 bsp --work 1\nowner 0.5 0 1\n")
    plain = tmp_path / "plain.txt"
    plain.write_text("0 1 bsp --work 1\n")
    for command in (["simulate", str(path), "--scheduler", "gang"],
                    ["run", str(path), "--scheduler", "gang"],
                    ["run", str(plain), "--scheduler", "fcfs", "--owners", "1:1"],
                    ["compare", str(path), "--schedulers", "afcfs,gang"]):
        done = subprocess.run([*TESTBED, *command, "--out", str(tmp_path / "r")],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert "owner" in done.stderr
        assert not (tmp_path / "r").exists()


def test_a_suspended_gang_runs_again_on_resume():
    policy = _policy("lgfs")
    policy.arrive(JobRequest("a", 2, 0), 0)
    assert policy.hold("a")[0].jobs == frozenset()
    assert policy.release("a")[0].jobs == {"a"}
