"""Workload files (THESIS §4.3.3): one job a line, ``ARRIVAL PES [key=value...] COMMAND...``.

* ``ARRIVAL``: seconds from the start of the run (>= 0); ``PES``: number of ranks (>= 1).
* Options before the command: ``limit=SECONDS`` (kill the job after that much runtime),
  ``user=NAME`` and ``mem=SIZE`` (memory each process needs, e.g. ``300M``; a bare number is
  MiB), which memory-aware admission uses instead of an estimate from history; ``id=N`` is the
  job's number in a trace it came from (kept in SWF exports); ``estimate=SECONDS`` is the
  runtime the user expects (the batch policies plan with it; SWF's requested time);
  ``after=N`` makes the job a successor of the earlier job with ``id=N``: it arrives ARRIVAL
  seconds after that job ends (a re-run or a dependent job; SWF's preceding job and think time);
  ``class=NAME`` is the job's class under the ``t3d`` scheduler (default: its batch class);
  the bare word ``prime`` makes it a prime job under the ``psched`` scheduler (T3E: launched
  first and run without competition from normal work), so a command called ``prime`` needs a
  path (``./prime``).
* ``COMMAND``: split like a shell would split words (quotes work) but never run by a shell.
  ``bsp ARGS...`` is short for the synthetic benchmark, ``python -m testbed.jobs.bsp ARGS...``,
  which inherits the run's timeslice unless ARGS set ``--timeslice``.
* ``owner ARRIVAL PE DURATION``: a workstation owner takes PE from ARRIVAL for DURATION
  seconds (COW; the ``afcfs`` and ``lgfs`` schedulers), interrupting a gang running there.
* ``#`` starts a comment.  A comment ``# testbed: key=value ...`` carries metadata; ``compress``
  (the time-compression factor) sets the short/long and bounded-slowdown thresholds.
"""

from __future__ import annotations

import argparse
import functools
import math
import shlex
import sys
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from testbed.bsp_options import build_parser as bsp_parser
from testbed.defaults import TIMESLICE_S
from testbed.sizes import parse_size

OPTION_KEYS = ("limit", "user", "mem", "id", "estimate", "after", "class")


class WorkloadError(ValueError):
    """A bad workload line: says file, line and field."""

    def __init__(self, path: str, line: int, field_name: str, problem: str) -> None:
        super().__init__(f"{path}:{line}: field '{field_name}': {problem}")


@dataclass(frozen=True)
class JobSpec:
    """One job of a workload; times in seconds."""

    id: str
    line: int
    arrival: float
    pes: int
    argv: tuple[str, ...]
    work: float | None = None
    limit: float | None = None
    user: str = ""
    is_bsp: bool = False
    mem_mb: float | None = None
    source_id: int | None = None
    estimate: float | None = None
    after: int | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    job_class: str = ""
    interactive: bool = False
    prime: bool = False


@dataclass(frozen=True)
class Owner:
    """A workstation owner's visit (COW): from ``arrival`` for ``duration`` seconds on ``pe``
    (from line ``line``)."""

    arrival: float
    pe: int
    duration: float
    line: int = 0


def parse_owner(path: str, line: int, words: list[str]) -> Owner:
    """An ``owner ARRIVAL PE DURATION`` line (``words`` after ``owner``)."""
    if len(words) != 3:
        raise WorkloadError(path, line, "owner", "expected: owner ARRIVAL PE DURATION")
    arrival = _number(path, line, "arrival", words[0], 0.0, strict=False)
    if not words[1].isdigit():
        raise WorkloadError(path, line, "pe", f"not a PE number: {words[1]!r}")
    duration = _number(path, line, "duration", words[2], 0.0, strict=True)
    return Owner(arrival, int(words[1]), duration, line)


@dataclass
class Workload:
    """The jobs of a workload file, sorted by arrival, with its metadata and its workstation
    owners (``owner`` lines: arrival, PE and duration, seconds; COW)."""

    path: str
    jobs: list[JobSpec]
    meta: dict[str, str] = field(default_factory=dict)
    owners: list[Owner] = field(default_factory=list)

    @property
    def compress(self) -> float:
        """Time-compression factor the workload was made with (1 when not stated)."""
        return float(self.meta.get("compress", 1.0))

    def check_fits(self, pes: int) -> None:
        """Raise ``WorkloadError`` for the first job wider than a machine of ``pes`` PEs."""
        for job in self.jobs:
            if job.pes > pes:
                raise WorkloadError(self.path, job.line, "pes",
                                    f"{job.pes} PEs requested but the machine has {pes}")
        for owner in self.owners:
            if owner.pe >= pes:
                raise WorkloadError(self.path, owner.line, "pe",
                                    f"PE {owner.pe} but the machine has PEs 0-{pes - 1}")


class _BspArgs(argparse.ArgumentParser):
    """The benchmark's options without --help, raising instead of printing and exiting."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "add_help": False})

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(message)


@functools.cache
def _bsp_options() -> argparse.ArgumentParser:
    return bsp_parser(_BspArgs)


def _number(path: str, line: int, name: str, text: str, minimum: float, strict: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise WorkloadError(path, line, name, f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise WorkloadError(path, line, name, f"not a finite number: {text!r}")
    if value < minimum or (strict and value == minimum):
        bound = ">" if strict else ">="
        raise WorkloadError(path, line, name, f"must be {bound} {minimum:g}, got {text}")
    return value


def parse_line(path: str, line: int, text: str, job_id: str, timeslice: float) -> JobSpec | None:
    """Parse one workload line into a ``JobSpec`` (None for blank and comment lines)."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError as err:
        raise WorkloadError(path, line, "command", str(err)) from None
    if not words:
        return None
    if len(words) < 2:
        raise WorkloadError(path, line, "pes", "missing (expected: ARRIVAL PES COMMAND...)")
    arrival = _number(path, line, "arrival", words[0], 0.0, strict=False)
    try:
        pes = int(words[1])
    except ValueError:
        raise WorkloadError(path, line, "pes", f"not an integer: {words[1]!r}") from None
    if pes < 1:
        raise WorkloadError(path, line, "pes", f"must be >= 1, got {pes}")
    rest = words[2:]
    options: dict[str, str] = {}
    prime = False
    while rest and (rest[0] == "prime"
                    or "=" in rest[0] and rest[0].split("=", 1)[0].isidentifier()):
        if rest[0] == "prime":
            del rest[0]
            prime = True
            continue
        key, value = rest.pop(0).split("=", 1)
        if key not in OPTION_KEYS:
            known = ", ".join(OPTION_KEYS)
            raise WorkloadError(path, line, key, f"unknown option (known: {known})")
        options[key] = value
    if not rest:
        raise WorkloadError(path, line, "command", "missing")
    limit = None
    if "limit" in options:
        limit = _number(path, line, "limit", options["limit"], 0.0, strict=True)
    mem_mb = None
    if "mem" in options:
        try:
            mem_mb = parse_size(options["mem"]) / 2**20
        except ValueError as err:
            raise WorkloadError(path, line, "mem", str(err)) from None
    user = options.get("user", "")
    source_id = _job_number(path, line, "id", options)
    after = _job_number(path, line, "after", options)
    estimate = None
    if "estimate" in options:
        estimate = _number(path, line, "estimate", options["estimate"], 0.0, strict=True)
    job_class = options.get("class", "")
    if "class" in options and not job_class.replace("_", "a").replace("-", "a").isalnum():
        raise WorkloadError(path, line, "class", f"not a class name: {job_class!r}")
    if rest[0] != "bsp":
        return JobSpec(job_id, line, arrival, pes, tuple(rest), None, limit, user, False, mem_mb,
                       source_id, estimate, after, job_class=job_class, prime=prime)
    args = rest[1:]
    try:
        parsed = _bsp_options().parse_args(args)
    except ValueError as err:
        raise WorkloadError(path, line, "bsp arguments", str(err)) from None
    if parsed.stats is not None:
        raise WorkloadError(path, line, "bsp arguments", "--stats is set by the testbed")
    if not any(a == "--timeslice" or a.startswith("--timeslice=") for a in args):
        args = [*args, "--timeslice", repr(timeslice)]
    argv = (sys.executable, "-m", "testbed.jobs.bsp", *args)
    return JobSpec(job_id, line, arrival, pes, argv, parsed.work, limit, user, True, mem_mb,
                   source_id, estimate, after, job_class=job_class, prime=prime)


def _job_number(path: str, line: int, key: str, options: dict[str, str]) -> int | None:
    if key not in options:
        return None
    if not options[key].isdigit():
        raise WorkloadError(path, line, key, f"not a job number: {options[key]!r}")
    return int(options[key])


def _meta(text: str) -> dict[str, str]:
    body = text.strip().removeprefix("#").strip()
    if not body.startswith("testbed:"):
        return {}
    pairs = (word.split("=", 1) for word in body.removeprefix("testbed:").split() if "=" in word)
    return dict(pairs)


def arrival_order(job: JobSpec) -> tuple[bool, float]:
    """Sort key of a workload's jobs: jobs with an arrival time by it, then the successors
    (whose ARRIVAL is a think time after their predecessor) in file order."""
    return job.after is not None, job.arrival if job.after is None else 0.0


def sort_by_arrival(jobs: list[JobSpec]) -> None:
    """Sort a workload's jobs in place by ``arrival_order`` (stable); by arrival alone, a
    key taken in C, when none is a successor (the same order)."""
    successors = any(job.after is not None for job in jobs)
    jobs.sort(key=arrival_order if successors else attrgetter("arrival"))


def load_workload(path: str | Path, timeslice: float = TIMESLICE_S) -> Workload:
    """Read a workload file; raise ``WorkloadError`` (file:line: field) on bad input.

    ``timeslice`` (s) is what ``bsp`` lines inherit.  Jobs are numbered ``j1, j2, ...`` in file
    order and returned sorted by arrival (stable), successors (``after=``) last in file order.
    """
    name = str(path)
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as err:
        raise WorkloadError(name, 0, "file", err.strerror or str(err)) from None
    except UnicodeDecodeError:
        raise WorkloadError(name, 0, "file", "not a text file") from None
    jobs: list[JobSpec] = []
    meta: dict[str, str] = {}
    ids: dict[int, int] = {}
    owners: list[Owner] = []
    for number, text in enumerate(lines, start=1):
        if text.lstrip().startswith("#"):
            meta.update(_meta(text))
            continue
        words = text.split()
        if words[:1] == ["owner"]:
            owners.append(parse_owner(name, number, words[1:]))
            continue
        job = parse_line(name, number, text, f"j{len(jobs) + 1}", timeslice)
        if job is None:
            continue
        if job.after is not None and job.after not in ids:
            raise WorkloadError(name, number, "after", f"no job with id={job.after} before it")
        if job.source_id is not None:
            if job.source_id in ids:
                raise WorkloadError(name, number, "id", f"id={job.source_id} is taken already "
                                                        f"(line {ids[job.source_id]})")
            ids[job.source_id] = number
        jobs.append(job)
    if "compress" in meta:
        _number(name, 0, "compress", meta["compress"], 0.0, strict=True)
    sort_by_arrival(jobs)
    return Workload(name, jobs, meta, sorted(owners, key=lambda o: o.arrival))
