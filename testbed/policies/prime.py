"""Prime/non-prime time (T3D §3.1, "Prime", after NASA Ames' SP2; settings in ``PrimeTime``).

Variable partitioning, MPL 1.  Prime and non-prime shifts alternate every ``shift_s`` seconds from
t = 0.  During prime time a job on more than ``large_pes`` PEs may start only if its estimate is
at most ``large_limit_s``; a smaller one may start if its estimate is at most ``small_limit_s`` and
at least ``free_pes`` PEs stay free after it starts, and otherwise only if its estimate is at most
``large_limit_s``.  Non-prime time has no restriction.  A job without an estimate counts as
longer than any limit.

The queue is scanned in arrival order.  A job the prime-time rules do not allow now is passed
over (large jobs are "delayed to non-prime time" while the others proceed); the allowed ones start
in arrival order while they fit, and the first allowed one that does not fit stops the scan, as
under FCFS.  While jobs wait the policy asks to be woken at the next shift boundary, when the
rules change.
"""

from __future__ import annotations

import math
from collections import deque
from itertools import islice

from testbed.policies.base import Action, JobRequest
from testbed.policies.batch import BatchPolicy
from testbed.policies.config import PolicyConfig


class Prime(BatchPolicy):
    """FCFS with prime-time limits on the runtime of large jobs and of jobs that leave few PEs
    free."""

    name = "prime"

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self.rules = config.prime
        if self.rules.shift_s <= 0:
            raise ValueError(f"prime shift_s must be > 0, got {self.rules.shift_s}")
        quarter = config.pes // 4
        self.large_pes = quarter if self.rules.large_pes is None else self.rules.large_pes
        self.free_pes = quarter if self.rules.free_pes is None else self.rules.free_pes
        self.now = 0.0

    def shift(self, now: float) -> int:
        """The number of the shift that ``now`` (s) falls in, counting from 0 at t = 0."""
        shift_s = self.rules.shift_s
        number = math.floor(now / shift_s)
        if number * shift_s > now:
            number -= 1
        elif (number + 1) * shift_s <= now:
            number += 1
        return number

    def is_prime(self, now: float) -> bool:
        """Whether ``now`` (s) is prime time."""
        return (self.shift(now) % 2 == 0) == self.rules.starts_prime

    def allowed(self, job: JobRequest, free: int, now: float) -> bool:
        """Whether the rules let ``job`` start at ``now`` (s) with ``free`` PEs free (whether it
        fits is not checked)."""
        if not self.is_prime(now):
            return True
        estimate = math.inf if job.estimate is None else job.estimate
        if estimate <= self.rules.large_limit_s:
            return True
        small = job.size <= self.large_pes
        return (small and estimate <= self.rules.small_limit_s
                and free - job.size >= self.free_pes)

    def wake_at(self) -> float | None:
        """The next shift boundary (s) after the last event while jobs wait; None otherwise."""
        if not self.queue:
            return None
        return (self.shift(self.now) + 1) * self.rules.shift_s

    def _admit(self, now: float) -> list[Action]:
        """Start the allowed jobs in arrival order until one of them does not fit."""
        self.now = now
        launches = []
        waiting: deque[JobRequest] = deque()
        for at, job in enumerate(self.queue):
            if not self.allowed(job, self.jobs.free, now):
                waiting.append(job)
            elif job.size <= self.jobs.free:
                launches.append(self._start(job, now))
            else:
                waiting.extend(islice(self.queue, at, None))
                break
        self.queue = waiting
        return self._launched(launches)
