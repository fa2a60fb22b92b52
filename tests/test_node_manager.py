"""The node manager's decision logic, on given processes (no MPI)."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace

from testbed.emulation import procs
from testbed.emulation.launchers import Hydra
from testbed.emulation.messages import Heartbeat, JobCounters, LaunchJob, Release
from testbed.emulation.node_manager import UNSEEN, LocalJob, NodeManager, Rank, ShimSetup
from testbed.machine import build_machine
from testbed.policies.node import GangNode, Proc
from testbed.policies.spin import Spin
from testbed.shim_record import record_path


def _manager(pes_to_cpus: list[int]) -> SimpleNamespace:
    """Just what ``_ours_last`` reads: two jobs, each with a rank on every PE."""
    jobs = {}
    for name in ("a", "b"):
        pes = range(len(pes_to_cpus))
        job = LocalJob(name, {pe: pe for pe in pes}, len(pes_to_cpus), 0.0)
        job.ranks = {pe: Rank(pe, pe, 1000 + pe, -1) for pe in pes}
        jobs[name] = job
    return SimpleNamespace(jobs=jobs, machine=SimpleNamespace(cpus=pes_to_cpus))


def test_ranks_on_our_cpu_are_continued_last(monkeypatch):
    nm = _manager([4, 5, 6])
    monkeypatch.setattr(procs, "current_cpu", lambda: 5)
    keys = [("a", 0), ("a", 1), ("b", 1), ("a", 2), ("gone", 0)]
    assert NodeManager._ours_last(nm, keys) == [("a", 0), ("a", 2), ("gone", 0),
                                                ("a", 1), ("b", 1)]


def test_order_kept_when_no_rank_shares_our_cpu(monkeypatch):
    nm = _manager([0, 1])
    monkeypatch.setattr(procs, "current_cpu", lambda: 7)
    keys = [("b", 1), ("a", 0), ("b", 0)]
    assert NodeManager._ours_last(nm, keys) == keys


def test_current_cpu_is_one_we_may_run_on():
    assert procs.current_cpu() in os.sched_getaffinity(0)


def test_switch_latency_ends_as_the_last_signal_is_issued(monkeypatch):
    """A rank woken on the coordinator's CPU may preempt it inside the last signal's system
    call; the switch is complete by then, so that time is not the switch's."""
    now = [10.0]
    machine = build_machine(2)
    nm = NodeManager(machine.nodes[0], machine, Hydra("mpiexec"), {}, "run", lambda: now[0],
                     GangNode())
    for name in ("a", "b"):
        nm.policy.add(Proc(name, 0, 0, 0))
        job = LocalJob(name, {0: 0}, 1, 0.0)
        job.ranks = {0: Rank(0, 0, 1000, -1)}
        nm.jobs[name] = job
    sent: list[tuple[int, float]] = []

    def send(pidfd: int, sig: int) -> None:
        sent.append((sig, now[0]))
        now[0] += 0.005
    monkeypatch.setattr(procs, "send", send)
    nm.handle(Heartbeat(1, 0, frozenset({"a"}), 10.0))
    now[0] = 20.0
    done = nm.handle(Heartbeat(2, 1, frozenset({"b"}), 19.999))[0]
    assert [sig for sig, _ in sent[1:]] == [signal.SIGSTOP, signal.SIGCONT]
    assert done.stopped == ("a",) and done.continued == ("b",)
    assert abs(done.latency - 0.006) < 1e-9
    now[0] = 30.0
    assert abs(nm.handle(Heartbeat(3, 1, frozenset({"b"}), 29.998))[0].latency - 0.002) < 1e-9


def test_a_rank_never_found_is_released_with_unknown_usage_beside_its_shim_counters(tmp_path):
    """Every rank here answers with the same fields: a rank whose process was never found
    (its program gone, or ended before it was seen) has None usage, not its shim counters
    alone (which once ended the run with a KeyError on ``peak_rss_kib``)."""
    machine = build_machine(4, 2)                   # node 1 holds PEs 2 and 3
    run_id = f"test-unseen-{os.getpid()}"
    shim = ShimSetup("libshim.so", Spin("fixed", fixed_s=0.001), False)
    nm = NodeManager(machine.nodes[1], machine, Hydra("mpiexec"), {procs.MARKER: run_id}, run_id,
                     lambda: 0.0, GangNode(), shim)
    try:
        launch = LaunchJob("j1", 0, (0, 2, 3), ("prog",), False, str(tmp_path / "out"),
                           str(tmp_path / "err"))
        assert nm.handle(launch) == []              # node 0 launches; ranks 1 and 2 are here
        found = Rank(1, 2, 4242, os.open(os.devnull, os.O_RDONLY),
                     procs.Usage(1.5, 10, 2, 3000), 4096)
        nm.jobs["j1"].ranks[1] = found
        [released] = nm.handle(Release("j1"))
    finally:
        nm.close()
    assert isinstance(released, JobCounters) and set(released.ranks) == {1, 2}
    seen, unseen = released.ranks[1], released.ranks[2]
    assert set(seen) == set(unseen) == {*UNSEEN, "shim"}
    assert {k: seen[k] for k in UNSEEN} == {"cpu_s": 1.5, "minor_faults": 10,
                                            "major_faults": 2, "peak_rss_kib": 4096}
    assert all(unseen[k] is None for k in UNSEEN)
    assert not any(os.path.exists(record_path(run_id, "j1", rank)) for rank in (1, 2))
