"""The Standard Workload Format (SWF v2.2 of the Parallel Workloads Archive).

One job a line, 18 whitespace-separated numeric fields, -1 for unknown; header lines start
with ``;``; a file whose name ends in ``.gz`` is read through gzip (the archive's form).
Importing maps each job to a BSP benchmark line (size capped or scaled to the machine, times
divided by the compression factor, granularity/variance/pattern drawn as in THESIS §4.6 or
fixed by options); exporting writes a run's jobs back as SWF with the times
multiplied by the run's compression factor again, so that a trace survives import -> run ->
export with its ids, sizes and submit times.
"""

from __future__ import annotations

import gzip
import math
import random
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any, NoReturn

import numpy as np

from testbed.collector import collector_paused
from testbed.workloads.files import JobSpec, Workload, sort_by_arrival
from testbed.workloads.mix import job_line

FIELDS = ("job", "submit", "wait", "run", "procs", "cpu", "mem", "req_procs", "req_time",
          "req_mem", "status", "user", "group", "executable", "queue", "partition",
          "preceding", "think")


class SwfError(ValueError):
    """A malformed SWF line: says file and line."""


@dataclass
class SwfJob:
    """One SWF record; -1 means unknown.  Times in seconds, memory in KB per processor."""

    job: int
    submit: float
    wait: float
    run: float
    procs: int
    cpu: float
    mem: float
    req_procs: int
    req_time: float
    req_mem: float
    status: int
    user: int
    group: int
    executable: int
    queue: int
    partition: int
    preceding: int
    think: float

    def line(self) -> str:
        """The record as one SWF line."""
        return " ".join(_fmt(getattr(self, f.name)) for f in fields(self))


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


INTEGER_FIELDS = {"job", "procs", "req_procs", "status", "user", "group", "executable", "queue",
                  "partition", "preceding"}


def read_swf(path: str | Path) -> tuple[list[str], list[SwfJob]]:
    """The header comment lines and the jobs of an SWF file; ``SwfError`` names bad lines."""
    header, columns = swf_columns(path)
    return header, [SwfJob(*values) for values in zip(*columns.values(), strict=True)]


def open_swf(path: str | Path) -> IO[str]:
    """An SWF file opened for reading text, through gzip when its name ends in ``.gz``."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path)


def swf_columns(path: str | Path) -> tuple[list[str], dict[str, list[Any]]]:
    """The header comment lines and the jobs of an SWF file field by field: a list a field of
    ``FIELDS``, a value a job (ints for ``INTEGER_FIELDS``, floats for the others, times in
    s); ``SwfError`` names the first bad line."""
    header: list[str] = []
    numbers: list[int] = []
    words: list[str] = []
    try:
        with open_swf(path) as f:
            lines = f.read().splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise SwfError(f"{path}: cannot read: {err}") from None
    for number, text in enumerate(lines, start=1):
        found = text.split()
        if not found:
            continue
        if found[0].startswith(";"):
            header.append(text.strip())
            continue
        if len(found) != len(FIELDS):
            _checked(path, numbers, words)
            raise SwfError(f"{path}:{number}: expected {len(FIELDS)} fields, got {len(found)}")
        words += found
        numbers.append(number)
    values, table = _checked(path, numbers, words)
    width = len(FIELDS)
    columns = {name: values[at::width] for at, name in enumerate(FIELDS)}
    whole = table[:, _INTEGER_AT]
    # whole numbers this small are exact in int64 (the larger through int, one at a time)
    ints = (whole.astype(np.int64).T.tolist() if np.abs(whole).max(initial=0) < 2**62
            else [list(map(int, columns[FIELDS[at]])) for at in _INTEGER_AT])
    columns.update(zip([FIELDS[at] for at in _INTEGER_AT], ints, strict=True))
    return header, columns


_INTEGER_AT = [index for index, name in enumerate(FIELDS) if name in INTEGER_FIELDS]


def _checked(path: str | Path, numbers: list[int], words: list[str]
             ) -> tuple[list[float], np.ndarray]:
    """The job lines' words (of the lines ``numbers``, 18 a line, one after the other) as
    floats, and as a table of a row a line; ``SwfError`` for the first line with a field that
    is not a number, or not finite, or not whole where it must be."""
    try:
        values = list(map(float, words))
    except ValueError:
        _refuse_first(path, numbers, words)
    table = np.fromiter(values, float, len(values)).reshape(len(numbers), len(FIELDS))
    if not (np.isfinite(table).all() and (table[:, _INTEGER_AT] % 1 == 0).all()):
        _refuse_first(path, numbers, words)
    return values, table


def _refuse_first(path: str | Path, numbers: list[int], words: list[str]) -> NoReturn:
    """Raise ``SwfError`` for the first of the job lines (``numbers``, their ``words`` one
    after the other) with a field that is not a number, or not finite, or not whole where it
    must be."""
    width = len(FIELDS)
    for at, number in enumerate(numbers):
        line = words[at * width:(at + 1) * width]
        try:
            values = list(map(float, line))
        except ValueError:
            bad = next(w for w in line if not _is_number(w))
            raise SwfError(f"{path}:{number}: field {line.index(bad) + 1} "
                           f"({FIELDS[line.index(bad)]}) is not a number: {bad!r}") from None
        _refuse(path, number, line, values)
    raise AssertionError("no bad line among the SWF lines refused")


def _refuse(path: str | Path, number: int, words: list[str], values: list[float]) -> None:
    """Raise ``SwfError`` for the first field of line ``number`` that is not finite, or not
    whole where it must be."""
    for index, (name, value) in enumerate(zip(FIELDS, values, strict=True)):
        if not math.isfinite(value) or (name in INTEGER_FIELDS and value != int(value)):
            kind = "a whole number" if name in INTEGER_FIELDS else "a finite number"
            raise SwfError(f"{path}:{number}: field {index + 1} ({name}) is not {kind}: "
                           f"{words[index]!r}")


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class ImportOptions:
    """How SWF jobs become benchmark jobs."""

    pes: int
    compress: float = 100.0
    sizes: str = "cap"              # "cap" at the machine, or "scale" by machine / trace max
    seed: int = 1
    granularity: float | None = None
    variance: float | None = None
    pattern: str | None = None


def to_workload(jobs: list[SwfJob], opts: ImportOptions, source: str) -> tuple[str, int]:
    """Workload file text for the usable jobs, and how many were skipped (no size or time)."""
    rng = random.Random(opts.seed)
    usable = []
    for job in jobs:
        size = job.procs if job.procs > 0 else job.req_procs
        runtime = job.run if job.run >= 0 else job.req_time
        if size > 0 and runtime >= 0 and job.submit >= 0:
            usable.append((job, size, runtime))
    biggest = max((size for _, size, _ in usable), default=1)
    first = min((job.submit for job, _, _ in usable), default=0.0)
    lines = [f"# testbed: generator=swf source={Path(source).name} pes={opts.pes} "
             f"compress={opts.compress:g} sizes={opts.sizes} seed={opts.seed}",
             "# arrival pes command..."]
    for job, size, runtime in usable:
        if opts.sizes == "scale":
            pes = max(1, min(opts.pes, math.ceil(size * opts.pes / biggest)))
        else:
            pes = min(size, opts.pes)
        arrival = (job.submit - first) / opts.compress
        extra = f"id={job.job}"
        if job.req_time > 0:
            extra += f" estimate={job.req_time / opts.compress:.6g}"
        lines.append(job_line(rng, arrival, pes, runtime / opts.compress, opts.granularity,
                              opts.variance, opts.pattern, extra=extra))
    return "\n".join(lines) + "\n", len(jobs) - len(usable)


@collector_paused()
def trace_workload(path: str | Path, pes: int, perfect_estimates: bool = False) -> Workload:
    """An SWF trace as a workload the simulator runs directly: a job's work is its runtime,
    its estimate the requested time (when given; its work with ``perfect_estimates``), its
    size capped at ``pes``; a job with a preceding job (field 17) present in the trace arrives
    its think time (field 18) after that job ends.  Jobs without size or runtime are left
    out.  The jobs have no command, so only the simulator can run them.  Raises ``SwfError``
    for a malformed file."""
    _, swf = swf_columns(path)
    ids: set[int] = set()
    specs: list[JobSpec] = []
    for number, submit, run, procs, req_procs, req_time, user, preceding, think in zip(
            swf["job"], swf["submit"], swf["run"], swf["procs"], swf["req_procs"],
            swf["req_time"], swf["user"], swf["preceding"], swf["think"], strict=True):
        size = procs if procs > 0 else req_procs
        runtime = run if run >= 0 else req_time
        if size <= 0 or runtime < 0 or submit < 0:
            continue
        after = preceding if preceding in ids else None
        arrival = max(think, 0.0) if after is not None else submit
        estimate = runtime if perfect_estimates else req_time if req_time > 0 else None
        specs.append(JobSpec(f"j{len(specs) + 1}", len(specs) + 1, arrival, min(size, pes), (),
                             runtime, None, str(user), False, None, number, estimate, after))
        ids.add(number)
    sort_by_arrival(specs)
    return Workload(str(path), specs, {"generator": "swf-trace"})
