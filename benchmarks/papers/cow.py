"""COW §3 in the simulator: AFCFS and LGFS on 16 workstations with owners (Karatza 2001).

``python -m benchmarks.papers.cow [--set 1 2] [--quick] [--json] [--out DIR] [--markdown PAGE]
[--readings] [--readings-jobs N] [--workers N] [--reuse] [READING OPTIONS]``

* set 1: 1/λ = 1, 1/μ = 1/μ' = 1, 1/λ' in 1, 0.8, 0.6, 0.4;
* set 2: 1/λ in 1, 0.8, 0.6, with (1/λ', 1/μ') in (1, 1), (2, 2), (4, 4), (8, 8).

Gangs arrive Poisson (mean gap 1/λ) with a size uniform in 1..16; owners arrive Poisson (mean
gap 1/λ') and stay an exponential time of mean 1/μ' (``OwnerStream``); an interrupted gang
starts again from the beginning (COW §2.1: "all work ... must be redone").  Where the paper
leaves a choice that decides whether the system is stable, it is an option (``Reading``; the
defaults and why: docs/schedulers.md, "Workstations with owners"):

* ``--tasks together|apart``: one exponential demand of mean 1/μ = 1 for all the gang's tasks
  (§1), or one per task, the gang holding its PEs until its last task ends (§2.1);
* ``--redo fresh|same``: a restarted gang draws a new demand of the same law, or needs the
  same again (with ``same`` a gang of n tasks interrupted at rate r needs
  E[(e^(rS) - 1)/r], infinite once r >= μ: for 16-task gangs already at 1/λ' = 1);
* ``--restart keep|first|tail`` and ``--hold/--no-hold``: where the COW policy keeps an
  interrupted gang (its place in the policy's order, before all others, or back in line) and
  whether it holds its PEs while none has an owner (``testbed.policies.cow``);
* ``--owner-pick unowned|idle|any``: the PE an owner takes (``OwnerStream.pick``);
* ``--utilization gangs|useful|all``: what U counts: the gangs' busy PE time with the aborted
  runs (repeated work), without them, or with the owners' time too.

RT is the mean response time (arrival at the queues to completion), U the mean processor
utilization over 16 x the span of the kept gangs (first arrival to last end), restarts the
mean number of interruptions per gang.  Each cell is ``--replications`` independent
replications (different seeds for gangs and owners) of ``--jobs`` gangs, the first 10 % of
completions dropped as warm-up; the interval is the 95 % t interval over the replications
(COW §3.1).  The RT ratio is LGFS over AFCFS.  Replication k of every cell and policy uses
seed k, so the two policies see the same gangs and owners in it (and cells the same random
draws, scaled): LGFS and AFCFS, or two cells, are compared on the replications' paired
differences (``paired``: a t interval of the mean difference), which is narrower than two
intervals side by side.  ``delivered`` says whether the queues settled: the work delivered
over the work offered, which with every gang done is the arrival span (first to last arrival)
over the whole span (first arrival to last end), the median over the replications.  A queue
that keeps up ends soon after its last arrival (about 1: (0.8, 1) at 20,000 gangs delivers
0.653-0.663 of 0.664 offered); one sent more than it can do leaves a backlog at the last
arrival that takes long to clear.  A cell settled when ``delivered`` is at least
``DELIVERED_SETTLED`` (0.95).  Beside it ``growth``, the mean number of gangs in the system over
the second half of the arrivals over that over the first half (about 1 when settled, 3 for a
queue growing linearly from empty), which a long excursion of a heavy-tailed queue also
raises: (0.8, 1) swings 1.04-2.21 at 3,000 gangs while it delivers what it is offered.

A replication is stopped when its simulated clock reaches ``HORIZON`` (20) times the arrival
of its last gang (``horizon``, ``Bounded``): a queue that settles empties soon after its last
arrival, and one sent work up to 20 times as fast as it can do it still empties by then, so
one still busy there does not settle, and a mean RT cut there would say where it was cut, not
what the policy does.  Such a cell's record has ``"settled": false``, ``stopped_at`` (the
simulated time each stopped replication was stopped at, s) and ``left`` (its gangs not done
then), and None for every figure; the tables say "did not settle".  A replication that ends
before its bound is simulated exactly as without one, and its record has no ``settled`` key.
The event log is read as a stream (a row per gang and two numbers per owner's visit are
kept), and the bound caps its size.

Writes ``cow-setN.json`` and ``cow-setN.png`` under ``--out`` and prints a table, or with
``--json`` one record per cell: ``{"policy", "inv_lambda", "inv_lambda_owner",
"inv_mu_owner", "rt", "rt_ci", "u", "u_ci", "restarts", "u_repeated", "u_owners", "growth",
"delivered",
"rts", "us", "us_owners", "rts_early", "rts_late", "tasks", "redo", "restart", "hold",
"owner_pick", "utilization"}`` (``u_repeated`` and ``u_owners``: the aborted runs' and the
owners' share of 16 x the span; ``rts``, ``us`` and ``us_owners``: each replication's RT, U
and owners' share, by seed; ``rts_early`` and ``rts_late``: each replication's RT of the gangs
arriving in the first and the second half of its arrivals, how RT grows with run length); a
set's JSON also has ``seconds``, the time the run's sets took to simulate, and ``workers``.
``--markdown PAGE`` also writes the tables, the paper's claims checked against them, and with
``--readings`` each other reading of one choice (2 replications of ``--readings-jobs`` gangs,
3,000 unless told, on set 1 and three cells of set 2), as a Markdown page.
``run_set`` gives the records in-process.

The replications are independent (each has its own seeds and run directory), so they are
spread over ``--workers`` processes (default: one per CPU; 1 runs them one after another in
this process), the sets' in one pool and the readings' in another; the records are the same
whatever the number, byte for byte, and in the same order.  A replication asked for twice
(the cell set 2 shares with set 1, the readings' default reading on the sets' first seeds)
is simulated once.  A progress line per replication goes to stderr.  With ``--reuse`` a set
whose ``cow-setN.json`` under ``--out`` was run with the same replications, gangs and reading
is read from it and not simulated again, and the page says so.  Under some readings the
queues grow without bound (``redo=same`` gives 16-task gangs no finite mean demand); the
bound stops those replications (docs/schedulers.md, "Reading COW's model", says which).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    Session,
    emit,
    host,
    now_iso,
    page_head,
    parser,
    table,
)
from testbed.events import EventLog, iter_events
from testbed.exit_codes import exit_on_sigterm
from testbed.experiments import engine
from testbed.owners import OWNER_PICKS, OwnerStream
from testbed.policies import PolicyConfig
from testbed.policies.cow import RESTARTS, Afcfs, Cow, Lgfs
from testbed.ports import Ended, Interrupted
from testbed.results.metrics import JobRow, job_rows
from testbed.run import drive
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads.files import JobSpec, Workload

PES = 16
SCHEDULERS: dict[str, type[Cow]] = {"afcfs": Afcfs, "lgfs": Lgfs}
POLICIES = tuple(SCHEDULERS)
TASKS = ("together", "apart")
REDOS = ("fresh", "same")
UTILIZATIONS = ("gangs", "useful", "all")
DELIVERED_SETTLED = 0.95
HORIZON = 20.0
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086)


@dataclass(frozen=True)
class Reading:
    """One reading of what COW §2-§3 leave open (the defaults are this project's reading)."""

    tasks: str = "together"
    redo: str = "fresh"
    restart: str = "keep"
    hold: bool = False
    owner_pick: str = "unowned"
    utilization: str = "gangs"

    def __post_init__(self) -> None:
        for name, known in (("tasks", TASKS), ("redo", REDOS), ("restart", RESTARTS),
                            ("owner_pick", OWNER_PICKS), ("utilization", UTILIZATIONS)):
            if getattr(self, name) not in known:
                raise ValueError(f"unknown {name} {getattr(self, name)!r} "
                                 f"(known: {', '.join(known)})")


@dataclass(frozen=True)
class Replication:
    """What one replication measured: mean RT (s), U, the aborted runs' and the owners' shares
    of the PE time, restarts per gang, the growth of the number in the system, the work
    delivered over the work offered, and the mean RT (s) of the gangs arriving in the first
    and in the second half of the arrival span (equal but for chance in a queue that
    settles; the second larger in one that grows)."""

    rt: float
    u: float
    u_repeated: float
    u_owners: float
    restarts: float
    growth: float
    delivered: float
    rt_early: float
    rt_late: float


@dataclass(frozen=True)
class Stopped:
    """A replication stopped at its horizon (``Bounded``): the simulated time it stopped at
    (s) and the number of its gangs not done then."""

    at: float
    left: int


def horizon(last_arrival: float) -> float:
    """The simulated time (s) at which a replication whose last gang arrives at
    ``last_arrival`` (s) is stopped as not settling: ``HORIZON`` times that.  A queue that
    settles empties soon after its last arrival (its backlog then does not grow with the
    number of gangs), and one that is sent work up to ``HORIZON`` times as fast as it can do
    it still empties by then; one still busy has work it cannot clear (a gang restarted over
    and over: under ``redo=same`` a 16-task gang's mean demand is infinite)."""
    return HORIZON * last_arrival


def past(clock: float, end: float) -> bool:
    """Whether a simulation at ``clock`` (s) is to be stopped, its horizon being ``end`` (s)."""
    return clock >= end


class Bounded(SimulationExecutor):
    """The simulation executor with a horizon ``end`` (s): time does not pass beyond it, and
    once the clock reaches it the run is stopped (it ends ``interrupted``, the jobs left
    killed).  Up to the horizon it does exactly what ``SimulationExecutor`` does."""

    def __init__(self, duration: dict[str, float], end: float,
                 redraw: Callable[[str], float] | None = None) -> None:
        super().__init__(duration, redraw=redraw)
        self.end_at = end

    def check(self) -> None:
        """Raise ``Interrupted`` once the clock has reached the horizon."""
        if past(self.clock, self.end_at):
            raise Interrupted(f"t={self.clock:g} s: the horizon {self.end_at:g} s is reached")

    def advance(self, until: float) -> list[Ended]:
        """``SimulationExecutor.advance``, up to the horizon at most (an infinite ``until``
        with no job running is passed on, so that a stalled run is still told as such)."""
        if self.running or not math.isinf(until):
            until = min(until, self.end_at)
        return super().advance(until)


def cells(which: int) -> list[tuple[float, float, float]]:
    """The (1/λ, 1/λ', 1/μ') of an experiment set."""
    if which == 1:
        return [(1.0, inv, 1.0) for inv in (1.0, 0.8, 0.6, 0.4)]
    return [(inv, owner, owner) for inv in (1.0, 0.8, 0.6) for owner in (1.0, 2.0, 4.0, 8.0)]


def demand(rng: random.Random, size: int, tasks: str) -> float:
    """A gang's execution time (s): one exponential draw of mean 1 for all its tasks
    (``together``), or the largest of one draw per task (``apart``)."""
    if tasks == "together":
        return rng.expovariate(1.0)
    return max(rng.expovariate(1.0) for _ in range(size))


def gangs(count: int, inv_lambda: float, seed: int, tasks: str = "together") -> Workload:
    """``count`` gangs: Poisson arrivals of mean gap ``inv_lambda``, sizes uniform in 1..16,
    execution times as ``demand`` draws them."""
    rng = random.Random(seed)
    t, specs = 0.0, []
    for i in range(1, count + 1):
        t += rng.expovariate(1 / inv_lambda)
        size = rng.randint(1, PES)
        specs.append(JobSpec(f"j{i}", i, t, size, (), demand(rng, size, tasks)))
    return Workload(f"<cow gangs 1/lambda={inv_lambda} seed={seed}>", specs)


def owner_time(visits: Sequence[float], start: float, end: float) -> float:
    """PE seconds the owners were present between ``start`` and ``end`` (s); ``visits`` are
    the owners' arrival times and stays (s), flat: t1, d1, t2, d2, ..."""
    return sum(max(0.0, min(t + d, end) - max(t, start))
               for t, d in zip(visits[::2], visits[1::2], strict=True))


def summarize(log: Path, utilization: str) -> Replication | Stopped:
    """A replication's figures from its event log ``log``, read once as a stream (what is held
    is a row per gang and two numbers per owner's visit): the gangs done, sorted by end, the
    first 10 % dropped; U over 16 x their span as ``utilization`` says.  A run stopped at its
    horizon gives when, and how many gangs were left."""
    visits = array("d")
    ends: list[dict[str, Any]] = []

    def watched(events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for ev in events:
            if ev["event"] == "owner_start":
                visits.extend((ev["t"], ev["duration"]))
            elif ev["event"] == "run_end":
                ends.append(ev)
            yield ev

    every = job_rows(watched(iter_events(log)))
    if ends and ends[0]["status"] == "interrupted":
        return Stopped(ends[0]["t"], sum(r.status != "done" for r in every))
    rows = sorted((r for r in every if r.status == "done"), key=lambda r: r.end or 0.0)
    kept = rows[len(rows) // 10:]
    first, last = min(r.arrival for r in kept), max(r.end or 0.0 for r in kept)
    capacity = PES * (last - first)
    busy = sum(r.cpu_s or 0.0 for r in kept) / capacity
    repeated = sum(r.lost_s * r.size for r in kept) / capacity
    owners = owner_time(visits, first, last) / capacity
    u = {"gangs": busy, "useful": busy - repeated, "all": busy + owners}[utilization]
    end = max(r.arrival for r in rows)
    early, late = (in_system(rows, a, b) for a, b in ((0.0, end / 2), (end / 2, end)))
    start = min(r.arrival for r in rows)
    middle = (start + end) / 2
    halves = ([r.response or 0.0 for r in kept if r.arrival <= middle],
              [r.response or 0.0 for r in kept if r.arrival > middle])
    return Replication(statistics.fmean(r.response or 0.0 for r in kept), u, repeated, owners,
                       statistics.fmean(r.restarts for r in kept), late / early,
                       delivered(start, end, max(r.end or 0.0 for r in rows)),
                       *(statistics.fmean(h) if h else math.nan for h in halves))


def delivered(first_arrival: float, last_arrival: float, last_end: float) -> float:
    """The work delivered over the work offered by a run whose gangs all ended: the same work
    offered over the arrival span and delivered over the whole span, so their ratio (times,
    s)."""
    return (last_arrival - first_arrival) / (last_end - first_arrival)


def settled(record: dict[str, Any]) -> bool:
    """Whether a cell's queue settled: it has figures and delivered at least
    ``DELIVERED_SETTLED`` of the work offered."""
    return record.get("delivered") is not None and record["delivered"] >= DELIVERED_SETTLED


def in_system(rows: list[JobRow], start: float, end: float) -> float:
    """The mean number of gangs arrived and not ended between ``start`` and ``end`` (s)."""
    return sum(max(0.0, min(r.end or 0.0, end) - max(r.arrival, start))
               for r in rows) / (end - start)


def replication(policy: str, cell: tuple[float, float, float], jobs: int, seed: int,
                tmp: Path, reading: Reading = Reading()) -> Replication | Stopped:
    """Simulate one replication of ``cell`` under ``policy`` and ``reading``, stopped at its
    ``horizon`` if it gets there (its run directory, under ``tmp``, is removed once read)."""
    inv_lambda, inv_owner, mean_owner = cell
    workload = gangs(jobs, inv_lambda, seed, reading.tasks)
    sizes = {j.id: j.pes for j in workload.jobs}
    draws = random.Random(seed + 2_000_003)
    redraw = None if reading.redo == "same" else (
        lambda job: demand(draws, sizes[job], reading.tasks))
    scheduler = SCHEDULERS[policy](PolicyConfig(PES), restart=reading.restart, hold=reading.hold)
    owners = OwnerStream(1 / inv_owner, mean_owner, seed + 1_000_003, reading.owner_pick)
    out = Path(tempfile.mkdtemp(dir=tmp))
    try:
        drive(workload, scheduler,
              Bounded({j.id: j.work or 0.0 for j in workload.jobs},
                      horizon(max(j.arrival for j in workload.jobs)), redraw),
              out, {"scheduler": policy, "machine": {"pes": PES},
                    "cow": dataclasses.asdict(reading)},
              log=EventLog(out / "events.jsonl", flush_each=False), owners=owners)
        return summarize(out / "events.jsonl", reading.utilization)
    finally:
        shutil.rmtree(out)


def interval(values: list[float]) -> float:
    """The 95 % t half-width of the mean of ``values``."""
    n = len(values)
    t = T975[n - 2] if n - 1 <= len(T975) else 1.96
    return t * statistics.stdev(values) / math.sqrt(n)


def paired(subject: dict[str, Any], reference: dict[str, Any], key: str = "rts"
           ) -> tuple[float, float] | None:
    """The mean over replications of subject's minus reference's figure (``rts``: RT, s;
    ``us``: U), replication k against replication k (the same seeds), and its 95 % t
    half-width; None when either cell did not settle."""
    if subject.get(key) is None or reference.get(key) is None:
        return None
    diffs = [a - b for a, b in zip(subject[key], reference[key], strict=True)]
    return statistics.fmean(diffs), interval(diffs)


@dataclass(frozen=True)
class Run:
    """One replication to simulate: ``policy`` on ``cell`` (1/λ, 1/λ', 1/μ'), ``jobs`` gangs
    drawn from ``seed``, under ``reading``.  Two equal runs give the same figures."""

    policy: str
    cell: tuple[float, float, float]
    jobs: int
    seed: int
    reading: Reading

    def label(self) -> str:
        """The run in a few words, for progress lines."""
        changed = [f"{k}={v}" for k, v in dataclasses.asdict(self.reading).items()
                   if v != getattr(Reading(), k)]
        return (f"{self.policy} {'/'.join(f'{c:g}' for c in self.cell)} seed {self.seed} "
                f"{self.jobs} gangs {' '.join(changed) or 'default'}")


Figures = Replication | Stopped
Done = tuple[Run, Figures, float]
Spread = Callable[[Callable[[Run], Done], list[Run]], Iterable[Done]]


def timed(run: Run) -> Done:
    """Simulate ``run`` (its directory in a temporary directory of its own, on whatever
    machine runs it): the run, its figures and the seconds it took."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="testbed-cow-") as tmp:
        found = replication(run.policy, run.cell, run.jobs, run.seed, Path(tmp), run.reading)
    return run, found, time.perf_counter() - start


def simulate(runs: Iterable[Run], workers: int = 1,
             progress: Callable[[str], None] | None = None,
             spread: Spread | None = None) -> dict[Run, Figures]:
    """The figures of each distinct run in ``runs``, simulated in ``workers`` processes (or by
    ``spread``, a function like ``map`` that may give the results in any order).  Each run
    has its own seeds and directory, so the figures do not depend on how they are spread;
    ``progress``, if given, gets a line as each run ends."""
    todo = list(dict.fromkeys(runs))
    results: dict[Run, Figures] = {}
    start = time.monotonic()
    with engine.spreading(workers) as pool:
        for run, found, seconds in (spread or pool)(timed, todo):
            results[run] = found
            if progress is not None:
                stopped = (f", stopped at {found.at:.0f} s simulated with {found.left} gangs "
                           "left" if isinstance(found, Stopped) else "")
                progress(f"{len(results)}/{len(todo)} {run.label()}: {seconds:.1f} s{stopped} "
                         f"({time.monotonic() - start:.0f} s so far)")
    return results


def _known(known: Sequence[dict[str, Any]], cell: tuple[float, float, float]
           ) -> list[dict[str, Any]]:
    """The records of ``cell`` in ``known``."""
    return [r for r in known
            if (r["inv_lambda"], r["inv_lambda_owner"], r["inv_mu_owner"]) == cell]


def plan(cell_list: list[tuple[float, float, float]], replications: int, jobs: int,
         reading: Reading, known: Sequence[dict[str, Any]] = ()) -> list[Run]:
    """The runs the records of ``cell_list`` need (by cell, policy and seed), none for a cell
    whose records are in ``known``."""
    return [Run(policy, cell, jobs, seed, reading) for cell in cell_list
            if not _known(known, cell) for policy in POLICIES
            for seed in range(1, replications + 1)]


def assemble(cell_list: list[tuple[float, float, float]], replications: int, jobs: int,
             reading: Reading, results: dict[Run, Figures],
             known: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """One record per cell and policy, in that order (the module docstring lists the fields),
    from the figures of ``plan``'s runs in ``results``, or from ``known``."""
    records = []
    for cell in cell_list:
        done = _known(known, cell)
        if done:
            records += done
            continue
        for policy in POLICIES:
            found = [results[Run(policy, cell, jobs, seed, reading)]
                     for seed in range(1, replications + 1)]
            records.append({"policy": policy, "inv_lambda": cell[0],
                            "inv_lambda_owner": cell[1], "inv_mu_owner": cell[2],
                            **figures(found), **dataclasses.asdict(reading)})
    return records


FIGURES = ("rt", "rt_ci", "u", "u_ci", "restarts", "u_repeated", "u_owners", "growth",
           "delivered", "rts", "us", "us_owners", "rts_early", "rts_late")


def figures(found: Sequence[Figures]) -> dict[str, Any]:
    """A cell's figures over its replications ``found``: the means and intervals the module
    docstring lists; if one was stopped at its horizon, none of them (None), but
    ``settled: false`` and each stopped replication's simulated time (``stopped_at``, s) and
    gangs left (``left``)."""
    stopped = [r for r in found if isinstance(r, Stopped)]
    if stopped:
        return {**dict.fromkeys(FIGURES), "settled": False,
                "stopped_at": [round(r.at, 3) for r in stopped],
                "left": [r.left for r in stopped]}
    ran = [r for r in found if isinstance(r, Replication)]
    rts, us = [r.rt for r in ran], [r.u for r in ran]
    return {"rt": round(statistics.fmean(rts), 3), "rt_ci": round(interval(rts), 3),
            "u": round(statistics.fmean(us), 4), "u_ci": round(interval(us), 4),
            "restarts": round(statistics.fmean(r.restarts for r in ran), 3),
            "u_repeated": round(statistics.fmean(r.u_repeated for r in ran), 4),
            "u_owners": round(statistics.fmean(r.u_owners for r in ran), 4),
            "growth": round(statistics.median(r.growth for r in ran), 3),
            "delivered": round(statistics.median(r.delivered for r in ran), 4),
            "rts": [round(x, 3) for x in rts], "us": [round(x, 4) for x in us],
            "us_owners": [round(r.u_owners, 4) for r in ran],
            "rts_early": [round(r.rt_early, 3) for r in ran],
            "rts_late": [round(r.rt_late, 3) for r in ran]}


def run_cells(cell_list: list[tuple[float, float, float]], replications: int, jobs: int,
              reading: Reading, known: Sequence[dict[str, Any]] = (),
              workers: int = 1, spread: Spread | None = None) -> list[dict[str, Any]]:
    """One record per cell and policy (the module docstring lists the fields), the
    replications simulated in ``workers`` processes (or by ``spread``, as ``simulate``); a
    cell whose records are in ``known`` (run with the same sizes and reading) is not run
    again."""
    results = simulate(plan(cell_list, replications, jobs, reading, known), workers,
                       spread=spread)
    return assemble(cell_list, replications, jobs, reading, results, known)


def run_set(which: int, replications: int = 5, jobs: int = 3000, workers: int = 1,
            spread: Spread | None = None, **choices: Any) -> list[dict[str, Any]]:
    """Simulate experiment set ``which`` (1 or 2) under both policies: ``replications`` of
    ``jobs`` gangs per cell in ``workers`` processes (or by ``spread``, as ``simulate``), the
    choices (``Reading``'s fields) as given, else the defaults.  One record per cell and
    policy, as ``--json`` prints them."""
    return run_cells(cells(which), replications, jobs, Reading(**choices), workers=workers,
                     spread=spread)


def ratios(records: list[dict[str, Any]]) -> dict[tuple[float, float], float]:
    """LGFS's RT over AFCFS's, by (1/λ, 1/λ'), where both settled."""
    afcfs = {(r["inv_lambda"], r["inv_lambda_owner"]): r["rt"] for r in records
             if r["policy"] == "afcfs" and r["rt"] is not None}
    return {key: r["rt"] / afcfs[key] for r in records
            if r["policy"] == "lgfs" and r["rt"] is not None
            and (key := (r["inv_lambda"], r["inv_lambda_owner"])) in afcfs}


def unsettled(record: dict[str, Any]) -> str:
    """What the tables say in place of the RT of a cell stopped at its horizon."""
    return (f"did not settle (stopped at {' and '.join(f'{t:.0f}' for t in record['stopped_at'])}"
            f" s, {' and '.join(str(n) for n in record['left'])} gangs left)")


def rt_text(record: dict[str, Any]) -> float | str:
    """A cell's RT for a table: its mean, or that it did not settle."""
    return unsettled(record) if record["rt"] is None else record["rt"]


HEADER = ["policy", "1/λ", "1/λ'", "1/μ'", "RT", "±95%", "RT ratio", "U", "±95%", "repeated",
          "owners", "restarts", "growth", "delivered"]


def rows(records: list[dict[str, Any]]) -> list[list[Any]]:
    """The table rows of ``records`` (columns ``HEADER``); a cell that did not settle says so
    in place of its RT, its other figures (and an RT ratio with it) shown as –."""
    ratio = ratios(records)
    found = []
    for r in records:
        key = (r["inv_lambda"], r["inv_lambda_owner"])
        shown = [r["rt"], r["rt_ci"],
                 round(ratio[key] if r["policy"] == "lgfs" else 1.0, 3) if key in ratio else "–",
                 r["u"], r["u_ci"], r["u_repeated"], r["u_owners"], r["restarts"], r["growth"],
                 r.get("delivered", "–")]
        if r["rt"] is None:
            shown = [unsettled(r), *["–"] * (len(shown) - 1)]
        found.append([r["policy"], r["inv_lambda"], r["inv_lambda_owner"], r["inv_mu_owner"],
                      *shown])
    return found


def claims(sets: dict[int, list[dict[str, Any]]]) -> list[str]:
    """COW §3.2/§4's claims checked against the records of both sets, one line each."""
    records = [r for which in sorted(sets) for r in sets[which]]
    pairs = [(a, b) for a in records for b in records
             if a["policy"] == "afcfs" and b["policy"] == "lgfs"
             and (a["inv_lambda"], a["inv_lambda_owner"], a["inv_mu_owner"])
             == (b["inv_lambda"], b["inv_lambda_owner"], b["inv_mu_owner"])]
    cells_seen = list({(a["inv_lambda"], a["inv_lambda_owner"], a["inv_mu_owner"]): (a, b)
                       for a, b in pairs}.values())
    unique = [(a, b) for a, b in cells_seen if a["rt"] is not None and b["rt"] is not None]
    lower = [b["rt"] < a["rt"] for a, b in unique]
    clear = [diff + half < 0 for diff, half in (paired(b, a) for a, b in unique)]
    higher_u = [b["u"] > a["u"] for a, b in unique]
    lines = [f"- LGFS's RT below AFCFS's: {sum(lower)} of {len(unique)} cells "
             f"({sum(clear)} where the 95 % interval of the replications' paired difference "
             "lies below 0)",
             f"- U higher with LGFS: {sum(higher_u)} of {len(unique)} cells",
             f"- settled (delivered at least {DELIVERED_SETTLED:g} of the work offered, both "
             f"policies): {sum(settled(a) and settled(b) for a, b in unique)} of "
             f"{len(cells_seen)} cells"]
    if 1 in sets:
        afcfs = [r["rt"] for r in sets[1] if r["policy"] == "afcfs"]
        lgfs = [r["rt"] for r in sets[1] if r["policy"] == "lgfs"]
        rising = ("not judged, a cell did not settle" if None in afcfs + lgfs else
                  "yes" if all(x < y for curve in (afcfs, lgfs) for x, y in pairwise(curve))
                  else "no")
        lines.append(f"- set 1: RT rises as owners come more often: {rising} (AFCFS "
                     + ", ".join(_figure(x) for x in afcfs) + "; LGFS "
                     + ", ".join(_figure(x) for x in lgfs) + ")")
    if 2 in sets:
        inverses = sorted({r["inv_lambda"] for r in sets[2]}, reverse=True)
        curves = [[r["rt"] for r in sets[2] if r["inv_lambda"] == inv and r["policy"] == policy]
                  for inv in inverses for policy in POLICIES]
        judged = [curve for curve in curves if None not in curve]
        longer = sum(all(x < y for x, y in pairwise(curve)) for curve in judged)
        lines.append(f"- set 2: RT rises as owners stay longer (and come more rarely): "
                     f"{longer} of {len(judged)} curves (1/λ and policy)"
                     + (f"; {len(curves) - len(judged)} not judged, a cell did not settle"
                        if len(judged) < len(curves) else ""))
        by_lambda = {inv: [r["rt"] for r in sets[2] if r["inv_lambda"] == inv]
                     for inv in inverses}
        lines.append("- set 2: mean RT over owners and policies by 1/λ: "
                     + ", ".join(f"{inv:g}: " + ("not judged, a cell did not settle"
                                                 if None in rts
                                                 else f"{statistics.fmean(rts):.3g}")
                                 for inv, rts in by_lambda.items()))
    stopped = len(cells_seen) - len(unique)
    if stopped:
        lines.append(f"- did not settle (a replication stopped at {HORIZON:g} x its last "
                     f"arrival): {stopped} of {len(cells_seen)} cells, left out of the counts "
                     "above")
    return lines


def _figure(value: float | None) -> str:
    """A figure for a claim's line: the number, or that its cell did not settle."""
    return "did not settle" if value is None else f"{value:g}"


PROBE = [*[(1.0, inv, 1.0) for inv in (1.0, 0.8, 0.6, 0.4)], (0.8, 1.0, 1.0), (0.8, 8.0, 8.0),
         (0.6, 1.0, 1.0)]
PROBE_SIZES = (2, 3000)


def readings(default: Reading) -> list[tuple[str, Reading]]:
    """Every reading differing from ``default`` in one choice (not ``utilization``, which
    changes no simulation), each with a label."""
    found = []
    for name, known in (("tasks", TASKS), ("redo", REDOS), ("restart", RESTARTS),
                        ("hold", (True, False)), ("owner_pick", OWNER_PICKS)):
        for value in known:
            if value != getattr(default, name):
                found.append((f"{name}={value}", dataclasses.replace(default, **{name: value})))
    return found


def compare_readings(default: Reading, workers: int = 1,
                     done: dict[Run, Figures] | None = None,
                     progress: Callable[[str], None] | None = None,
                     sizes: tuple[int, int] = PROBE_SIZES) -> list[list[Any]]:
    """RT and growth of AFCFS and LGFS under ``default`` and each reading changing one choice,
    on ``PROBE`` with ``sizes`` (replications, gangs): table rows (a cell that did not settle
    says so in place of its RT, its growth –).  The runs are simulated in ``workers``
    processes, all in one pool, except those whose figures are in ``done`` (the sets' runs:
    at the same sizes the default reading's here are some of them)."""
    batch = [("default", default), *readings(default)]
    wanted = [run for _, reading in batch for run in plan(PROBE, *sizes, reading)]
    done = done or {}
    results = {**done, **simulate((r for r in wanted if r not in done), workers, progress)}
    found = []
    for label, reading in batch:
        records = assemble(PROBE, *sizes, reading, results)
        for cell in PROBE:
            mine = {r["policy"]: r for r in _known(records, cell)}
            found.append([label, *cell,
                          *(value for policy in POLICIES for value in
                            (rt_text(mine[policy]), "–" if mine[policy]["growth"] is None
                             else mine[policy]["growth"]))])
    return found


READINGS_HEADER = ["reading", "1/λ", "1/λ'", "1/μ'", "AFCFS RT", "growth", "LGFS RT",
                   "growth"]


def _minutes(seconds: float) -> str:
    """``seconds`` as minutes, for a page."""
    return f"{seconds / 60:.1f} min"


def provenance(sets: dict[int, dict[str, Any]]) -> list[str]:
    """The page's lines saying how each set's records were got: simulated by this run (how
    long it took, in how many processes), or read from an earlier run's JSON."""
    lines = []
    fresh = [which for which, result in sorted(sets.items()) if not result.get("reused")]
    if fresh:
        lines.append(f"- set{'s' if len(fresh) > 1 else ''} "
                     + " and ".join(str(w) for w in fresh) + ": simulated in "
                     + _effort(sets[fresh[0]]))
    for which, result in sorted(sets.items()):
        if result.get("reused"):
            lines.append(f"- set {which}: the records of `{result['reused']}`, written "
                         f"{result['date']} by an earlier run with the same replications, "
                         "gangs and reading"
                         + (f" (that run's sets simulated in {_effort(result)})"
                            if "seconds" in result else "")
                         + "; not simulated again")
    return lines


def _effort(result: dict[str, Any]) -> str:
    """How long a simulation took and in how many processes, for a page."""
    return (f"{_minutes(result['seconds'])} by {result['workers']} worker "
            f"process{'es' if result['workers'] > 1 else ''}")


def markdown(sets: dict[int, dict[str, Any]], compared: dict[str, Any] | None,
             command: str) -> str:
    """The Markdown page of a run: how it was made, each set's table, the claims checked and,
    if measured, the other readings (``compared``: their ``rows``, the ``replications`` and
    ``jobs`` (gangs) per cell, the ``date`` they ended, the ``seconds`` they took and the
    ``workers`` they ran in)."""
    meta = next(iter(sets.values()))
    lines = page_head("COW: AFCFS and LGFS on workstations with owners, simulated",
                      "benchmarks.papers.cow", command, meta["host"], meta["date"])
    reading = meta["reading"]
    lines += [f"- {meta['replications']} replications of {meta['jobs']} gangs per cell, "
              "the first 10 % of completions dropped; ± is the 95 % t interval; replication k "
              "of every cell and policy has seed k (the claims compare paired replications)",
              "- reading: " + ", ".join(f"{k}={v}" for k, v in reading.items()),
              *provenance(sets), "",
              "RT: mean response time; U: utilization as `utilization` says; repeated, owners: "
              "the aborted gang runs' and the owners' shares of the PE time; restarts: "
              "interruptions per gang; growth: mean number of gangs in the system over the "
              "second half of the arrivals over that over the first, median of the "
              "replications (about 1 when settled, 3 for queues growing steadily from empty; a "
              "long excursion of a heavy-tailed queue raises it too).", "",
              f"A replication whose simulated clock reaches {HORIZON:g} x its last arrival is "
              "stopped there: a queue that settles empties soon after its last arrival, and "
              f"one sent work up to {HORIZON:g} times as fast as it can do it still empties "
              "by then. A cell with such a replication has no RT: it *did not settle*, and "
              "the table gives when its stopped replications were stopped (simulated "
              "seconds) and how many gangs they had left.", ""]
    for which, result in sorted(sets.items()):
        lines += [f"## Set {which}", "", "| " + " | ".join(HEADER) + " |",
                  "|" + "---|" * len(HEADER)]
        lines += ["| " + " | ".join(f"{c:g}" if isinstance(c, float) else str(c) for c in row)
                  + " |" for row in rows(result["records"])]
        lines.append("")
    lines += ["## The paper's claims (COW §3.2, §4)", "",
              *claims({w: s["records"] for w, s in sets.items()}), ""]
    if compared is not None:
        smaller = compared["jobs"] < meta["jobs"]
        lines += ["## Other readings", "",
                  "Each changes one choice of the reading above; "
                  f"{compared['replications']} replications of {compared['jobs']} gangs per "
                  "cell"
                  + (f", fewer than the sets' {meta['jobs']} so that the readings that do not "
                     "settle (each such replication runs to its bound, with hundreds of gangs "
                     "queued) end in minutes" if smaller else "")
                  + f". Ended {compared['date']}, simulated in {_effort(compared)}.",
                  "", "| " + " | ".join(READINGS_HEADER) + " |",
                  "|" + "---|" * len(READINGS_HEADER)]
        lines += ["| " + " | ".join(f"{c:g}" if isinstance(c, float) else str(c) for c in row)
                  + " |" for row in compared["rows"]]
        lines.append("")
    return "\n".join(lines)


def plot(records: list[dict[str, Any]], which: int, path: Path) -> None:
    """RT (log) and the RT ratio against 1/λ', one curve per policy (and per 1/λ in set 2);
    cells that did not settle have no point."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    ratio = ratios(records)
    for inv_lambda in sorted({r["inv_lambda"] for r in records}):
        for policy in POLICIES:
            mine = [r for r in records if r["policy"] == policy
                    and r["inv_lambda"] == inv_lambda and r["rt"] is not None]
            left.errorbar([r["inv_lambda_owner"] for r in mine], [r["rt"] for r in mine],
                          yerr=[r["rt_ci"] for r in mine], marker="o", capsize=3,
                          label=f"{policy} 1/λ={inv_lambda:g}")
        mine = sorted((owner, value) for (inv, owner), value in ratio.items()
                      if inv == inv_lambda)
        right.plot([x for x, _ in mine], [y for _, y in mine], marker="o",
                   label=f"1/λ={inv_lambda:g}")
    left.set_yscale("log")
    left.set_xlabel("1/λ' (and 1/μ' in set 2)")
    left.set_ylabel("mean response time RT")
    left.legend(fontsize=7)
    right.axhline(1.0, color="grey", linewidth=0.8)
    right.set_xlabel("1/λ' (and 1/μ' in set 2)")
    right.set_ylabel("RT ratio LGFS / AFCFS")
    right.legend(fontsize=7)
    fig.suptitle(f"COW set {which}, simulated: 16 workstations with owners")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reused(path: Path, replications: int, jobs: int, reading: Reading) -> dict[str, Any] | None:
    """The set an earlier run wrote to ``path`` (``cow-setN.json``), marked ``reused``, if it
    was run with the same ``replications``, ``jobs`` and ``reading``; else None."""
    if not path.exists():
        return None
    result = json.loads(path.read_text())
    same = ((result.get("replications"), result.get("jobs"), result.get("reading"))
            == (replications, jobs, dataclasses.asdict(reading)))
    whole = all("rts" in r for r in result.get("records", []))
    return {**result, "reused": path.name} if same and whole else None


def _say(line: str) -> None:
    """A progress line on stderr."""
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run every cell of the sets asked for under both policies; print, plot and save."""
    p = parser("benchmarks.papers.cow", __doc__, raw=True, quick="3 replications of 1,000 gangs",
               markdown_help="also write the tables as a Markdown page")
    p.add_argument("--set", type=int, nargs="+", choices=(1, 2), default=[1, 2])
    p.add_argument("--replications", type=int, default=5)
    p.add_argument("--jobs", type=int, default=3000, help="gangs per replication")
    default = Reading()
    p.add_argument("--tasks", choices=TASKS, default=default.tasks,
                   help="one demand for all of a gang's tasks, or one each")
    p.add_argument("--redo", choices=REDOS, default=default.redo,
                   help="a restarted gang's demand: a new draw, or the same again")
    p.add_argument("--restart", choices=RESTARTS, default=default.restart,
                   help="where an interrupted gang waits (the COW policy's restart)")
    p.add_argument("--hold", action=argparse.BooleanOptionalAction, default=default.hold,
                   help="an interrupted gang holds its PEs while none has an owner")
    p.add_argument("--owner-pick", choices=OWNER_PICKS, default=default.owner_pick,
                   help="the PE an arriving owner takes")
    p.add_argument("--utilization", choices=UTILIZATIONS, default=default.utilization,
                   help="what U counts")
    p.add_argument("--readings", action="store_true",
                   help="also measure each reading changing one choice (for --markdown)")
    p.add_argument("--readings-jobs", type=int, default=PROBE_SIZES[1], metavar="N",
                   help=f"gangs per replication of --readings (default {PROBE_SIZES[1]})")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="processes the replications are spread over (default: the CPUs; "
                        "1: one after another in this process)")
    p.add_argument("--reuse", action="store_true",
                   help="take a set's records from --out's cow-setN.json instead of "
                        "simulating it, if it was run with the same replications, gangs and "
                        "reading")
    args = p.parse_args(argv)
    reps, jobs = (3, 1000) if args.quick else (args.replications, args.jobs)
    reading = Reading(args.tasks, args.redo, args.restart, args.hold, args.owner_pick,
                      args.utilization)
    session = Session.start("benchmarks.papers.cow", argv, args.out, "cow")
    out = session.out
    assert out is not None
    wanted = sorted(set(args.set))
    sets: dict[int, dict[str, Any]] = {}
    for which in wanted if args.reuse else ():
        if (earlier := reused(out / f"cow-set{which}.json", reps, jobs, reading)) is not None:
            sets[which] = earlier
    known = [r for result in sets.values() for r in result["records"]]
    start = time.monotonic()
    results = simulate([run for which in wanted if which not in sets
                        for run in plan(cells(which), reps, jobs, reading, known)],
                       args.workers, _say)
    seconds = time.monotonic() - start
    for which in wanted:
        if which not in sets:
            sets[which] = {"host": host(), "date": now_iso(),
                           "replications": reps, "jobs": jobs, "redo": reading.redo,
                           "reading": dataclasses.asdict(reading),
                           "seconds": round(seconds, 1), "workers": args.workers,
                           "records": assemble(cells(which), reps, jobs, reading, results,
                                               known)}
            (out / f"cow-set{which}.json").write_text(json.dumps(sets[which], indent=2) + "\n")
        records = sets[which]["records"]
        plot(records, which, out / f"cow-set{which}.png")
        if not emit(records, args.json):
            print(f"set {which}")
            print(table(HEADER, rows(records)))
    compared = None
    if args.readings:
        start = time.monotonic()
        sizes = (PROBE_SIZES[0], args.readings_jobs)
        found = compare_readings(reading, args.workers, results, _say, sizes)
        compared = {"rows": found, "replications": sizes[0], "jobs": sizes[1],
                    "date": now_iso(),
                    "seconds": time.monotonic() - start, "workers": args.workers}
        if not args.json:
            print(table(READINGS_HEADER, found))
    session.page(args.markdown, lambda: markdown(sets, compared, session.command))
    if not args.json:
        print(f"{reps} replications of {jobs} gangs each; figures and records under {out}")
    return 0


if __name__ == "__main__":
    exit_on_sigterm()
    raise SystemExit(main())
