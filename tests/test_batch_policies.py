"""The T3D batch policies (easy, conservative, prime) as pure objects, driven by a tiny event
loop in which each started job ends at its start plus its runtime."""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush

import pytest

from testbed.policies import (
    Conservative,
    JobRequest,
    Launch,
    MemoryAdmission,
    Policy,
    PolicyConfig,
    PrimeTime,
    make_policy,
)

BATCH = ("easy", "conservative", "prime")
Observer = Callable[[str, JobRequest | str | None, float, list[str], bool], None]


def _config(pes: int, **settings) -> PolicyConfig:
    return PolicyConfig(pes, allocator="buddy", **settings)


def _drive(policy: Policy, jobs: list[JobRequest],
           runtime: Callable[[JobRequest], float] | None = None,
           observe: Observer | None = None) -> tuple[dict[str, float], dict[str, tuple[int, ...]]]:
    """Run ``jobs`` to the end under ``policy``: each arrives at its arrival time, each started
    job ends at its start plus ``runtime(job)`` (its estimate by default), and the policy is woken
    at ``wake_at()``; at equal times ends go first, then arrivals, then the wake.  After each
    event ``observe(kind, subject, now, started, settled)`` is called, ``settled`` saying whether
    it was the last event at ``now``.  Checks that each job gets as many PEs as it asked for, that
    no PE holds two jobs and that every job runs.  Returns each job's start time and PEs."""
    runtime = runtime or (lambda job: job.estimate)
    by_id = {job.id: job for job in jobs}
    arrivals = deque(sorted(jobs, key=lambda job: job.arrival))
    ends: list[tuple[float, int, str]] = []
    starts: dict[str, float] = {}
    placed: dict[str, tuple[int, ...]] = {}
    owner: dict[int, str] = {}

    def next_time() -> float:
        wake = policy.wake_at()
        return min(ends[0][0] if ends else math.inf,
                   arrivals[0].arrival if arrivals else math.inf,
                   math.inf if wake is None else wake)

    now = next_time()
    for _ in range(100_000):
        if now == math.inf:
            break
        subject: JobRequest | str | None
        if ends and ends[0][0] == now:
            kind, subject = "finish", heappop(ends)[2]
            for pe in placed[subject]:
                del owner[pe]
            actions = policy.finish(subject, now)
        elif arrivals and arrivals[0].arrival == now:
            kind, subject = "arrive", arrivals.popleft()
            actions = policy.arrive(subject, now)
        else:
            kind, subject = "wake", None
            actions = policy.wake(now)
        started = []
        for action in actions:
            if isinstance(action, Launch):
                assert action.running and action.job not in starts
                assert len(action.pes) == by_id[action.job].size
                for pe in action.pes:
                    assert pe not in owner, f"{action.job} and {owner.get(pe)} share PE {pe}"
                    owner[pe] = action.job
                starts[action.job], placed[action.job] = now, action.pes
                started.append(action.job)
                heappush(ends, (now + runtime(by_id[action.job]), len(starts), action.job))
        following = next_time()
        assert following >= now
        if observe is not None:
            observe(kind, subject, now, started, following > now)
        now = following
    assert policy.idle() and len(starts) == len(jobs), "the run did not end"
    return starts, placed


def _workload(rng: random.Random, jobs: int, pes: int, unknown: float = 0.0) -> list[JobRequest]:
    """``jobs`` jobs, mostly small, with whole-second arrivals and estimates (or None with
    probability ``unknown``)."""
    out, now = [], 0.0
    sizes = [1, 1, 1, 2, 2, 3, 4, 5, pes // 2, pes // 2 + 1, pes - 1, pes]
    for i in range(jobs):
        now += rng.choice([0, 0, 1, 2, 3, 8])
        estimate = None if rng.random() < unknown else float(rng.randint(1, 40))
        out.append(JobRequest(f"j{i}", rng.choice(sizes), now, estimate=estimate))
    return out


def _overtaken(jobs: list[JobRequest], starts: dict[str, float]) -> int:
    """How many jobs started before a job that arrived before them."""
    return sum(1 for i, early in enumerate(jobs) for late in jobs[i + 1:]
               if late.arrival > early.arrival and starts[late.id] < starts[early.id])


def _started(actions) -> list[str]:
    return [a.job for a in actions if isinstance(a, Launch)]


def test_registered_and_batch_shaped():
    for name in BATCH:
        policy = make_policy(name, _config(8, mpl=4))
        assert policy.name == name and policy.matrix.mpl == 1 and policy.timeslice is None


@pytest.mark.parametrize("name", BATCH)
def test_memory_admission_is_refused(name):
    memory = MemoryAdmission((100.0,), 1.0, node_of_pe=(0, 0))
    with pytest.raises(ValueError, match=f"{name} scheduler does not support memory admission"):
        make_policy(name, _config(2, memory=memory))


@pytest.mark.parametrize("name", BATCH)
def test_jobs_get_the_lowest_free_pes_whatever_the_allocator(name):
    policy = make_policy(name, _config(8, prime=PrimeTime(starts_prime=False)))
    assert policy.config.allocator == "first-fit"
    for job in "abc":
        policy.arrive(JobRequest(job, 2, 0, estimate=10), 0)
    policy.finish("a", 1)
    policy.arrive(JobRequest("d", 3, 1, estimate=10), 1)
    assert policy.matrix.placed["d"] == (0, (0, 1, 6))


def test_easy_backfills_by_hand():
    policy = make_policy("easy", _config(10))
    assert _started(policy.arrive(JobRequest("A", 6, 0, estimate=10), 0)) == ["A"]
    assert _started(policy.arrive(JobRequest("B", 8, 1, estimate=5), 1)) == []
    assert policy.reservation == ("B", 10.0) and policy.extra == 2
    # C fits now but would still hold 4 PEs at 10, when B needs 8 of the 10.
    assert _started(policy.arrive(JobRequest("C", 4, 2, estimate=20), 2)) == []
    # D ends at 8, before the shadow time.
    assert _started(policy.arrive(JobRequest("D", 2, 3, estimate=5), 3)) == ["D"]
    # E runs past 10 but only on the 2 extra PEs, which it uses up.
    assert _started(policy.arrive(JobRequest("E", 2, 4, estimate=100), 4)) == ["E"]
    assert policy.extra == 0
    assert _started(policy.arrive(JobRequest("F", 1, 5, estimate=1), 5)) == []
    assert _started(policy.finish("D", 8)) == ["F"]
    assert _started(policy.finish("F", 9)) == []
    assert _started(policy.finish("A", 10)) == ["B"]
    assert policy.matrix.placed["B"] == (0, tuple(range(8)))
    assert policy.reservation == ("C", 15.0) and policy.extra == 4


def test_easy_never_delays_the_head():
    """With exact estimates a job starts no later than its reservation as the queue head."""
    overtaken = kept = 0
    for seed in range(200):
        rng = random.Random(seed)
        jobs = _workload(rng, 60, 16)
        policy = make_policy("easy", _config(16))
        promised: dict[str, float] = {}

        def note(kind, subject, now, started, settled, policy=policy, promised=promised):
            if settled and policy.reservation is not None:
                promised.setdefault(*policy.reservation)

        starts, _ = _drive(policy, jobs, observe=note)
        for job, at in promised.items():
            assert starts[job] <= at, f"seed {seed}: {job} promised {at}, started {starts[job]}"
            kept += starts[job] == at
        overtaken += _overtaken(jobs, starts)
    assert kept > 1000 and overtaken > 1000


def test_easy_jobs_without_an_estimate_are_heads_but_never_backfill():
    policy = make_policy("easy", _config(4))
    policy.arrive(JobRequest("A", 2, 0, estimate=10), 0)
    policy.arrive(JobRequest("B", 4, 0, estimate=5), 0)
    assert policy.reservation == ("B", 10.0) and policy.extra == 0
    assert _started(policy.arrive(JobRequest("U", 2, 1), 1)) == []
    assert _started(policy.finish("A", 10)) == ["B"]
    assert _started(policy.finish("B", 15)) == ["U"]
    # U may run for ever: the next head's shadow time is never, so any estimated job fits.
    assert _started(policy.arrive(JobRequest("H", 4, 16, estimate=1), 16)) == []
    assert policy.reservation == ("H", math.inf)
    assert _started(policy.arrive(JobRequest("S", 2, 17, estimate=1000), 17)) == ["S"]


def test_easy_overrun_job_keeps_its_pes_claimed():
    policy = make_policy("easy", _config(4))
    policy.arrive(JobRequest("A", 3, 0, estimate=10), 0)
    policy.arrive(JobRequest("B", 4, 1, estimate=10), 1)
    assert policy.reservation == ("B", 10.0)
    # At 20 A has outlived its estimate: it is expected to end now and B waits for its PEs.
    assert _started(policy.arrive(JobRequest("D", 1, 20, estimate=5), 20)) == []
    assert policy.reservation == ("B", 20.0)
    assert _started(policy.arrive(JobRequest("E", 1, 21, estimate=0), 21)) == ["E"]
    assert policy.reservation == ("B", 21.0)
    assert _started(policy.finish("E", 21)) == []
    assert _started(policy.finish("A", 22)) == ["B"]


class _ReferenceEasy:
    """EASY the slow way: every event scans the whole queue and every running job again."""

    def __init__(self, pes: int) -> None:
        self.free = pes
        self.queue: list[JobRequest] = []
        self.running: dict[str, tuple[float, float | None, int]] = {}

    def event(self, now: float, arrived: JobRequest | None, finished: str | None) -> list[str]:
        if arrived is not None:
            self.queue.append(arrived)
        if finished is not None:
            self.free += self.running.pop(finished)[2]
        started = []

        def start(job: JobRequest) -> None:
            self.running[job.id] = (now, job.estimate, job.size)
            self.free -= job.size
            self.queue.remove(job)
            started.append(job.id)

        while self.queue and self.queue[0].size <= self.free:
            start(self.queue[0])
        if not self.queue:
            return started
        head = self.queue[0]
        ends = sorted((math.inf if est is None else max(begin + est, now), size)
                      for begin, est, size in self.running.values())
        shadow, free = math.inf, self.free
        for k, (end, size) in enumerate(ends):
            if end == math.inf:
                break
            free += size
            if free >= head.size and (k + 1 == len(ends) or ends[k + 1][0] > end):
                shadow = end
                break
        extra = free - head.size
        for job in self.queue[1:]:
            if job.estimate is None or job.size > self.free:
                continue
            if now + job.estimate <= shadow:
                start(job)
            elif job.size <= extra:
                extra -= job.size
                start(job)
        return started


def test_easy_matches_a_full_rescan_with_overruns_and_unknown_estimates():
    """Easy tries only an arriving job when nothing else can have changed; a full rescan on
    every event must start the same jobs, also when jobs outlive their estimates."""
    overtaken = 0
    for seed in range(200):
        rng = random.Random(seed)
        jobs = _workload(rng, 60, 16, unknown=0.1)
        runtime = {job.id: (job.estimate or 30.0) * rng.choice([0.5, 1.0, 1.0, 2.0, 3.0])
                   for job in jobs}
        policy = make_policy("easy", _config(16))
        reference = _ReferenceEasy(16)

        def compare(kind, subject, now, started, settled, reference=reference, seed=seed):
            expected = reference.event(now, subject if kind == "arrive" else None,
                                       subject if kind == "finish" else None)
            assert started == expected, f"seed {seed} at {now} ({kind} {subject})"

        starts, _ = _drive(policy, jobs, lambda job, runtime=runtime: runtime[job.id], compare)
        overtaken += _overtaken(jobs, starts)
    assert overtaken > 1000


def test_conservative_by_hand_protects_every_queued_job():
    jobs = [JobRequest("A", 6, 0, estimate=10), JobRequest("B", 8, 1, estimate=5),
            JobRequest("C", 9, 2, estimate=10), JobRequest("D", 2, 3, estimate=100)]
    easy = make_policy("easy", _config(10))
    conservative = make_policy("conservative", _config(10))
    for job in jobs:
        easy.arrive(job, job.arrival)
        conservative.arrive(job, job.arrival)
    # EASY lends the head's 2 extra PEs to D, which then holds them when C needs 9 of 10.
    assert "D" in easy.matrix.placed
    assert "D" not in conservative.matrix.placed
    assert conservative.reservations == {"B": 10.0, "C": 15.0, "D": 25.0}
    assert _started(conservative.arrive(JobRequest("E", 4, 4, estimate=6), 4)) == ["E"]
    assert conservative.reservations == {"B": 10.0, "C": 15.0, "D": 25.0}


def test_conservative_never_delays_a_reservation_with_exact_estimates():
    overtaken = 0
    for seed in range(100):
        rng = random.Random(seed)
        jobs = _workload(rng, 50, 16)
        policy = make_policy("conservative", _config(16))
        promised: dict[str, float] = {}

        def note(kind, subject, now, started, settled, policy=policy, promised=promised):
            for job in started:
                assert now <= promised.get(job, now)
            if not settled:
                return
            for job, at in policy.reservations.items():
                assert at <= promised.get(job, at), f"{job} put back from {promised[job]}"
                promised[job] = at

        starts, _ = _drive(policy, jobs, observe=note)
        overtaken += _overtaken(jobs, starts)
    assert overtaken > 500


def test_conservative_reservations_ignore_later_arrivals_even_when_jobs_end_early():
    for seed in range(100):
        rng = random.Random(seed)
        jobs = _workload(rng, 50, 16)
        early = {job.id: job.estimate * rng.uniform(0.2, 1.0) for job in jobs}
        policy = make_policy("conservative", _config(16))
        before: dict[str, float] = {}

        def note(kind, subject, now, started, settled, policy=policy, before=before):
            if kind == "arrive":
                after = {job: at for job, at in policy.reservations.items() if job != subject.id}
                assert after == {job: at for job, at in before.items() if job not in started}
            before.clear()
            before.update(policy.reservations)

        _drive(policy, jobs, lambda job, early=early: early[job.id], note)


def test_conservative_overrun_job_keeps_its_pes_claimed():
    policy = make_policy("conservative", _config(4))
    policy.arrive(JobRequest("A", 3, 0, estimate=10), 0)
    policy.arrive(JobRequest("B", 4, 1, estimate=10), 1)
    assert policy.reservations == {"B": 10.0}
    assert _started(policy.arrive(JobRequest("D", 1, 20, estimate=5), 20)) == []
    assert policy.reservations == {"B": 20.0, "D": 30.0}
    assert _started(policy.finish("A", 22)) == ["B"]
    assert policy.reservations == {"D": 32.0}


@pytest.mark.parametrize("name", BATCH)
def test_overruns_and_unknown_estimates_never_double_book(name):
    for seed in range(50):
        rng = random.Random(seed)
        jobs = _workload(rng, 50, 16, unknown=0.2)
        runtime = {job.id: (job.estimate or 30.0) * rng.choice([0.0, 0.5, 1.0, 1.0, 2.0, 5.0])
                   for job in jobs}
        policy = _prime(shift_s=50.0) if name == "prime" else make_policy(name, _config(16))

        def check(kind, subject, now, started, settled, policy=policy):
            busy = sum(len(pes) for _, pes in policy.matrix.placed.values())
            assert policy.jobs.free == 16 - busy

        _drive(policy, jobs, lambda job, runtime=runtime: runtime[job.id], check)


def _prime(pes: int = 16, **rules) -> Policy:
    settings = {"shift_s": 100.0, "large_limit_s": 10.0, "small_limit_s": 50.0, **rules}
    return make_policy("prime", _config(pes, prime=PrimeTime(**settings)))


def test_prime_time_limits():
    policy = _prime()
    assert (policy.large_pes, policy.free_pes) == (4, 4)
    jobs = [JobRequest("L", 8, 0, estimate=30),   # large and long: waits for non-prime time
            JobRequest("S", 4, 0, estimate=40),   # small, 12 PEs stay free
            JobRequest("L2", 8, 0, estimate=10),  # large but short
            JobRequest("T", 2, 1, estimate=40),   # small, but only 2 PEs would stay free
            JobRequest("U", 2, 2, estimate=10)]   # small and short: runs anyway
    wakes = set()

    def note(kind, subject, now, started, settled):
        wakes.add((bool(policy.queue), policy.wake_at()))

    starts, _ = _drive(policy, jobs, observe=note)
    assert starts == {"S": 0, "L2": 0, "T": 10, "U": 2, "L": 100}
    assert wakes == {(True, 100.0), (False, None)}


def test_prime_allowed_jobs_start_in_arrival_order_while_they_fit():
    policy = _prime()
    jobs = [JobRequest("R", 8, 0, estimate=10), JobRequest("B", 12, 0, estimate=5),
            JobRequest("C", 1, 0, estimate=5), JobRequest("N", 1, 0)]
    starts, _ = _drive(policy, jobs, lambda job: job.estimate or 1.0)
    assert starts == {"R": 0, "B": 10, "C": 10, "N": 100}


def test_prime_shifts_alternate():
    policy = _prime(starts_prime=False)
    assert [policy.is_prime(t) for t in (0, 99.9, 100, 199, 200, 300)] == [
        False, False, True, True, False, True]
    starts, _ = _drive(policy, [JobRequest("L", 16, 0, estimate=1000),
                                JobRequest("L2", 16, 150, estimate=1000)])
    assert starts == {"L": 0, "L2": 1000}


def test_prime_wakes_at_the_next_boundary_whatever_the_rounding():
    policy = _prime(shift_s=0.1)
    policy.arrive(JobRequest("forever", 16, 0), 0)
    policy.arrive(JobRequest("waiting", 16, 0), 0)
    for k in range(1, 1000):
        assert policy.shift(math.nextafter(k * 0.1, 0)) == k - 1 and policy.shift(k * 0.1) == k
        policy.wake(k * 0.1)
        boundary = policy.wake_at()
        assert k * 0.1 < boundary <= (k + 1) * 0.1 + 1e-9
        assert policy.is_prime(boundary) != policy.is_prime(k * 0.1)


@pytest.mark.parametrize("name", BATCH)
def test_decisions_are_deterministic_and_ignore_job_names(name):
    rng = random.Random(7)
    jobs = _workload(rng, 80, 16, unknown=0.1)
    runtime = {job.id: (job.estimate or 30.0) * rng.choice([0.5, 1.0, 2.0]) for job in jobs}
    renamed = [JobRequest(f"z{999 - int(job.id[1:])}", job.size, job.arrival,
                          estimate=job.estimate) for job in jobs]
    back = {new.id: old.id for old, new in zip(jobs, renamed, strict=True)}
    runs = []
    for workload in (jobs, jobs, renamed):
        policy = _prime(shift_s=50.0) if name == "prime" else make_policy(name, _config(16))
        starts, placed = _drive(policy, workload,
                                lambda job: runtime[back.get(job.id, job.id)])
        runs.append(({back.get(j, j): t for j, t in starts.items()},
                     {back.get(j, j): p for j, p in placed.items()}))
    assert runs[0] == runs[1] == runs[2]
    assert _overtaken(jobs, runs[0][0]) > 0


class _Rebuilt(Conservative):
    """Conservative backfilling that makes its schedule from scratch at every event."""

    def _kept(self, now: float) -> bool:
        return False


class _Counted(Conservative):
    """Conservative backfilling that counts the times it makes its schedule from scratch."""

    rebuilds = 0

    def _rebuild(self, now: float) -> list[Launch]:
        self.rebuilds += 1
        return super()._rebuild(now)


def _launched(actions) -> list[tuple[str, tuple[int, ...]]]:
    return [(a.job, a.pes) for a in actions if isinstance(a, Launch)]


@pytest.mark.parametrize("seed", range(40))
def test_conservative_kept_profile_decides_as_a_rebuilt_one(seed):
    """The kept profile gives the same starts (PEs included) and reservations as the schedule
    made from scratch at every event, over random jobs that end early, at their estimates or
    late, at times shared by several events, some without estimates, some cancelled."""
    rng = random.Random(seed)
    pes = 16
    kept, rebuilt = _Counted(_config(pes)), _Rebuilt(_config(pes))
    jobs = _workload(rng, 60, pes, unknown=0.1)
    runtime = {job.id: (job.estimate or 30.0) * rng.choice([0.25, 0.5, 1.0, 1.0, 1.0, 1.0, 2.0])
               for job in jobs}
    arrivals = deque(jobs)
    ends: list[tuple[float, int, str]] = []
    queued: list[str] = []
    now, seq, events = 0.0, 0, 0
    while arrivals or ends or queued:
        now = min(ends[0][0] if ends else math.inf,
                  arrivals[0].arrival if arrivals else math.inf)
        if ends and ends[0][0] == now:
            job = heappop(ends)[2]
            got, want = kept.finish(job, now), rebuilt.finish(job, now)
        elif arrivals:
            job = arrivals.popleft()
            queued.append(job.id)
            got, want = kept.arrive(job, now), rebuilt.arrive(job, now)
        else:
            break
        if queued and rng.random() < 0.05:
            victim = rng.choice([j for j in queued if j in kept.reservations] or [""])
            got += kept.cancel(victim, now) or []
            want += rebuilt.cancel(victim, now) or []
            queued = [j for j in queued if j != victim]
        events += 1
        assert _launched(got) == _launched(want), f"t={now}"
        assert kept.reservations == rebuilt.reservations, f"t={now}"
        for name, _ in _launched(got):
            queued.remove(name)
            seq += 1
            heappush(ends, (now + runtime[name], seq, name))
    assert kept.idle() and rebuilt.idle()
    assert 0 < kept.rebuilds < events
