"""Published claims beside our figures, and the rules that give each a verdict (pure: numbers
in, verdicts out).

A claim says where the paper puts a figure of ours: a ratio above 1, a utilization above 0.9,
a ratio within a band around 1.  Our figure comes with an interval, and the verdict is read off
the interval alone:

* **agrees** when the whole interval lies where the paper's claim puts it;
* **disagrees** when the whole interval lies where the claim's opposite puts it;
* **cannot tell** otherwise (the interval straddles a boundary, or there is none).

When the figure compares two samples (a ratio), ``null`` is the value that means "no
difference" (1 for a ratio) and ``p`` the rank test's p-value: a verdict that asserts a
difference (its side of the boundary excludes ``null``) also needs ``p`` below 0.05, as
``testbed.experiments.stats.called`` asks of every difference the project calls.  A figure
without a rank test is judged on its interval alone: a single sample's median, or the paired
difference of replications that share their seeds (``paired_difference``).

Claims over many cells combine their cells' verdicts: ``every`` (the claim holds in every
cell) and ``most`` (in more than half of them).  A claim's cells are one family wherever one
cell of many could decide it by chance: its p-values are Holm-corrected together
(``judge_cells``), and its intervals judged alone taken at the Bonferroni confidence
1 - 0.05 / cells (``cell_confidence``).  That is so for ``every``'s "disagrees" (any cell
disagreeing) and for ``most``; ``every``'s "agrees" asks every cell to agree on its own, which
a claim that does not hold passes in no more than one cell's error in any case.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest
from scipy.stats import t as student

from testbed.experiments.stats import ALPHA, CONFIDENCE, Interval, Test, holm

AGREES = "agrees"
DISAGREES = "disagrees"
CANNOT_TELL = "cannot tell"
VERDICTS = (AGREES, DISAGREES, CANNOT_TELL)


@dataclass(frozen=True)
class Region:
    """Where a claim puts a figure: above ``low`` and below ``high`` (None: unbounded)."""

    low: float | None = None
    high: float | None = None

    def describe(self) -> str:
        """``"> 1"``, ``"< 0.9"`` or ``"in [0.8, 1.25]"``."""
        if self.low is not None and self.high is not None:
            return f"in [{num(self.low)}, {num(self.high)}]"
        if self.low is not None:
            return f"> {num(self.low)}"
        if self.high is not None:
            return f"< {num(self.high)}"
        return "anywhere"

    def holds(self, interval: Interval) -> bool:
        """Whether the whole interval lies in the region."""
        assert interval.low is not None and interval.high is not None
        return ((self.low is None or interval.low > self.low)
                and (self.high is None or interval.high < self.high))

    def fails(self, interval: Interval) -> bool:
        """Whether the whole interval lies outside the region (all below it or all above)."""
        assert interval.low is not None and interval.high is not None
        return ((self.low is not None and interval.high < self.low)
                or (self.high is not None and interval.low > self.high))

    def excludes(self, value: float) -> bool:
        """Whether ``value`` lies outside the region."""
        return ((self.low is not None and value <= self.low)
                or (self.high is not None and value >= self.high))


def above(x: float) -> Region:
    """The region above ``x``."""
    return Region(low=x)


def below(x: float) -> Region:
    """The region below ``x``."""
    return Region(high=x)


def within(low: float, high: float) -> Region:
    """The region between ``low`` and ``high``."""
    return Region(low, high)


@dataclass(frozen=True)
class Decision:
    """A verdict and, in a few words, why."""

    verdict: str
    why: str


def judge(interval: Interval | None, region: Region, p: float | None = None,
          null: float | None = None, alpha: float = ALPHA) -> Decision:
    """The verdict on a claim that puts a figure in ``region``, given the figure's
    ``interval``; ``p`` (the rank test's p-value) must be below ``alpha`` for a verdict that
    asserts a difference from ``null`` (see the module's docstring).  An interval stating
    less than 1 - 2 ``alpha`` (too few runs) gives no verdict: one lying wholly past a
    boundary it straddles in truth would then do so more often than ``alpha``
    (``benchmarks.calibration.verdicts`` measures it)."""
    if interval is None or interval.low is None or interval.high is None:
        return Decision(CANNOT_TELL, "no interval")
    shown = f"[{num(interval.low)}, {num(interval.high)}]"
    if interval.confidence < 1 - 2 * alpha - 1e-9:
        return Decision(CANNOT_TELL, f"interval {shown} states only "
                                     f"{100 * interval.confidence:.1f} %: too few runs for a "
                                     f"verdict at {100 * alpha:g} %")
    if region.holds(interval):
        verdict, side = AGREES, region
    elif region.fails(interval):
        verdict = DISAGREES
        side = (below(region.low) if region.low is not None and interval.high < region.low
                else above(region.high))  # type: ignore[arg-type]
    else:
        return Decision(CANNOT_TELL, f"interval {shown} is not all {region.describe()}")
    why = f"interval {shown} is all {side.describe()}"
    if null is not None and p is not None and side.excludes(null):
        if p >= alpha:
            return Decision(CANNOT_TELL, f"{why}, but the rank test does not back it "
                                         f"(p = {p:.2g})")
        why += f" (p = {p:.2g})"
    return Decision(verdict, why)


def magnitude(published: float, factor: float = 1.5) -> Region:
    """Where a ratio whose published value is ``published`` lies at "the same magnitude":
    its effect (ratio - 1) between 1 / ``factor`` and ``factor`` times the published one."""
    effect = published - 1
    low, high = sorted((1 + effect / factor, 1 + effect * factor))
    return within(low, high)


def around(published: float, factor: float = 1.5) -> Region:
    """Where a level (a fraction, a count: not a ratio to something) whose published value is
    ``published`` lies at "the same magnitude": between it over ``factor`` and it times
    ``factor``."""
    return within(published / factor, published * factor)


def figure(direction: Decision | None, interval: Interval | None, published: float,
           region: Region, not_comparable: str | None = None) -> Decision:
    """The verdict on a figure the paper gives (``published``) whose direction is judged by
    ``direction`` (the verdict on its side of "no difference", with its rank test; None for a
    level, which has no direction): disagrees when the direction does; agrees when the
    direction agrees and our ``interval`` lies wholly in ``region`` (the figure's tolerance);
    disagrees when the interval lies wholly outside it, unless our setup ``not_comparable``
    (why, or None) cannot be expected to reach the paper's magnitude, which makes it "cannot
    tell" with that reason; else cannot tell."""
    if direction is None:
        direction = Decision(AGREES, "a level")
    if direction.verdict == DISAGREES:
        return Decision(DISAGREES, f"direction: {direction.why}")
    size = judge(interval, region)
    why = f"figure {num(published)}: {size.why}"
    if size.verdict == AGREES and direction.verdict == AGREES:
        return Decision(AGREES, why)
    if size.verdict == DISAGREES:
        if not_comparable is None:
            return Decision(DISAGREES, why)
        return Decision(CANNOT_TELL, f"{why}; not expected to match: {not_comparable}")
    if direction.verdict != AGREES:
        return Decision(CANNOT_TELL, f"direction: {direction.why}; {why}")
    return Decision(CANNOT_TELL, why)


def p_of(test: Test | None) -> float | None:
    """A rank test's p-value (None without a test)."""
    return None if test is None else test.p


Cell = tuple[Interval | None, Region, Test | None]
"""A cell of a claim: our figure's interval, where the claim puts it, and the rank test."""


def judge_cells(cells: Sequence[Cell], null: float | None = None
                ) -> tuple[list[Decision], list[Decision]]:
    """Each cell (interval, region, rank test) of one claim judged as ``judge`` does: alone
    (its raw p-value), and with the tests' p-values Holm-corrected over the claim's cells."""
    adjusted = holm([p_of(test) for _, _, test in cells])
    return ([judge(interval, region, p_of(test), null) for interval, region, test in cells],
            [judge(interval, region, p, null)
             for (interval, region, _), p in zip(cells, adjusted, strict=True)])


def cell_confidence(cells: int) -> float:
    """The confidence each of ``cells`` intervals judged alone is taken at (Bonferroni), so
    that all of them cover together at least 95 % of the time."""
    return 1 - (1 - CONFIDENCE) / max(1, cells)


def paired_difference(subject: Sequence[float], reference: Sequence[float],
                      confidence: float = CONFIDENCE) -> Interval | None:
    """The mean of subject[i] - reference[i] over pairs (replications that share their seeds)
    with its Student t interval at ``confidence``; None without a pair, no interval with one
    pair."""
    diffs = [a - b for a, b in zip(subject, reference, strict=True)]
    if not diffs:
        return None
    mean = sum(diffs) / len(diffs)
    if len(diffs) < 2:
        return Interval(mean, None, None)
    spread = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    half = float(student.ppf((1 + confidence) / 2, len(diffs) - 1)) * spread / \
        math.sqrt(len(diffs))
    return Interval(mean, mean - half, mean + half, confidence)


def every(decisions: Sequence[Decision], corrected: Sequence[Decision] | None = None
          ) -> Decision:
    """A claim that holds in every cell: agrees when every cell agrees (``decisions``, each
    cell judged alone), disagrees when any cell disagrees judged with the claim's correction
    (``corrected``; the same as ``decisions`` when not given), else cannot tell."""
    if not decisions:
        return Decision(CANNOT_TELL, "no cells")
    counts = _counts(decisions)
    if _counts(corrected or decisions)[DISAGREES]:
        return Decision(DISAGREES, _tally(_counts(corrected or decisions), len(decisions)))
    if counts[AGREES] == len(decisions):
        return Decision(AGREES, _tally(counts, len(decisions)))
    return Decision(CANNOT_TELL, _tally(counts, len(decisions)))


def most(decisions: Sequence[Decision]) -> Decision:
    """A claim that holds in most cells: agrees when more than half the cells agree,
    disagrees when at least half disagree (so that more than half can never agree), else
    cannot tell."""
    if not decisions:
        return Decision(CANNOT_TELL, "no cells")
    counts, n = _counts(decisions), len(decisions)
    if counts[AGREES] * 2 > n:
        return Decision(AGREES, _tally(counts, n))
    if counts[DISAGREES] * 2 >= n:
        return Decision(DISAGREES, _tally(counts, n))
    return Decision(CANNOT_TELL, _tally(counts, n))


def _counts(decisions: Sequence[Decision]) -> dict[str, int]:
    return {v: sum(1 for d in decisions if d.verdict == v) for v in VERDICTS}


def _tally(counts: dict[str, int], n: int) -> str:
    return f"of {n} cell{'' if n == 1 else 's'}: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS
                                                   if counts[v])


def unavailable(reason: str) -> Decision:
    """The verdict on a claim this machine cannot measure, and why."""
    return Decision(CANNOT_TELL, reason)


def proportion(successes: int, trials: int, confidence: float = CONFIDENCE) -> Interval:
    """The fraction of ``trials`` that succeeded with its Clopper-Pearson interval at
    ``confidence`` (95 % unless told; no interval for 0 trials)."""
    if trials == 0:
        return Interval(math.nan, None, None, confidence)
    ci = binomtest(successes, trials).proportion_ci(confidence_level=confidence)
    return Interval(successes / trials, float(ci.low), float(ci.high), confidence)


def plus_minus(mean: float | None, half_width: float | None) -> Interval | None:
    """A mean and its half-width as an interval (None without a mean; no interval without a
    finite half-width)."""
    if mean is None:
        return None
    if half_width is None or not math.isfinite(half_width):
        return Interval(mean, None, None)
    return Interval(mean, mean - half_width, mean + half_width)


def num(value: float | None) -> str:
    """A number in 4 significant digits (``-`` for None)."""
    return "-" if value is None else f"{value:.4g}"


def show(interval: Interval | None) -> str:
    """``"1.02 [0.98, 1.07]"``: a value and its interval (just the value without one)."""
    if interval is None:
        return "-"
    if interval.low is None or interval.high is None:
        return num(interval.value)
    return f"{num(interval.value)} [{num(interval.low)}, {num(interval.high)}]"


CHECKS = {"direction": "direction: which side of no difference (rank test)",
          "band": "band: within a stated band",
          "figure": "figure: the paper's value within a stated tolerance",
          "measurement": "measurement: a production figure no run here reproduces"}
"""What a row checks: ``Spec.checks`` is one of these keys."""


@dataclass(frozen=True)
class Spec:
    """A published claim: the paper, where in it, what it says (in our words, with its rule),
    its value or shape there, and what the row checks (a key of ``CHECKS``)."""

    key: str
    paper: str
    where: str
    claim: str
    published: str
    checks: str = "direction"

    def __post_init__(self) -> None:
        if self.checks not in CHECKS:
            raise ValueError(f"{self.key}: unknown checks {self.checks!r}")


def specs(paper: str, *entries: tuple[str, str, str, str],
          checks: dict[str, str] | None = None) -> tuple[Spec, ...]:
    """The ``Spec`` of each ``(key, where, claim, published)`` of ``paper``, in order; what
    each row checks from ``checks`` by key (default: a direction)."""
    kinds = checks or {}
    return tuple(Spec(key, paper, where, claim, published, kinds.get(key, "direction"))
                 for key, where, claim, published in entries)


@dataclass(frozen=True)
class Finding:
    """Our side of a claim: our figure with its interval, the verdict, what ran, and the plots
    (file names beside the report) that show it."""

    ours: str
    decision: Decision
    setup: str = ""
    plots: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    """One row of the report: a claim and our finding."""

    spec: Spec
    finding: Finding

    def as_dict(self) -> dict[str, object]:
        """The row as ``claims.json`` holds it."""
        s, f = self.spec, self.finding
        return {"key": s.key, "paper": s.paper, "where": s.where, "claim": s.claim,
                "checks": s.checks, "published": s.published, "ours": f.ours,
                "verdict": f.decision.verdict, "why": f.decision.why, "setup": f.setup,
                "plots": list(f.plots)}


def rows(specs: Sequence[Spec], found: dict[str, Finding], missing: str) -> list[Row]:
    """A row for every spec, in order; a spec without a finding says ``missing`` (cannot
    tell)."""
    return [Row(s, found.get(s.key) or Finding("-", unavailable(missing))) for s in specs]
