"""The run's append-only event log, ``events.jsonl``: its schema, its writer and its one reader.

One JSON object a line.  Every event has ``t`` (seconds since the run started, on the run's
clock: monotonic wall time when emulated, virtual time when simulated) and ``event`` (its
kind); ``FIELDS`` lists each kind's other fields, which the writer enforces.  Both executors
write the same kinds; events marked *emulation* below come only from real processes.

* ``run_start``: run_id, wall_time (Unix time), config (``config.json``'s content).
* ``workload``: path, meta, jobs (the workload's jobs: job, line, arrival, pes, work, limit,
  estimate, after, source_id, class, prime).  A service run (``testbed serve``) writes one
  more for every submission, its arrivals relative to its ``t``.
* ``arrival``: job, due (its workload arrival; a successor's is its predecessor's end plus its
  think time), pes, work, limit, estimate, user, argv, mem_mb (the estimate memory admission
  uses, MiB), mem_source (declared, history or none).
* ``start``: job, slot (its matrix row), pes (its PEs), cpus (the CPUs they are; None when
  simulated).
* ``switch``: a heartbeat changed what runs: seq, slot, jobs, stopped, continued, latency_us
  (sent to last signal delivered; the modeled switch cost when simulated), lag_us (sent minus
  due), slice_s (the timeslice from now on: T3E's adaptive slice with ``--variation``).
  ``suspend`` / ``resume``: job.
* ``limit``: job, limit (s): the job reached its runtime limit and is being killed.
* ``hold``: job, held: an operator suspended (true) or resumed (false) the job.
* ``migrate``: job, slot, pes, from_slot, from_pes, error: the job's ranks were moved (T3E
  psched's load balancer or ``testbed migrate``); ``error`` says why a move failed (None).
* ``job_class``: job, old, new: the job was moved to another class (t3d).
* ``states``: changed (job -> letter): the jobs whose T3D state changed (t3d only; ``N`` new,
  ``W`` waiting with PEs reserved, ``R`` running, ``O`` preempted, ``S`` suspended).
* ``owner_start``: pe, duration (s): a workstation owner took the PE (COW); ``owner_end``: pe.
* ``interrupt``: job, pe, lost_s, cpu_s: an owner's arrival on ``pe`` killed the job; the
  seconds it had run (and its ranks' CPU seconds) are lost and it waits to be launched again
  from the start (a new ``start``).
* ``finish``: job, status (done, failed, killed, timeout), exit_code, reason, swap_in,
  swap_out (pages during its life; None when simulated), cpu_s (CPU seconds of all its ranks
  when simulated; None when emulated, where ``stats`` and ``counters`` carry them).
* *emulation*: ``pids`` (job, pids, after_s), ``memory`` (job and its ranks' summed sample),
  ``node_memory`` (used_kib), ``class`` (job, rank, old, new, stats: an FCS class change),
  ``stats`` (job, ranks: the benchmark's per-rank records), ``counters`` (job, ranks: CPU,
  faults, peak RSS (None for a rank whose process was never found) and shim counters per
  rank), ``paging`` (job, direction ``out`` or ``in``,
  seconds, swap_kib_before, swap_kib_after: a preempted job's memory moved to swap or back,
  t3d with ``--node-mem``), ``hang`` (job, seconds, rule, ranks, cycles: the job was found
  hung (``testbed.hang``) and is being killed; it ends ``failed`` with the reason in words.
  ``rule``: ``in_mpi`` (every rank was inside an MPI call the shim wraps and none returned) or
  ``no_cpu`` (no call returned and its ranks used no CPU); ``seconds``: the time, not stopped,
  for which the rule held; ``ranks``: per rank, call (the MPI function it was in,
  or last entered), waits_on (the world rank that call waits on; -1 several, any or not
  known), blocked, in_calls (its threads inside a call), polling (those in a call MPI
  completes by polling), calls_done (calls returned) and cpu_s (its process's CPU seconds);
  all but cpu_s None for a rank without the shim; ``cycles``: lists of ranks each waiting on
  the next, the last on the first), ``interrupted`` (signal), ``node_lost`` (node, host,
  reason: a node manager process on another host died or stopped answering; its jobs fail),
  ``broadcast`` (a message sent down the fan-out tree of node managers on other hosts:
  message (its kind), nodes (live node managers), direct (those the coordinator sent it to
  itself), read (messages the coordinator read meanwhile: answers, and pushes that came then),
  cpu_us (the coordinator's CPU time for it: pickling, sending, gathering the
  answers), send_us (its send loop's wall time per node sent to), gather_us (wall time until
  every answer was in), hop_us (the slowest hop, a sender's send to the receiver ready to
  forward; one clock on emulated hosts), forward_us (the largest forwarding cost per child of a
  node manager; None if none forwarded)).
* ``run_end``: status (complete, interrupted, or error when an exception ended the run), swept
  (processes killed at the end).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from testbed.json_text import WRITERS, encode, int_list, str_list, value

FIELDS: dict[str, frozenset[str]] = {kind: frozenset(names.split()) for kind, names in {
    "run_start": "run_id wall_time config",
    "workload": "path meta jobs",
    "arrival": "job due pes work limit estimate user argv mem_mb mem_source",
    "start": "job slot pes cpus",
    "switch": "seq slot jobs stopped continued latency_us lag_us slice_s",
    "suspend": "job",
    "resume": "job",
    "limit": "job limit",
    "owner_start": "pe duration",
    "owner_end": "pe",
    "interrupt": "job pe lost_s cpu_s",
    "paging": "job direction seconds swap_kib_before swap_kib_after",
    "hold": "job held",
    "migrate": "job slot pes from_slot from_pes error",
    "job_class": "job old new",
    "states": "changed",
    "finish": "job status exit_code reason swap_in swap_out cpu_s",
    "pids": "job pids after_s",
    "node_memory": "used_kib",
    "class": "job rank old new stats",
    "stats": "job ranks",
    "counters": "job ranks",
    "interrupted": "signal",
    "node_lost": "node host reason",
    "hang": "job seconds rule ranks cycles",
    "broadcast": "message nodes direct read cpu_us send_us gather_us hop_us forward_us",
    "run_end": "status swept",
}.items()}
OPEN_FIELDS = {"memory": frozenset({"job"})}
# the fields of each job of a ``workload`` event, in the order they are written
WORKLOAD_JOB_FIELDS = ("job", "line", "arrival", "pes", "work", "limit", "estimate", "after",
                       "source_id", "class", "prime")
_BATCH = 4096
_MIDDLES_KEPT = 256     # the most kinds of finish (status, exit code, reason) kept as text


class SchemaError(ValueError):
    """An event does not match its kind's fields (a bug in the writer, never user input)."""


class WriteFailed(Exception):
    """A run's file could not be written (a full disk, a quota, an I/O error): the path and
    the system's reason, as one line."""

    def __init__(self, path: Path | str, err: OSError) -> None:
        super().__init__(f"cannot write {path}: {err.strerror or err}")
        self.path = str(path)
        self.errno = err.errno


class EventLog:
    """Writes events, checking each against ``FIELDS``.

    ``flush_each`` (the default) flushes every event to the OS as it is written, so a live
    view and a killed run see every event up to the last; the simulator, whose runs are
    re-made at will and write hundreds of thousands of events, buffers instead (thousands of
    events a write).  The first write that fails raises ``WriteFailed``; the log writes
    nothing more after it (what it holds stays readable up to its last whole event).

    ``emit`` writes any event.  The kinds a run writes for every job (``workload``,
    ``arrival``, ``start``, ``finish``; ``switch``, ``suspend`` and ``resume`` every
    timeslice) also have a method of their own, ``emit_KIND``, whose fields are its
    arguments: it writes the same line ``emit`` would, built by hand (``testbed.json_text``).
    """

    def __init__(self, path: Path, flush_each: bool = True) -> None:
        self.path = path
        self.file: TextIO = open(path, "x", buffering=1 if flush_each else 1 << 20)  # noqa: SIM115
        self.flush_each = flush_each
        self.batch = 1 if flush_each else _BATCH       # events held before a write
        self.failed: WriteFailed | None = None
        self.pending: list[str] = []
        self.last_t = -1.0
        self.last_t_text = ""
        self.finish_middles: dict[tuple[str, int | None, str], str] = {}

    def emit(self, event: str, t: float, **fields: Any) -> None:
        """Append one event at ``t`` (s); raise ``SchemaError`` if its fields are not its
        kind's."""
        expected = FIELDS.get(event)
        if expected is None:
            required = OPEN_FIELDS.get(event)
            if required is None or not required <= fields.keys():
                raise SchemaError(f"unknown event {event!r} or missing fields")
        elif fields.keys() != expected:
            raise SchemaError(f"{event}: fields {sorted(fields)} != {sorted(expected)}")
        # t >= 0; to the microsecond, as round(t, 6) but several times faster
        self._write(encode({"t": int(t * 1e6 + 0.5) / 1e6, "event": event, **fields}) + "\n")

    def _time(self, t: float) -> str:
        """The text of ``t`` (s) as ``emit`` writes it (to the microsecond); events come in
        runs at one time, so the last one is kept."""
        if t != self.last_t:
            self.last_t = t
            # a finite float (int() refuses what is not), which json.dumps writes as repr does
            self.last_t_text = repr(int(t * 1e6 + 0.5) / 1e6)
        return self.last_t_text

    # The emit_KIND methods write each value with WRITERS[type(value)](value): json.dumps's
    # text, through a function in C for most types (a call of value() per field costs more).

    def emit_workload(self, t: float, path: str | None, meta: dict[str, str],
                      jobs: Iterable[Sequence[Any]]) -> None:
        """A ``workload`` event at ``t`` (s): ``jobs`` holds one sequence of values per job,
        in the order of ``WORKLOAD_JOB_FIELDS``."""
        w = WRITERS
        texts = [f'{{"job": {w[type(job)](job)}, "line": {w[type(line)](line)}, '
                 f'"arrival": {w[type(arrival)](arrival)}, "pes": {w[type(pes)](pes)}, '
                 f'"work": {(work_text := w[type(work)](work))}, '
                 f'"limit": {w[type(limit)](limit)}, '
                 f'"estimate": {work_text if estimate is work else w[type(estimate)](estimate)}, '
                 f'"after": {w[type(after)](after)}, "source_id": {w[type(source_id)](source_id)}, '
                 f'"class": {w[type(job_class)](job_class)}, "prime": {w[type(prime)](prime)}}}'
                 for job, line, arrival, pes, work, limit, estimate, after, source_id, job_class,
                 prime in jobs]
        self._write(f'{{"t": {self._time(t)}, "event": "workload", "path": {value(path)}, '
                    f'"meta": {encode(meta)}, "jobs": [{", ".join(texts)}]}}\n')

    def emit_arrival(self, t: float, job: str, due: float, pes: int, work: float | None,
                     limit: float | None, estimate: float | None, user: str,
                     argv: Sequence[str], mem_mb: float | None, mem_source: str) -> None:
        """An ``arrival`` event at ``t`` (s)."""
        w = WRITERS
        work_text = w[type(work)](work)
        estimate_text = work_text if estimate is work else w[type(estimate)](estimate)
        self._write(
            f'{{"t": {self._time(t)}, "event": "arrival", "job": {w[type(job)](job)}, '
            f'"due": {w[type(due)](due)}, "pes": {w[type(pes)](pes)}, '
            f'"work": {work_text}, "limit": {w[type(limit)](limit)}, '
            f'"estimate": {estimate_text}, '
            f'"user": {w[type(user)](user)}, "argv": {str_list(argv)}, '
            f'"mem_mb": {w[type(mem_mb)](mem_mb)}, '
            f'"mem_source": {w[type(mem_source)](mem_source)}}}\n')

    def emit_start(self, t: float, job: str, slot: int, pes: Sequence[int],
                   cpus: Sequence[int] | None) -> None:
        """A ``start`` event at ``t`` (s)."""
        w = WRITERS
        self._write(
            f'{{"t": {self._time(t)}, "event": "start", "job": {w[type(job)](job)}, '
            f'"slot": {w[type(slot)](slot)}, "pes": {int_list(pes)}, '
            f'"cpus": {"null" if cpus is None else int_list(cpus)}}}\n')

    def emit_finish(self, t: float, job: str, status: str, exit_code: int | None, reason: str,
                    swap_in: int | None, swap_out: int | None, cpu_s: float | None) -> None:
        """A ``finish`` event at ``t`` (s)."""
        w = WRITERS
        if swap_in is None and swap_out is None and (exit_code is None
                                                     or type(exit_code) is int):
            # ints and None are equal only to themselves (bools and floats are not let in),
            # so a kept middle is the one these fields would write
            key = (status, exit_code, reason)
            middle = self.finish_middles.get(key)
            if middle is None:
                middle = self._finish_middle(status, exit_code, reason, swap_in, swap_out)
                if len(self.finish_middles) < _MIDDLES_KEPT:
                    self.finish_middles[key] = middle
        else:
            middle = self._finish_middle(status, exit_code, reason, swap_in, swap_out)
        self._write(f'{{"t": {self._time(t)}, "event": "finish", "job": '
                    f'{w[type(job)](job)}{middle}{w[type(cpu_s)](cpu_s)}}}\n')

    @staticmethod
    def _finish_middle(status: str, exit_code: int | None, reason: str, swap_in: int | None,
                       swap_out: int | None) -> str:
        """A ``finish`` line's text from after its job to before its ``cpu_s`` value."""
        w = WRITERS
        return (f', "status": {w[type(status)](status)}, '
                f'"exit_code": {w[type(exit_code)](exit_code)}, '
                f'"reason": {w[type(reason)](reason)}, "swap_in": {w[type(swap_in)](swap_in)}, '
                f'"swap_out": {w[type(swap_out)](swap_out)}, "cpu_s": ')

    def emit_switch(self, t: float, seq: int, slot: int | None, jobs: Sequence[str],
                    stopped: Sequence[str], continued: Sequence[str], latency_us: float,
                    lag_us: float | None, slice_s: float | None) -> None:
        """A ``switch`` event at ``t`` (s)."""
        w = WRITERS
        self._write(f'{{"t": {self._time(t)}, "event": "switch", "seq": {w[type(seq)](seq)}, '
                    f'"slot": {w[type(slot)](slot)}, "jobs": {str_list(jobs)}, '
                    f'"stopped": {str_list(stopped)}, "continued": {str_list(continued)}, '
                    f'"latency_us": {w[type(latency_us)](latency_us)}, '
                    f'"lag_us": {w[type(lag_us)](lag_us)}, '
                    f'"slice_s": {w[type(slice_s)](slice_s)}}}\n')

    def emit_jobs(self, event: str, t: float, jobs: Iterable[str]) -> None:
        """One ``suspend`` or ``resume`` event (``event``) at ``t`` (s) for each of ``jobs``."""
        assert event in ("suspend", "resume"), event
        head = f'{{"t": {self._time(t)}, "event": "{event}", "job": '
        w = WRITERS
        pending = self.pending
        pending.extend([f"{head}{w[type(job)](job)}}}\n" for job in jobs])
        if len(pending) >= self.batch:
            self._drain()

    def _write(self, line: str) -> None:
        pending = self.pending
        pending.append(line)
        if len(pending) >= self.batch:
            self._drain()

    def _drain(self) -> None:
        """Write the events held back and, when flushing each, flush them to the OS
        (``WriteFailed`` if they cannot be; after that they are dropped)."""
        text, self.pending = "".join(self.pending), []
        if self.failed is not None:
            return
        try:
            self.file.write(text)
            if self.flush_each:
                self.file.flush()
        except OSError as err:
            self.failed = WriteFailed(self.path, err)
            raise self.failed from None

    def close(self) -> None:
        """Write what is held back, flush and close the file (after a failed write, what
        could not be written is dropped); ``WriteFailed`` if the last write fails."""
        try:
            if self.pending:
                self._drain()
        finally:
            try:
                self.file.close()
            except OSError as err:
                if self.failed is None:
                    self.failed = WriteFailed(self.path, err)
                    raise self.failed from None


def read_events(path: Path) -> list[dict[str, Any]]:
    """Read an event log up to its last whole event (``iter_events``) into a list."""
    return list(iter_events(path))


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of an event log one at a time, up to its last whole event: reading stops at
    the first line that is not one (a torn last line, when the writer was killed mid-write, or
    a damaged one), since what follows damage cannot be trusted to follow on from what came
    before.  Holds one line at a time, whatever the log's size."""
    with open(path, errors="replace") as f:
        for line in f:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                return
            if not isinstance(event, dict) or "t" not in event or "event" not in event:
                return
            yield event


def run_config(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's configuration (``run_start``'s config); empty before the run has started."""
    return next((ev["config"] for ev in events if ev["event"] == "run_start"), {})
