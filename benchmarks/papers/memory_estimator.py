"""MEMORY §2.1.3 and Fig 2: the memory estimator replayed over a Standard Workload Format log,
as the paper checked it on the LANL CM-5 log (January to September 1996, about 50,000 jobs).

``python -m benchmarks.papers.memory_estimator --log PATH [--from 1996-01 --to 1996-09]
[--json] [--markdown PAGE]``

``PATH`` is an SWF file, plain or ``.gz``: for the paper's figures the Parallel Workloads
Archive's ``LANL-CM5-1994-4.1-cln.swf.gz``, which the project does not fetch.  The jobs are
replayed in submit order.  A job's identity is the paper's: its executable (field 14, the
archive's application number standing for the paper's path), its processors (field 5, the
paper's "number of nodes") and its user (field 12), without the paper's fallbacks to
executable and processors, or executable alone.  The history keeps an identity's values of
the current month and of the previous one: when the month changes the current values become
the previous ones, and an identity left with none is dropped
(``testbed.memory_history.aged``); months are those of the log's time zone (its
``TimeZoneString:`` header, else the offset of its ``TimeZone:``, else UTC).  Each job
submitted in the window (``--from`` to ``--to``, whole months) whose identity has a value is
predicted (``testbed.memory_history.estimate_of``: the smaller of the largest value and the
mean plus 3 standard deviations); then its own value joins the history, which so holds every
earlier job's, those of the log's months before the window included.  A job's value joins
as soon as it is predicted: the paper does not say whether its check waited for earlier jobs
to end, as a running system must.  Jobs whose memory is unknown (-1), or whose identity is
(a field of it unknown), are neither predicted nor recorded.

The *real* memory is field 7, the average memory used per processor, in KB; 1 MB is 1024 KB.
The archive's per-processor average stands for the paper's per-process measurement (the
paper measured each process's peak; the archive does not say how its figure was taken over a
run).  The figures, of the jobs predicted: the shares whose estimate is within 1 MB and
within 5 MB of the real value (|predicted - real| < 1 and < 5) and the share under-estimated
(predicted < real), each with its 95 % Clopper-Pearson interval; and Fig 2's two histograms:
predicted - real in buckets of 1 MB, and (predicted - real) / real in buckets of 50
percentage points (jobs whose real memory is 0 have no percentage and are counted apart).
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from benchmarks.harness import (
    Session,
    emit,
    host,
    markdown_table,
    now_iso,
    page_head,
    parser,
    table,
)
from benchmarks.papers.reproduce.claims import proportion, show
from testbed.experiments.stats import Interval
from testbed.memory_history import aged, estimate_of, months_between
from testbed.workloads.swf import SwfError, open_swf, swf_columns

KB_PER_MB = 1024
WINDOW = ("1996-01", "1996-09")
PAPER = {"within_1mb": 0.70, "within_5mb": 0.87, "under": 0.06}
"""§2.1.3's figures: the shares within 1 MB and within 5 MB, and the share under-estimated."""
ROWS = (("within 1 MB", "within_1mb"), ("within 5 MB", "within_5mb"),
        ("under-estimated", "under"))
"""The three shares as the tables name them, and their keys in the record."""
PERCENT_BUCKET = 50
MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


class LogError(ValueError):
    """A log this benchmark cannot date: says file, line and header field."""


@dataclass(frozen=True)
class Clock:
    """How a log's submit times (s after ``start``, its ``UnixStartTime``) become months: in
    time zone ``zone``, named ``name``."""

    start: int
    zone: tzinfo
    name: str

    def month(self, submit: float) -> str:
        """The month (``YYYY-MM``, in the log's time zone) of a job submitted ``submit`` s
        after the log's start."""
        return datetime.fromtimestamp(self.start + submit, self.zone).strftime("%Y-%m")


@dataclass(frozen=True)
class Prediction:
    """One job predicted: its number (field 1), the estimate and its real memory (MB per
    processor)."""

    job: int
    predicted_mb: float
    real_mb: float


@dataclass(frozen=True)
class Replay:
    """What a replay saw in its window: the jobs submitted there, those of them with unknown
    memory, those with an unknown identity, and the predictions (in submit order)."""

    jobs: int
    unknown_memory: int
    unknown_identity: int
    predictions: list[Prediction]


def log_clock(path: str | Path) -> Clock:
    """The clock of the SWF log at ``path``, from its header (the ``;`` lines before the first
    job): ``UnixStartTime:`` (needed), ``TimeZoneString:`` (a tz database name) or the
    deprecated ``TimeZone:`` (s added to epoch times to give the local time), else UTC.
    ``LogError`` names the file, and the line and header field of a bad value."""
    fields: dict[str, tuple[int, str]] = {}
    try:
        with open_swf(path) as f:
            for number, text in enumerate(f, start=1):
                words = text.strip()
                if not words:
                    continue
                if not words.startswith(";"):
                    break
                name, colon, value = words[1:].partition(":")
                if colon:
                    fields.setdefault(name.strip(), (number, value.strip()))
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise LogError(f"{path}: cannot read: {err}") from None
    if "UnixStartTime" not in fields:
        raise LogError(f"{path}: no '; UnixStartTime:' header line, so its jobs' submit times "
                       "cannot be dated")
    start = _whole(path, "UnixStartTime", *fields["UnixStartTime"])
    if "TimeZoneString" in fields:
        number, name = fields["TimeZoneString"]
        try:
            return Clock(start, ZoneInfo(name), name)
        except (ZoneInfoNotFoundError, ValueError):
            raise LogError(f"{path}:{number}: header field TimeZoneString is not a known time "
                           f"zone: {name!r}") from None
    if "TimeZone" in fields:
        offset = _whole(path, "TimeZone", *fields["TimeZone"])
        if abs(offset) >= 86400:
            raise LogError(f"{path}:{fields['TimeZone'][0]}: header field TimeZone is not an "
                           f"offset under a day: {offset}")
        return Clock(start, timezone(timedelta(seconds=offset)), f"UTC{offset / 3600:+g} h")
    return Clock(start, UTC, "UTC (the header names no time zone)")


def _whole(path: str | Path, name: str, number: int, value: str) -> int:
    """Header field ``name``'s ``value`` (line ``number``) as a whole number, else
    ``LogError``."""
    try:
        return int(value)
    except ValueError:
        raise LogError(f"{path}:{number}: header field {name} is not a whole number: "
                       f"{value!r}") from None


def replay(columns: dict[str, list[Any]], clock: Clock, first: str, last: str) -> Replay:
    """Replay the jobs (``swf_columns``' fields) in submit order with the paper's history (see
    the module's docstring) and predict those submitted from month ``first`` to ``last``
    (``YYYY-MM``, both included, in ``clock``'s time zone)."""
    order = sorted(range(len(columns["job"])),
                   key=lambda i: (columns["submit"][i], columns["job"][i]))
    history: dict[tuple[int, int, int], dict[str, list[float]]] = {}
    month: str | None = None
    jobs = unknown_memory = unknown_identity = 0
    predictions: list[Prediction] = []
    for i in order:
        submit = columns["submit"][i]
        if submit < 0:
            continue
        now = clock.month(submit)
        if now > last:
            break
        if month is not None:
            history = aged(history, months_between(month, now))
        month = now
        inside = now >= first
        jobs += inside
        memory, procs = columns["mem"][i], columns["procs"][i]
        user, executable = columns["user"][i], columns["executable"][i]
        if memory < 0:
            unknown_memory += inside
            continue
        if procs <= 0 or user < 0 or executable < 0:
            unknown_identity += inside
            continue
        real = memory / KB_PER_MB
        entry = history.setdefault((executable, procs, user), {"current": [], "previous": []})
        if inside and (entry["current"] or entry["previous"]):
            predictions.append(Prediction(columns["job"][i],
                                          estimate_of(entry["current"] + entry["previous"]),
                                          real))
        entry["current"].append(real)
    return Replay(jobs, unknown_memory, unknown_identity, predictions)


def histogram(values: list[float], width: int) -> list[list[int]]:
    """``values`` counted in buckets ``width`` wide, each ``[low, count]`` for the bucket from
    ``low`` (included, a multiple of ``width``) to ``low + width``, in order; empty buckets
    left out."""
    counts = Counter(math.floor(v / width) * width for v in values)
    return [[low, counts[low]] for low in sorted(counts)]


def share(successes: int, trials: int) -> dict[str, Any]:
    """``successes`` of ``trials`` as a record: the counts, the share and its 95 %
    Clopper-Pearson interval (None without trials)."""
    interval = proportion(successes, trials)
    return {"k": successes, "n": trials, "share": interval.value if trials else None,
            "low": interval.low, "high": interval.high}


def summary(result: Replay) -> dict[str, Any]:
    """The figures of a replay: the counts, the three shares of the predicted jobs (MB
    differences), the paper's beside them, and Fig 2's histograms (MB; percentage points of
    the real memory)."""
    diffs = [p.predicted_mb - p.real_mb for p in result.predictions]
    percent = [100 * (p.predicted_mb - p.real_mb) / p.real_mb for p in result.predictions
               if p.real_mb > 0]
    n = len(diffs)
    return {"jobs": result.jobs, "unknown_memory": result.unknown_memory,
            "unknown_identity": result.unknown_identity, "predicted": n,
            "within_1mb": share(sum(1 for d in diffs if abs(d) < 1), n),
            "within_5mb": share(sum(1 for d in diffs if abs(d) < 5), n),
            "under": share(sum(1 for d in diffs if d < 0), n),
            "paper": PAPER,
            "histogram_mb": histogram(diffs, 1),
            "histogram_percent": histogram(percent, PERCENT_BUCKET),
            "real_zero": n - len(percent)}


def measure(path: str | Path, first: str = WINDOW[0], last: str = WINDOW[1]) -> dict[str, Any]:
    """Replay the SWF log at ``path`` over months ``first`` to ``last``: the record the
    benchmark prints (``summary``'s figures with the log, its time zone and the window).
    ``LogError`` or ``SwfError`` for a log it cannot read."""
    clock = log_clock(path)
    _, columns = swf_columns(path)
    return {"benchmark": "memory_estimator", "log": str(path), "time_zone": clock.name,
            "window": [first, last], **summary(replay(columns, clock, first, last))}


def _shares(record: dict[str, Any]) -> list[list[Any]]:
    """The table's rows: each share, its interval, the jobs and the paper's figure."""
    rows = []
    for label, key in ROWS:
        s = record[key]
        rows.append([label, show(Interval(s["share"], s["low"], s["high"])) if s["n"] else "-",
                     f"{s['k']} of {s['n']}", f"{PAPER[key]:g}"])
    return rows


def _counts(record: dict[str, Any]) -> str:
    """The window's jobs, in a sentence: how many were predicted, and why the others were
    not."""
    return (f"{record['jobs']} jobs submitted {record['window'][0]} to {record['window'][1]} "
            f"({record['time_zone']}): {record['predicted']} predicted, "
            f"{record['unknown_memory']} of unknown memory, {record['unknown_identity']} of "
            "unknown identity, the rest without history")


def markdown(record: dict[str, Any], meta: dict[str, Any], command: str) -> str:
    """The results page: the log and window, the shares against the paper's and Fig 2's two
    histograms."""
    lines = page_head("MEMORY §2.1.3, Fig 2: the memory estimator over a workload log",
                      "benchmarks.papers.memory_estimator", command, meta["host"],
                      f"{meta['date']}, {meta['seconds']:.0f} s")
    lines += [f"- log: `{record['log']}`", f"- {_counts(record)}",
              "- real: field 7 (average memory used per processor, KB; 1 MB = 1024 KB); "
              "identity: executable, processors, user; intervals: 95 % Clopper-Pearson", "",
              *markdown_table(["of the predicted jobs", "share", "jobs", "paper"],
                              _shares(record)), "",
              "predicted - real, buckets of 1 MB:", "",
              *markdown_table(["from (MB)", "jobs"], record["histogram_mb"]), "",
              f"(predicted - real) / real, buckets of {PERCENT_BUCKET} percentage points "
              f"(left out, of real memory 0: {record['real_zero']} jobs):", "",
              *markdown_table(["from (%)", "jobs"], record["histogram_percent"]), ""]
    return "\n".join(lines)


def month_arg(text: str) -> str:
    """An argparse type for ``--from`` and ``--to``: a month as ``YYYY-MM``."""
    if not MONTH.fullmatch(text):
        raise ValueError(text)
    return text


def main(argv: list[str] | None = None) -> int:
    """Replay the log and print the shares (or ``--json``: one record); exit 2 with one line
    naming the file, line and field when the log cannot be read."""
    p = parser("benchmarks.papers.memory_estimator",
               "MEMORY §2.1.3, Fig 2: the memory estimator over an SWF log", out_help=None,
               markdown_help="also write a results page")
    p.add_argument("--log", type=Path, required=True, metavar="PATH",
                   help="the SWF log (.swf or .swf.gz), e.g. LANL-CM5-1994-4.1-cln.swf.gz")
    p.add_argument("--from", dest="first", type=month_arg, default=WINDOW[0], metavar="YYYY-MM",
                   help=f"the window's first month (default {WINDOW[0]})")
    p.add_argument("--to", dest="last", type=month_arg, default=WINDOW[1], metavar="YYYY-MM",
                   help=f"the window's last month, included (default {WINDOW[1]})")
    args = p.parse_args(argv)
    if args.first > args.last:
        p.error(f"--from {args.first} is after --to {args.last}")
    session = Session.start("benchmarks.papers.memory_estimator", argv, None, None)
    try:
        record = measure(args.log, args.first, args.last)
    except (LogError, SwfError) as err:
        print(f"memory_estimator: {err}", file=sys.stderr)
        return 2
    meta = {"host": host(), "date": now_iso(), "seconds": time.time() - session.started}
    if not emit([record], args.json):
        print(_counts(record))
        print(table(["of the predicted jobs", "share", "jobs", "paper"], _shares(record)))
    session.page(args.markdown, lambda: markdown(record, meta, session.command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
