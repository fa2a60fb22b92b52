"""The policies as pure objects: events in, actions out."""

from __future__ import annotations

import random

import pytest

from testbed.policies import JobRequest, Launch, PolicyConfig, Run, make_policy
from testbed.policies.matrix import UNBOUNDED


def _apply(actions, launched, running):
    for a in actions:
        if isinstance(a, Launch):
            launched[a.job] = a
        elif isinstance(a, Run):
            running.clear()
            running.update(a.jobs)


def test_unknown_scheduler():
    with pytest.raises(ValueError, match="unknown scheduler 'rr'"):
        make_policy("rr", PolicyConfig(4, 2, 0.2, "buddy"))


def test_fcfs_never_puts_two_jobs_on_a_pe():
    rng = random.Random(5)
    policy = make_policy("fcfs", PolicyConfig(8, 4, 0.2, "buddy"))
    assert policy.matrix.mpl == 1 and policy.timeslice is None
    launched: dict[str, Launch] = {}
    running: set[str] = set()
    live: list[str] = []
    for i in range(300):
        if live and rng.random() < 0.5:
            done = live.pop(rng.randrange(len(live)))
            _apply(policy.finish(done, i), launched, running)
        else:
            _apply(policy.arrive(JobRequest(f"j{i}", rng.choice([1, 2, 3, 4, 8]), i), i),
                   launched, running)
        live = sorted(running)
        owners: dict[int, str] = {}
        for job in running:
            for pe in launched[job].pes:
                assert pe not in owners, f"{job} and {owners[pe]} share PE {pe}"
                owners[pe] = job


def test_fcfs_is_strict_about_arrival_order():
    policy = make_policy("fcfs", PolicyConfig(4, 1, 0.2, "buddy"))
    policy.arrive(JobRequest("big", 4, 0), 0)
    policy.arrive(JobRequest("wide", 4, 1), 1)
    actions = policy.arrive(JobRequest("small", 1, 2), 2)
    assert actions == []
    actions = policy.finish("big", 3)
    assert [a.job for a in actions if isinstance(a, Launch)] == ["wide"]


def test_gang_rotates_rows_every_tick():
    policy = make_policy("gang", PolicyConfig(2, 2, 0.2, "buddy"))
    launched: dict[str, Launch] = {}
    running: set[str] = set()
    _apply(policy.arrive(JobRequest("a", 2, 0), 0), launched, running)
    assert running == {"a"}
    _apply(policy.arrive(JobRequest("b", 2, 0), 0), launched, running)
    assert running == {"a"} and launched["b"].slot == 1
    seen = []
    for t in range(4):
        _apply(policy.tick(t), launched, running)
        seen.append(frozenset(running))
    assert seen == [{"b"}, {"a"}, {"b"}, {"a"}]
    _apply(policy.finish("a", 5), launched, running)
    assert running == {"b"}


def test_gang_runs_alternates_on_idle_pes():
    policy = make_policy("gang", PolicyConfig(4, 2, 0.2, "buddy"))
    launched: dict[str, Launch] = {}
    running: set[str] = set()
    for job, size in (("wide", 4), ("left", 2), ("right", 2)):
        _apply(policy.arrive(JobRequest(job, size, 0), 0), launched, running)
    _apply(policy.finish("wide", 1), launched, running)
    assert running == {"left", "right"}
    _apply(policy.arrive(JobRequest("late", 2, 2), 2), launched, running)
    assert launched["late"].slot == 0 and launched["late"].pes == (0, 1)
    _apply(policy.tick(3), launched, running)
    assert running == {"late", "right"}, "right keeps running as an alternate in row 0"
    _apply(policy.tick(4), launched, running)
    assert running == {"left", "right"}


def test_gang_moves_on_when_the_current_row_empties():
    policy = make_policy("gang", PolicyConfig(2, 3, 0.2, "buddy"))
    launched: dict[str, Launch] = {}
    running: set[str] = set()
    for job in "abc":
        _apply(policy.arrive(JobRequest(job, 2, 0), 0), launched, running)
    assert running == {"a"}
    _apply(policy.finish("a", 1), launched, running)
    assert running == {"b"}
    _apply(policy.tick(2), launched, running)
    assert running == {"c"}


def _shares(policy, ticks: int) -> dict[str, float]:
    """The fraction of ``ticks`` timeslices each job ran in."""
    counts: dict[str, int] = {}
    for t in range(ticks):
        for action in policy.tick(t):
            if isinstance(action, Run):
                for job in action.jobs:
                    counts[job] = counts.get(job, 0) + 1
    return {job: n / ticks for job, n in sorted(counts.items())}


def test_unbounded_gang_starts_every_job_and_shares_the_time_among_its_rows():
    policy = make_policy("gang", PolicyConfig(4, UNBOUNDED, 1.0, "buddy"))
    assert policy.mpl == UNBOUNDED
    launched: dict[str, Launch] = {}
    running: set[str] = set()
    # a and d share row 0 (PEs 0-1, 2-3), b and c fill rows 1 and 2, e has row 3 on PEs 0-1.
    for job, size in (("a", 2), ("b", 4), ("c", 4), ("d", 2), ("e", 2)):
        _apply(policy.arrive(JobRequest(job, size, 0), 0), launched, running)
    assert not policy.queue
    assert {j: a.slot for j, a in launched.items()} == {"a": 0, "b": 1, "c": 2, "d": 0, "e": 3}
    # Four rows: each job runs one slice in four, and d also runs in e's row on its idle PEs.
    assert _shares(policy, 8) == {"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.5, "e": 0.25}
    _apply(policy.finish("b", 8), launched, running)
    _apply(policy.finish("c", 8), launched, running)
    # Rows 1 and 2 are gone from the cycle: two rows, a half each (d runs always).
    assert _shares(policy, 8) == {"a": 0.5, "d": 1.0, "e": 0.5}
    _apply(policy.arrive(JobRequest("f", 4, 9), 9), launched, running)
    assert launched["f"].slot == 1                # the lowest free row number
    assert _shares(policy, 9) == {"a": 1 / 3, "d": 2 / 3, "e": 1 / 3, "f": 1 / 3}


def test_bounded_gang_queues_what_does_not_fit_in_its_rows():
    policy = make_policy("gang", PolicyConfig(4, 2, 1.0, "buddy"))
    for job in "abc":
        policy.arrive(JobRequest(job, 4, 0), 0)
    assert [j.id for j in policy.queue] == ["c"] and _shares(policy, 4) == {"a": 0.5, "b": 0.5}


def test_unbounded_gang_migrates_by_hand_into_a_new_row_when_no_row_has_the_pes():
    policy = make_policy("gang", PolicyConfig(4, UNBOUNDED, 1.0, "buddy"))
    for job, size in (("a", 4), ("b", 2), ("c", 2)):
        policy.arrive(JobRequest(job, size, 0), 0)
    assert policy.placements() == {"a": 0, "b": 1, "c": 1}
    policy.migrate("b", (2, 3), 1)              # c has them in row 1, a in row 0
    assert policy.matrix.placed["b"] == (2, (2, 3)) and policy.matrix.mpl == 3
    policy.migrate("b", (0, 1), 2)              # free in row 1 again: row 2 is dropped
    assert policy.matrix.placed["b"] == (1, (0, 1)) and policy.matrix.mpl == 2


def test_local_runs_everything_placed_up_to_mpl():
    policy = make_policy("local", PolicyConfig(2, 2, 0.2, "buddy"))
    assert policy.timeslice is None
    launched: dict[str, Launch] = {}
    running: set[str] = set()
    for job in "abc":
        _apply(policy.arrive(JobRequest(job, 2, 0), 0), launched, running)
    assert running == {"a", "b"} and "c" not in launched
    _apply(policy.finish("b", 1), launched, running)
    assert running == {"a", "c"}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mpl", [3, UNBOUNDED])
def test_gang_keeps_no_stale_run_set(seed, mpl):
    # the run set is found again only when the matrix, the row or the running jobs changed;
    # after any event it must be what a fresh search preferring the running jobs gives
    rng = random.Random(seed)
    policy = make_policy("gang", PolicyConfig(pes=16, mpl=mpl))
    matrix, now = policy.matrix, 0.0
    for step in range(300):
        now += 1.0
        draw = rng.random()
        if draw < 0.4 or not matrix.placed:
            policy.arrive(JobRequest(f"j{step}", rng.choice([1, 2, 3, 4, 8, 16]), now), now)
        elif draw < 0.7:
            policy.finish(rng.choice(sorted(matrix.placed)), now)
        elif draw < 0.85:
            policy.tick(now)
        elif draw < 0.93:
            policy.hold(rng.choice(sorted(matrix.placed)))
        else:
            policy.release(rng.choice(sorted(policy.held or matrix.placed)))
        if policy.slot is None:
            assert policy.running() == frozenset()
            continue
        home = matrix.jobs_in(policy.slot)
        prefer = list(policy.current)
        taken = {pe for job in home for pe in matrix.placed[job][1]}
        fresh = set(home)
        for job in [*(j for j in prefer if j in matrix.placed), *matrix.placed]:
            pes = set(matrix.placed[job][1])
            if job not in fresh and not taken & pes:
                fresh.add(job)
                taken |= pes
        assert policy.running() == fresh


def test_gang_finds_the_run_set_again_when_a_held_alternate_leaves_its_pes():
    # rows: 0 = s f, 1 = d k, 2 = g h (2 PEs each); f ends, so PEs 2-3 idle in row 0, where k
    # (placed before h) and h (running in row 2 before the switch) could both run
    policy = make_policy("gang", PolicyConfig(4, 3, 0.2, "buddy"))
    for job in "sfdkgh":
        policy.arrive(JobRequest(job, 2, 0), 0)
    policy.finish("f", 1)
    for t in (2, 3, 4):
        policy.tick(t)
    assert (policy.slot, policy.current) == (0, {"s", "h"}), "h preferred: it was running"
    policy.hold("h")
    assert policy.current == {"s"}, "the held alternate is stopped, the set not yet found again"
    policy.hold("h")
    assert policy.current == {"s", "k"}, "found again preferring s alone: k takes the idle PEs"
