"""Results files and tables: ``jobs.csv`` and ``summary.json`` from ``events.jsonl``."""

from __future__ import annotations

import csv
import io
import json
import os
from itertools import repeat
from pathlib import Path
from types import NoneType
from typing import Any

from testbed.events import WriteFailed, read_events
from testbed.results.columns import read_log
from testbed.results.metrics import GROUPS, METRICS, compression, job_rows
from testbed.workloads.swf import SwfJob

CSV_FIELDS = ("id", "size", "arrival", "start", "end", "wait", "runtime", "response", "work",
              "dedicated", "slowdown", "response_slowdown", "bounded_slowdown", "group", "status",
              "exit_code", "reason", "cpu_s", "comm_wait_s", "minor_faults", "major_faults",
              "peak_rss_kib", "swap_in", "swap_out", "restarts", "lost_s",
              "job_class", "stops", "paging_s", "prime")


def _write_atomic(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all; ``WriteFailed`` when it cannot be written."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise WriteFailed(path, err) from None


def _cells(values: list[Any]) -> list[Any]:
    """A column as ``jobs.csv`` writes it: floats to the microsecond, None as nothing."""
    kinds = set(map(type, values))
    if kinds == {float}:
        return list(map(round, values, repeat(6, len(values))))
    if kinds <= {NoneType}:
        return [""] * len(values)
    if float not in kinds and NoneType not in kinds:
        return values
    return [round(v, 6) if isinstance(v, float) else ("" if v is None else v) for v in values]


def write_results(run_dir: Path) -> dict[str, Any]:
    """Derive ``jobs.csv`` and ``summary.json`` from the run's event log, read once
    (``testbed.results.columns``); return the summary.  ``ValueError`` when the log has no
    whole ``run_start`` event, ``WriteFailed`` when a file cannot be written (none is left
    half-written)."""
    columns = read_log(run_dir / "events.jsonl")
    if columns.config is None:
        raise ValueError(f"{run_dir / 'events.jsonl'}: no whole run_start event: not the log "
                         "of a run, or cut before the run started")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    writer.writerows(zip(*(_cells(columns.column(name)) for name in CSV_FIELDS), strict=True))
    _write_atomic(run_dir / "jobs.csv", out.getvalue())
    summary = columns.summary()
    _write_atomic(run_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


SWF_STATUS = {"done": 1, "failed": 0, "timeout": 5, "killed": 5}


def write_swf(run_dir: Path) -> Path:
    """Export the run's jobs as SWF (``jobs.swf``), times multiplied back by the compression
    factor and rounded to seconds; jobs that never started are left out."""
    events = read_events(run_dir / "events.jsonl")
    scale = compression(events)
    start = next(ev for ev in events if ev["event"] == "run_start")

    def secs(value: float | None) -> float:
        return -1 if value is None else round(value * scale)

    lines = ["; Version: 2.2", f"; Computer: testbed {start['config']['scheduler']} on "
             f"{start['config']['machine']['hostname']}",
             f"; MaxProcs: {start['config']['machine']['pes']}",
             f"; Note: times are the run's times multiplied by its compression factor {scale:g}"]
    for index, row in enumerate(job_rows(events), start=1):
        if row.start is None or row.status not in SWF_STATUS:
            continue
        cpu = -1 if row.cpu_s is None else secs(row.cpu_s / row.size)
        mem = -1 if row.peak_rss_kib is None else row.peak_rss_kib
        job = SwfJob(row.source_id if row.source_id is not None else index, secs(row.arrival),
                     secs(row.wait), secs(row.runtime), row.size, cpu, mem, row.size,
                     secs(row.limit if row.limit is not None else row.estimate), -1,
                     SWF_STATUS[row.status], -1, -1, -1, -1, -1, -1, -1)
        lines.append(job.line())
    path = run_dir / "jobs.swf"
    _write_atomic(path, "\n".join(lines) + "\n")
    return path


def run_dirs(path: Path) -> dict[str, Path]:
    """The run directories under ``path``: itself, the scheduler dirs of a one-run compare
    dir, or every repeat (``CELL/REPEAT``) of an experiment or repeated compare dir."""
    if (path / "events.jsonl").exists():
        return {path.name: path}
    found = {p.name: p for p in sorted(path.iterdir()) if (p / "events.jsonl").exists()}
    found.update({f"{p.parent.parent.name}/{p.parent.name}": p.parent
                  for p in sorted(path.glob("*/*/events.jsonl"))})
    if not found:
        raise FileNotFoundError(f"{path}: no events.jsonl here or in its subdirectories")
    return found


def first_runs(path: Path) -> dict[str, Path]:
    """The first completed repeat of each label of an experiment or compare dir, by label
    (what a side-by-side Gantt chart shows)."""
    out: dict[str, Path] = {}
    for info in sorted(path.glob("*/*/run.json"), key=lambda p: (p.parent.parent.name,
                                                                  int(p.parent.name))):
        label = json.loads(info.read_text())["label"]
        out.setdefault(label, info.parent)
    return out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _label(key: str) -> str:
    """A summary key as the table names it: ``response_slowdown`` is "response slowdown"."""
    return key.replace("_", " ")


def _status(summary: dict[str, Any]) -> str:
    """The run's status; an incomplete log (no ``run_end``) says when it ends (s)."""
    if summary["status"] != "incomplete":
        return summary["status"]
    return f"incomplete, log ends at {summary['log_ends_at']:.3f} s"


def format_table(summaries: dict[str, dict[str, Any]]) -> str:
    """A plain-text table, one column per run (scheduler), one row per figure (times in
    seconds), each row named after its ``summary.json`` key."""
    names = list(summaries)
    rows: list[list[str]] = [["", *names]]
    rows.append(["status", *(_status(s) for s in summaries.values())])
    rows.append(["jobs done/failed", *(f"{s['done']}/{s['failed']}" for s in summaries.values())])
    if any(s.get("unfinished") for s in summaries.values()):
        rows.append(["jobs unfinished", *(str(s.get("unfinished", 0)) for s in summaries.values())])
    for metric in METRICS:
        for stat in ("mean", "median"):
            for group in GROUPS:
                label = f"{_label(metric)} {stat} ({group})"
                rows.append([label, *(_fmt(s["metrics"][metric][group][stat])
                                      for s in summaries.values())])
    for key in ("utilization", "useful_utilization", "makespan"):
        rows.append([_label(key), *(_fmt(s[key]) for s in summaries.values())])
    rows.append(["switch latency p99 (us)",
                 *(_fmt(s["switch_latency_us"]["p99"]) for s in summaries.values())])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))) for row in rows]
    if any(s["oversubscribed"] for s in summaries.values()):
        lines.append("note: more PEs than CPUs (oversubscribed): not dedicated-machine figures")
    return "\n".join(lines)
