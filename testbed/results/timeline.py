"""When each job ran and when it was suspended, from the event log (for Gantt charts and
traces).  A job that was launched into a row that was not current is stopped at once; its
first ``resume`` then precedes any ``suspend``, which is how it is told apart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Interval:
    """``job`` was ``running`` (or suspended) on ``pes`` (row ``slot``) from ``start`` to
    ``end`` seconds."""

    job: str
    pes: tuple[int, ...]
    slot: int
    start: float
    end: float
    running: bool


def matrix_rows(events: list[dict[str, Any]]) -> int:
    """The matrix rows to draw: the run's MPL, or for an unbounded matrix (MPL 0) one more than
    the highest row a job was placed in (at least 1)."""
    start = next(ev for ev in events if ev["event"] == "run_start")
    mpl: int = start["config"]["mpl"]
    if mpl:
        return mpl
    return 1 + max((ev["slot"] for ev in events
                    if ev["event"] == "start" or (ev["event"] == "migrate" and not ev["error"])),
                   default=0)


def launched_stopped(events: list[dict[str, Any]]) -> set[str]:
    """Jobs launched into a row that was not current (their first flip is a ``resume``)."""
    first: dict[str, str] = {}
    for ev in events:
        if ev["event"] in ("suspend", "resume"):
            first.setdefault(ev["job"], ev["event"])
    return {job for job, flip in first.items() if flip == "resume"}


def intervals(events: list[dict[str, Any]]) -> list[Interval]:
    """Every job's running and suspended intervals, in time order.  A job an owner interrupted
    (COW) has one run per ``start``, each ended by its ``interrupt`` or the job's ``finish``;
    a migrated job's intervals change PEs at its ``migrate``."""
    end_of_run = max((ev["t"] for ev in events), default=0.0)
    runs: dict[str, list[tuple[dict[str, Any], float | None]]] = {}
    changes: dict[str, list[tuple[float, bool]]] = {}
    for ev in events:
        kind = ev["event"]
        if kind == "start":
            runs.setdefault(ev["job"], []).append((ev, None))
            changes.setdefault(ev["job"], [])
        elif kind in ("interrupt", "finish") and runs.get(ev["job"]):
            start, end = runs[ev["job"]][-1]
            if end is None:
                runs[ev["job"]][-1] = (start, ev["t"])
        elif kind == "migrate" and not ev["error"] and runs.get(ev["job"]):
            start, end = runs[ev["job"]][-1]
            if end is None:
                runs[ev["job"]][-1] = (start, ev["t"])
                runs[ev["job"]].append(({"t": ev["t"], "pes": ev["pes"], "slot": ev["slot"],
                                         "moved": True}, None))
        elif kind in ("suspend", "resume") and ev["job"] in changes:
            changes[ev["job"]].append((ev["t"], kind == "resume"))
    stopped = launched_stopped(events)
    out = []
    for job, job_runs in runs.items():
        running = True
        for start, end in job_runs:
            stop = end_of_run if end is None else end
            flips = [(t, r) for t, r in changes[job] if start["t"] <= t < stop]
            if not start.get("moved"):          # a migrated job goes on as it was
                running = job not in stopped or start is not job_runs[0][0]
            since = start["t"]
            for t, now_running in [*flips, (stop, None)]:
                if t > since:
                    out.append(Interval(job, tuple(start["pes"]), start["slot"], since, t,
                                        running))
                since = t
                if now_running is not None:
                    running = now_running
    return sorted(out, key=lambda i: (i.start, i.job))


def owner_visits(events: list[dict[str, Any]]) -> list[tuple[int, float, float]]:
    """Each workstation owner's visit (COW) as (PE, from, to)."""
    end_of_run = max((ev["t"] for ev in events), default=0.0)
    since: dict[int, float] = {}
    visits = []
    for ev in events:
        if ev["event"] == "owner_start":
            since[ev["pe"]] = ev["t"]
        elif ev["event"] == "owner_end" and ev["pe"] in since:
            visits.append((ev["pe"], since.pop(ev["pe"]), ev["t"]))
    return visits + [(pe, t0, end_of_run) for pe, t0 in since.items()]


def interruptions(events: list[dict[str, Any]]) -> list[tuple[float, tuple[int, ...]]]:
    """Each run an owner interrupted (COW) as (time, the run's PEs)."""
    pes: dict[str, tuple[int, ...]] = {}
    cuts = []
    for ev in events:
        if ev["event"] == "start" or (ev["event"] == "migrate" and not ev["error"]):
            pes[ev["job"]] = tuple(ev["pes"])
        elif ev["event"] == "interrupt":
            cuts.append((ev["t"], pes.get(ev["job"], (ev["pe"],))))
    return cuts
