"""Repeated runs of several schedulers (or settings) summed up: medians with intervals, ratios to
a reference with theirs, and which differences the evidence supports (pure).

Each *group* is one label of a comparison (a scheduler, or a scheduler named twice for an A/A
comparison) with one sample of repeated runs per figure.  For every figure and group: the
median and its 95 % interval; for every group but the reference: the ratio of its median to the
reference's, with its interval, and the rank test's p-value, Holm-corrected over the groups
compared with the reference on that figure.  ``testbed.experiments.stats`` says what each
interval means and when a difference is called.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from testbed.experiments import stats
from testbed.experiments.figures import label as figure_label


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
        the run with other groups' runs of the same key (the workload seed)."""
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
    """One figure of one group, as ``--json`` prints it and ``summary.csv`` stores it."""

    scheduler: str
    label: str
    metric: str
    n: int
    median: float | None
    ci_low: float | None
    ci_high: float | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    significant: bool
    p_holm: float | None
    bimodal: str | None
    disturbed: int

    def as_dict(self) -> dict[str, Any]:
        """The record as a plain dict (floats rounded to 6 significant digits)."""
        return {k: (float(f"{v:.6g}") if isinstance(v, float) else v)
                for k, v in dataclasses.asdict(self).items()}


def _versus(group: Group, ref: Group, metric: str, paired: bool
            ) -> tuple[stats.Interval | None, float | None]:
    """The ratio of ``group`` to ``ref`` on ``metric`` and the raw p-value: on the pairs of
    equal keys when ``paired``, else on the two samples as they are."""
    if paired:
        mine, theirs = group.by_key(metric), ref.by_key(metric)
        common = [k for k in mine if k in theirs]
        a, b = [mine[k] for k in common], [theirs[k] for k in common]
        return stats.ratio_interval(a, b, paired=True), stats.signed_rank_test(a, b)
    a, b = group.samples.get(metric, []), ref.samples.get(metric, [])
    return stats.ratio_interval(a, b), stats.rank_test(a, b)


def summarize(groups: list[Group], metrics: list[str], reference: str,
              paired: bool = False) -> list[Record]:
    """The records of every figure in ``metrics`` and every group, ratios taken against the
    group labelled ``reference`` (``ValueError`` when there is no such group); ``paired``:
    runs of equal keys are pairs (signed-rank test, paired bootstrap)."""
    by_label = {g.label: g for g in groups}
    if reference not in by_label:
        raise ValueError(f"reference {reference!r} is not one of {', '.join(by_label)}")
    ref = by_label[reference]
    records: list[Record] = []
    for metric in metrics:
        others = [g for g in groups if g.label != reference]
        versus = [_versus(g, ref, metric, paired) for g in others]
        ratios = {g.label: v[0] for g, v in zip(others, versus, strict=True)}
        adjusted = dict(zip((g.label for g in others), stats.holm([v[1] for v in versus]),
                            strict=True))
        for group in groups:
            values = group.samples.get(metric, [])
            median = stats.median_interval(values) if values else None
            clusters = stats.bimodal(values)
            is_ref = group.label == reference
            ratio = (stats.Interval(1.0, 1.0, 1.0) if is_ref and median and median.value
                     else ratios.get(group.label))
            p = None if is_ref else adjusted[group.label]
            records.append(Record(
                scheduler=group.scheduler, label=group.label, metric=metric, n=len(values),
                median=median.value if median else None,
                ci_low=median.low if median else None, ci_high=median.high if median else None,
                ratio=ratio.value if ratio else None, ratio_low=ratio.low if ratio else None,
                ratio_high=ratio.high if ratio else None,
                significant=not is_ref and stats.called(p, ratio), p_holm=p,
                bimodal=clusters.describe() if clusters else None,
                disturbed=group.disturbed))
    return records


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "-"
    if low is None or high is None:
        return _num(value)
    return f"{_num(value)} [{_num(low)}, {_num(high)}]"


def interval_text(record: Record) -> str:
    """A record's median and interval as the tables print it (``~`` when bimodal)."""
    return _interval(record.median, record.ci_low, record.ci_high) + \
        ("~" if record.bimodal else "")


def format_table(records: list[Record], reference: str, paired: bool = False) -> str:
    """A plain-text table: per figure, a row of medians with their 95 % intervals and a row of
    ratios to ``reference`` with theirs; ``*`` marks a called difference, ``~`` a bimodal
    sample; a legend below says what the marks and intervals mean."""
    labels = list(dict.fromkeys(r.label for r in records))
    metrics = list(dict.fromkeys(r.metric for r in records))
    cell = {(r.label, r.metric): r for r in records}
    runs = {r.label: r.n for r in records if r.metric == metrics[0]}
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
            ratios.append(("1" if lb == reference and r.ratio is not None else
                           _interval(r.ratio, r.ratio_low, r.ratio_high))
                          + ("*" if r.significant else ""))
            if r.bimodal:
                bimodal.append(f"{lb} {metric}: {r.bimodal}")
        rows += [values, ratios]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    lines.append(f"median [95 % bootstrap interval] over the runs; ratio = median / {reference}'s "
                 "median [95 % interval];")
    test = ("Wilcoxon signed-rank on runs paired by workload seed" if paired
            else "Mann-Whitney U")
    lines.append(f"* = a difference is called: {test}, Holm-corrected over the schedulers "
                 f"compared with {reference} on that figure, p < 0.05, and the ratio's interval "
                 "excludes 1")
    family = len(labels) - 1
    fewest = min((r.n for r in records if r.label != reference), default=0)
    ref_runs = min((r.n for r in records if r.label == reference), default=0)
    if family and fewest and ref_runs and \
            stats.smallest_p(fewest, ref_runs, paired) * family >= stats.ALPHA:
        lines.append(f"note: with {min(fewest, ref_runs)} runs a side the rank test cannot reach "
                     "p < 0.05 here, so no difference can be called: add repeats")
    if bimodal:
        lines.append("~ = bimodal (two separate clusters of runs; the median describes neither): "
                     + "; ".join(bimodal))
    if any(disturbed.values()):
        lines.append("disturbed runs: other processes or the hypervisor took CPU time during the "
                     "run (load.json in each run directory)")
    return "\n".join(lines)


def unconverged(records: list[Record], fraction: float) -> list[str]:
    """``label metric`` of every record whose interval's half-width is wider than ``fraction``
    of its median (or that has no interval yet)."""
    out = []
    for r in records:
        if r.median is None:
            continue
        interval = stats.Interval(r.median, r.ci_low, r.ci_high)
        if not stats.converged(interval, fraction):
            out.append(f"{r.label} {r.metric}")
    return out
