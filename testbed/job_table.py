"""The driver's job table: one record per job not yet ended, from submission to its end.

A job is ``waiting`` for its predecessor (``after=``), ``pending`` until its arrival time,
``queued`` once it has arrived, and ``started`` once launched (a job an owner interrupted is
queued again).  Ended jobs leave the table: a service running for days keeps only live jobs.
The table makes every transition itself; the agenda entries it keeps (arrival, deadline) are
the driver's to push and cancel.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from testbed.agenda import Entry
from testbed.workloads.files import JobSpec

STATES = ("waiting", "pending", "queued", "started")


@dataclass(slots=True)
class JobRecord:
    """One live job: its spec, state, arrival and start times (s, None before), the PEs of its
    last launch, its runtime limit (s, None without one) and its agenda entries (arrival,
    deadline)."""

    spec: JobSpec
    state: str
    arrived_at: float | None = None
    started_at: float | None = None
    pes: tuple[int, ...] = ()
    limit: float | None = None
    arrival: Entry | None = None
    deadline: Entry | None = None


class JobTable:
    """The live jobs by name, in submission order, and the successors waiting for each
    predecessor (by its ``id=``)."""

    def __init__(self) -> None:
        self.records: dict[str, JobRecord] = {}
        self.successors: dict[int, list[JobSpec]] = defaultdict(list)

    def enter(self, spec: JobSpec) -> JobRecord:
        """Enter ``spec``: ``waiting`` for its predecessor when it has one, else ``pending``
        (the caller pushes its arrival); its record."""
        record = self.records[spec.id] = JobRecord(spec, "pending" if spec.after is None
                                                   else "waiting")
        if spec.after is not None:
            self.successors[spec.after].append(spec)
        return record

    def arrived(self, job: str, due: float) -> JobRecord:
        """``job`` arrived, due at ``due`` (s): it is ``queued``."""
        record = self.records[job]
        record.state, record.arrived_at, record.arrival = "queued", due, None
        return record

    def started(self, job: str, now: float, pes: tuple[int, ...],
                limit: float | None) -> JobRecord:
        """``job`` was launched at ``now`` (s) on ``pes`` with runtime limit ``limit`` (s)."""
        record = self.records[job]
        record.state, record.started_at, record.pes, record.limit = "started", now, pes, limit
        return record

    def requeued(self, job: str) -> Entry | None:
        """``job`` was killed to be launched again: ``queued``, without a limit; its deadline
        entry (for the caller to cancel)."""
        record = self.records[job]
        deadline = record.deadline
        record.state, record.limit, record.deadline = "queued", None, None
        return deadline

    def limit_reached(self, job: str) -> float:
        """``job``'s limit came (it is being killed); the limit (s), now cleared."""
        record = self.records[job]
        limit = record.limit
        assert limit is not None
        record.limit = record.deadline = None
        return limit

    def withdraw(self, job: str) -> None:
        """A ``waiting`` job no longer waits for its predecessor (it is cancelled)."""
        spec = self.records[job].spec
        after = self.successors[spec.after]     # type: ignore[index]
        after[:] = [s for s in after if s.id != job]

    def released(self, source_id: int | None) -> list[JobRecord]:
        """The predecessor ``source_id`` ended: its successors become ``pending`` (the caller
        pushes their arrivals); their records."""
        if source_id is None:
            return []
        records = []
        for successor in self.successors.pop(source_id, []):
            record = self.records[successor.id]
            record.state = "pending"
            records.append(record)
        return records

    def successors_waiting(self) -> bool:
        """Whether some job still waits for its predecessor to end."""
        return any(self.successors.values())

    def get(self, job: str) -> JobRecord | None:
        """The record of ``job``; None when there is no such job or it has ended."""
        return self.records.get(job)

    def state(self, job: str) -> str | None:
        """The state of ``job`` (one of ``STATES``); None when unknown or ended."""
        record = self.records.get(job)
        return record.state if record is not None else None

    def remove(self, job: str) -> JobRecord:
        """Take the record of a job that has ended out of the table."""
        return self.records.pop(job)

    def __iter__(self) -> Iterator[JobRecord]:
        return iter(list(self.records.values()))

    def __len__(self) -> int:
        return len(self.records)
