"""Results files and tables: ``jobs.csv`` and ``summary.json`` from ``events.jsonl``."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Iterator
from itertools import repeat
from pathlib import Path
from types import NoneType
from typing import Any

import numpy as np

from testbed.events import WriteFailed, read_events
from testbed.results.columns import read_log
from testbed.results.metrics import GROUPS, METRICS, compression, job_rows
from testbed.workloads.swf import SwfJob

CSV_FIELDS = ("id", "size", "arrival", "start", "end", "wait", "runtime", "response", "work",
              "dedicated", "slowdown", "response_slowdown", "bounded_slowdown", "group", "status",
              "exit_code", "reason", "cpu_s", "comm_wait_s", "minor_faults", "major_faults",
              "peak_rss_kib", "swap_in", "swap_out", "restarts", "lost_s",
              "job_class", "stops", "paging_s", "prime")


def _write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``path`` whole or not at all: ``text``, or its pieces in order as they come;
    ``WriteFailed`` when it cannot be written."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w") as f:
            f.writelines([text] if isinstance(text, str) else text)
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise WriteFailed(path, err) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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


_NEEDS_QUOTES = (",", '"', "\r", "\n")


def _csv_field(text: str) -> str:
    """``text`` as ``csv.writer`` writes it in a row of several fields (quoted if it must be)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow([text, ""])
    return out.getvalue()[:-2]


def _fixed_texts(values: list[float]) -> list[str]:
    """``str(round(v, 6))`` for every float of ``values``: from one fixed-point formatting
    each when every value is finite and below 1e8 in size, and either 1e-4 or more or rounds
    to zero (then the fixed-point digits, their trailing zeros cut, are what the shortest repr
    of the rounded value writes: both come from the same correctly rounded digits, and 15
    significant digits name one double); else through ``round`` and ``str``."""
    sizes = np.abs(np.array(values, dtype=float))
    if not np.all(np.isfinite(sizes) & (sizes < 1e8) & ((sizes >= 1e-4) | (sizes < 4e-7))):
        return list(map(str, map(round, values, repeat(6, len(values)))))
    texts = [text.rstrip("0") for text in map(format, values, repeat(".6f", len(values)))]
    return [text + "0" if text[-1] == "." else text for text in texts]


def _float_texts(values: list[float]) -> list[str]:
    """``str(round(v, 6))`` for every float of ``values``: the repr of a whole number or an
    infinity (which rounding leaves as it is), ``_fixed_texts`` of the others (of them all
    when most are not whole: it gives whole numbers their repr too)."""
    array = np.array(values, dtype=float)
    fractional = np.flatnonzero(array != np.floor(array)).tolist()
    if 2 * len(fractional) > len(values):
        return _fixed_texts(values)
    texts = list(map(repr, values))
    for at, text in zip(fractional, _fixed_texts([values[at] for at in fractional]),
                        strict=True):
        texts[at] = text
    return texts


def _texts(values: list[Any]) -> list[str]:
    """A column's fields as ``csv.writer`` writes them (``_cells``, then ``str``; a field with
    a delimiter, quote or line break goes through ``csv`` itself)."""
    if values and set(map(type, values)) == {float}:
        return _float_texts(values)
    texts = list(map(str, _cells(values)))
    joined = "".join(texts)
    if any(special in joined for special in _NEEDS_QUOTES):
        return [_csv_field(t) if any(special in t for special in _NEEDS_QUOTES) else t
                for t in texts]
    return texts


def _lines(fields: Iterable[tuple[str, ...]]) -> str:
    """Rows of fields as ``csv.writer`` writes them, each line ended."""
    # csv quotes a row's only field when it is empty (else the line would be blank)
    return "\n".join([line or '""' for line in map(",".join, fields)]) + "\n"


CSV_CHUNK_ROWS = 20_000


def csv_pieces(columns: dict[str, list[Any]], rows: int = CSV_CHUNK_ROWS) -> Iterator[str]:
    """``columns`` (name -> one value a row) as the text ``csv.writer`` writes (a header, then
    a line a row; floats to the microsecond, None as nothing), joined column-wise rather than
    written row by row, in pieces of ``rows`` rows (so that one piece's fields are held at a
    time, not the whole file's)."""
    yield _lines([tuple(_texts(list(columns)))])
    count = len(next(iter(columns.values()), []))
    for first in range(0, count, rows):
        yield _lines(zip(*[_texts(values[first:first + rows]) for values in columns.values()],
                         strict=True))


def write_results(run_dir: Path) -> dict[str, Any]:
    """Derive ``jobs.csv`` and ``summary.json`` from the run's event log, read once
    (``testbed.results.columns``); return the summary.  ``ValueError`` when the log has no
    whole ``run_start`` event, ``WriteFailed`` when a file cannot be written (none is left
    half-written)."""
    columns = read_log(run_dir / "events.jsonl")
    if columns.config is None:
        raise ValueError(f"{run_dir / 'events.jsonl'}: no whole run_start event: not the log "
                         "of a run, or cut before the run started")
    _write_atomic(run_dir / "jobs.csv",
                  csv_pieces({name: columns.column(name) for name in CSV_FIELDS}))
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
