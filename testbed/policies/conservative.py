"""Conservative backfilling (T3D §3.1, "Backfill": jobs move forward in the queue "provided they
do not cause delays for any other job").

Variable partitioning, MPL 1.  The schedule: on the free-PE profile of the running jobs
(``backfill.Profile``), each queued job in arrival order gets the earliest reservation that fits
around the reservations of the jobs before it, and a job starts now exactly when its reservation
is now (and, if it waits for an end that is due now but not reported yet, once that end is
reported).  A job's reservation thus depends only on the running jobs and the jobs queued before
it, never on those behind it.  When the estimates are right the running jobs end when the profile
said, so each job gets the same reservation again; when a job ends early, jobs move forward, and
one that moves into time a later job had reserved pushes that job's reservation back: the
earlier job goes first.

A job without an estimate reserves its PEs for ever from its reservation on; one that can never
fit on the profile (the PEs it needs are held for ever) gets no reservation, ``math.inf``.  A
running job at or past its estimate is expected to end now (see ``backfill``).

The profile with every reservation on it is kept from one event to the next, and the schedule is
made again from scratch (O(queued jobs x (running + queued jobs))) only when it could come out
otherwise than the kept one:

* a running job ends before its expected end (the profile had its PEs busy until then);
* a queued job's reservation has passed without it starting (it waits for an end reported
  late, and from now it may not fit where it did);
* a queued job is cancelled (those behind it may move forward).

Otherwise the free PEs from now on are what the kept profile says: a job that ends at its
expected end frees, in the profile, PEs it had freed already, and one that outlives its estimate
frees none in it until it ends (its PEs count as free from its expected end on either way).  So
every queued job keeps its reservation, the jobs reserved for now start (in arrival order, if
their PEs are free), and an arriving job is reserved on the kept profile, behind every other:
O(log queued jobs + running + queued jobs) an event.
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush

from testbed.policies.backfill import Profile
from testbed.policies.base import Action, JobRequest, Launch
from testbed.policies.batch import BatchPolicy
from testbed.policies.config import PolicyConfig


class Conservative(BatchPolicy):
    """Conservative backfilling: every queued job holds a reservation.

    ``reservations`` maps each queued job to its reservation (s) as of the last event;
    ``profile`` is the free-PE profile with all of them on it (None when the schedule must be
    made again); ``due`` holds the queued jobs with a finite reservation as (reservation,
    arrival order, job), a heap.
    """

    name = "conservative"

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self.reservations: dict[str, float] = {}
        self.profile: Profile | None = None
        self.due: list[tuple[float, int, JobRequest]] = []
        self.order = 0

    def arrive(self, job: JobRequest, now: float) -> list[Action]:
        """``job`` arrived at ``now`` (s): reserve for it behind every queued job."""
        if not self._kept(now):
            return super().arrive(job, now)
        self.queue.append(job)
        launches = self._start_due(now)
        launch = self._reserve(job, now)
        if launch is not None:
            self.queue.pop()
            launches.append(launch)
        return self._launched(launches)

    def finish(self, job: str, now: float) -> list[Action]:
        """``job`` ended at ``now`` (s): start the jobs reserved for now, or make the schedule
        again if it ended before its expected end."""
        if self.jobs.end_of(job) > now:
            self.profile = None
        return super().finish(job, now)

    def cancel(self, job: str, now: float) -> list[Action] | None:
        """Take queued ``job`` out and make the schedule again (None if it is not queued)."""
        self.profile = None
        return super().cancel(job, now)

    def _kept(self, now: float) -> bool:
        """Whether the kept profile is the schedule at ``now`` (s): there is one and no
        reservation has passed."""
        return self.profile is not None and (not self.due or self.due[0][0] >= now)

    def _admit(self, now: float) -> list[Action]:
        """Start the jobs reserved for now whose PEs are free, on the kept profile or on the
        schedule made again."""
        if self._kept(now):
            return self._launched(self._start_due(now))
        return self._launched(self._rebuild(now))

    def _start_due(self, now: float) -> list[Launch]:
        """On the kept profile, cut to start at ``now`` (s): start the jobs reserved for now,
        in arrival order, whose PEs are free."""
        assert self.profile is not None
        self.profile.truncate(now)
        due, launches, waiting = self.due, [], []
        while due and due[0][0] == now:
            entry = heappop(due)
            job = entry[2]
            if job.size <= self.jobs.free:
                launches.append(self._start(job, now))
                self.queue.remove(job)
                del self.reservations[job.id]
            else:
                waiting.append(entry)
        for entry in waiting:
            heappush(due, entry)
        return launches

    def _reserve(self, job: JobRequest, now: float) -> Launch | None:
        """Reserve for ``job`` on the kept profile; start it if its reservation is now and its
        PEs are free (the caller then takes it off the queue), else note the reservation."""
        profile = self.profile
        assert profile is not None
        start = profile.earliest(job.size, job.estimate)
        if start < math.inf:
            profile.reserve(start, job.size, job.estimate)
        if start == now and job.size <= self.jobs.free:
            return self._start(job, now)
        self.reservations[job.id] = start
        self.order += 1
        if start < math.inf:
            heappush(self.due, (start, self.order, job))
        return None

    def _rebuild(self, now: float) -> list[Launch]:
        """Reserve for every queued job in arrival order on the running jobs' profile; start
        those whose reservation is now and whose PEs are free."""
        self.profile = self.jobs.profile(now)
        self.reservations, self.due = {}, []
        launches = []
        waiting: deque[JobRequest] = deque()
        for job in self.queue:
            launch = self._reserve(job, now)
            if launch is None:
                waiting.append(job)
            else:
                launches.append(launch)
        self.queue = waiting
        return launches
