"""A run's jobs in Batsim's ``jobs.csv`` output format, for evalys and other Batsim tooling.

The format is Batsim's main output file, ``<prefix>jobs.csv`` (oar-team/batsim:
``docs/output-jobs.rst`` and ``JobsTracer::write_job`` in ``src/export.cpp``; the same
columns in v4.2.1 and v5.0.0-rc2): a header and one line per job, 17 columns in this order::

    job_id, workload_name, profile, submission_time, requested_number_of_resources,
    requested_time, success, final_state, starting_time, execution_time, finish_time,
    waiting_time, turnaround_time, stretch, allocated_resources, consumed_energy, metadata

Times are seconds written as C++ ``std::to_string(double)`` does (``%f``: six decimals);
``execution_time`` = finish - starting, ``waiting_time`` = starting - submission,
``turnaround_time`` = finish - submission, ``stretch`` = turnaround / execution (IEEE
division: ``inf`` or ``nan`` for a zero execution time, as Batsim's would give);
``requested_time`` is the walltime, ``-1.000000`` when the job has none; ``success`` is 1 iff
``final_state`` is ``COMPLETED_SUCCESSFULLY``; ``allocated_resources`` is the canonical
interval-set string (``docs/interval-set.rst``: sorted disjoint maximal intervals ``a-b`` or
``a``, separated by one space, e.g. ``0-3 5``); ``consumed_energy`` is ``-1.000000`` without
SimGrid's energy plugin; ``metadata`` is empty by default (v4 writes it as ``""``, which
CSV readers read as the empty field written here).  evalys
(oar-team/evalys: ``JobSet.from_csv`` in ``evalys/jobset.py``) reads the file with pandas,
``job_id``/``profile`` as strings and ``allocated_resources`` through procset's
``ProcSet.from_str`` (one-space separator, ``-`` inside an interval).

Our run maps to it as follows (times are the run's own seconds, compressed if the workload
was, like ``jobs.csv``; nothing is scaled back as ``jobs.swf`` does):

* ``job_id``: our job number, ``j12`` -> ``12`` (ids that are not ``j<digits>`` are kept as
  they are).  Batsim job names are usually integers and its own tools (``tools/
  batsim_output_csv_to_swf.py``) parse them with ``int``; prefix ``j`` again to join with
  ``jobs.csv`` and ``events.jsonl``.  The trace's own number (``id=``) stays in ``jobs.swf``.
* ``workload_name``: the workload file's stem; ``profile``: ``bsp`` for the synthetic
  benchmark, else the basename of the command's ``argv[0]``.
* ``submission_time``/``starting_time``/``finish_time``: the job's arrival, start and end as
  ``jobs.csv`` has them; ``requested_number_of_resources``: its PEs; ``allocated_resources``:
  the PEs of its ``start`` event.  Under gang scheduling jobs of different matrix slots share
  PEs, so allocations may overlap in time (Batsim's never do); ``execution_time`` includes the
  time a job spent descheduled.
* ``requested_time``: the time the job asked for: its ``limit=``, else its ``estimate=``
  (SWF's requested time), else the run's ``--job-timeout``, else ``-1.000000``.
* ``final_state``: ``done`` -> ``COMPLETED_SUCCESSFULLY``, ``failed`` -> ``COMPLETED_FAILED``
  (non-zero exit or launch failure), ``timeout`` (a ``limit`` event: killed at its limit) ->
  ``COMPLETED_WALLTIME_REACHED``, ``killed`` (killed by the testbed, e.g. when the run was
  interrupted) -> ``COMPLETED_KILLED``.  A ``limit`` event also makes a ``killed`` or
  ``failed`` end ``COMPLETED_WALLTIME_REACHED``.
* Jobs that never started or never ended (only in an interrupted or torn run) are left out:
  Batsim writes a line only for a job that completed, and ``REJECTED`` means the scheduler
  refused the job, which ours never do.  ``jobs.swf`` leaves them out too.
* ``consumed_energy``: ``-1.000000`` (no energy measured); ``metadata``: empty.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from pathlib import Path
from typing import Any

from testbed.events import read_events
from testbed.results.metrics import JobRow, job_rows

BATSIM_FIELDS = ("job_id", "workload_name", "profile", "submission_time",
                 "requested_number_of_resources", "requested_time", "success", "final_state",
                 "starting_time", "execution_time", "finish_time", "waiting_time",
                 "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
                 "metadata")
FINAL_STATES = {"done": "COMPLETED_SUCCESSFULLY", "failed": "COMPLETED_FAILED",
                "timeout": "COMPLETED_WALLTIME_REACHED", "killed": "COMPLETED_KILLED"}
NO_ENERGY = -1.0
BSP_MODULES = ("testbed.jobs.bsp", "benchmarks.bsp")


def interval_set(pes: list[int]) -> str:
    """The canonical Batsim interval-set string of resource numbers: ``[0, 1, 2, 3, 5]`` ->
    ``"0-3 5"`` (sorted, duplicates merged; empty string for no resource)."""
    parts: list[str] = []
    ordered = sorted(set(pes))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return " ".join(parts)


def batsim_job_id(job: str) -> str:
    """Batsim's ``job_id`` for our job id: ``j12`` -> ``12``; any other id unchanged."""
    match = re.fullmatch(r"j(\d+)", job)
    return match.group(1) if match else job


def profile_name(argv: list[str] | None) -> str:
    """The job's profile: ``bsp`` for the synthetic benchmark, else ``argv[0]``'s basename
    (empty when the command is unknown)."""
    if not argv:
        return ""
    for i in range(len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] in BSP_MODULES:
            return "bsp"
    return os.path.basename(argv[0])


def _seconds(value: float) -> str:
    """A time (s) as Batsim writes it: C++ ``std::to_string(double)``, six decimals."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6f}"


def _stretch(turnaround: float, execution: float) -> float:
    """turnaround / execution with IEEE semantics (Batsim divides C++ doubles)."""
    if execution != 0:
        return turnaround / execution
    return math.nan if turnaround == 0 else math.copysign(math.inf, turnaround)


def batsim_rows(events: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The run's jobs as Batsim ``jobs.csv`` rows (column name -> cell text), in workload
    order; only jobs that started and ended (see the module docstring for the mapping).

    Times (s) are the run's seconds, written with six decimals like Batsim's.
    """
    start = next((ev for ev in events if ev["event"] == "run_start"), {})
    default_limit = start.get("config", {}).get("job_timeout")
    workload = next((ev for ev in events if ev["event"] == "workload"), {})
    workload_name = Path(workload["path"]).stem if workload.get("path") else ""
    pes: dict[str, list[int]] = {}
    argv: dict[str, list[str]] = {}
    limited: set[str] = set()
    for ev in events:
        kind = ev["event"]
        if kind == "start":
            pes[ev["job"]] = list(ev["pes"])
        elif kind == "arrival":
            argv[ev["job"]] = list(ev.get("argv") or [])
        elif kind == "limit":
            limited.add(ev["job"])
    rows = []
    for row in job_rows(events):
        if row.start is None or row.end is None:
            continue
        state = _final_state(row, row.id in limited)
        limit = next((x for x in (row.limit, row.estimate, default_limit) if x is not None),
                     None)
        execution, turnaround = row.end - row.start, row.end - row.arrival
        rows.append({
            "job_id": batsim_job_id(row.id),
            "workload_name": workload_name,
            "profile": profile_name(argv.get(row.id)),
            "submission_time": _seconds(row.arrival),
            "requested_number_of_resources": str(row.size),
            "requested_time": _seconds(-1.0 if limit is None else float(limit)),
            "success": "1" if state == "COMPLETED_SUCCESSFULLY" else "0",
            "final_state": state,
            "starting_time": _seconds(row.start),
            "execution_time": _seconds(execution),
            "finish_time": _seconds(row.end),
            "waiting_time": _seconds(row.start - row.arrival),
            "turnaround_time": _seconds(turnaround),
            "stretch": _seconds(_stretch(turnaround, execution)),
            "allocated_resources": interval_set(pes.get(row.id, [])),
            "consumed_energy": _seconds(NO_ENERGY),
            "metadata": "",
        })
    return rows


def _final_state(row: JobRow, reached_limit: bool) -> str:
    """Batsim's ``final_state`` for an ended job; ValueError for a status it has none for."""
    if reached_limit and row.status in ("killed", "failed"):
        return FINAL_STATES["timeout"]
    try:
        return FINAL_STATES[row.status]
    except KeyError:
        raise ValueError(f"job {row.id}: no Batsim final state for status {row.status!r}") \
            from None


def write_batsim(run_dir: Path) -> Path:
    """Write the run's jobs as Batsim's ``jobs.csv`` to ``run_dir / "batsim_jobs.csv"``
    (atomically: a temporary file, then ``os.replace``); return its path.  Times in seconds."""
    rows = batsim_rows(read_events(run_dir / "events.jsonl"))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=BATSIM_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path = run_dir / "batsim_jobs.csv"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(out.getvalue())
    os.replace(tmp, path)
    return path
