"""Backfilling on PE counts (T3D §3.1, "Backfill", after the Argonne SP1 scheduler, EASY).

Everything here counts PEs, as variable partitioning on the SP2 does: a job may take any free
PEs, so whether it fits depends only on how many are free; which PEs it gets is decided by the
policy that starts it.  ``Running`` keeps the running jobs by expected end and answers EASY's
question (when will the queue's head fit, and how many PEs are spare then); ``Profile`` is the
free-PE availability profile over time that conservative backfilling reserves on.

Times are seconds since the start of the run.  A running job is expected to end at its start plus
its runtime estimate, and never (``math.inf``) without one.  A job whose expected end is now or
past is expected to end now: its end is due at this very moment but not reported yet, or it has
outlived its estimate (``overrun`` ``run``, or a kill not reported yet).  Its PEs count as free
from now on when planning (the shadow time, the profile), so the jobs waiting for them keep their
claim, with a reservation at ``now``; but a job starts only on PEs that are free already
(``Running.free``), so such a reservation is kept until the end is reported.  No time is moved by
an epsilon, so a plan made before an end is reported is the plan made after it.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator
from operator import itemgetter

_END = itemgetter(0)


def expected_end(start: float, estimate: float | None) -> float:
    """When (s) a job started at ``start`` (s) with runtime ``estimate`` (s; None: unknown) is
    expected to end: never (``math.inf``) without an estimate."""
    return math.inf if estimate is None else start + estimate


class Running:
    """The running jobs' PE counts and expected ends (s), sorted by end, and the free PEs of a
    machine of ``pes`` PEs."""

    def __init__(self, pes: int) -> None:
        self.free = pes
        self._ends: list[tuple[float, str, int]] = []
        self._end_of: dict[str, float] = {}

    def start(self, job: str, size: int, start: float, estimate: float | None) -> None:
        """``job`` started at ``start`` (s) on ``size`` PEs with runtime ``estimate`` (s)."""
        end = expected_end(start, estimate)
        insort(self._ends, (end, job, size))
        self._end_of[job] = end
        self.free -= size

    def end_of(self, job: str) -> float:
        """When (s) running ``job`` is expected to end (``math.inf``: never)."""
        return self._end_of[job]

    def finish(self, job: str) -> None:
        """``job`` ended: its PEs are free."""
        at = bisect_left(self._ends, (self._end_of.pop(job), job))
        self.free += self._ends.pop(at)[2]

    def overran(self, since: float, now: float) -> bool:
        """Whether the expected end of a running job lies in (``since``, ``now``] (s): whether a
        job has reached its estimate since ``since`` and so is now expected to end now."""
        at = bisect_right(self._ends, since, key=_END)
        return at < len(self._ends) and self._ends[at][0] <= now

    def releases(self, now: float) -> Iterator[tuple[float, int]]:
        """``(time, PEs)``: when (s, ``now`` or later) the running jobs free how many PEs,
        earliest first, one pair per job that is expected to end."""
        for end, _, size in self._ends:
            if end == math.inf:
                return
            yield max(end, now), size

    def profile(self, now: float) -> Profile:
        """The free PEs from ``now`` (s) on, if the running jobs end when expected."""
        return Profile(now, self.free, self.releases(now))

    def shadow(self, size: int, now: float) -> tuple[float, int]:
        """EASY's reservation for a job of ``size`` PEs, if no other job starts: the shadow time,
        the earliest time (s, ``now`` or later) at which ``size`` PEs are free, and the extra PEs,
        how many more than ``size`` are free then.  The time is ``now`` if ``size`` PEs are free
        once the ends due now are reported, and ``math.inf`` if the jobs with an estimate never
        free enough PEs (then the extra PEs are negative)."""
        free = self.free
        if free >= size:
            return now, free - size
        at = math.inf
        for end, _, pes in self._ends:
            if end == math.inf or end > at:
                break
            free += pes
            if free >= size and at == math.inf:
                at = max(end, now)
        return at, free - size


class Profile:
    """Free PEs over time, from ``now`` (s) on: ``free[i]`` PEs are free from ``times[i]`` until
    ``times[i + 1]`` (the last step lasts forever).  Built from the PEs free now and the
    ``releases`` (``(time, PEs)``, times ``now`` or later, in order) of the running jobs; jobs
    are then added to it by ``reserve``."""

    def __init__(self, now: float, free: int, releases: Iterable[tuple[float, int]]) -> None:
        self.times = [now]
        self.free = [free]
        for time, pes in releases:
            if time == self.times[-1]:
                self.free[-1] += pes
            else:
                self.times.append(time)
                self.free.append(self.free[-1] + pes)

    def earliest(self, size: int, estimate: float | None) -> float:
        """The earliest time (s) from which ``size`` PEs stay free for a job's runtime
        ``estimate`` (s; None: for ever); ``math.inf`` if there is none."""
        times, free = self.times, self.free
        steps = len(times)
        i = 0
        while i < steps:
            if free[i] < size:
                i += 1
                continue
            end = expected_end(times[i], estimate)
            j = i + 1
            while j < steps and times[j] < end and free[j] >= size:
                j += 1
            if j == steps or times[j] >= end:
                return times[i]
            i = j + 1
        return math.inf

    def reserve(self, start: float, size: int, estimate: float | None) -> None:
        """Take ``size`` PEs from ``start`` (s, a time ``earliest`` gave for them) for a job's
        runtime ``estimate`` (s; None: for ever)."""
        end = expected_end(start, estimate)
        first = self._step_at(start)
        last = self._step_at(end) if end < math.inf else len(self.times)
        for step in range(first, last):
            self.free[step] -= size

    def truncate(self, now: float) -> None:
        """Drop what lies before ``now`` (s, no earlier than the first step's time): the
        profile then starts at ``now`` with the PEs free then."""
        times = self.times
        if times[0] == now:
            return
        at = bisect_right(times, now) - 1
        if at:
            del times[:at]
            del self.free[:at]
        times[0] = now

    def _step_at(self, time: float) -> int:
        """The index of the step that starts at ``time`` (s), splitting the one holding it."""
        at = bisect_right(self.times, time) - 1
        if self.times[at] != time:
            at += 1
            self.times.insert(at, time)
            self.free.insert(at, self.free[at - 1])
        return at
