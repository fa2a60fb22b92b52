"""The event log read once into columns: one list per figure, one entry per job.

``Columns`` takes events one at a time (``feed``, a parsed event) and keeps each job's figures
as entries of plain lists in workload order, rather than an object a job; ``derive`` then
computes the figures of ``testbed.results.metrics`` (wait, runtime, response, the slowdowns, the
group) with numpy over whole columns, and ``summary`` the run's summary.  ``read_log`` reads a
log file into ``Columns`` in one pass, taking the lines the writer writes for every job (the
``arrival``, ``start``, ``finish``, ``suspend``, ``resume`` and ``switch`` lines that
``EventLog.emit_KIND`` writes) apart with one regular expression, which accepts exactly
such lines, and parsing every other line (or one that does not match) as JSON; like
``testbed.events.iter_events`` it stops at the first line that is not a whole event.  The
patterns check every value the derivation uses; of the lists it does not use (a start's
``pes`` and ``cpus``, an arrival's ``argv``, a switch's ``jobs``, ``stopped`` and
``continued``) only the brackets, so a line damaged inside one of those alone is still read.
The figures are those ``metrics`` defines (same values, same types in ``jobs.csv`` and
``summary.json``): sums and means are taken in workload order, as there.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from testbed.collector import collector_paused

BSLD_TAU_UNCOMPRESSED = 10.0
SHORT_WORK_UNCOMPRESSED = 60.0
METRICS = ("wait", "runtime", "response", "slowdown", "response_slowdown", "bounded_slowdown")
GROUPS = ("all", "short", "long")

# JSON's number and string, as json.loads accepts them (its NaN and Infinity excepted); the
# repeats are possessive (no backtracking into them: what follows never starts with what
# they repeat, so they accept the same lines, with less work)
_NUM = r"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][-+]?[0-9]++)?"
_STR = r'"(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+"'
_OPT = f"(?:null|{_NUM})"
# a list the derivation does not use (a start's PEs and CPUs, an arrival's argv, a switch's
# jobs): its brackets only, not its items (a line damaged inside one is still taken)
_LIST = r"\[[^\]\n]*+\]"
# each job line's fields after its kind, as the writer writes them, the values used captured
_BODIES = {
    "start": rf'"job": ({_STR}), "slot": {_OPT}, "pes": {_LIST}, "cpus": (?:null|{_LIST})',
    "arrival": rf'"job": ({_STR}), "due": ({_NUM}), "pes": {_NUM}, "work": {_OPT}, '
               rf'"limit": {_OPT}, "estimate": {_OPT}, "user": {_STR}, "argv": {_LIST}, '
               rf'"mem_mb": {_OPT}, "mem_source": {_STR}',
    "finish": rf'"job": ({_STR}), "status": ({_STR}), "exit_code": ({_OPT}), '
              rf'"reason": ({_STR}), "swap_in": ({_OPT}), "swap_out": ({_OPT}), '
              rf'"cpu_s": ({_OPT})',
    "suspend": rf'"job": ({_STR})',
    "resume": rf'"job": {_STR}',
    "switch": rf'"seq": {_NUM}, "slot": {_OPT}, "jobs": {_LIST}, "stopped": {_LIST}, '
              rf'"continued": {_LIST}, "latency_us": ({_NUM}), "lag_us": {_OPT}, '
              rf'"slice_s": {_OPT}',
}
# one pattern for every job line: group 1 its time, then each kind's groups in turn (the
# start's job 2; the arrival's job and due 3-4; the finish's job, status, exit code, reason,
# swap in and out and CPU seconds 5-11; the suspend's job 12; the switch's latency 13), so the
# last group a match captures says its kind (a resume captures none of its own: 1)
_JOB_LINE = re.compile(rf'\{{"t": ({_NUM}), "event": "(?:'
                       + "|".join(f'{kind}", {body}' for kind, body in _BODIES.items())
                       + r')\}\n')
_START, _ARRIVAL, _FINISH, _SUSPEND, _SWITCH = 2, 4, 11, 12, 13
# a job's figures before any event about it (immutable values: columns repeat them)
_FRESH = {"start": None, "end": None, "status": "not started", "exit_code": None, "reason": "",
          "cpu_s": None, "swap_in": None, "swap_out": None, "stops": 0, "dedicated": None,
          "comm_wait_s": None, "minor_faults": None, "major_faults": None,
          "peak_rss_kib": None, "restarts": 0, "lost_s": 0.0, "lost_cpu": None,
          "paging_s": 0.0, "measured": False}


def _number(text: str) -> int | float:
    """A JSON number's value, as json.loads gives it."""
    return float(text) if "." in text or "e" in text or "E" in text else int(text)


def _optional(text: str) -> int | float | None:
    return None if text == "null" else _number(text)


def _string(text: str) -> str:
    """A JSON string's value (``text`` with its quotes)."""
    return json.loads(text) if "\\" in text else text[1:-1]


def _float_array(values: list[Any]) -> np.ndarray:
    """``values`` as floats, None as NaN."""
    return np.array(values, dtype=float)


def _listed(values: np.ndarray) -> list[float | None]:
    """An array's values as Python floats, NaN as None."""
    return [None if v != v else v for v in values.tolist()]


class Columns:
    """Every job of a run's log, figure by figure (lists in workload order), and the run's
    facts: its configuration, how it ended, when its log ends and its switch latencies."""

    RAW = ("ids", "size", "arrival", "work", "limit", "source_id", "estimate", "job_class",
           "prime", "start", "end", "status", "exit_code", "reason", "cpu_s", "swap_in",
           "swap_out", "stops", "dedicated", "comm_wait_s", "minor_faults", "major_faults",
           "peak_rss_kib", "restarts", "lost_s", "lost_cpu", "paging_s", "measured")

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        for name in self.RAW:
            setattr(self, name, [])
        self.compress: float | None = None
        self.config: dict[str, Any] | None = None
        self.run_status: str | None = None
        self.ends_at: float | None = None
        self.switch_latencies: list[float] = []
        self.derived: dict[str, list[Any]] = {}
        self._arrays: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.ids)

    # -- the events --------------------------------------------------------------------------

    def add_workload(self, event: dict[str, Any]) -> None:
        """A ``workload`` event: its jobs are added (one given again is made afresh)."""
        if self.compress is None:
            self.compress = float(event["meta"].get("compress", 1.0))
        jobs = event["jobs"]
        given = {"ids": [job["job"] for job in jobs], "size": [job["pes"] for job in jobs],
                 "arrival": [job["arrival"] for job in jobs],
                 "work": [job["work"] for job in jobs],
                 "limit": [job.get("limit") for job in jobs],
                 "source_id": [job.get("source_id") for job in jobs],
                 "estimate": [job.get("estimate") for job in jobs],
                 "job_class": [job.get("class") or "" for job in jobs],
                 "prime": [bool(job.get("prime")) for job in jobs]}
        ids, count = given["ids"], len(jobs)
        if len(set(ids)) < count or not self.index.keys().isdisjoint(ids):
            for at in range(count):
                self._add_job({name: column[at] for name, column in given.items()})
            return
        first = len(self.ids)
        self.index.update(zip(ids, range(first, first + count), strict=True))
        for name, column in given.items():
            getattr(self, name).extend(column)
        for name, value in _FRESH.items():
            getattr(self, name).extend([value] * count)

    def _add_job(self, given: dict[str, Any]) -> None:
        """One job of a workload (``given``: its figures there), made afresh if known."""
        values = {**given, **_FRESH}
        at = self.index.get(given["ids"])
        if at is None:
            self.index[given["ids"]] = len(self.ids)
            for name, value in values.items():
                getattr(self, name).append(value)
        else:
            for name, value in values.items():
                getattr(self, name)[at] = value

    def arrived(self, job: str, due: float) -> None:
        """``job`` arrived, due at ``due`` (s)."""
        at = self.index[job]
        self.status[at] = "waiting"
        self.arrival[at] = due

    def started(self, job: str, t: float) -> None:
        """``job`` was launched at ``t`` (s; its first launch is its start)."""
        at = self.index[job]
        if self.start[at] is None:
            self.start[at] = t
        self.status[at] = "running"

    def finished(self, at: int, t: float, status: str, exit_code: int | None, reason: str,
               swap_in: int | None, swap_out: int | None, cpu_s: float | None) -> None:
        """The job at ``at`` (its place in the columns) ended at ``t`` (s)."""
        self.end[at], self.status[at], self.exit_code[at] = t, status, exit_code
        self.reason[at], self.swap_in[at], self.swap_out[at] = reason, swap_in, swap_out
        if cpu_s is not None:
            self.cpu_s[at] = cpu_s

    def suspended(self, job: str) -> None:
        """``job`` was stopped."""
        self.stops[self.index[job]] += 1

    def feed(self, event: dict[str, Any]) -> None:
        """Take one parsed event."""
        kind = event["event"]
        self.ends_at = event["t"]
        if kind == "workload":
            self.add_workload(event)
        elif kind == "arrival":
            self.arrived(event["job"], event["due"])
        elif kind == "start":
            self.started(event["job"], event["t"])
        elif kind == "finish":
            self.finished(self.index[event["job"]], event["t"], event["status"], event["exit_code"],
                        event["reason"], event.get("swap_in"), event.get("swap_out"),
                        event.get("cpu_s"))
        elif kind == "suspend":
            self.suspended(event["job"])
        elif kind == "switch":
            self.switch_latencies.append(event["latency_us"])
        elif kind == "run_start":
            if self.config is None:
                self.config = event["config"]
        elif kind == "run_end":
            if self.run_status is None:
                self.run_status = event["status"]
        else:
            self._rare(kind, event)

    def _rare(self, kind: str, event: dict[str, Any]) -> None:
        """The events not written for every job (classes, paging, owners, emulation records)."""
        if kind == "job_class":
            self.job_class[self.index[event["job"]]] = event["new"]
        elif kind == "paging":
            at = self.index[event["job"]]
            self.paging_s[at] = round(self.paging_s[at] + event["seconds"], 6)
        elif kind == "interrupt":
            at = self.index[event["job"]]
            self.restarts[at] += 1
            self.lost_s[at] = round(self.lost_s[at] + event["lost_s"], 6)
            self.lost_cpu[at] = (self.lost_cpu[at] or 0.0) + (event.get("cpu_s") or 0.0)
        elif kind == "stats":
            at = self.index[event["job"]]
            ranks = event["ranks"]
            self._usage(at, ranks)
            self.comm_wait_s[at] = round(statistics.fmean(r["comm_s"] for r in ranks), 6)
            self.measured[at] = True
            estimates = [r["dedicated_s"] for r in ranks if r.get("dedicated_s") is not None]
            if estimates:
                self.dedicated[at] = max(estimates)
        elif kind == "counters":
            at = self.index[event["job"]]
            if not self.measured[at]:
                self._usage(at, list(event["ranks"].values()))

    def _usage(self, at: int, ranks: list[dict[str, Any]]) -> None:
        """CPU seconds and faults summed over the ranks whose usage is known; peak RSS of the
        largest of them; left unknown when none is (ranks never found have no usage)."""
        known = [r for r in ranks if r.get("cpu_s") is not None]
        if not known:
            return
        self.cpu_s[at] = round(sum(r["cpu_s"] for r in known), 6)
        self.minor_faults[at] = sum(r["minor_faults"] for r in known)
        self.major_faults[at] = sum(r["major_faults"] for r in known)
        self.peak_rss_kib[at] = max(r["peak_rss_kib"] for r in known)

    # -- the figures -------------------------------------------------------------------------

    def derive(self) -> None:
        """Compute ``derived``: each job's CPU seconds (those lost to interruptions added),
        dedicated runtime, wait, runtime, response, slowdowns and group (``metrics``)."""
        compress = 1.0 if self.compress is None else self.compress
        cpu = [c if c is None or lost is None else round(c + lost, 6)
               for c, lost in zip(self.cpu_s, self.lost_cpu, strict=True)]
        dedicated = [w if d is None else d for d, w in zip(self.dedicated, self.work, strict=True)]
        arrival, start, end = (_float_array(self.arrival), _float_array(self.start),
                               _float_array(self.end))
        work, ded = _float_array(self.work), _float_array(dedicated)
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = start - arrival
            runtime = end - start
            response = np.where(np.isnan(runtime), np.nan, end - arrival)
            slowdown = np.where(work > 0, runtime / work, np.nan)
            response_slowdown = np.where(ded > 0, response / ded, np.nan)
            tau = BSLD_TAU_UNCOMPRESSED / compress
            bounded = np.maximum(1.0, response / np.maximum(ded, tau))
        short = SHORT_WORK_UNCOMPRESSED / compress
        self.derived = {
            "cpu_s": cpu, "dedicated": dedicated, "wait": _listed(wait),
            "runtime": _listed(runtime), "response": _listed(response),
            "slowdown": _listed(slowdown), "response_slowdown": _listed(response_slowdown),
            "bounded_slowdown": _listed(bounded),
            "group": ["" if w is None else "short" if w < short else "long" for w in self.work]}
        self._arrays = {"wait": wait, "runtime": runtime, "response": response,
                        "slowdown": slowdown, "response_slowdown": response_slowdown,
                        "bounded_slowdown": bounded}

    def column(self, name: str) -> list[Any]:
        """A figure's column by its ``jobs.csv`` name (after ``derive``)."""
        if name in self.derived:
            return self.derived[name]
        return getattr(self, "ids" if name == "id" else name)

    def summary(self) -> dict[str, Any]:
        """The run's summary as ``metrics.summarize`` gives it (``derive`` first)."""
        if self.config is None:
            raise ValueError("no whole run_start event: not the log of a run, or cut before "
                             "the run started")
        status, work, size = self.status, self.work, self.size
        done = np.array([s == "done" for s in status], dtype=bool)
        group = np.array(self.derived["group"])
        members = {"all": done, "short": done & (group == "short"),
                   "long": done & (group == "long")}
        metrics: dict[str, dict[str, dict[str, float | None]]] = {}
        for name in METRICS:
            values = self._arrays[name]
            known = ~np.isnan(values)
            metrics[name] = {g: _stats(values[mask & known]) for g, mask in members.items()}
        ends = [e for e in self.end if e is not None]
        makespan = max(ends) - min(self.arrival) if ends else 0.0
        cpu = sum([c or 0.0 for c in self.derived["cpu_s"]])
        capacity = self.config["machine"]["pes"] * makespan
        useful: float | None = 0.0
        for at in np.flatnonzero(done).tolist():
            if work[at] is None:
                useful = None
                break
            useful += work[at] * size[at]
        return {
            "status": self.run_status or "incomplete",
            "log_ends_at": self.ends_at,
            "scheduler": self.config["scheduler"],
            "jobs": len(self),
            "counts": dict(Counter(status)),
            "done": int(done.sum()),
            "failed": sum(e is not None and s != "done"
                          for e, s in zip(self.end, status, strict=True)),
            "unfinished": self.end.count(None),
            "metrics": metrics,
            "makespan": makespan,
            "utilization": cpu / capacity if capacity > 0 else None,
            "useful_utilization": useful / capacity if capacity > 0 and useful is not None
            else None,
            "cpu_s": cpu,
            "major_faults": sum([m or 0 for m in self.major_faults]),
            "swap_in": sum([s or 0 for s in self.swap_in]),
            "swap_out": sum([s or 0 for s in self.swap_out]),
            "switches": len(self.switch_latencies),
            "restarts": sum(self.restarts),
            "lost_s": round(sum([lost * n for lost, n in zip(self.lost_s, size, strict=True)]),
                            6),
            "switch_latency_us": percentiles(self.switch_latencies),
            "oversubscribed": self.config["machine"]["oversubscribed"],
        }


def _stats(values: np.ndarray) -> dict[str, float | None]:
    """Mean (``statistics.fmean``) and median (``statistics.median``) of ``values``."""
    if not len(values):
        return {"mean": None, "median": None}
    ordered = np.sort(values).tolist()
    n = len(ordered)
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return {"mean": math.fsum(ordered) / n, "median": middle}


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def percentiles(values: list[float]) -> dict[str, float | None]:
    """p50, p99 and max of ``values`` (None for an empty list)."""
    if not values:
        return {"p50": None, "p99": None, "max": None}
    return {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "max": max(values)}


def from_events(events: Any) -> Columns:
    """``Columns`` of parsed events (a list, or a stream such as ``iter_events``), derived."""
    columns = Columns()
    for event in events:
        columns.feed(event)
    columns.derive()
    return columns


def read_log(path: Path) -> Columns:
    """``Columns`` of the log at ``path``, read in one pass up to its last whole event,
    derived."""
    columns = Columns()
    fullmatch = _JOB_LINE.fullmatch
    index, status, arrival, start = columns.index, columns.status, columns.arrival, columns.start
    stops, finished, latencies = columns.stops, columns.finished, columns.switch_latencies
    last = None
    with collector_paused(), open(path, errors="replace") as f:
        for line in f:
            match = fullmatch(line)
            if match is None:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    break
                if not isinstance(event, dict) or "t" not in event or "event" not in event:
                    break
                columns.feed(event)
                last = None
                continue
            # the job lines' names and values in place, not through a call each: a name with
            # no backslash is its text without quotes, a number with a point a float (as
            # ``_string`` and ``_number`` say); the lists stay the same objects throughout
            last = match[1]
            kind = match.lastindex
            if kind == _START:
                job = match[2]
                at = index[job[1:-1] if "\\" not in job else json.loads(job)]
                if start[at] is None:
                    start[at] = float(last) if "." in last else _number(last)
                status[at] = "running"
            elif kind == _ARRIVAL:
                job, due = match[3], match[4]
                at = index[job[1:-1] if "\\" not in job else json.loads(job)]
                arrival[at] = float(due) if "." in due else _number(due)
                status[at] = "waiting"
            elif kind == _FINISH:
                job = match[5]
                finished(index[job[1:-1] if "\\" not in job else json.loads(job)],
                         float(last) if "." in last else _number(last), _string(match[6]),
                         _optional(match[7]), _string(match[8]), _optional(match[9]),
                         _optional(match[10]), _optional(match[11]))
            elif kind == _SUSPEND:
                stops[index[_string(match[12])]] += 1
            elif kind == _SWITCH:
                latencies.append(_number(match[13]))
    if last is not None:
        columns.ends_at = _number(last)
    columns.derive()
    return columns
