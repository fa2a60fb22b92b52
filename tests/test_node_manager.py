"""The node manager's decision logic, on given processes (no MPI)."""

from __future__ import annotations

import os
from types import SimpleNamespace

from testbed.emulation import procs
from testbed.emulation.node_manager import LocalJob, NodeManager, Rank


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
