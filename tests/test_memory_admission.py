"""Memory-aware admission (MEMORY §2-3) as a pure policy with synthetic memory."""

from __future__ import annotations

import pytest

from testbed.policies import JobRequest, Launch, MemoryAdmission, PolicyConfig, make_policy


def _policy(name="gang", capacity=(100.0, 100.0), factor=1.0, mpl=8):
    return make_policy(name, PolicyConfig(2, mpl, 0.2, "buddy", memory=MemoryAdmission(
        capacity, factor, node_of_pe=(0, 1))))


def _launched(actions):
    return [a.job for a in actions if isinstance(a, Launch)]


def test_a_job_that_does_not_fit_waits_and_starts_when_memory_frees():
    policy = _policy()
    assert _launched(policy.arrive(JobRequest("a", 2, 0, mem_mb=60), 0)) == ["a"]
    assert _launched(policy.arrive(JobRequest("b", 2, 1, mem_mb=60), 1)) == []
    assert _launched(policy.arrive(JobRequest("c", 2, 2, mem_mb=40), 2)) == ["c"]
    assert _launched(policy.finish("a", 3)) == ["b"]


def test_factor_c_scales_the_memory_of_a_node():
    policy = _policy(factor=1.5)
    for job in "ab":
        assert _launched(policy.arrive(JobRequest(job, 2, 0, mem_mb=70), 0)) == [job]
    assert _launched(policy.arrive(JobRequest("c", 2, 0, mem_mb=70), 0)) == []


def test_each_process_counts_on_its_own_node():
    policy = _policy(capacity=(100.0, 30.0))
    assert _launched(policy.arrive(JobRequest("resident", 1, 0, mem_mb=10), 0)) == ["resident"]
    assert _launched(policy.arrive(JobRequest("wide", 2, 0, mem_mb=50), 0)) == []
    # PE 1 (node 1) has room for 30 only; the next row offers PE 0 (node 0), which has 90.
    assert _launched(policy.arrive(JobRequest("one", 1, 0, mem_mb=50), 0)) == ["one"]
    assert policy.matrix.placed["one"][1] == (0,)


def test_on_an_empty_machine_the_head_job_runs_regardless():
    policy = _policy()
    assert _launched(policy.arrive(JobRequest("huge", 2, 0, mem_mb=500), 0)) == ["huge"]
    assert _launched(policy.arrive(JobRequest("small", 2, 1, mem_mb=10), 1)) == []
    assert _launched(policy.finish("huge", 2)) == ["small"]


def test_a_job_skipped_15_times_blocks_those_behind_it():
    policy = _policy(capacity=(100.0, 100.0))
    policy.arrive(JobRequest("resident", 2, 0, mem_mb=50), 0)
    policy.arrive(JobRequest("big", 2, 0, mem_mb=80), 0)
    started = 0
    for i in range(20):
        launched = _launched(policy.arrive(JobRequest(f"s{i}", 2, i, mem_mb=10), i))
        if launched:
            started += 1
            policy.finish(launched[0], i + 0.5)
    assert started == 15 and policy.skips["big"] == 15
    assert [job.id for job in policy.queue][:2] == ["big", "s15"]
    assert _launched(policy.finish("resident", 30)) == ["big", "s15", "s16"]  # 80 + 10 + 10


def test_jobs_without_an_estimate_are_admitted():
    policy = _policy()
    policy.arrive(JobRequest("a", 2, 0, mem_mb=100), 0)
    assert _launched(policy.arrive(JobRequest("unknown", 2, 0), 0)) == ["unknown"]


@pytest.mark.parametrize("name", ["fcfs", "gang", "local", "ics", "fcs"])
def test_admission_is_a_modifier_on_every_scheduler(name):
    policy = _policy(name)
    assert _launched(policy.arrive(JobRequest("a", 2, 0, mem_mb=60), 0)) == ["a"]
    assert _launched(policy.arrive(JobRequest("b", 2, 0, mem_mb=60), 0)) == []
    assert _launched(policy.finish("a", 1)) == ["b"]


@pytest.mark.parametrize("allocator", ["buddy", "first-fit"])
def test_a_small_job_goes_to_the_empty_node_instead_of_waiting(allocator):
    policy = make_policy("gang", PolicyConfig(4, 2, 0.2, allocator, memory=MemoryAdmission(
        (100.0, 100.0), 1.0, node_of_pe=(0, 0, 1, 1))))
    assert _launched(policy.arrive(JobRequest("big", 1, 0, mem_mb=95), 0)) == ["big"]
    assert _launched(policy.arrive(JobRequest("small", 1, 1, mem_mb=10), 1)) == ["small"]
    assert policy.matrix.placed["small"] == (0, (2,))


def test_the_least_loaded_nodes_win_even_when_the_first_placement_fits():
    policy = make_policy("gang", PolicyConfig(4, 2, 0.2, "buddy", memory=MemoryAdmission(
        (100.0, 100.0), 1.0, node_of_pe=(0, 0, 1, 1))))
    policy.arrive(JobRequest("a", 1, 0, mem_mb=50), 0)
    policy.arrive(JobRequest("b", 1, 0, mem_mb=10), 0)
    assert policy.matrix.placed["b"] == (0, (2,))   # PE 1 would fit too, but node 0 is at 50%


def test_load_is_a_fraction_of_each_nodes_memory_and_the_fullest_node_counts():
    policy = _policy(capacity=(100.0, 200.0))
    policy.arrive(JobRequest("a", 1, 0, mem_mb=80), 0)          # 40% of node 1, not 80% of 0
    assert policy.matrix.placed["a"] == (0, (1,))
    policy.arrive(JobRequest("b", 1, 0, mem_mb=30), 0)          # 30% of 0 (70 MiB left) beats
    assert policy.matrix.placed["b"] == (0, (0,))               # 55% of 1 (90 MiB left)
    wide = make_policy("fcfs", PolicyConfig(4, 1, 0.2, "buddy", memory=MemoryAdmission(
        (100.0,) * 4, 1.0, node_of_pe=(0, 1, 2, 3))))
    wide.arrive(JobRequest("a", 1, 0, mem_mb=60), 0)
    wide.arrive(JobRequest("b", 2, 0, mem_mb=10), 0)            # PEs 0-1: max(70%, 10%) = 70%
    assert wide.matrix.placed["b"] == (0, (2, 3))
