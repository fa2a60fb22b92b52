"""The THESIS §4.6 job mix, with a simple documented size/work/arrival model.

* size: 2^k PEs, k uniform over 0..floor(log2 P);
* work: log-uniform between ``work_min`` and ``work_max`` seconds (before compression);
* arrivals: a Poisson process whose rate gives the offered load L =
  sum(size * work) / (P * span), the first job arriving at 0;
* granularity G uniform over {0.1, 0.5, 2.5} of the timeslice, variance V uniform over
  {0, 10 %, 75 %}, pattern none / nn / aa with probability 10 / 45 / 45 %;
* times (arrival and work) are divided by the compression factor F (THESIS used 100).

Only ``random.Random.random`` draws are used, so a seed gives the same file byte for byte on
every Python version.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

GRANULARITIES = (0.1, 0.5, 2.5)
VARIANCES = (0.0, 0.1, 0.75)
PATTERNS = (("none", 0.10), ("nn", 0.45), ("aa", 0.45))


@dataclass(frozen=True)
class MixParams:
    """Parameters of a mix; times in seconds before compression."""

    jobs: int
    pes: int
    load: float
    seed: int
    compress: float = 100.0
    work_min: float = 10.0
    work_max: float = 14400.0
    io_blocks: int = 0

    def check(self) -> None:
        """Raise ``ValueError`` with a user-facing message for impossible parameters."""
        if self.jobs < 1 or self.pes < 1:
            raise ValueError("--jobs and --pes must be >= 1")
        if self.load <= 0 or self.compress <= 0:
            raise ValueError("--load and --compress must be > 0")
        if not 0 < self.work_min <= self.work_max:
            raise ValueError("need 0 < --work-min <= --work-max")
        if self.io_blocks < 0:
            raise ValueError("--io-blocks must be >= 0")


@dataclass(frozen=True)
class BspParams:
    """A benchmark job's THESIS §4.6 parameters and its PRNG seed."""

    granularity: float
    variance: float
    pattern: str
    seed: int

    @classmethod
    def draw(cls, rng: random.Random) -> BspParams:
        """Granularity, variance and pattern drawn as in THESIS §4.6, then a seed."""
        return cls(_pick(rng, GRANULARITIES), _pick(rng, VARIANCES), _pattern(rng),
                   int(rng.random() * 2**31))

    def line(self, arrival: float, pes: int, work: float, io_blocks: int = 0,
             extra: str = "") -> str:
        """The workload line of this job (times in seconds)."""
        options = f"{extra} " if extra else ""
        return (f"{arrival:.3f} {pes} {options}bsp --work {work:.3f} "
                f"--granularity {self.granularity:g} --variance {self.variance:g} "
                f"--pattern {self.pattern} --io-blocks {io_blocks} --seed {self.seed}")


def job_line(rng: random.Random, arrival: float, pes: int, work: float,
             granularity: float | None = None, variance: float | None = None,
             pattern: str | None = None, io_blocks: int = 0, extra: str = "") -> str:
    """One benchmark workload line; parameters left as None are drawn as in THESIS §4.6.

    The draws happen in a fixed order whether or not a parameter is given, so fixing one does
    not change the others."""
    drawn = BspParams.draw(rng)
    params = BspParams(drawn.granularity if granularity is None else granularity,
                       drawn.variance if variance is None else variance,
                       pattern or drawn.pattern, drawn.seed)
    return params.line(arrival, pes, work, io_blocks, extra)


def _pick(rng: random.Random, options: tuple[float, ...]) -> float:
    return options[min(len(options) - 1, int(rng.random() * len(options)))]


def _pattern(rng: random.Random) -> str:
    u, total = rng.random(), 0.0
    for name, weight in PATTERNS:
        total += weight
        if u < total:
            return name
    return PATTERNS[-1][0]


def generate_mix(p: MixParams) -> str:
    """The workload file text for ``p`` (deterministic in ``p``)."""
    p.check()
    rng = random.Random(p.seed)
    top = int(math.log2(p.pes))
    drafts = []
    for _ in range(p.jobs):
        size = 2 ** min(top, int(rng.random() * (top + 1)))
        work = p.work_min * (p.work_max / p.work_min) ** rng.random()
        drafts.append((size, work, BspParams.draw(rng)))
    demand = sum(size * work for size, work, _ in drafts)
    mean_gap = demand / (p.load * p.pes * p.jobs)
    lines = [f"# testbed: generator=mix jobs={p.jobs} pes={p.pes} load={p.load} seed={p.seed} "
             f"compress={p.compress:g} work_min={p.work_min:g} work_max={p.work_max:g}",
             "# arrival pes command..."]
    arrival = 0.0
    for i, (size, work, params) in enumerate(drafts):
        if i:
            arrival += -math.log(1.0 - rng.random()) * mean_gap
        lines.append(params.line(arrival / p.compress, size, work / p.compress, p.io_blocks))
    return "\n".join(lines) + "\n"
