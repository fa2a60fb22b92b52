"""Hangs: the watch on given numbers, the words, the executor failing a hung job (a node manager
stood in for), the record's activity fields, and real deadlocked and busy MPI programs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import PROGRAMS, events, jobs_csv, run_id, run_processes, run_testbed

from testbed.emulation.executor import RANKS_FOUND_WITHIN, EmulationExecutor
from testbed.emulation.link import LocalNode
from testbed.emulation.messages import Heartbeat, KillJob, NodeSample, Release, SwitchDone
from testbed.emulation.mpi_info import MpiInfo
from testbed.events import EventLog, read_events
from testbed.hang import IDLE_CPU_SHARE, Activity, HangWatch, RankSample, describe, wait_cycles
from testbed.machine import build_machine
from testbed.policies import Launch, PolicyConfig, make_policy
from testbed.policies.spin import Spin
from testbed.shim_record import Record, record_path
from testbed.workloads.files import JobSpec
from tests.test_link import _Manager


def _in(call: str, waits_on: int = -1, calls_done: int = 0, blocked: bool = True,
        polling: int = 0) -> Activity:
    """A rank inside ``call``."""
    return Activity(calls_done, 1, polling, waits_on, call, blocked)


def _out(calls_done: int = 0) -> Activity:
    """A rank outside MPI."""
    return Activity(calls_done, 0, 0, -1, "MPI_Barrier", False)


def _watch(hang_after: float, samples: list[tuple[float, list[RankSample]]]) -> list[object]:
    """What a watch says after each of ``samples`` (t, ranks)."""
    watch = HangWatch(hang_after)
    return [watch.observe(t, ranks) for t, ranks in samples]


def test_ranks_all_waiting_in_calls_that_never_return_are_hung_after_hang_after():
    ranks = [RankSample(0, 1.0, _in("MPI_Recv", 1, 5)), RankSample(1, 1.0, _in("MPI_Recv", 0, 7))]
    said = _watch(3.0, [(t, ranks) for t in (10.0, 11.0, 12.5, 13.0, 14.0)])
    assert said[:3] == [None, None, None]
    assert [(h.since, h.seconds, h.rule) for h in said[3:]] == [(10.0, 3.0, "in_mpi"),
                                                                (10.0, 4.0, "in_mpi")]


def test_a_call_returning_starts_the_quiet_stretch_again():
    def ranks(done: int) -> list[RankSample]:
        return [RankSample(0, 1.0, _in("MPI_Recv", 1, done)), RankSample(1, 1.0, _in("MPI_Send"))]

    said = _watch(3.0, [(0.0, ranks(1)), (2.5, ranks(2)), (5.0, ranks(2)), (5.5, ranks(2))])
    assert said == [None, None, None, said[3]] and said[3].since == 2.5


def test_time_the_job_was_stopped_does_not_count():
    """The watch's clock is the job's time not stopped: a job stopped for whole timeslices
    between samples gives the same t again, however long it waits."""
    ranks = [RankSample(0, 1.0, _in("MPI_Barrier")), RankSample(1, 1.0, _in("MPI_Barrier"))]
    assert _watch(2.0, [(1.0, ranks)] * 50 + [(2.9, ranks)]) == [None] * 51


def test_a_rank_computing_outside_mpi_while_the_other_waits_is_not_hung():
    samples = [(t, [RankSample(0, 0.5, _in("MPI_Barrier")), RankSample(1, 1.0 + t, _out())])
               for t in (0.5 * i for i in range(20))]
    assert _watch(2.0, samples) == [None] * 20


def test_a_rank_entering_a_call_starts_the_stretch_in_which_all_wait():
    """Rank 1 computed until just before t = 9: the ranks have all waited since then, not since
    the last return."""
    waiting = RankSample(0, 0.5, _in("MPI_Barrier"))
    samples = [(t, [waiting, RankSample(1, t, _out())]) for t in (0.0, 3.0, 6.0)]
    samples += [(t, [waiting, RankSample(1, 9.0, _in("MPI_Barrier"))]) for t in (9.0, 10.0, 11.0)]
    said = _watch(2.0, samples)
    assert said[:5] == [None] * 5 and (said[5].since, said[5].rule) == (9.0, "in_mpi")


def test_ranks_without_the_shim_are_never_hung():
    """Without the shim nothing says whether MPI calls return: a job whose ranks use no CPU may
    be waiting on anything, and one rank without a record keeps its whole job from a verdict."""
    asleep = [(t, [RankSample(0, 0.02, None), RankSample(1, 0.03, None)]) for t in range(10)]
    assert _watch(4.0, asleep) == [None] * 10
    half = [(t, [RankSample(0, 0.02, _in("MPI_Recv", 1)), RankSample(1, 0.03, None)])
            for t in range(10)]
    assert _watch(4.0, half) == [None] * 10


def test_cpu_below_the_idle_share_counts_as_none_and_above_it_as_use():
    """Ranks asleep in blocked waits still use a little CPU (the shim's safety-net wakes)."""
    def job(share: float) -> list[tuple[float, list[RankSample]]]:
        return [(t, [RankSample(0, share * t, _out()), RankSample(1, share * t, _out())])
                for t in range(8)]

    assert _watch(5.0, job(IDLE_CPU_SHARE / 2))[5].rule == "no_cpu"
    assert _watch(5.0, job(IDLE_CPU_SHARE * 2)) == [None] * 8


def test_wait_cycles_are_found_from_the_lowest_rank_in_waiting_order():
    def job(waits: dict[int, int], outside: tuple[int, ...] = ()) -> list[RankSample]:
        return [RankSample(r, 0.0, _out() if r in outside else _in("MPI_Recv", w))
                for r, w in waits.items()]

    assert wait_cycles(job({0: 1, 1: 0})) == [[0, 1]]
    assert wait_cycles(job({0: 2, 1: 0, 2: 1})) == [[0, 2, 1]]
    assert wait_cycles(job({0: 1, 1: 2, 2: 1, 3: 3})) == [[1, 2], [3]]
    assert wait_cycles(job({0: 1, 1: -1})) == []
    assert wait_cycles(job({0: 1, 1: 0}, outside=(1,))) == []
    assert wait_cycles([RankSample(0, 0.0, None)]) == []


def _hang_fields(ranks: list[RankSample], rule: str = "in_mpi") -> dict[str, object]:
    return {"seconds": 30.04, "rule": rule, "ranks": {str(r.rank): r.fields() for r in ranks},
            "cycles": wait_cycles(ranks)}


def test_a_hang_is_said_with_each_ranks_call_and_the_cycle():
    ranks = [RankSample(0, 2.0, _in("MPI_Win_lock_all", blocked=False, polling=1)),
             RankSample(1, 1.0, _in("MPI_Barrier", 0)),
             RankSample(2, 1.0, Activity(3, 2, 0, 3, "MPI_Recv_c", True)),
             RankSample(3, 1.0, _in("MPI_Mprobe", 2, blocked=False))]
    assert describe(_hang_fields(ranks)) == (
        "hung: no MPI call returned for 30.0 s; rank 0 in MPI_Win_lock_all (polling), "
        "rank 1 in MPI_Barrier waiting on rank 0 (blocked), rank 2 in MPI_Recv_c waiting on "
        "rank 3 (blocked, 2 threads in MPI), rank 3 in MPI_Mprobe waiting on rank 2; "
        "wait cycle: rank 2 -> rank 3 -> rank 2")


def test_a_hang_by_cpu_says_so_and_names_ranks_outside_mpi():
    ranks = [RankSample(0, 0.1, _out()), RankSample(1, 0.1, _in("MPI_Recv", 0))]
    assert describe(_hang_fields(ranks, "no_cpu")) == (
        "hung: no MPI call returned and its ranks used no CPU for 30.0 s; rank 0 outside MPI, "
        "rank 1 in MPI_Recv waiting on rank 0 (blocked)")


class _Stuck(_Manager):
    """A node manager stood in for whose job's ranks are sampled as ``activity`` says; killing
    a job ends its launcher."""

    def __init__(self) -> None:
        super().__init__()
        self.activity: dict[int, RankSample] = {}

    def handle(self, msg: object) -> list[object]:
        replies = super().handle(msg)
        if isinstance(msg, KillJob) and msg.job in self.pipes:
            self.exit(msg.job)
        if isinstance(msg, Heartbeat):
            return [SwitchDone(msg.seq, 0, tuple(sorted({"j1"} - msg.jobs)),
                               tuple(sorted(msg.jobs)), 0.0)]
        return [] if isinstance(msg, (KillJob, Release)) else replies

    def discover(self) -> list[object]:
        return []

    def sample(self) -> NodeSample:
        return NodeSample({}, {"j1": dict(self.activity)})

    def awaiting_pids(self) -> bool:
        return False


@pytest.fixture(params=[False])
def stuck(request, tmp_path: Path):
    """An executor (hang_after 2 s) whose one node's job j1 has two ranks that wait on each
    other, and that node's manager; the executor's clock is moved on by hand.  With the
    parameter True, j1's ranks are never found."""
    policy = make_policy("gang", PolicyConfig(pes=2))
    executor = EmulationExecutor(policy, build_machine(2), MpiInfo("MPICH", "", "", "4", "",
                                                                     "mpiexec", "hydra"),
                                 tmp_path, "hang-test", hang_after=2.0)
    manager = _Stuck()
    manager.activity = {0: RankSample(0, 1.0, _in("MPI_Recv", 1, 4)),
                        1: RankSample(1, 1.0, _in("MPI_Recv", 0, 4))}
    executor.nms = [LocalNode(manager)]     # type: ignore[list-item]
    executor.log = EventLog(tmp_path / "events.jsonl")
    executor._wait = lambda _timeout: None  # type: ignore[method-assign]
    assert executor.launch(JobSpec("j1", 0, 0.0, 2, ("prog",)), Launch("j1", 0, (0, 1))) is None
    if not request.param:
        executor.launched_at.pop("j1")     # its ranks stand found: the samples are theirs
    yield executor, manager
    executor.nms[0].close()
    executor.log.close()


def test_the_executor_fails_a_hung_job_with_what_its_ranks_were_in(stuck):
    executor, manager = stuck
    assert executor.advance(0.0) == []
    executor.t0 -= 2.5                      # 2.5 s on, nothing returned
    [ended] = executor.advance(0.0)
    assert (ended.job, ended.status, ended.exit_code) == ("j1", "failed", None)
    assert ended.reason.startswith("hung: no MPI call returned for 2.5 s; rank 0 in MPI_Recv "
                                   "waiting on rank 1 (blocked), rank 1 in MPI_Recv waiting on "
                                   "rank 0 (blocked); wait cycle: rank 0 -> rank 1 -> rank 0")
    assert any(isinstance(m, KillJob) and m.reason == "hung" for m in manager.handled)
    assert any(isinstance(m, Release) for m in manager.handled)
    [hang] = [e for e in read_events(executor.log.path) if e["event"] == "hang"]
    assert (hang["job"], hang["rule"], hang["cycles"]) == ("j1", "in_mpi", [[0, 1]])
    assert 2.5 <= hang["seconds"] < 2.6
    assert hang["ranks"]["1"] == {"call": "MPI_Recv", "waits_on": 0, "blocked": True,
                                  "in_calls": 1, "polling": 0, "calls_done": 4, "cpu_s": 1.0}
    assert executor.watches == {} and executor.activity == {}


def test_the_executor_does_not_count_the_time_a_job_was_stopped(stuck):
    executor, manager = stuck
    assert executor.advance(0.0) == []
    executor.switch(frozenset(), 1)         # j1's row is not the current one
    executor.t0 -= 60.0
    assert executor.advance(0.0) == []
    executor.switch(frozenset({"j1"}), 0)
    executor.t0 -= 1.5
    assert executor.advance(0.0) == []
    executor.t0 -= 1.0
    assert [e.status for e in executor.advance(0.0)] == ["failed"]


def test_a_record_gives_its_activity_once_a_shim_has_attached():
    path = record_path(f"test-{uuid.uuid4().hex[:8]}", "j1", 1)
    record = Record.create(path, 0, "j1", 1, "", Spin("forever"))
    try:
        assert record.activity() is None
        c = record.c
        c.attached, c.calls_done, c.in_calls, c.polling, c.waits_on, c.blocked = 1, 9, 1, 0, 0, 1
        c.call = b"MPI_Recv_c"
        assert record.activity() == Activity(9, 1, 0, 0, "MPI_Recv_c", True)
    finally:
        record.remove()


def _exec_hang(tmp_path: Path, program: str, *args: str
               ) -> tuple[subprocess.CompletedProcess[str], float]:
    """``testbed exec -n 2 --scheduler ics ARGS`` of one of the test programs into ``r``; the
    completed process and the seconds it took."""
    started = time.monotonic()
    done = run_testbed("exec", "-n", "2", "--scheduler", "ics", *args, "--out", "r", "--",
                       sys.executable, str(PROGRAMS / program), cwd=tmp_path, timeout=60)
    return done, time.monotonic() - started


@pytest.mark.realtime
def test_a_real_deadlock_is_reported_with_both_ranks_calls_and_cleaned_up(tmp_path):
    done, took = _exec_hang(tmp_path, "deadlock.py", "--hang-after", "3")
    assert done.returncode == 1, done.stderr
    assert took < 30
    run_dir = tmp_path / "r"
    [hang] = [e for e in events(run_dir) if e["event"] == "hang"]
    calls = {rank: fields["call"] for rank, fields in hang["ranks"].items()}
    assert set(calls) == {"0", "1"}
    assert all(call in ("MPI_Recv", "MPI_Recv_c", "MPI_Probe", "MPI_Mprobe")
               for call in calls.values()), calls
    assert all(fields["in_calls"] >= 1 for fields in hang["ranks"].values())
    assert hang["seconds"] >= 3 and hang["cycles"] == [[0, 1]]
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("testbed: job j1 hung"))
    assert all(f"rank {rank} in {call}" in line for rank, call in calls.items()), line
    assert "wait cycle: rank 0 -> rank 1 -> rank 0" in line
    row = jobs_csv(run_dir)["j1"]
    assert row["status"] == "failed" and row["reason"].startswith("hung: ")
    assert run_processes(run_id(run_dir)) == []
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"testbed-{run_id(run_dir)}")]


@pytest.mark.realtime
def test_a_rank_computing_longer_than_hang_after_while_the_other_waits_is_not_hung(tmp_path):
    done, _ = _exec_hang(tmp_path, "compute_while_waiting.py", "--hang-after", "2")
    assert done.returncode == 0, done.stderr
    log = events(tmp_path / "r")
    assert [e for e in log if e["event"] == "hang"] == []
    config = next(e for e in log if e["event"] == "run_start")["config"]
    assert config["hang_after"] == 2.0


@pytest.mark.parametrize("stuck", [True], indirect=True)
def test_a_job_whose_ranks_are_never_found_fails_saying_what_was_looked_for(stuck):
    executor, manager = stuck
    manager.activity = {}                   # no rank found, none sampled
    executor.t0 -= RANKS_FOUND_WITHIN - 1.0
    assert executor.advance(0.0) == []
    executor.t0 -= 2.0
    [ended] = executor.advance(0.0)
    assert (ended.job, ended.status) == ("j1", "failed")
    assert ended.reason == (f"its ranks were not found within {RANKS_FOUND_WITHIN:g} s of its "
                            "launch (MPICH, launcher hydra mpiexec): looked for processes with "
                            "TESTBED_JOB=j1 and PMI_RANK in their environment")
    assert any(isinstance(m, KillJob) and m.reason == "ranks not found" for m in manager.handled)
    executor.t0 -= 60.0
    assert executor.advance(0.0) == []
