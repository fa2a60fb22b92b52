"""The driver's job table: one record per job not yet ended, from submission to its end.

A job is ``waiting`` for its predecessor (``after=``), ``pending`` until its arrival time,
``queued`` once it has arrived, and ``started`` once launched (a job an owner interrupted is
queued again).  Ended jobs leave the table: a service running for days keeps only live jobs.
"""

from __future__ import annotations

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
    """The live jobs by name, in submission order."""

    def __init__(self) -> None:
        self.records: dict[str, JobRecord] = {}

    def add(self, spec: JobSpec, state: str) -> JobRecord:
        """Enter ``spec`` in ``state``; its record."""
        record = self.records[spec.id] = JobRecord(spec, state)
        return record

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
