"""Conservative backfilling (T3D §3.1, "Backfill": jobs move forward in the queue "provided they
do not cause delays for any other job").

Variable partitioning, MPL 1.  On every event the schedule is made again from scratch: on the
free-PE profile of the running jobs (``backfill.Profile``), each queued job in arrival order gets
the earliest reservation that fits around the reservations of the jobs before it, and a job
starts now exactly when its reservation is now (and, if it waits for an end that is due now but
not reported yet, once that end is reported).  A job's reservation thus depends only on the
running jobs and the jobs queued before it, never on those behind it.  When the estimates are
right the running jobs end when the profile said, so each job gets the same reservation again;
when a job ends early, jobs move forward, and one that moves into time a later job had reserved
pushes that job's reservation back: the earlier job goes first.

A job without an estimate reserves its PEs for ever from its reservation on; one that can never
fit on the profile (the PEs it needs are held for ever) gets no reservation, ``math.inf``.  A
running job at or past its estimate is expected to end now (see ``backfill``).  Each event costs
O(queued jobs x (running + queued jobs)).
"""

from __future__ import annotations

import math
from collections import deque

from testbed.policies.base import Action, JobRequest
from testbed.policies.batch import BatchPolicy
from testbed.policies.config import PolicyConfig


class Conservative(BatchPolicy):
    """Conservative backfilling: every queued job holds a reservation.

    ``reservations`` maps each queued job to its reservation (s) as of the last event.
    """

    name = "conservative"

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self.reservations: dict[str, float] = {}

    def _admit(self, now: float) -> list[Action]:
        """Reserve for every queued job in arrival order; start those whose reservation is now
        and whose PEs are free."""
        profile = self.jobs.profile(now)
        launches = []
        waiting: deque[JobRequest] = deque()
        self.reservations = {}
        for job in self.queue:
            start = profile.earliest(job.size, job.estimate)
            if start < math.inf:
                profile.reserve(start, job.size, job.estimate)
            if start == now and job.size <= self.jobs.free:
                launches.append(self._start(job, now))
            else:
                waiting.append(job)
                self.reservations[job.id] = start
        self.queue = waiting
        return self._launched(launches)
