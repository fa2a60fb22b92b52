"""EASY backfilling (T3D §3.1, "Backfill": the Argonne SP1 scheduler, also on the Cornell SP2).

Variable partitioning, MPL 1.  Queued jobs start in arrival order while the head fits.  The head
that does not fit gets one reservation: the shadow time, when enough PEs will be free for it
given the running jobs' estimates, and the extra PEs, those it will not need then.  A later
queued job may start at once if it fits now and either ends (by its estimate) by the shadow time
or takes no more than the extra PEs (which it then uses up).  So, when estimates are right, no job
is ever started before the head if it would delay the head's start.

A job without an estimate counts as running for ever: it never starts before the head (it would
use the extra PEs for ever), but as the head it starts when it fits.  A running job at or past
its estimate is expected to end now (see ``backfill``): the shadow time may be now, and then only
the extra PEs are lent until it ends.
"""

from __future__ import annotations

import math
from itertools import compress, islice
from operator import attrgetter

from testbed.policies.base import Action, JobRequest, Launch
from testbed.policies.batch import BatchPolicy
from testbed.policies.config import PolicyConfig

_SIZE = attrgetter("size")


class Easy(BatchPolicy):
    """EASY backfilling: FCFS with one reservation, the queue head's.

    ``shadow`` (s) and ``extra`` (PEs) are the head's reservation as of the last event.
    """

    name = "easy"

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self.shadow = math.inf
        self.extra = 0
        self.decided_at = -math.inf

    @property
    def reservation(self) -> tuple[str, float] | None:
        """The queue head and the time (s) by which it will start if the running jobs' estimates
        are right, as of the last event; None with nothing queued."""
        return (self.queue[0].id, self.shadow) if self.queue else None

    def arrive(self, job: JobRequest, now: float) -> list[Action]:
        """``job`` arrived at ``now`` (s): queue it and start what may start.

        If jobs were waiting already and no running job has reached its estimate since the last
        decision, nothing but the new job can have become able to start (no PEs were freed, the
        shadow time and the extra PEs are the same, and the time left until the shadow time is
        shorter), so only the new job is tried: an arrival that starts nothing costs
        O(log running jobs).
        """
        if not self.queue or self.jobs.overran(self.decided_at, now):
            return super().arrive(job, now)
        self.decided_at = now
        self.shadow = max(self.shadow, now)
        self.queue.append(job)
        launch = self._backfill(job, now)
        if launch is None:
            return []
        self.queue.pop()
        return self._launched([launch])

    def _admit(self, now: float) -> list[Action]:
        """Start heads while they fit, then reserve for the head and backfill behind it."""
        self.decided_at = now
        queue = self.queue
        launches = []
        while queue and queue[0].size <= self.jobs.free:
            launches.append(self._start(queue.popleft(), now))
        if queue:
            jobs = self.jobs
            self.shadow, self.extra = jobs.shadow(queue[0].size, now)
            started = []
            # only the jobs that fit the PEs free now are looked at (picked out in C: the free
            # PEs only shrink as jobs start, so each is checked again)
            fitting = map(jobs.free.__ge__, map(_SIZE, islice(queue, 1, None)))
            for job in compress(islice(queue, 1, None), fitting):
                if job.size <= jobs.free and (launch := self._backfill(job, now)):
                    launches.append(launch)
                    started.append(job)
                    if not jobs.free:
                        break
            for job in started:
                queue.remove(job)
        return self._launched(launches)

    def _backfill(self, job: JobRequest, now: float) -> Launch | None:
        """Start ``job`` (not the head) now if it fits and ends by the shadow time or fits in
        the extra PEs (taking them); None if it may not."""
        if job.estimate is None or job.size > self.jobs.free:
            return None
        if now + job.estimate > self.shadow:
            if job.size > self.extra:
                return None
            self.extra -= job.size
        return self._start(job, now)
