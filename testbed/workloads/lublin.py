"""The Lublin-Feitelson workload model (J. Parallel Distrib. Comput. 63(11), 2003).

Two job types, batch and interactive, each with its own parameters (the published defaults,
fitted for a 128-node machine):

* size: serial with probability ``serial``; otherwise log2(size) is drawn from a two-stage
  uniform (``[low, med]`` with probability ``uprob``, else ``[med, hi]``), rounded to an
  integer (a power of two) with probability ``pow2 / (1 - serial)`` of the parallel jobs, and
  the size is round(2^that), at most the machine;
* runtime: ln(runtime) is hyper-gamma: gamma(a1, b1) with probability p = pa * size + pb
  (clamped to [0, 1]), else gamma(a2, b2); draws above ln(runtime) = 12 are redrawn;
* arrivals: each type's ln(inter-arrival time) at rush hour is gamma(aarr * arar, barr) (above
  13 redrawn); the day is 48 half-hour buckets whose share of arrivals follows the
  gamma(anum, bnum) density (the model's day starts at bucket 11), and an inter-arrival time is
  "paid" bucket by bucket with each bucket's weight, so that quiet hours stretch the gaps;
* the two types' arrival streams are merged in time order.

For a machine of P PEs the log2-size bounds are shifted by log2(P) - 7.  ``load`` scales all
inter-arrival gaps so that the offered load equals it, by one of two rules: ``work``,
sum(size * runtime) / (P * span), the machine's share of work offered; or ``means``,
mean(runtime) * mean(size) / (mean(inter-arrival) * P), MEMORY §4.3's definition.  The model's
sizes and runtimes are correlated (larger jobs run longer), so the ``means`` rule offers
more work than its number says: the ``work`` load of a draw at ``means`` load 1 was 1.06 to
1.54 over seeds 1 to 10 of 1,000 jobs for 16 PEs.  Everything is drawn from one
``numpy.random.Generator`` seeded by ``seed``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

from testbed.workloads.mix import job_line

BUCKETS = 48
BUCKET_SECONDS = 1800.0
DAY_START_BUCKET = 11
MAX_LOG_RUNTIME = 12.0
MAX_LOG_GAP = 13.0
MODEL_LOG2_SIZE = 7.0


@dataclass(frozen=True)
class TypeParams:
    """One job type's parameters (sizes as log2 for a 128-node machine)."""

    name: str
    serial: float
    pow2: float
    low: float
    med: float
    hi: float
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float


BATCH = TypeParams("batch", 0.2927, 0.6686, 1.2, 5.0, 7.0, 0.875, 6.57, 0.823, 639.1, 0.0156,
                   -0.003, 0.6986, 6.0415, 0.8531, 6.1271, 5.2740, 1.0519)
INTERACTIVE = TypeParams("interactive", 0.1541, 0.625, 1.0, 3.0, 5.5, 0.705, 3.8351, 0.6605,
                         7.073, 0.6856, -0.0118, 0.9156, 6.5510, 0.6621, 8.9186, 3.6680, 0.9797)


@dataclass(frozen=True)
class LublinJob:
    """A generated job: arrival and runtime in seconds (uncompressed), size in PEs."""

    arrival: float
    size: int
    runtime: float
    kind: str


def _gamma_cdf(x: float, shape: float, scale: float) -> float:
    """The gamma(shape, scale) CDF, by Simpson's rule on the density (x >= 0)."""
    if x <= 0:
        return 0.0
    steps = 400
    h = x / steps
    log_norm = math.lgamma(shape) + shape * math.log(scale)

    def pdf(t: float) -> float:
        return 0.0 if t <= 0 else math.exp((shape - 1) * math.log(t) - t / scale - log_norm)

    total = pdf(0) + pdf(x) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, steps))
    return total * h / 3


def day_weights(p: TypeParams) -> np.ndarray:
    """Each half-hour bucket's share of arrivals, normalised to a mean of 1."""
    weights = np.zeros(BUCKETS)
    for i in range(DAY_START_BUCKET, BUCKETS + DAY_START_BUCKET):
        weights[(i - 1) % BUCKETS] = (_gamma_cdf(i + 0.5, p.anum, p.bnum)
                                      - _gamma_cdf(i - 0.5, p.anum, p.bnum))
    return weights / weights.mean()


class _Arrivals:
    """One type's arrival stream, with the daily cycle or (``daily_cycle`` False) without:
    every hour then weighs the same, so the gaps are the rush-hour draws as they are."""

    def __init__(self, p: TypeParams, rng: np.random.Generator, daily_cycle: bool) -> None:
        self.p, self.rng = p, rng
        self.weights = day_weights(p) if daily_cycle else np.ones(BUCKETS)
        self.bucket, self.points, self.remainder, self.time = 0, 0.0, 0.0, 0.0
        self.advance()

    def advance(self) -> None:
        gap = MAX_LOG_GAP + 1
        while gap > MAX_LOG_GAP:
            gap = self.rng.gamma(self.p.aarr * self.p.arar, self.p.barr)
        self.points += math.exp(gap) / BUCKET_SECONDS
        elapsed = 0.0
        while self.points > self.weights[self.bucket]:
            self.points -= self.weights[self.bucket]
            self.bucket = (self.bucket + 1) % BUCKETS
            elapsed += BUCKET_SECONDS
        remainder = self.points / self.weights[self.bucket]
        elapsed += BUCKET_SECONDS * (remainder - self.remainder)
        self.remainder = remainder
        self.time += elapsed


def _scaled(p: TypeParams, pes: int) -> tuple[float, float, float]:
    shift = math.log2(pes) - MODEL_LOG2_SIZE
    hi = max(min(p.hi + shift, math.log2(pes)), 0.0)
    low = min(p.low, hi)
    med = min(max(p.med + shift, low), hi)
    return low, med, hi


def _size(p: TypeParams, pes: int, rng: np.random.Generator) -> int:
    u = rng.random()
    if u <= p.serial or pes == 1:
        return 1
    low, med, hi = _scaled(p, pes)
    a, b = (low, med) if rng.random() <= p.uprob else (med, hi)
    log_size = a + (b - a) * rng.random()
    if u <= p.serial + p.pow2:
        log_size = round(log_size)
    return max(1, min(pes, round(2**log_size)))


def _runtime(p: TypeParams, size: int, rng: np.random.Generator) -> float:
    mix = min(1.0, max(0.0, p.pa * size + p.pb))
    log_runtime = MAX_LOG_RUNTIME + 1
    while log_runtime > MAX_LOG_RUNTIME:
        shape, scale = (p.a1, p.b1) if rng.random() <= mix else (p.a2, p.b2)
        log_runtime = rng.gamma(shape, scale)
    return math.exp(log_runtime)


LOAD_RULES = ("work", "means")


def offered_load(jobs: list[LublinJob], pes: int, rule: str = "work") -> float:
    """The load ``jobs`` offer a machine of ``pes`` PEs by ``rule`` (see the module's
    docstring); 0 when all arrive at once."""
    span = jobs[-1].arrival - jobs[0].arrival
    if span <= 0:
        return 0.0
    if rule == "work":
        return float(sum(j.size * j.runtime for j in jobs) / (pes * span))
    if rule == "means":
        n = len(jobs)
        mean_size = sum(j.size for j in jobs) / n
        mean_runtime = sum(j.runtime for j in jobs) / n
        return float(mean_runtime * mean_size / (span / (n - 1) * pes))
    raise ValueError(f"not a load rule: {rule!r} (one of {', '.join(LOAD_RULES)})")


def generate(jobs: int, pes: int, seed: int, load: float | None = None,
             kinds: tuple[TypeParams, ...] = (BATCH, INTERACTIVE),
             daily_cycle: bool = True, load_rule: str = "work") -> list[LublinJob]:
    """``jobs`` jobs for a machine of ``pes`` PEs, arrivals starting at 0 (seconds), scaled to
    offer ``load`` by ``load_rule`` (see the module's docstring); without ``daily_cycle`` the
    arrival rate is the same at every hour (T3D §3.2's stream)."""
    if jobs < 1 or pes < 1:
        raise ValueError("--jobs and --pes must be >= 1")
    if load is not None and load <= 0:
        raise ValueError("--load must be > 0")
    if load_rule not in LOAD_RULES:
        raise ValueError(f"not a load rule: {load_rule!r} (one of {', '.join(LOAD_RULES)})")
    rng = np.random.default_rng(seed)
    streams = [_Arrivals(p, rng, daily_cycle) for p in kinds]
    out = []
    for _ in range(jobs):
        stream = min(streams, key=lambda s: s.time)
        size = _size(stream.p, pes, rng)
        out.append(LublinJob(stream.time, size, _runtime(stream.p, size, rng), stream.p.name))
        stream.advance()
    first = out[0].arrival
    factor = 1.0
    offered = offered_load(out, pes, load_rule)
    if load is not None and offered > 0:
        factor = offered / load
    return [LublinJob((j.arrival - first) * factor, j.size, j.runtime, j.kind) for j in out]


def workload_text(jobs: list[LublinJob], pes: int, seed: int, load: float | None,
                  compress: float, daily_cycle: bool = True) -> str:
    """The workload file of ``jobs`` as benchmark jobs (times divided by ``compress``; each
    job's THESIS §4.6 parameters drawn from a PRNG seeded with ``seed``)."""
    rng = random.Random(seed)
    lines = [f"# testbed: generator=lublin jobs={len(jobs)} pes={pes} load={load} "
             f"seed={seed} compress={compress:g} "
             f"daily_cycle={'on' if daily_cycle else 'off'}", "# arrival pes command..."]
    lines += [job_line(rng, j.arrival / compress, j.size, j.runtime / compress,
                       extra=f"id={i}") for i, j in enumerate(jobs, start=1)]
    return "\n".join(lines) + "\n"
