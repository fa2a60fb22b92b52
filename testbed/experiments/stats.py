"""Intervals and tests for comparisons of repeated runs (pure: numbers in, numbers out).

Every figure of a comparison is a sample of repeats (one value per run).  What is computed,
and what it means (``python -m benchmarks.calibration.coverage`` measures every interval's coverage
and
every test's false alarms and power on drawn data: docs/results/coverage.md):

* ``median_interval``: the sample median and a distribution-free interval for the median of
  the distribution the runs come from, between two order statistics of the runs chosen from
  the binomial distribution: it covers the median at least 95 % of the time, whatever that
  distribution, ties included.  Up to 5 runs no two order statistics reach 95 %: the interval
  is then the runs' range and states its own, lower confidence (75 % with 3 runs, 87.5 % with
  4, 93.75 % with 5; ``Interval.confidence``).  From 6 runs it is 95 %; with 6 to 8 runs it is
  still the range, with 12 the 3rd smallest to the 3rd largest run.
* ``ratio_interval``: the ratio subject / reference, estimated by Hodges-Lehmann on the log
  values (the median of the ratios of every subject run to every reference run; with pairs,
  of the pairs' ratios' Walsh averages), with the interval from inverting the exact rank test
  on the log values (Mann-Whitney U; Wilcoxon signed-rank for pairs).  It covers the true
  ratio at least 95 % of the time when one side's runs are the other's scaled (as a slowdown
  scales them), and states a lower confidence where the runs are too few (3 against 3: 90 %;
  5 pairs: 93.75 %).  It needs every value above 0; ``difference_interval`` is the same on
  the values themselves (the shift subject - reference), which ``versus`` falls back on.
* ``rank_test``: the Mann-Whitney U test's exact permutation p-value (two-sided, or one-sided
  ``greater``), ties handled: the rank sum's distribution over every split of the pooled runs
  is counted, midranks and all, so it equals ``scipy.stats.mannwhitneyu`` with
  ``method=PermutationMethod()`` (checked in the tests), and it never goes below the smallest
  p the runs can reach (``Test.min_p``: 0.1 for 3 against 3, 0.0079 for 5 against 5, higher
  with ties).  ``signed_rank_test`` is Wilcoxon's for pairs (the same workload seed on both
  sides, or the runs of one round), on the pairs' log ratios (their differences where a value
  is not above 0), exact by sign flips: 5 pairs cannot reach p < 0.05 (0.0625), 6 reach 0.031.
  Beyond ``EXACT_LIMIT`` runs (pairs) the tests take the normal approximation with the tie
  correction, where the smallest reachable p is far below any threshold.
* ``holm``: Holm's step-down correction of a family of p-values (the family-wise error rate
  stays at the level whatever the number of comparisons); ``callable`` applies it to the
  smallest reachable p-values: whether the design could call a difference at all.
* ``called``: a difference is called only when the corrected p-value is below 0.05 *and*
  the interval (of the ratio, else of the difference) excludes no difference.
* ``bimodal``: whether the runs fall into two separate clusters (then a median and its
  interval describe neither cluster, and the tables say so).

Nothing is drawn at random: the same runs always give the same intervals and p-values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
ALPHA = 0.05
EXACT_LIMIT = 60
"""Runs in all (both sides; pairs for the signed-rank test) up to which p-values and the
interval's order statistics come from the exact distributions."""
TOLERANCE = 1e-9


def _scipy_stats():  # noqa: ANN202
    """``scipy.stats``, imported on first use: importing it takes about a second, which every
    ``testbed`` command (``exec`` included) would otherwise pay at start."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class Interval:
    """A point estimate and its interval (``low``/``high`` None when it has none), with the
    confidence the interval states: ``CONFIDENCE`` where the runs reach it (the coverage is
    then at least that), else the lower confidence they do reach."""

    value: float
    low: float | None
    high: float | None
    confidence: float = CONFIDENCE

    @property
    def half_width(self) -> float | None:
        """Half the interval's width, in the value's units (None without an interval)."""
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2

    @property
    def short(self) -> bool:
        """Whether the interval states a confidence below ``CONFIDENCE`` (too few runs)."""
        return self.low is not None and self.confidence < CONFIDENCE - TOLERANCE

    def excludes(self, x: float) -> bool:
        """True when ``x`` lies outside the interval (False without an interval)."""
        return self.low is not None and self.high is not None and not self.low <= x <= self.high


def below_nominal(confidence: float | None) -> str:
    """What follows an interval that states less than 95 %: its confidence, `` (75 %)``;
    nothing for a 95 % interval (or None, no interval)."""
    if confidence is None or confidence >= CONFIDENCE - TOLERANCE:
        return ""
    return f" ({100 * confidence:.4g} %)"


@dataclass(frozen=True)
class Test:
    """A rank test's p-value, the smallest p-value it could give on these runs (the most
    extreme split of their values), and its name."""

    p: float
    min_p: float
    method: str


def _finite(values: Sequence[float | None]) -> np.ndarray:
    array = np.asarray([v for v in values if v is not None], dtype=float)
    return array[np.isfinite(array)]


def _pairs(subject: Sequence[float | None], reference: Sequence[float | None]
           ) -> tuple[np.ndarray, np.ndarray]:
    """The pairs whose two values are both finite (a pair with a missing or non-finite value
    is dropped whole, so the others stay aligned); ``ValueError`` for sides of unequal
    length."""
    if len(subject) != len(reference):
        raise ValueError("paired samples of different sizes")
    a = np.asarray([math.nan if v is None else v for v in subject], dtype=float)
    b = np.asarray([math.nan if v is None else v for v in reference], dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    return a[keep], b[keep]


@functools.lru_cache(maxsize=256)
def _order_rank(n: int, confidence: float) -> tuple[int, float]:
    """For a sample of ``n``: the rank r such that the r-th smallest and the r-th largest
    value bound the median with at least ``confidence`` (the largest such r), and the
    confidence stated; r = 1 (the range) and its own confidence when no r reaches it."""
    cdf = _scipy_stats().binom.cdf(np.arange((n + 1) // 2), n, 0.5)
    return _reach(1 - 2 * cdf, confidence, 1)


def _reach(coverage: np.ndarray, confidence: float, first: int) -> tuple[int, float]:
    """The largest index (plus ``first``) whose ``coverage`` reaches ``confidence``, and
    ``confidence``; else ``first`` and the coverage there (the most that can be had)."""
    reached = np.nonzero(coverage >= confidence - TOLERANCE)[0]
    if reached.size == 0:
        return first, float(coverage[0])
    return int(reached[-1]) + first, confidence


def median_interval(values: Sequence[float | None],
                    confidence: float = CONFIDENCE) -> Interval:
    """The median of ``values`` (their unit) with its distribution-free order-statistics
    interval at ``confidence`` (the module's docstring); no interval for fewer than 2 finite
    values, ``ValueError`` for none."""
    data = np.sort(_finite(values))
    n = data.size
    if n == 0:
        raise ValueError("no values")
    median = float(np.median(data))
    if n < 2:
        return Interval(median, None, None)
    rank, stated = _order_rank(n, confidence)
    return Interval(median, float(data[rank - 1]), float(data[n - rank]), stated)


def _doubled_midranks(values: np.ndarray) -> np.ndarray:
    """Twice the midranks of ``values`` (integers: a tie's midrank is a multiple of 1/2)."""
    return np.rint(2 * _scipy_stats().rankdata(values)).astype(np.int64)


@functools.lru_cache(maxsize=512)
def _subset_sums(weights: tuple[int, ...], size: int) -> np.ndarray:
    """The distribution of the sum of ``size`` of ``weights`` drawn without replacement, every
    subset equally likely: ``pmf[s]`` = P(sum = s)."""
    total = sum(weights)
    counts = np.zeros((size + 1, total + 1))
    counts[0, 0] = 1.0
    for w in weights:
        counts[1:, w:] = counts[1:, w:] + counts[:-1, :total + 1 - w]
    return counts[size] / counts[size].sum()


@functools.lru_cache(maxsize=512)
def _sign_sums(weights: tuple[int, ...]) -> np.ndarray:
    """The distribution of the sum of the ``weights`` given a + sign, every sign pattern
    equally likely: ``pmf[s]`` = P(sum = s)."""
    total = sum(weights)
    counts = np.zeros(total + 1)
    counts[0] = 1.0
    for w in weights:
        counts[w:] = counts[w:] + counts[:total + 1 - w]
    return counts / counts.sum()


def _exact(pmf: np.ndarray, observed: int, alternative: str) -> tuple[float, float]:
    """The p-value of ``observed`` under ``pmf`` (``greater``: P(as large or larger);
    two-sided: twice the smaller one-sided p-value, as ``scipy.stats.permutation_test``
    gives it) and the smallest p-value any outcome could give."""
    possible = np.nonzero(pmf > 0)[0]
    upper = pmf[observed:].sum()
    if alternative == "greater":
        return min(1.0, float(upper)), min(1.0, float(pmf[possible[-1]]))
    lower = pmf[:observed + 1].sum()
    least = 2 * min(pmf[possible[0]], pmf[possible[-1]])
    return min(1.0, float(2 * min(lower, upper))), min(1.0, float(least))


def _normal_p(z: float, alternative: str) -> float:
    norm = _scipy_stats().norm
    return float(norm.sf(z) if alternative == "greater" else 2 * norm.sf(abs(z)))


def rank_test(subject: Sequence[float | None], reference: Sequence[float | None],
              alternative: str = "two-sided") -> Test | None:
    """The Mann-Whitney U test of two samples, exact with ties (module docstring): two-sided,
    or ``greater`` for "subject tends to be larger than reference"; None with fewer than 2
    finite values a side."""
    a, b = _finite(subject), _finite(reference)
    if a.size < 2 or b.size < 2:
        return None
    ranks = _doubled_midranks(np.concatenate([a, b]))
    observed = int(ranks[:a.size].sum())
    if ranks.size > EXACT_LIMIT:
        return Test(_normal_p(_rank_sum_z(ranks, a.size, observed), alternative), 0.0,
                    "Mann-Whitney U (normal approximation)")
    pmf = _subset_sums(tuple(sorted(ranks.tolist())), a.size)
    p, least = _exact(pmf, observed, alternative)
    return Test(p, least, "Mann-Whitney U (exact)")


def _rank_sum_z(ranks: np.ndarray, n: int, observed: int) -> float:
    """The rank sum's z score under no difference, with the tie correction (doubled ranks)."""
    big = ranks.size
    mean = n * ranks.sum() / big
    variance = n * (big - n) / (big * (big - 1)) * ((ranks - ranks.mean()) ** 2).sum()
    return 0.0 if variance == 0 else (observed - mean) / math.sqrt(variance)


def _paired_values(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
    """The pairs' log ratios when every value is above 0 (and True), else their differences."""
    if np.all(a > 0) and np.all(b > 0):
        return np.log(a) - np.log(b), True
    return a - b, False


def signed_rank_test(subject: Sequence[float | None], reference: Sequence[float | None],
                     alternative: str = "two-sided") -> Test | None:
    """Wilcoxon's signed-rank test of paired samples (pair i is ``subject[i]`` and
    ``reference[i]``), exact with ties by sign flips, on the pairs' log ratios (differences
    where a value is not above 0); pairs with a missing value are dropped, and so are pairs
    that do not differ.  None with fewer than 2 pairs; p = 1 when no pair differs."""
    a, b = _pairs(subject, reference)
    if a.size < 2:
        return None
    d, _ = _paired_values(a, b)
    d = d[d != 0]
    if d.size == 0:
        return Test(1.0, 1.0, "Wilcoxon signed-rank (exact)")
    ranks = _doubled_midranks(np.abs(d))
    observed = int(ranks[d > 0].sum())
    if d.size > EXACT_LIMIT:
        z = (observed - ranks.sum() / 2) / math.sqrt((ranks.astype(float) ** 2).sum() / 4)
        return Test(_normal_p(z, alternative), 0.0,
                    "Wilcoxon signed-rank (normal approximation)")
    p, least = _exact(_sign_sums(tuple(sorted(ranks.tolist()))), observed, alternative)
    return Test(p, least, "Wilcoxon signed-rank (exact)")


@functools.lru_cache(maxsize=256)
def _trim_unpaired(n: int, m: int, confidence: float) -> tuple[int, float]:
    """How many of the n x m sorted pairwise differences to leave out at each end for the
    Hodges-Lehmann interval of the shift at ``confidence`` (inverting the exact two-sided
    rank test), and the confidence stated (the module docstring)."""
    if n + m > EXACT_LIMIT:
        z = _scipy_stats().norm.ppf((1 + confidence) / 2)
        return max(0, math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12))), \
            confidence
    pmf = _subset_sums(tuple(range(2, 2 * (n + m) + 1, 2)), n)
    cdf = np.cumsum(pmf[n * (n + 1)::2])  # P(U <= u), u = 0, 1, ...
    return _reach(1 - 2 * cdf[: (cdf.size + 1) // 2], confidence, 0)


@functools.lru_cache(maxsize=256)
def _trim_paired(n: int, confidence: float) -> tuple[int, float]:
    """The same for the n (n + 1) / 2 Walsh averages of n pairs (the signed-rank test)."""
    if n > EXACT_LIMIT:
        z = _scipy_stats().norm.ppf((1 + confidence) / 2)
        return max(0, math.floor(n * (n + 1) / 4 - z * math.sqrt(n * (n + 1) * (2 * n + 1)
                                                               / 24))), confidence
    cdf = np.cumsum(_sign_sums(tuple(range(2, 2 * n + 1, 2)))[::2])  # P(T+ <= t)
    return _reach(1 - 2 * cdf[: (cdf.size + 1) // 2], confidence, 0)


def _shift(a: np.ndarray, b: np.ndarray, paired: bool, confidence: float
           ) -> tuple[float, float, float, float]:
    """The Hodges-Lehmann estimate of the shift a - b, its interval's ends at ``confidence``
    and the confidence stated: over every pairwise difference, or the Walsh averages of
    paired differences."""
    if paired:
        d = a - b
        upper = np.triu_indices(d.size)
        values = np.sort(((d[:, None] + d[None, :]) / 2)[upper])
        trim, stated = _trim_paired(d.size, confidence)
    else:
        values = np.sort(np.subtract.outer(a, b).ravel())
        trim, stated = _trim_unpaired(a.size, b.size, confidence)
    return float(np.median(values)), float(values[trim]), float(values[-1 - trim]), stated


def _sides(subject: Sequence[float | None], reference: Sequence[float | None],
           paired: bool) -> tuple[np.ndarray, np.ndarray]:
    return _pairs(subject, reference) if paired else (_finite(subject), _finite(reference))


def difference_interval(subject: Sequence[float | None], reference: Sequence[float | None],
                        paired: bool = False, confidence: float = CONFIDENCE
                        ) -> Interval | None:
    """The shift subject - reference (the values' unit): the Hodges-Lehmann estimate and the
    interval at ``confidence`` from inverting the exact rank test (signed-rank for pairs,
    ``paired``: pair i is ``subject[i]`` and ``reference[i]``).  None when a side is empty;
    no interval for fewer than 2 values a side (2 pairs)."""
    a, b = _sides(subject, reference, paired)
    if a.size == 0 or b.size == 0:
        return None
    if a.size < 2 or b.size < 2:
        return Interval(float(np.median(a) - np.median(b)), None, None)
    return Interval(*_shift(a, b, paired, confidence))


def ratio_interval(subject: Sequence[float | None], reference: Sequence[float | None],
                   paired: bool = False, confidence: float = CONFIDENCE) -> Interval | None:
    """The ratio subject / reference (dimensionless): the Hodges-Lehmann estimate on the log
    values and the interval at ``confidence`` from inverting the exact rank test on them
    (module docstring; ``paired`` as for ``difference_interval``).  None when a side is
    empty or the reference's median is 0; only the ratio of the medians, without an
    interval, when a value is not above 0 or a side has fewer than 2 values (2 pairs)."""
    a, b = _sides(subject, reference, paired)
    if a.size == 0 or b.size == 0 or np.median(b) == 0:
        return None
    if a.size < 2 or b.size < 2 or not (np.all(a > 0) and np.all(b > 0)):
        return Interval(float(np.median(a) / np.median(b)), None, None)
    value, low, high, stated = _shift(np.log(a), np.log(b), paired, confidence)
    return Interval(math.exp(value), math.exp(low), math.exp(high), stated)


@dataclass(frozen=True)
class Versus:
    """One sample against a reference: the ratio and the difference with their intervals, and
    the rank test."""

    ratio: Interval | None
    difference: Interval | None
    test: Test | None

    @property
    def judged(self) -> tuple[Interval | None, float]:
        """The interval a call is read off and the value that means no difference: the
        ratio's and 1 when it has an interval, else the difference's and 0."""
        if self.ratio is not None and self.ratio.low is not None:
            return self.ratio, 1.0
        return self.difference, 0.0


def versus(subject: Sequence[float | None], reference: Sequence[float | None],
           paired: bool = False) -> Versus:
    """``subject`` against ``reference``: ``ratio_interval``, ``difference_interval`` and the
    rank test (``signed_rank_test`` when ``paired``, else ``rank_test``)."""
    test = (signed_rank_test if paired else rank_test)(subject, reference)
    return Versus(ratio_interval(subject, reference, paired),
                  difference_interval(subject, reference, paired), test)


def smallest_p(n: int, m: int, paired: bool = False) -> float:
    """The smallest two-sided p-value the exact rank test can give on ``n`` and ``m`` runs
    without ties: ``2 / C(n + m, n)`` for Mann-Whitney U, ``2 / 2**n`` for ``n`` pairs."""
    if paired:
        return min(1.0, 2 / 2 ** min(n, m))
    return min(1.0, 2 / math.comb(n + m, n))


def least_runs(family: int, paired: bool = False, alpha: float = ALPHA) -> int:
    """The fewest runs a side (pairs) with which a family of ``family`` tests, Holm-corrected,
    can call a difference (``smallest_p`` times the family below ``alpha``)."""
    runs = 2
    while smallest_p(runs, runs, paired) * max(1, family) >= alpha:
        runs += 1
    return runs


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the given order (None stays None and is not
    counted in the family)."""
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, index) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def callable_in(min_ps: Sequence[float | None], alpha: float = ALPHA) -> list[bool]:
    """For each test of a family (given its smallest reachable p, None for no test): whether
    the design could call it at all, Holm-corrected with the family at its smallest p-values."""
    return [p is not None and p < alpha for p in holm(min_ps)]


def called(adjusted_p: float | None, interval: Interval | None, null: float = 1.0,
           alpha: float = ALPHA) -> bool:
    """Whether a difference is called: corrected p below ``alpha`` and the interval excluding
    ``null`` (1 for a ratio, 0 for a difference)."""
    return adjusted_p is not None and adjusted_p < alpha and interval is not None \
        and interval.excludes(null)


@dataclass(frozen=True)
class Clusters:
    """Two separate clusters of a sample: their sizes and medians."""

    low_count: int
    low_median: float
    high_count: int
    high_median: float

    def describe(self) -> str:
        """``"3 near 6.6, 4 near 11"``."""
        return (f"{self.low_count} near {self.low_median:.4g}, "
                f"{self.high_count} near {self.high_median:.4g}")


def bimodal(values: Sequence[float]) -> Clusters | None:
    """Two clusters when the sample splits at its widest gap into two groups of at least
    max(2, n/5) values each, and that gap is over twice either group's own range; else None.

    With at least 6 values only: fewer cannot show two clusters apart from chance.
    """
    data = np.sort(_finite(values))
    n = data.size
    if n < 6:
        return None
    least = max(2, math.ceil(n / 5))
    gaps = np.diff(data)
    cut = int(np.argmax(gaps))
    low, high = data[: cut + 1], data[cut + 1:]
    if low.size < least or high.size < least or gaps[cut] <= 0:
        return None
    if gaps[cut] <= 2 * max(float(np.ptp(low)), float(np.ptp(high))):
        return None
    return Clusters(low.size, float(np.median(low)), high.size, float(np.median(high)))


def converged(interval: Interval, fraction: float) -> bool:
    """Whether ``interval`` states the full confidence and its half-width is within
    ``fraction`` of its value's magnitude (an interval of width 0 around 0 counts)."""
    half = interval.half_width
    if half is None or interval.short:
        return False
    return half <= fraction * abs(interval.value)
