"""Telling a hung job from one that works, from samples of its ranks (pure: numbers in, a
verdict out; no OS calls).

A job is *hung* when, for ``hang_after`` seconds of time in which the scheduler did not keep
it stopped, no rank's count of returned MPI calls changed and either every rank was inside an
MPI call the shim wraps (rule ``in_mpi``), or its ranks together used no CPU (rule ``no_cpu``:
less than ``IDLE_CPU_SHARE`` of a CPU per rank).  Time the job spends stopped is not counted,
so a job that is merely descheduled (gang scheduling stops whole rows for whole timeslices) is
never hung.  Only the shim's records say whether MPI calls return, so a job with a rank
without the shim (schedulers that do not preload it) is never found hung: ranks that merely
use no CPU may be waiting on anything (a file, a socket, ``sleep``), and MPICH's own waits
poll, so an MPI deadlock without the shim uses CPU anyway.

``HangWatch`` takes a job's successive samples and says when it is hung; ``wait_cycles``
finds ranks that wait on each other; ``describe`` says it in one line from the ``hang``
event's fields (``testbed.events``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_HANG_AFTER = 60.0
# A rank asleep in a blocked wait of the shim still uses about 0.8 % of a CPU (its safety-net
# wakes; docs/results/shim-cost.md): ranks below this share of a CPU each count as idle.
IDLE_CPU_SHARE = 0.02


@dataclass(frozen=True)
class Activity:
    """What a rank is doing in MPI, from its shim record: the calls the shim wraps that have
    returned, its threads inside such a call and those of them in a call MPI completes by
    polling its own progress, the world rank the call in progress waits on (-1: several,
    any or not known), the MPI function last entered (the call in progress while
    ``in_calls``) and whether it is asleep in a blocked wait."""

    calls_done: int
    in_calls: int
    polling: int
    waits_on: int
    call: str
    blocked: bool


@dataclass(frozen=True)
class RankSample:
    """One rank of a job, sampled: its process's CPU seconds (user + system; None when its
    process was never read) and its ``Activity`` (None without the shim)."""

    rank: int
    cpu_s: float | None
    activity: Activity | None

    def fields(self) -> dict[str, Any]:
        """The rank's fields in a ``hang`` event (the activity's are None without the shim;
        seconds to the millisecond)."""
        a = self.activity
        return {"call": a.call if a else None, "waits_on": a.waits_on if a else None,
                "blocked": a.blocked if a else None, "in_calls": a.in_calls if a else None,
                "polling": a.polling if a else None, "calls_done": a.calls_done if a else None,
                "cpu_s": None if self.cpu_s is None else round(self.cpu_s, 3)}


@dataclass(frozen=True)
class Hang:
    """A job found hung: since ``since`` (s of time not stopped) by ``rule`` (``in_mpi`` or
    ``no_cpu``), ``seconds`` of time not stopped ago."""

    since: float
    seconds: float
    rule: str


class HangWatch:
    """Watches one job's samples for a hang lasting ``hang_after`` seconds (> 0) of time in
    which the job was not stopped."""

    def __init__(self, hang_after: float) -> None:
        self.hang_after = hang_after
        self.calls: tuple[int, ...] | None = None
        self.in_mpi_since: float | None = None
        self.idle_since: float | None = None
        self.idle_cpu_s = 0.0

    def observe(self, t: float, ranks: Sequence[RankSample]) -> Hang | None:
        """Take a sample of every rank of the job at ``t`` (s of time the job was not stopped,
        never decreasing); the hang if the job is hung now, else None.

        Each rule's quiet stretch starts again whenever a call returns; the ``in_mpi`` stretch
        also whenever some rank is outside a call, and the ``no_cpu`` one whenever the ranks'
        CPU seconds since its start exceed ``IDLE_CPU_SHARE`` per rank of the time since."""
        calls = tuple(r.activity.calls_done if r.activity else 0 for r in ranks)
        cpu_s = sum(r.cpu_s or 0.0 for r in ranks)
        if calls != self.calls:
            self.calls = calls
            self.in_mpi_since = self.idle_since = None
        if any(r.activity is None for r in ranks):
            self.in_mpi_since = self.idle_since = None
            return None
        if all(r.activity is not None and r.activity.in_calls > 0 for r in ranks):
            if self.in_mpi_since is None:
                self.in_mpi_since = t
        else:
            self.in_mpi_since = None
        if (self.idle_since is None
                or cpu_s - self.idle_cpu_s > IDLE_CPU_SHARE * len(ranks) * (t - self.idle_since)):
            self.idle_since, self.idle_cpu_s = t, cpu_s
        for since, rule in ((self.in_mpi_since, "in_mpi"), (self.idle_since, "no_cpu")):
            if since is not None and t - since >= self.hang_after:
                return Hang(since, t - since, rule)
        return None


def wait_cycles(ranks: Sequence[RankSample]) -> list[list[int]]:
    """The cycles in which ranks inside a call wait on each other (rank A on B, B on A, or
    longer), each from its lowest rank in the order they wait; [] if there is none."""
    waits = {r.rank: r.activity.waits_on for r in ranks
             if r.activity is not None and r.activity.in_calls > 0 and r.activity.waits_on >= 0}
    cycles: list[list[int]] = []
    seen: set[int] = set()
    for start in sorted(waits):
        path: list[int] = []
        rank: int | None = start
        while rank is not None and rank not in seen and rank not in path:
            path.append(rank)
            rank = waits.get(rank)
        if rank is not None and rank in path:
            cycle = path[path.index(rank):]
            low = cycle.index(min(cycle))
            cycles.append(cycle[low:] + cycle[:low])
        seen.update(path)
    return cycles


def describe(hang: Mapping[str, Any]) -> str:
    """One line saying why a job was found hung and what each rank was in, from the fields
    of its ``hang`` event (seconds, rule, ranks, cycles), e.g. ``hung: no MPI call returned
    for 30.0 s; rank 0 in MPI_Recv waiting on rank 1 (blocked), ...``."""
    ranks = hang["ranks"]
    seconds = f"{hang['seconds']:.1f} s"
    if hang["rule"] == "in_mpi":
        text = f"hung: no MPI call returned for {seconds}"
    else:
        text = f"hung: no MPI call returned and its ranks used no CPU for {seconds}"
    text += "; " + ", ".join(_rank_text(int(rank), fields)
                             for rank, fields in sorted(ranks.items(), key=lambda r: int(r[0])))
    for cycle in hang["cycles"]:
        text += "; wait cycle: " + " -> ".join(f"rank {r}" for r in [*cycle, cycle[0]])
    return text


def _rank_text(rank: int, fields: Mapping[str, Any]) -> str:
    """What one rank of a hung job was doing, in words."""
    if not fields["in_calls"]:
        return f"rank {rank} outside MPI"
    text = f"rank {rank} in {fields['call'] or 'an MPI call'}"
    if fields["waits_on"] >= 0:
        text += f" waiting on rank {fields['waits_on']}"
    notes = [note for note, present in (("blocked", fields["blocked"]),
                                        ("polling", fields["polling"]),
                                        (f"{fields['in_calls']} threads in MPI",
                                         fields["in_calls"] > 1)) if present]
    return f"{text} ({', '.join(notes)})" if notes else text
