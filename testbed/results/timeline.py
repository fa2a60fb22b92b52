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


def launched_stopped(events: list[dict[str, Any]]) -> set[str]:
    """Jobs launched into a row that was not current (their first flip is a ``resume``)."""
    first: dict[str, str] = {}
    for ev in events:
        if ev["event"] in ("suspend", "resume"):
            first.setdefault(ev["job"], ev["event"])
    return {job for job, flip in first.items() if flip == "resume"}


def intervals(events: list[dict[str, Any]]) -> list[Interval]:
    """Every job's running and suspended intervals, in time order."""
    end_of_run = max((ev["t"] for ev in events), default=0.0)
    starts = {ev["job"]: ev for ev in events if ev["event"] == "start"}
    changes: dict[str, list[tuple[float, bool]]] = {job: [] for job in starts}
    finishes = {}
    for ev in events:
        if ev["event"] in ("suspend", "resume") and ev["job"] in changes:
            changes[ev["job"]].append((ev["t"], ev["event"] == "resume"))
        elif ev["event"] == "finish":
            finishes[ev["job"]] = ev["t"]
    stopped = launched_stopped(events)
    out = []
    for job, start in starts.items():
        flips = changes[job]
        running = job not in stopped
        since = start["t"]
        for t, now_running in [*flips, (finishes.get(job, end_of_run), None)]:
            if t > since:
                out.append(Interval(job, tuple(start["pes"]), start["slot"], since, t, running))
            since = t
            if now_running is not None:
                running = now_running
    return sorted(out, key=lambda i: (i.start, i.job))
