"""T3E psched's GRM limits and prime jobs (Blakeborough and Welcome 1999)."""

from __future__ import annotations

import pytest
from conftest import events, jobs_csv, run_id, run_processes, run_testbed

from testbed.policies import JobRequest, Launch, Migrate, PolicyConfig, Run, make_policy
from testbed.policies.balance import best_move
from testbed.workloads.files import parse_line


def _psched(pes: int = 4, app_max: int = 1, abs_app_max: int = 2, balance: float = 0.0):
    return make_policy("psched", PolicyConfig(pes, app_max=app_max, abs_app_max=abs_app_max,
                                              balance_s=balance))


def _launched(actions) -> dict[str, tuple[int, tuple[int, ...]]]:
    return {a.job: (a.slot, a.pes) for a in actions if isinstance(a, Launch)}


def _run_set(actions) -> frozenset[str]:
    (run,) = [a for a in actions if isinstance(a, Run)]
    return run.jobs


def test_app_max_keeps_one_normal_application_per_pe():
    policy = _psched(pes=2)
    assert _launched(policy.arrive(JobRequest("a", 2, 0), 0)) == {"a": (0, (0, 1))}
    assert policy.arrive(JobRequest("b", 2, 0), 0) == []            # a row is free: app_max
    assert [q.id for q in policy.queue] == ["b"]
    gang = make_policy("gang", PolicyConfig(2, mpl=2))
    gang.arrive(JobRequest("a", 2, 0), 0)
    assert _launched(gang.arrive(JobRequest("b", 2, 0), 0)) == {"b": (1, (0, 1))}
    loose = _psched(pes=2, app_max=2)
    loose.arrive(JobRequest("a", 2, 0), 0)
    assert _launched(loose.arrive(JobRequest("b", 2, 0), 0)) == {"b": (1, (0, 1))}


def test_abs_app_max_bounds_every_application_on_a_pe():
    policy = _psched(pes=2, abs_app_max=3)
    policy.arrive(JobRequest("a", 2, 0), 0)
    policy.arrive(JobRequest("p", 2, 0, prime=True), 0)
    policy.arrive(JobRequest("q", 2, 0, prime=True), 0)
    assert policy.arrive(JobRequest("r", 2, 0, prime=True), 0) == []     # three on each PE
    assert policy.mpl == 3


def test_a_prime_job_runs_without_competition_from_normal_work():
    policy = _psched(pes=4)
    policy.arrive(JobRequest("a", 2, 0), 0)                          # PEs 0-1
    policy.arrive(JobRequest("c", 2, 0), 0)                          # PEs 2-3
    actions = policy.arrive(JobRequest("p", 2, 0, prime=True), 0)
    assert _launched(actions) == {"p": (1, (0, 1))}                  # joins a, as GRM allows
    assert _run_set(actions) == {"p", "c"}                           # a is preempted
    for t in range(1, 6):                                            # every slice, either row
        assert _run_set(policy.tick(t)) == {"p", "c"}
    assert _run_set(policy.finish("p", 6)) == {"a", "c"}


def test_prime_jobs_that_share_pes_take_turns():
    policy = _psched(pes=2)
    policy.arrive(JobRequest("p", 2, 0, prime=True), 0)
    policy.arrive(JobRequest("q", 2, 0, prime=True), 0)
    seen = [_run_set(policy.tick(t)) for t in range(1, 5)]
    assert seen == [{"q"}, {"p"}, {"q"}, {"p"}]


def test_prime_jobs_launch_first_then_fifo_unless_a_later_job_fits_unoccupied_pes():
    policy = _psched(pes=4)
    policy.arrive(JobRequest("a", 2, 0), 0)                          # PEs 0-1
    assert policy.arrive(JobRequest("big", 4, 0), 0) == []           # a holds PEs 0-1
    assert _launched(policy.arrive(JobRequest("c", 2, 0), 0)) == {"c": (0, (2, 3))}
    assert policy.arrive(JobRequest("d", 1, 0), 0) == []             # nothing unoccupied
    assert policy.arrive(JobRequest("p", 4, 0), 0) == []             # normal: waits
    assert _launched(policy.arrive(JobRequest("q", 4, 0, prime=True), 0)) == {
        "q": (1, (0, 1, 2, 3))}                                      # prime: ahead of all
    policy.finish("q", 1)
    assert _launched(policy.finish("a", 2)) == {"d": (0, (0,))}      # big still blocked
    assert [j.id for j in policy.queue] == ["big", "p"]


def test_once_the_head_is_blocked_later_jobs_only_take_unoccupied_pes():
    policy = _psched(pes=4)
    policy.arrive(JobRequest("pp", 2, 0, prime=True), 0)             # PEs 0-1
    policy.arrive(JobRequest("a", 2, 0), 0)                          # PEs 2-3
    assert policy.arrive(JobRequest("big", 4, 0), 0) == []           # a holds PEs 2-3
    assert policy.arrive(JobRequest("d", 2, 0), 0) == []             # would fit over pp
    assert [j.id for j in policy.queue] == ["big", "d"]
    assert policy.cancel("zz", 1) is None
    assert _launched(policy.cancel("big", 1) or []) == {"d": (1, (0, 1))}   # d heads the line


def test_a_job_goes_where_it_competes_least_with_prime_jobs_first():
    policy = _psched(pes=4, app_max=2)
    policy.matrix.assign("a", 0, (0,))
    policy.matrix.assign("b", 1, (1,))
    assert _launched(policy.arrive(JobRequest("p", 1, 0, prime=True), 0)) == {"p": (0, (2,))}
    other = _psched(pes=4)
    other.arrive(JobRequest("p", 2, 0, prime=True), 0)               # row 0, PEs 0-1
    other.arrive(JobRequest("a", 2, 0), 0)                           # row 0, PEs 2-3
    assert _launched(other.arrive(JobRequest("q", 2, 0, prime=True), 0)) == {
        "q": (1, (2, 3))}                                            # over a, not over p


def test_a_held_prime_job_leaves_its_pes_to_the_normal_job_under_it():
    policy = _psched(pes=2)
    policy.arrive(JobRequest("a", 2, 0), 0)
    policy.arrive(JobRequest("p", 2, 0, prime=True), 0)
    assert _run_set(policy.hold("p")) == {"a"}
    assert _run_set(policy.tick(1)) == {"a"}
    assert _run_set(policy.release("p")) == {"p"}


def test_three_prime_jobs_on_the_same_pes_get_equal_turns():
    policy = _psched(pes=2, abs_app_max=3)
    policy.arrive(JobRequest("a", 2, 0), 0)
    for job in ("p", "q"):
        policy.arrive(JobRequest(job, 2, 0, prime=True), 0)
    turns = [next(iter(_run_set(policy.tick(t)))) for t in range(1, 13)]
    assert turns.count("p") == turns.count("q") == 6


def test_migrations_keep_to_the_limits():
    policy = _psched(pes=2, abs_app_max=3)
    policy.arrive(JobRequest("a", 1, 0), 0)                          # row 0, PE 0
    policy.arrive(JobRequest("b", 1, 0), 0)                          # row 0, PE 1
    with pytest.raises(ValueError, match="no room"):
        policy.migrate("b", (0,), 1.0)                               # a normal job is there
    gang = make_policy("gang", PolicyConfig(2, mpl=3))
    gang.arrive(JobRequest("a", 1, 0), 0)
    gang.arrive(JobRequest("b", 1, 0), 0)
    assert [a for a in gang.migrate("b", (0,), 1.0) if isinstance(a, Migrate)]
    policy.arrive(JobRequest("p", 1, 0, prime=True), 0)              # row 1, PE 0
    assert [a for a in policy.migrate("p", (1,), 1.0) if isinstance(a, Migrate)]


def test_the_balancer_moves_no_normal_job_onto_another():
    policy = _psched(pes=2, abs_app_max=3, balance=1.0)
    policy.arrive(JobRequest("a", 1, 0), 0)                          # row 0, PE 0
    policy.arrive(JobRequest("p", 1, 0, prime=True), 0)              # row 0, PE 1
    policy.arrive(JobRequest("q", 1, 0, prime=True), 0)              # row 1, PE 0
    policy.finish("p", 0.5)
    assert [a for a in policy.wake(1.0) if isinstance(a, Migrate)] == [
        Migrate("q", 0, (1,), 1, (0,))]
    normal = _psched(pes=2, abs_app_max=3, balance=1.0)
    normal.arrive(JobRequest("p", 1, 0, prime=True), 0)              # row 0, PE 0
    normal.arrive(JobRequest("q", 1, 0, prime=True), 0)              # row 0, PE 1
    normal.arrive(JobRequest("a", 1, 0), 0)                          # row 1, PE 0
    normal.arrive(JobRequest("b", 1, 0), 0)                          # row 1, PE 1
    normal.finish("p", 0.5)
    assert best_move(normal.matrix, set()) == ("b", 0, (0,))         # gang's choice: onto a
    assert [m for m in normal.wake(1.0) if isinstance(m, Migrate)] == [
        Migrate("a", 0, (0,), 1, (0,))]


def test_bad_limits_are_refused():
    with pytest.raises(ValueError, match="app_max"):
        _psched(app_max=3, abs_app_max=2)
    with pytest.raises(ValueError, match="app_max"):
        _psched(app_max=0)


def test_prime_on_a_workload_line():
    spec = parse_line("w", 1, "0 2 prime class=x bsp --work 1", "j1", 0.2)
    assert spec is not None and spec.prime and spec.job_class == "x" and spec.is_bsp
    plain = parse_line("w", 2, "0 2 ./prime", "j2", 0.2)
    assert plain is not None and not plain.prime and plain.argv == ("./prime",)


@pytest.mark.realtime
def test_a_prime_job_preempts_normal_work_on_real_processes(tmp_path, workload):
    path = workload("0 2 bsp --work 3\n0.5 2 prime bsp --work 1\n")
    out = tmp_path / "run"
    done = run_testbed("run", str(path), "--scheduler", "psched", "--pes", "2", "--out",
                       str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = jobs_csv(out)
    assert {r["status"] for r in rows.values()} == {"done"}
    assert rows["j2"]["prime"] == "True" and rows["j2"]["stops"] == "0"
    assert int(rows["j1"]["stops"]) == 1                              # once, for the prime job
    evs = events(out)
    start = next(e["t"] for e in evs if e["event"] == "start" and e["job"] == "j2")
    end = next(e["t"] for e in evs if e["event"] == "finish" and e["job"] == "j2")
    assert float(rows["j1"]["end"]) > end > start
    assert run_processes(run_id(out)) == []


def test_split_domains_before_2_0_4_run_one_application_a_pe_inside_one_domain():
    policy = make_policy("psched-split", PolicyConfig(16, allocator="first-fit"))
    assert policy.batch_size == 13 and policy.mixed_max == 2      # 512/644 and 64/644 of 16
    assert _launched(policy.arrive(JobRequest("small", 2, 0), 0)) == {"small": (0, (13, 14))}
    assert _launched(policy.arrive(JobRequest("mid", 4, 0), 0)) == {"mid": (0, (0, 1, 2, 3))}
    # 2 PEs are free in Mixed and 9 in Batch: 10 free PEs, but no domain holds a 10-PE job
    assert policy.arrive(JobRequest("big", 10, 0), 0) == []
    assert _launched(policy.arrive(JobRequest("tiny", 1, 0), 0)) == {"tiny": (0, (15,))}
    # no gang scheduling: a later small job finds Mixed full and fits on unoccupied Batch PEs
    assert _launched(policy.arrive(JobRequest("more", 2, 0), 0)) == {"more": (0, (4, 5))}
    assert _launched(policy.finish("mid", 1)) == {"big": (0, (0, 1, 2, 3, 6, 7, 8, 9, 10, 11))}
    assert policy.refuse(JobRequest("whole", 14, 0)) == "needs 14 PEs, more than the Batch " \
        "region's 13"
    assert policy.refuse(JobRequest("fits", 13, 0)) is None


def test_split_domains_after_2_0_4_gang_schedule_inside_each_domain():
    policy = make_policy("psched-split-gang", PolicyConfig(16, allocator="first-fit",
                                                           app_max=2, abs_app_max=2))
    assert policy.matrix.mpl == 2
    assert _launched(policy.arrive(JobRequest("batch", 13, 0), 0)) == {
        "batch": (0, tuple(range(13)))}
    # Batch is full in the first row: a second large job goes to its second row, not across
    assert _launched(policy.arrive(JobRequest("second", 10, 0), 0)) == {
        "second": (1, tuple(range(10)))}
    assert _launched(policy.arrive(JobRequest("small", 2, 0), 0)) == {"small": (0, (13, 14))}
    assert policy.refuse(JobRequest("whole", 14, 0)) is not None
    before = make_policy("psched-split", PolicyConfig(16, allocator="first-fit", app_max=2,
                                                       abs_app_max=2))
    assert before.matrix.mpl == 1          # before 2.0.4 the limits stay one application a PE


def test_split_psched_defragments_once_the_head_job_has_waited():
    def run(defrag: float) -> list[str]:
        policy = make_policy("psched-split", PolicyConfig(4, defrag_s=defrag))
        launched = []
        for t, job, size in ((0, "a", 2), (1, "b", 3), (2, "c", 1), (7, "d", 1)):
            actions = policy.arrive(JobRequest(job, size, t), t)
            launched += [a.job for a in actions if isinstance(a, Launch)]
        return launched

    # b (3 PEs) waits behind a in the Batch domain (PEs 0-2); c takes the Mixed PE (3)
    assert run(0) == ["a", "c", "d"]          # d fits on the free Batch PE 2
    assert run(5) == ["a", "c"]               # b has waited 6 s: nothing launches behind it
    assert run(10) == ["a", "c", "d"]         # not yet
