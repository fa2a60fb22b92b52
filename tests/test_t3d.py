"""The T3D lazy gang scheduler (T3D §4): job classes, do-not-disturb times, the two passes."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from testbed.class_tables import ClassTableError, load_class_table
from testbed.policies import JobRequest, Launch, PolicyConfig, Run, make_policy
from testbed.policies.classes import ClassTable, JobClass

YEAR = 31536000.0


def _table(**limits) -> ClassTable:
    classes = {c.name: c for c in (
        JobClass("interactive", 4, 0.0, 1.0, 8),
        JobClass("debug", 4, 30.0, YEAR, 4, preemptable=False),
        JobClass("production", 3, 100.0, 1.0, 8),
        JobClass("benchmark", 2, YEAR, YEAR, 4, preemptable=False),
        JobClass("standby", 1, YEAR, 0.5, 8))}
    return ClassTable(classes, **{"large_size": 8, "large_limit": 8, "job_limit": 8,
                                  "system_limit": 16, **limits})


def _policy(pes: int = 4, **limits):
    return make_policy("t3d", PolicyConfig(pes, classes=_table(**limits)))


def _job(name: str, size: int, cls: str = "", interactive: bool = False) -> JobRequest:
    return JobRequest(name, size, 0.0, job_class=cls, interactive=interactive)


def _run_sets(actions) -> list[frozenset[str]]:
    return [a.jobs for a in actions if isinstance(a, Run)]


def test_a_higher_class_preempts_only_once_the_do_not_disturb_time_is_up():
    policy = _policy()
    assert [a.job for a in policy.arrive(_job("prod", 4), 0) if isinstance(a, Launch)] == ["prod"]
    # interactive by default for service jobs; the production job's DND is 1 s x 4 PEs
    assert policy.arrive(_job("int", 2, interactive=True), 1) == []
    assert policy.states() == {"prod": "R", "int": "W"}               # PEs reserved for it
    assert policy.wake_at() == 4.0
    actions = policy.wake(4.0)
    assert _run_sets(actions) == [frozenset({"int"})]
    assert policy.states() == {"prod": "O", "int": "R"}
    assert _run_sets(policy.finish("int", 5)) == [frozenset({"prod"})]


def test_no_preemption_for_a_lower_class_nor_of_debug_or_benchmark_jobs():
    policy = _policy()
    policy.arrive(_job("prod", 4), 0)
    policy.arrive(_job("low", 4, "standby"), 0)
    assert not _run_sets(policy.wake(4.0))                       # prod's DND is up, but
    assert not _run_sets(policy.wake(50))                        # standby is lower
    assert policy.states()["low"] == "N"
    for never in ("debug", "benchmark"):
        policy = _policy()
        policy.arrive(_job("locked", 4 if never == "debug" else 4, never), 0)
        policy.arrive(_job("int", 1, interactive=True), 0)
        assert not _run_sets(policy.wake(1000))
        assert policy.states()["locked"] == "R"


def test_equal_classes_take_turns_at_their_do_not_disturb_times():
    policy = _policy()
    policy.arrive(_job("a", 4), 0)
    policy.arrive(_job("b", 4), 0)
    assert policy.states() == {"a": "R", "b": "N"}
    assert _run_sets(policy.wake(4.0)) == [frozenset({"b"})]             # a's 4 s are up
    assert _run_sets(policy.wake(8.0)) == [frozenset({"a"})]             # and then b's


def test_only_one_reservation_at_a_time_and_a_higher_class_takes_it_over():
    policy = _policy(pes=4)
    policy.arrive(_job("a", 4), 0)                                    # DND until 4 s
    policy.arrive(_job("i1", 2, interactive=True), 1)
    policy.arrive(_job("i2", 2, interactive=True), 1)                 # both past their 0 s wait
    assert policy.states() == {"a": "R", "i1": "W", "i2": "N"}
    assert _run_sets(policy.wake(4.0)) == [frozenset({"i1", "i2"})]
    policy = _policy(pes=4)
    policy.arrive(_job("a", 4, "standby"), 0)                         # DND until 2 s
    policy.arrive(_job("p", 4), 0.1)
    policy.wake(100.1)                                                # p's wait is up
    assert policy.states()["p"] in ("W", "R")
    policy = _policy(pes=4)
    policy.arrive(_job("d", 4, "debug"), 0)
    policy.arrive(_job("p", 4), 0)
    policy.wake(200)                                                  # p starves behind debug
    assert policy.states()["p"] == "N"                                # no set can ever be freed
    table = _table()
    table.classes["production"] = dataclasses.replace(table.classes["production"], max_wait_s=0)
    table.classes["standby"] = dataclasses.replace(table.classes["standby"], dnd_multiplier_s=50)
    policy = make_policy("t3d", PolicyConfig(4, classes=table))
    policy.arrive(_job("s", 4, "standby"), 0)                         # DND until 200 s
    policy.arrive(_job("p", 4), 1)
    assert policy.states() == {"s": "R", "p": "W"}
    policy.arrive(_job("i", 4, interactive=True), 2)                  # a higher class starves
    assert policy.states() == {"s": "R", "p": "N", "i": "W"}
    assert _run_sets(policy.wake(200)) == [frozenset({"i"})]


def test_limits_hold_jobs_back():
    policy = _policy(pes=4, large_size=2, large_limit=2)
    policy.arrive(_job("l1", 2), 0)
    policy.arrive(_job("l2", 2), 0)                                   # large limit: 2 PEs
    assert policy.states() == {"l1": "R", "l2": "N"}
    policy = _policy(pes=4, system_limit=4)
    policy.arrive(_job("a", 4), 0)
    policy.arrive(_job("b", 4), 0)
    policy.wake(4.0)                                                  # no room to over-allocate
    assert policy.states() == {"a": "R", "b": "N"}


def test_jobs_that_can_never_run_are_refused():
    policy = _policy()
    assert "unknown job class" in policy.refuse(_job("x", 1, "nosuch"))
    assert "may have 4" in policy.refuse(_job("x", 5, "benchmark"))
    assert policy.refuse(_job("x", 8, "debug")) is not None
    assert policy.refuse(_job("x", 2)) is None


def test_operator_hold_frees_the_pes_and_release_waits_again():
    policy = _policy()
    policy.arrive(_job("a", 4), 0)
    policy.arrive(_job("b", 4), 0)
    assert _run_sets(policy.hold("a")) == [frozenset({"b"})]
    assert policy.states() == {"a": "S", "b": "R"}
    policy.release("a")
    assert policy.states()["a"] == "O"


def test_the_shipped_table_is_t3d_table_1_scaled_to_the_machine():
    full = load_class_table(None, 256)
    assert [(c.name, c.priority, c.max_wait_s, c.dnd_multiplier_s, c.pe_limit, c.preemptable)
            for c in full.classes.values()] == [
        ("interactive", 4, 0, 10, 256, True), ("debug", 4, 300, YEAR, 96, False),
        ("production", 3, 3600, 10, 256, True), ("benchmark", 2, YEAR, YEAR, 64, False),
        ("standby", 1, YEAR, 3, 256, True)]
    assert (full.large_size, full.large_limit, full.job_limit, full.system_limit) == (
        64, 192, 256, 576)
    small = load_class_table(None, 16)
    assert (small.classes["debug"].pe_limit, small.large_size, small.system_limit) == (6, 4, 36)


def test_a_bad_table_names_the_file_and_field(tmp_path: Path):
    text = Path(load_class_table.__globals__["DEFAULT_TABLE"]).read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("pe_limit = 96", 'pe_limit = "many"'))
    with pytest.raises(ClassTableError, match=r"bad.toml: field 'classes.debug.pe_limit'"):
        load_class_table(bad, 4)
    bad.write_text(text.replace('batch = "production"', 'batch = "nightly"'))
    with pytest.raises(ClassTableError, match="defaults.batch"):
        load_class_table(bad, 4)


def test_classes_scale_in_time():
    table = _table()
    fast = table.scaled(4, 4, 0.1)
    assert fast.classes["production"].max_wait_s == pytest.approx(10.0)
    assert dataclasses.replace(fast.classes["debug"]).pe_limit == 4


@pytest.mark.realtime
def test_an_interactive_job_preempts_a_production_job_on_real_processes(tmp_path):
    from conftest import events, fast_classes, jobs_csv, run_id, run_processes, run_testbed

    table = fast_classes(tmp_path)
    work = tmp_path / "w.txt"
    work.write_text("0 2 bsp --work 4\n"
                    "1 1 class=interactive bsp --work 1\n"
                    "1.5 2 class=standby bsp --work 1\n"
                    "2 1 class=nosuch bsp --work 1\n")
    orders = []
    for command in ("run", "simulate"):
        out = tmp_path / command
        done = run_testbed(command, str(work), "--scheduler", "t3d", "--pes", "2", "--classes",
                           str(table), "--out", str(out), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        evs = events(out)
        orders.append([(e["event"], e.get("job"), tuple(e.get("jobs", ()))) for e in evs
                       if e["event"] in ("start", "finish", "switch")])
        rows = jobs_csv(out)
        assert [rows[j]["status"] for j in ("j1", "j2", "j3", "j4")] == [
            "done", "done", "done", "failed"]
        assert "unknown job class 'nosuch'" in rows["j4"]["reason"]
    assert orders[0] == orders[1]
    assert ("switch", None, ("j2",)) in orders[0]                     # j1 preempted at 2 s
    assert run_processes(run_id(tmp_path / "run")) == []


@pytest.mark.realtime
@pytest.mark.skipif(os.geteuid() != 0, reason="--node-mem and --swap need root")
def test_a_preempted_job_is_moved_to_swap_and_back(tmp_path):
    from conftest import events, fast_classes, jobs_csv, run_id, run_processes, run_testbed

    table = fast_classes(tmp_path)
    work = tmp_path / "w.txt"
    work.write_text("0 2 bsp --work 3 --mem-mb 100\n"
                    "1 1 class=interactive bsp --work 1\n")
    out = tmp_path / "run"
    done = run_testbed("run", str(work), "--scheduler", "t3d", "--pes", "2", "--classes",
                       str(table), "--node-mem", "1G", "--swap", "512M", "--out", str(out),
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    paging = [e for e in events(out) if e["event"] == "paging"]
    assert [(e["job"], e["direction"]) for e in paging] == [("j1", "out"), ("j1", "in")]
    assert paging[0]["swap_kib_after"] > 100 * 1024               # most of 2 x 100 MiB went out
    assert paging[1]["swap_kib_after"] < paging[1]["swap_kib_before"] / 4
    rows = jobs_csv(out)
    assert rows["j1"]["stops"] == "1" and float(rows["j1"]["paging_s"]) > 0
    assert run_processes(run_id(out)) == []
    assert "testbed" not in Path("/proc/swaps").read_text()
