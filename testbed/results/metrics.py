"""From ``events.jsonl`` to per-job rows and a run summary (THESIS §5.4.1, DESIGN §5).

Times are seconds of the (compressed) run.  Per job:

* ``wait`` = start - arrival; ``runtime`` = end - start; ``response`` = end - arrival.
* ``work``: the job's amount of work as the workload gave it (``bsp --work``).
* ``dedicated``: the job's runtime alone on a dedicated machine: the benchmark's own estimate
  (the largest ``dedicated_s`` of its ranks' records) when its records carry one, else ``work``.
* ``slowdown`` = runtime / work, THESIS §5.4.1 ("the ratio between the actual runtime of the
  job and its given amount of work"): what sharing the machine costs a running job.
* ``response_slowdown`` = response / dedicated, the slowdown of MEMORY and T3D ("response time
  on a loaded system ... and its runtime on a dedicated system"): queueing included.
* ``bounded_slowdown`` = max(1, response / max(dedicated, tau)), T3D's bounded slowdown, also on
  response, with tau = 10 s before compression.
* A job is *short* when its work is under one minute before compression, *long* otherwise.

The summary gives the mean and median of each per-job metric over the jobs that ended
``done`` (all, short, long).  With makespan = last end - first arrival:

* ``utilization`` = CPU seconds of all ranks / (PEs x makespan).  CPU time spent spinning and
  in MPICH's busy polling counts as busy.
* ``useful_utilization`` = sum of work x size over the jobs that ended ``done`` /
  (PEs x makespan): only the work the jobs asked for counts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

BSLD_TAU_UNCOMPRESSED = 10.0
SHORT_WORK_UNCOMPRESSED = 60.0
METRICS = ("wait", "runtime", "response", "slowdown", "response_slowdown", "bounded_slowdown")
GROUPS = ("all", "short", "long")


@dataclass
class JobRow:
    """One job's measured life; None where a figure does not apply."""

    id: str
    size: int
    arrival: float
    start: float | None = None
    end: float | None = None
    work: float | None = None
    dedicated: float | None = None
    status: str = "not started"
    exit_code: int | None = None
    reason: str = ""
    cpu_s: float | None = None
    comm_wait_s: float | None = None
    minor_faults: int | None = None
    major_faults: int | None = None
    peak_rss_kib: int | None = None
    swap_in: int | None = None
    swap_out: int | None = None
    measured_by_benchmark: bool = False
    wait: float | None = None
    runtime: float | None = None
    response: float | None = None
    slowdown: float | None = None
    response_slowdown: float | None = None
    bounded_slowdown: float | None = None
    group: str = ""
    limit: float | None = None
    source_id: int | None = None
    estimate: float | None = None
    restarts: int = 0
    lost_s: float = 0.0
    job_class: str = ""
    stops: int = 0
    paging_s: float = 0.0
    prime: bool = False

    def finalize(self, compress: float) -> None:
        """Derive wait, runtime, response, dedicated, the slowdowns and the short/long group."""
        if self.start is not None:
            self.wait = self.start - self.arrival
        if self.start is not None and self.end is not None:
            self.runtime = self.end - self.start
            self.response = self.end - self.arrival
        if self.dedicated is None:
            self.dedicated = self.work
        if self.work is not None:
            self.group = "short" if self.work < SHORT_WORK_UNCOMPRESSED / compress else "long"
            if self.runtime is not None and self.work > 0:
                self.slowdown = self.runtime / self.work
        if self.response is not None and self.dedicated is not None:
            if self.dedicated > 0:
                self.response_slowdown = self.response / self.dedicated
            tau = BSLD_TAU_UNCOMPRESSED / compress
            self.bounded_slowdown = max(1.0, self.response / max(self.dedicated, tau))


def compression(events: list[dict[str, Any]]) -> float:
    """The time-compression factor of the run's workload (1 when not stated)."""
    workload = next((ev for ev in events if ev["event"] == "workload"), None)
    return workload_compression(workload) if workload else 1.0


def workload_compression(workload: dict[str, Any]) -> float:
    """The time-compression factor a ``workload`` event states (1 when it states none)."""
    return float(workload["meta"].get("compress", 1.0))


def job_rows(events: Iterable[dict[str, Any]]) -> list[JobRow]:
    """One row per job of the workload, in workload order, from the event log (read once, in
    order: ``events`` may be a stream such as ``testbed.events.iter_events``)."""
    rows: dict[str, JobRow] = {}
    lost_cpu: dict[str, float] = {}
    compress: float | None = None
    for ev in events:
        kind = ev["event"]
        if kind == "workload":
            if compress is None:
                compress = workload_compression(ev)
            for job in ev["jobs"]:
                rows[job["job"]] = JobRow(job["job"], job["pes"], job["arrival"], work=job["work"],
                                          limit=job.get("limit"), source_id=job.get("source_id"),
                                          estimate=job.get("estimate"),
                                          job_class=job.get("class") or "",
                                          prime=bool(job.get("prime")))
        elif kind == "arrival":
            rows[ev["job"]].status = "waiting"
            rows[ev["job"]].arrival = ev["due"]
        elif kind == "start":
            row = rows[ev["job"]]
            if row.start is None:
                row.start = ev["t"]
            row.status = "running"
        elif kind == "job_class":
            rows[ev["job"]].job_class = ev["new"]
        elif kind == "suspend":
            rows[ev["job"]].stops += 1
        elif kind == "paging":
            row = rows[ev["job"]]
            row.paging_s = round(row.paging_s + ev["seconds"], 6)
        elif kind == "interrupt":
            row = rows[ev["job"]]
            row.restarts += 1
            row.lost_s = round(row.lost_s + ev["lost_s"], 6)
            lost_cpu[ev["job"]] = lost_cpu.get(ev["job"], 0.0) + (ev.get("cpu_s") or 0.0)
        elif kind == "finish":
            row = rows[ev["job"]]
            row.end, row.status, row.exit_code = ev["t"], ev["status"], ev["exit_code"]
            row.reason, row.swap_in, row.swap_out = (ev["reason"], ev.get("swap_in"),
                                                     ev.get("swap_out"))
            if ev.get("cpu_s") is not None:
                row.cpu_s = ev["cpu_s"]
        elif kind == "stats":
            row = rows[ev["job"]]
            _usage(row, ev["ranks"])
            row.comm_wait_s = round(statistics.fmean(r["comm_s"] for r in ev["ranks"]), 6)
            row.measured_by_benchmark = True
            estimates = [r["dedicated_s"] for r in ev["ranks"] if r.get("dedicated_s") is not None]
            if estimates:
                row.dedicated = max(estimates)
        elif kind == "counters" and not rows[ev["job"]].measured_by_benchmark:
            _usage(rows[ev["job"]], list(ev["ranks"].values()))
    for row in rows.values():
        if row.cpu_s is not None and row.id in lost_cpu:
            row.cpu_s = round(row.cpu_s + lost_cpu[row.id], 6)
        row.finalize(1.0 if compress is None else compress)
    return list(rows.values())


def _usage(row: JobRow, ranks: list[dict[str, Any]]) -> None:
    """CPU seconds and faults summed over the ranks whose usage is known; peak RSS of the
    largest of them; None when none is (ranks never found have no usage)."""
    known = [r for r in ranks if r.get("cpu_s") is not None]
    if not known:
        return
    row.cpu_s = round(sum(r["cpu_s"] for r in known), 6)
    row.minor_faults = sum(r["minor_faults"] for r in known)
    row.major_faults = sum(r["major_faults"] for r in known)
    row.peak_rss_kib = max(r["peak_rss_kib"] for r in known)


def _stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None}
    return {"mean": statistics.fmean(values), "median": statistics.median(values)}


def summarize(events: list[dict[str, Any]], rows: list[JobRow] | None = None) -> dict[str, Any]:
    """The run's summary: counts, mean/median of each metric by group, utilization, useful
    utilization, makespan.

    Metrics cover jobs that ended ``done``.  Utilization is the CPU time delivered to ranks,
    useful utilization the work x size of the ``done`` jobs (None when one of them has no
    work), each divided by PE-seconds over the makespan (first arrival to last end).  ``rows``
    are the events' ``job_rows`` when the caller already has them.  ``failed`` counts the jobs
    that ended otherwise than ``done``; ``unfinished`` those with no end in the log (a run
    whose log was cut: its ``status`` is ``incomplete`` and ``log_ends_at`` the time of its
    last whole event, s).
    """
    rows = job_rows(events) if rows is None else rows
    start = next(ev for ev in events if ev["event"] == "run_start")
    end = next((ev for ev in events if ev["event"] == "run_end"), None)
    pes = start["config"]["machine"]["pes"]
    done = [r for r in rows if r.status == "done"]
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    metrics: dict[str, dict[str, dict[str, float | None]]] = {}
    for name in METRICS:
        metrics[name] = {}
        for group in GROUPS:
            members = [r for r in done if group == "all" or r.group == group]
            values = [v for r in members if (v := getattr(r, name)) is not None]
            metrics[name][group] = _stats(values)
    ends = [r.end for r in rows if r.end is not None]
    makespan = max(ends) - min(r.arrival for r in rows) if ends else 0.0
    cpu = sum(r.cpu_s or 0.0 for r in rows)
    capacity = pes * makespan
    useful = _useful_work(done)
    switches = [ev["latency_us"] for ev in events if ev["event"] == "switch"]
    return {
        "status": end["status"] if end else "incomplete",
        "log_ends_at": events[-1]["t"],
        "scheduler": start["config"]["scheduler"],
        "jobs": len(rows),
        "counts": counts,
        "done": len(done),
        "failed": sum(r.end is not None and r.status != "done" for r in rows),
        "unfinished": sum(r.end is None for r in rows),
        "metrics": metrics,
        "makespan": makespan,
        "utilization": cpu / capacity if capacity > 0 else None,
        "useful_utilization": useful / capacity if capacity > 0 and useful is not None else None,
        "cpu_s": cpu,
        "major_faults": sum(r.major_faults or 0 for r in rows),
        "swap_in": sum(r.swap_in or 0 for r in rows),
        "swap_out": sum(r.swap_out or 0 for r in rows),
        "switches": len(switches),
        "restarts": sum(r.restarts for r in rows),
        "lost_s": round(sum(r.lost_s * r.size for r in rows), 6),
        "switch_latency_us": percentiles(switches),
        "oversubscribed": start["config"]["machine"]["oversubscribed"],
    }


def _useful_work(done: list[JobRow]) -> float | None:
    """Work x size summed over ``done`` (None when one of them has no work)."""
    total = 0.0
    for row in done:
        if row.work is None:
            return None
        total += row.work * row.size
    return total


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def percentiles(values: list[float]) -> dict[str, float | None]:
    """p50, p99 and max of ``values`` (None for an empty list)."""
    if not values:
        return {"p50": None, "p99": None, "max": None}
    return {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "max": max(values)}
