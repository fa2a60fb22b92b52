"""Intervals and tests for comparisons of repeated runs (pure: numbers in, numbers out).

Every figure of a comparison is a sample of independent repeats (one value per run).  What is
computed, and what it means:

* ``median_interval``: the sample median and a 95 % percentile-bootstrap interval for the
  median of the distribution the runs come from (``scipy.stats.bootstrap``).  With few runs the
  interval is about the range of the middle runs (with 5 runs, about the whole range); it
  needs at least 2 runs.
* ``ratio_interval``: the ratio of two samples' medians (subject / reference) and a 95 %
  two-sample percentile-bootstrap interval for it (each sample resampled on its own).
* ``rank_test``: the two-sided Mann-Whitney U test's p-value (``scipy.stats.mannwhitneyu``):
  could both samples come from one distribution?  With 3 runs a side it can never be below
  0.1, so nothing is called on 3 runs; 5 a side reach 0.008, 8 a side 0.0002.
* ``signed_rank_test``: for paired samples (each repeat ran the same generated workload seed
  under both schedulers, as simulated comparisons do), the Wilcoxon signed-rank test on the
  pairs; the ratio's bootstrap then resamples pairs.  6 pairs reach p = 0.03, 8 pairs 0.008.
* ``holm``: Holm's step-down correction of a family of p-values (the family-wise error rate
  stays at the level whatever the number of comparisons).
* ``called``: a difference is called only when the Holm-corrected p-value is below 0.05 *and*
  the ratio's interval excludes 1: the rank test says the runs differ, the interval says by
  how much, and both must agree.
* ``bimodal``: whether the runs fall into two separate clusters (then a median and its interval
  describe neither cluster, and the table says so).

Resampling is seeded, so the same samples always give the same intervals.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
ALPHA = 0.05
RESAMPLES = 4999
SEED = 20261124



def _scipy_stats():  # noqa: ANN202
    """``scipy.stats``, imported on first use: importing it takes about a second, which every
    ``testbed`` command (``exec`` included) would otherwise pay at start."""
    from scipy import stats

    return stats

@dataclass(frozen=True)
class Interval:
    """A point estimate and its interval (``low``/``high`` None when it has no interval)."""

    value: float
    low: float | None
    high: float | None

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (None without an interval)."""
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2

    def excludes(self, x: float) -> bool:
        """True when ``x`` lies outside the interval (False without an interval)."""
        return self.low is not None and self.high is not None and not self.low <= x <= self.high


def _finite(values: Sequence[float]) -> np.ndarray:
    array = np.asarray([v for v in values if v is not None], dtype=float)
    return array[np.isfinite(array)]


def _bootstrap(data: tuple[np.ndarray, ...], statistic, seed: int,  # noqa: ANN001
               paired: bool = False) -> tuple[float, float]:
    with warnings.catch_warnings():
        # Identical values give a zero-width interval, which is the right answer here.
        scipy_stats = _scipy_stats()
        warnings.simplefilter("ignore", category=scipy_stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", category=RuntimeWarning)
        result = scipy_stats.bootstrap(data, statistic, n_resamples=RESAMPLES, method="percentile",
                                       confidence_level=CONFIDENCE, vectorized=True,
                                       paired=paired, rng=np.random.default_rng(seed))
    interval = result.confidence_interval
    return float(interval.low), float(interval.high)


def _median(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis)


def median_interval(values: Sequence[float], seed: int = SEED) -> Interval:
    """The median of ``values`` with its 95 % bootstrap interval (no interval for fewer than 2
    finite values; ``ValueError`` for none)."""
    data = _finite(values)
    if data.size == 0:
        raise ValueError("no values")
    median = float(np.median(data))
    if data.size < 2:
        return Interval(median, None, None)
    if np.all(data == data[0]):
        return Interval(median, median, median)
    low, high = _bootstrap((data,), _median, seed)
    return Interval(median, low, high)


def ratio_interval(subject: Sequence[float], reference: Sequence[float],
                   seed: int = SEED, paired: bool = False) -> Interval | None:
    """The ratio of medians subject / reference with its 95 % two-sample bootstrap interval
    (None when the reference's median is 0 or either side is empty; no interval for fewer
    than 2 values a side, or when a resample's reference median is 0).  ``paired``: the
    samples are pairs (the same workload seed on both sides), resampled together."""
    a, b = _finite(subject), _finite(reference)
    if paired and a.size != b.size:
        raise ValueError("paired samples of different sizes")
    if a.size == 0 or b.size == 0 or np.median(b) == 0:
        return None
    ratio = float(np.median(a) / np.median(b))
    if a.size < 2 or b.size < 2:
        return Interval(ratio, None, None)
    if np.all(a == a[0]) and np.all(b == b[0]):
        return Interval(ratio, ratio, ratio)

    def statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(x, axis=axis) / np.median(y, axis=axis)

    low, high = _bootstrap((a, b), statistic, seed, paired)
    if not (math.isfinite(low) and math.isfinite(high)):
        return Interval(ratio, None, None)
    return Interval(ratio, low, high)


def rank_test(subject: Sequence[float], reference: Sequence[float]) -> float | None:
    """The two-sided Mann-Whitney U p-value of two samples (None with fewer than 2 values a
    side; 1.0 when every value is equal)."""
    a, b = _finite(subject), _finite(reference)
    if a.size < 2 or b.size < 2:
        return None
    if np.all(np.concatenate([a, b]) == a[0]):
        return 1.0
    return float(_scipy_stats().mannwhitneyu(a, b, alternative="two-sided").pvalue)


def signed_rank_test(subject: Sequence[float], reference: Sequence[float]) -> float | None:
    """The two-sided Wilcoxon signed-rank p-value of paired samples (``scipy.stats.wilcoxon``:
    do the pairs' differences centre on 0?); None with fewer than 2 pairs, 1.0 when every
    difference is 0."""
    a, b = np.asarray(subject, dtype=float), np.asarray(reference, dtype=float)
    if a.size != b.size:
        raise ValueError("paired samples of different sizes")
    keep = np.isfinite(a) & np.isfinite(b)
    diff = a[keep] - b[keep]
    if diff.size < 2:
        return None
    if np.all(diff == 0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        return float(_scipy_stats().wilcoxon(a[keep], b[keep], alternative="two-sided").pvalue)


def one_sided_rank_test(subject: Sequence[float], reference: Sequence[float]) -> float | None:
    """The one-sided Mann-Whitney U p-value for "subject tends to be larger than reference"
    (None with fewer than 2 values a side; 1.0 when every value is equal)."""
    a, b = _finite(subject), _finite(reference)
    if a.size < 2 or b.size < 2:
        return None
    if np.all(np.concatenate([a, b]) == a[0]):
        return 1.0
    return float(_scipy_stats().mannwhitneyu(a, b, alternative="greater").pvalue)


def smallest_p(n: int, m: int, paired: bool = False) -> float:
    """The smallest two-sided p-value the rank test can give on ``n`` and ``m`` runs (exact
    tests without ties): ``2 / C(n + m, n)`` for Mann-Whitney U, ``2 / 2**n`` for ``n`` pairs."""
    if paired:
        return min(1.0, 2 / 2 ** min(n, m))
    return min(1.0, 2 / math.comb(n + m, n))


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


def called(adjusted_p: float | None, ratio: Interval | None, alpha: float = ALPHA) -> bool:
    """Whether a difference is called: corrected p below ``alpha`` and the ratio's interval
    excluding 1."""
    return adjusted_p is not None and adjusted_p < alpha and ratio is not None \
        and ratio.excludes(1.0)


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
    """Whether ``interval``'s half-width is within ``fraction`` of its value's magnitude (an
    interval of width 0 around 0 counts as converged)."""
    half = interval.half_width
    if half is None:
        return False
    return half <= fraction * abs(interval.value)
