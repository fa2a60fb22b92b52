"""What the T3D batch policies share (T3D §3.1: Backfill, Prime): variable partitioning.

MPL 1 and no time slicing: a job runs from its start to its end on PEs of its own.  Whether a job
fits is a count of free PEs (``Running.free``), so the ``allocator`` setting is ignored (the
matrix is built first-fit and ``config.allocator`` says so); only a job that starts is placed, on
the matrix's first candidate, the lowest free PEs.

A job's runtime estimate is taken as given; when it is wrong the expected ends are recomputed
around it (see ``backfill``).  Memory admission is not supported.
"""

from __future__ import annotations

import dataclasses

from testbed.policies.backfill import Running
from testbed.policies.base import Action, JobRequest, Launch, Policy
from testbed.policies.config import PolicyConfig


class BatchPolicy(Policy):
    """A batch policy: subclasses decide in ``_admit`` which queued jobs to ``_start``.

    ``jobs`` holds the running jobs by expected end and the number of free PEs.
    """

    fixed_mpl = 1
    time_sliced = False
    uses_estimates = True

    def __init__(self, config: PolicyConfig) -> None:
        if config.memory is not None:
            raise ValueError(f"the {self.name} scheduler does not support memory admission "
                             "(config.memory must be None)")
        super().__init__(dataclasses.replace(config, allocator="first-fit"))
        self.jobs = Running(config.pes)

    def finish(self, job: str, now: float) -> list[Action]:
        """``job`` ended (any status) at ``now`` (s): free its PEs and admit what may start."""
        self.jobs.finish(job)
        return super().finish(job, now)

    def running_now(self) -> frozenset[str]:
        """Every started job not held (no run set is ever sent for the others)."""
        return frozenset(self.matrix.placed) - self.held

    def _launched(self, launches: list[Launch]) -> list[Action]:
        """The launches alone: every started job runs at once and to its end, so the run set
        never needs saying (no job is ever stopped)."""
        return list(launches)

    def _start(self, job: JobRequest, now: float) -> Launch:
        """Start ``job`` at ``now`` (s) on the lowest free PEs; the caller takes it off the
        queue and must have checked that ``job.size <= self.jobs.free``."""
        pes = self.matrix.assign_lowest(job.id, 0, job.size)
        self.jobs.start(job.id, job.size, now, job.estimate)
        return Launch(job.id, 0, pes)
