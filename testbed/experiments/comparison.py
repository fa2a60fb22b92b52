"""Repeated runs of several schedulers (or settings) summed up: medians with intervals, ratios to
a reference with theirs, and which differences the evidence supports (pure).

Each *group* is one label of a comparison (a scheduler, or a scheduler named twice for an A/A
comparison) with one sample of repeated runs per figure.  For every figure and group: the
median and its interval; for every group but the reference: the ratio to the reference with
its interval, and the rank test's p-value, Holm-corrected over a *family* of comparisons:
``all`` (the default, and what docs/comparisons.md recommends: every figure and group of the
table, so that a star anywhere in an A/A table comes at most 5 % of the time) or ``metric``
(the groups compared with the reference on one figure).  Runs that pair up (the same workload
seed on both sides, or the runs of one round) are compared as pairs.
``testbed.experiments.stats`` says what each interval means and when a difference is called.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from testbed.experiments import stats
from testbed.experiments.figures import label as figure_label

FAMILIES = ("all", "metric")
FAMILY = "all"


@dataclass
class Group:
    """One label's runs: the scheduler, its figures' samples (one value per complete run, in
    run order), and how many of those runs were disturbed by other load."""

    label: str
    scheduler: str
    samples: dict[str, list[float]] = field(default_factory=dict)
    keys: dict[str, list[object]] = field(default_factory=dict)
    runs: int = 0
    disturbed: int = 0

    def add(self, figures: dict[str, float | None], disturbed: bool,
            key: object = None) -> None:
        """Add one run's figures (None values are left out of their sample); ``key`` pairs
        the run with other groups' runs of the same key (the workload seed, or the round)."""
        self.runs += 1
        self.disturbed += int(disturbed)
        for name, value in figures.items():
            if value is not None:
                self.samples.setdefault(name, []).append(float(value))
                self.keys.setdefault(name, []).append(key)

    def by_key(self, metric: str) -> dict[object, float]:
        """The metric's values by pairing key."""
        return dict(zip(self.keys.get(metric, []), self.samples.get(metric, []), strict=True))


@dataclass(frozen=True)
class Record:
    """One figure of one group, as ``--json`` prints it and ``summary.csv`` stores it: the
    median [interval] and the confidence the interval states; the ratio to the reference
    [interval] and its confidence; the test, its raw p-value, the smallest p-value it could
    reach on these runs, the p-value Holm-corrected over ``family``; ``callable`` (whether
    the design could call a difference here at all: the family's smallest p-values,
    corrected, below 0.05; None for the reference) and ``significant`` (called)."""

    scheduler: str
    label: str
    metric: str
    n: int
    median: float | None
    ci_low: float | None
    ci_high: float | None
    ci_confidence: float | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    ratio_confidence: float | None
    test: str | None
    p: float | None
    min_p: float | None
    p_holm: float | None
    callable: bool | None
    significant: bool
    family: str
    bimodal: str | None
    disturbed: int

    def as_dict(self) -> dict[str, Any]:
        """The record as a plain dict (floats rounded to 6 significant digits)."""
        return {k: (float(f"{v:.6g}") if isinstance(v, float) else v)
                for k, v in dataclasses.asdict(self).items()}


def _versus(group: Group, ref: Group, metric: str, paired: bool) -> stats.Versus:
    """``group`` against ``ref`` on ``metric``: on the pairs of equal keys when ``paired``,
    else on the two samples as they are."""
    if paired:
        mine, theirs = group.by_key(metric), ref.by_key(metric)
        common = [k for k in mine if k in theirs]
        return stats.versus([mine[k] for k in common], [theirs[k] for k in common], paired=True)
    return stats.versus(group.samples.get(metric, []), ref.samples.get(metric, []))


def summarize(groups: list[Group], metrics: list[str], reference: str,
              paired: bool = False, family: str = FAMILY) -> list[Record]:
    """The records of every figure in ``metrics`` and every group, ratios taken against the
    group labelled ``reference`` (``ValueError`` when there is no such group, or for an
    unknown ``family``); ``paired``: runs of equal keys are pairs (signed-rank test, paired
    intervals)."""
    by_label = {g.label: g for g in groups}
    if reference not in by_label:
        raise ValueError(f"reference {reference!r} is not one of {', '.join(by_label)}")
    if family not in FAMILIES:
        raise ValueError(f"family {family!r} is not one of {', '.join(FAMILIES)}")
    ref = by_label[reference]
    others = [g for g in groups if g.label != reference]
    found = {(g.label, m): _versus(g, ref, m, paired) for m in metrics for g in others}
    families = ([list(found)] if family == "all" else
                [[(g.label, m) for g in others] for m in metrics])
    adjusted: dict[tuple[str, str], float | None] = {}
    can_call: dict[tuple[str, str], bool] = {}
    for members in families:
        tests = [found[k].test for k in members]
        adjusted.update(zip(members, stats.holm([t.p if t else None for t in tests]),
                            strict=True))
        can_call.update(zip(members, stats.callable_in([t.min_p if t else None
                                                        for t in tests]), strict=True))
    records: list[Record] = []
    for metric in metrics:
        for group in groups:
            values = group.samples.get(metric, [])
            median = stats.median_interval(values) if values else None
            clusters = stats.bimodal(values)
            key = (group.label, metric)
            versus = found.get(key)
            test = versus.test if versus else None
            if versus is None:
                ratio = stats.Interval(1.0, 1.0, 1.0) if median and median.value else None
            else:
                ratio = versus.ratio
            interval, null = versus.judged if versus else (None, 1.0)
            records.append(Record(
                scheduler=group.scheduler, label=group.label, metric=metric, n=len(values),
                median=median.value if median else None,
                ci_low=median.low if median else None, ci_high=median.high if median else None,
                ci_confidence=median.confidence if median and median.low is not None else None,
                ratio=ratio.value if ratio else None, ratio_low=ratio.low if ratio else None,
                ratio_high=ratio.high if ratio else None,
                ratio_confidence=(ratio.confidence if versus and ratio and ratio.low is not None
                                  else None),
                test=test.method if test else None, p=test.p if test else None,
                min_p=test.min_p if test else None, p_holm=adjusted.get(key),
                callable=can_call.get(key) if versus else None,
                significant=stats.called(adjusted.get(key), interval, null),
                family=family, bimodal=clusters.describe() if clusters else None,
                disturbed=group.disturbed))
    return records


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _interval(value: float | None, low: float | None, high: float | None,
              confidence: float | None) -> str:
    if value is None:
        return "-"
    if low is None or high is None:
        return _num(value)
    short = confidence is not None and confidence < stats.CONFIDENCE - stats.TOLERANCE
    return f"{_num(value)} [{_num(low)}, {_num(high)}]" + ("†" if short else "")


def interval_text(record: Record) -> str:
    """A record's median and interval as the tables print it (``†`` when the interval states
    a confidence below 95 %, ``~`` when bimodal)."""
    return _interval(record.median, record.ci_low, record.ci_high, record.ci_confidence) + \
        ("~" if record.bimodal else "")


def ratio_text(record: Record) -> str:
    """A record's ratio and interval as the tables print it (``†`` as ``interval_text``)."""
    return _interval(record.ratio, record.ratio_low, record.ratio_high,
                     record.ratio_confidence)


def _percent(confidence: float) -> str:
    return f"{100 * confidence:.4g} %"


def short_legend(records: list[Record]) -> str | None:
    """The legend of ``†``: which intervals state a confidence below 95 % and what they state
    (None when none does)."""
    medians = sorted({(r.n, r.ci_confidence) for r in records if r.ci_confidence is not None
                      and r.ci_confidence < stats.CONFIDENCE - stats.TOLERANCE})
    ratios = sorted({r.ratio_confidence for r in records if r.ratio_confidence is not None
                     and r.ratio_confidence < stats.CONFIDENCE - stats.TOLERANCE})
    if not medians and not ratios:
        return None
    parts = [f"{n} runs give a median's interval (their range) of {_percent(c)}"
             for n, c in medians]
    parts += [f"a ratio's interval of {_percent(c)}" for c in ratios]
    return ("† = too few runs for a 95 % interval; the interval shown states less: "
            + "; ".join(parts))


def family_line(records: list[Record], reference: str) -> str:
    """The table's header line: which comparisons are corrected together."""
    tests = [r for r in records if r.p is not None]
    family = records[0].family if records else FAMILY
    if family == "all":
        return (f"family: all {len(tests)} comparisons with {reference} in this table, "
                "Holm-corrected together (--family metric: per figure)")
    return (f"family: per figure, the comparisons with {reference} on it, Holm-corrected "
            f"together ({len(tests)} comparisons in all; --family all: the whole table)")


def format_table(records: list[Record], reference: str, paired: bool = False) -> str:
    """A plain-text table: the family line, then per figure a row of medians with their
    intervals and a row of ratios to ``reference`` with theirs; ``*`` marks a called
    difference, ``†`` an interval of less than 95 %, ``~`` a bimodal sample; a legend below
    says what the marks and intervals mean and when nothing can be called."""
    labels = list(dict.fromkeys(r.label for r in records))
    metrics = list(dict.fromkeys(r.metric for r in records))
    cell = {(r.label, r.metric): r for r in records}
    runs = {lb: max(r.n for r in records if r.label == lb) for lb in labels}
    rows: list[list[str]] = [["", *labels], ["runs", *(str(runs[lb]) for lb in labels)]]
    disturbed = {r.label: r.disturbed for r in records}
    if any(disturbed.values()):
        rows.append(["disturbed runs", *(str(disturbed[lb]) for lb in labels)])
    bimodal: list[str] = []
    for metric in metrics:
        values, ratios = [figure_label(metric)], [f"  ratio to {reference}"]
        for lb in labels:
            r = cell[(lb, metric)]
            values.append(interval_text(r))
            ratios.append(("1" if lb == reference and r.ratio is not None else ratio_text(r))
                          + ("*" if r.significant else ""))
            if r.bimodal:
                bimodal.append(f"{lb} {metric}: {r.bimodal}")
        rows += [values, ratios]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [family_line(records, reference)]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True)))
              for row in rows]
    pairs = "pairs' " if paired else ""
    lines.append("median [95 % order-statistics interval] over the runs; ratio to "
                 f"{reference} = Hodges-Lehmann estimate on the log values (the median of the "
                 f"{pairs}ratios) [95 % interval, from the rank test inverted];")
    test = ("Wilcoxon signed-rank on paired runs" if paired else "Mann-Whitney U")
    lines.append(f"* = a difference is called: {test} (exact, ties handled), Holm-corrected "
                 "over the family, p < 0.05, and the ratio's interval excludes 1 (the "
                 "difference's excludes 0 where a value is 0)")
    legend = short_legend(records)
    if legend:
        lines.append(legend)
    lines += not_callable_note(records, paired)
    if bimodal:
        lines.append("~ = bimodal (two separate clusters of runs; the median describes neither): "
                     + "; ".join(bimodal))
    if any(disturbed.values()):
        lines.append("disturbed runs: other processes or the hypervisor took CPU time during the "
                     "run (load.json in each run directory)")
    return "\n".join(lines)


def not_callable_note(records: list[Record], paired: bool = False) -> list[str]:
    """The note when some comparisons could not call a difference whatever the runs gave
    (their smallest reachable p-value, corrected over the family, is not below 0.05), with
    how many runs a side would do; empty when every tested comparison could."""
    tested = [r for r in records if r.callable is not None and r.p is not None]
    stuck = [r for r in tested if not r.callable]
    if not stuck:
        return []
    sizes = [sum(1 for t in tested if t.metric == m) for m in {t.metric for t in tested}]
    family = len(tested) if tested[0].family == "all" else max(sizes)
    what = ("no difference can be called" if len(stuck) == len(tested)
            else f"no difference can be called on {len(stuck)} of the {len(tested)} "
                 "comparisons")
    return [f"note: {what} with these runs: the smallest p-value the test can reach on them, "
            f"Holm-corrected over the family of {family}, is not below 0.05; "
            f"{stats.least_runs(family, paired)} {'pairs' if paired else 'runs a side'} "
            "would do"]


def unconverged(records: list[Record], fraction: float) -> list[str]:
    """``label metric`` of every record whose interval's half-width is wider than ``fraction``
    of its median, states less than 95 %, or is missing."""
    out = []
    for r in records:
        if r.median is None:
            continue
        interval = stats.Interval(r.median, r.ci_low, r.ci_high,
                                  stats.CONFIDENCE if r.ci_confidence is None
                                  else r.ci_confidence)
        if not stats.converged(interval, fraction):
            out.append(f"{r.label} {r.metric}")
    return out
