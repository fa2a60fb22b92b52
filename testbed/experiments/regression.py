"""Regression checks of repeated samples against a baseline's (pure: numbers in, verdicts out).

Each figure of a benchmark suite is a sample of independent rounds (one value per round; larger
is worse).  A figure has regressed when both of these hold:

* the one-sided Mann-Whitney U test (exact, ties handled) says the new rounds tend to be
  larger than the baseline's, with its p-value Holm-corrected over every figure compared,
  below ``alpha`` (0.05): over the whole suite, a false alarm between two runs of the same
  code comes at most 5 % of the time, as far as the rounds of one run are independent
  samples of what another run would give;
* the ratio new / baseline (``stats.ratio_interval``: Hodges-Lehmann on the log values) is
  above ``1 + margin`` (0.10 by default), and its 95 % interval lies above 1: a shift too
  small to matter is not called, however sure the test is of it.

The margin is there because two runs minutes apart differ by more than their own rounds
suggest (the machine drifts); ``python -m benchmarks.overheads.noise`` measures how often this check
raises a false alarm and how often it catches a known slowdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from testbed.experiments.stats import (
    ALPHA,
    Interval,
    holm,
    median_interval,
    rank_test,
    ratio_interval,
    smallest_p,
)

MARGIN = 0.10


@dataclass(frozen=True)
class Finding:
    """One figure compared: its medians, the ratio new / baseline with its interval, the
    one-sided rank test's p-value (raw and Holm-corrected) and the verdict."""

    figure: str
    now: Interval
    then: Interval
    ratio: Interval | None
    p: float | None
    p_adjusted: float | None
    regressed: bool

    def describe(self) -> str:
        """One line: ``figure: 1.23x the baseline [1.1, 1.4] (123 against 100, Holm p =
        0.004)``."""
        ratio = "no ratio to the baseline" if self.ratio is None \
            else f"{self.ratio.value:.3f}x the baseline"
        if self.ratio is not None and self.ratio.low is not None:
            ratio += f" [{self.ratio.low:.3f}, {self.ratio.high:.3f}]"
        p = "no test" if self.p_adjusted is None else f"Holm p = {self.p_adjusted:.3g}"
        return f"{self.figure}: {ratio} ({self.now.value:.4g} against {self.then.value:.4g}, {p})"


def check(now: Mapping[str, Sequence[float]], then: Mapping[str, Sequence[float]],
          margin: float = MARGIN, alpha: float = ALPHA,
          margins: Mapping[str, float] | None = None) -> list[Finding]:
    """Every figure both ``now`` and ``then`` have (sorted by name), compared as above, with
    ``margins[figure]`` for the figures it names and ``margin`` for the rest; figures with no
    finite value on either side are left out."""
    margins = margins or {}
    names = sorted(name for name in now.keys() & then.keys()
                   if _finite(now[name]) and _finite(then[name]))
    tests = [rank_test(now[name], then[name], alternative="greater") for name in names]
    pvalues = [None if t is None else t.p for t in tests]
    adjusted = holm(pvalues)
    findings = []
    for name, p, p_adjusted in zip(names, pvalues, adjusted, strict=True):
        ratio = ratio_interval(now[name], then[name])
        regressed = (p_adjusted is not None and p_adjusted < alpha and ratio is not None
                     and ratio.value > 1 + margins.get(name, margin)
                     and ratio.low is not None and ratio.low > 1)
        findings.append(Finding(name, median_interval(now[name]), median_interval(then[name]),
                                ratio, p, p_adjusted, regressed))
    return findings


def least_rounds(figures: int, alpha: float = ALPHA) -> int:
    """The fewest rounds a side with which the Holm-corrected one-sided test can call a
    regression among ``figures`` figures (the smallest one-sided p is half the two-sided)."""
    rounds = 2
    while smallest_p(rounds, rounds) / 2 * max(1, figures) >= alpha:
        rounds += 1
    return rounds


def _finite(values: Sequence[float]) -> bool:
    array = np.asarray([v for v in values if v is not None], dtype=float)
    return bool(np.isfinite(array).any())
