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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from testbed.results.columns import (
    BSLD_TAU_UNCOMPRESSED,
    GROUPS,
    METRICS,
    SHORT_WORK_UNCOMPRESSED,
    from_events,
    percentile,
    percentiles,
)

__all__ = ["BSLD_TAU_UNCOMPRESSED", "GROUPS", "METRICS", "SHORT_WORK_UNCOMPRESSED", "JobRow",
           "compression", "job_rows", "percentile", "percentiles", "summarize",
           "workload_compression"]


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
    columns = from_events(events)
    names = [field for field in JobRow.__dataclass_fields__ if field != "measured_by_benchmark"]
    values = [columns.column(name) for name in names]
    return [JobRow(**dict(zip(names, row, strict=True)), measured_by_benchmark=measured)
            for *row, measured in zip(*values, columns.measured, strict=True)]


def summarize(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The run's summary: counts, mean/median of each metric by group, utilization, useful
    utilization, makespan.

    Metrics cover jobs that ended ``done``.  Utilization is the CPU time delivered to ranks,
    useful utilization the work x size of the ``done`` jobs (None when one of them has no
    work), each divided by PE-seconds over the makespan (first arrival to last end).
    ``failed`` counts the jobs that ended otherwise than ``done``; ``unfinished`` those with no
    end in the log (a run whose log was cut: its ``status`` is ``incomplete`` and
    ``log_ends_at`` the time of its last whole event, s).  ``ValueError`` without a
    ``run_start`` event.
    """
    return from_events(events).summary()
