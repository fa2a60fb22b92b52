"""COW (Karatza 2001) §3.2 in the simulator, through ``benchmarks.cow.run_set``: AFCFS and
LGFS on 16 workstations with owners, sets 1 and 2, under the model's default reading (``Reading``;
an interrupted gang keeps its place and holds no PEs: docs/schedulers.md says why).

Each cell's RT and U carry their 95 % t-interval over independent replications, as in the
paper.  Replication k of every cell and policy has seed k (the same gangs and owners for both
policies, the same draws scaled across cells), so two figures are told apart on the
replications' paired differences: the t interval of the mean difference (of the ratio
LGFS / AFCFS for the ratios' shape) lies on one side of 0.  A claim's cells are one family:
any cell disagreeing (and "most" cells agreeing) is judged at the Bonferroni confidence
1 - 0.05 / cells, every cell agreeing at 95 % each.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from benchmarks import cow
from benchmarks.reproduce.claims import (
    Decision,
    Finding,
    Region,
    above,
    below,
    cell_confidence,
    every,
    judge,
    most,
    num,
    paired_difference,
    plus_minus,
    specs,
)
from benchmarks.reproduce.context import Context
from testbed.experiments.stats import CONFIDENCE, Interval

PAPER = "COW"
Cell = tuple[float, float, float]

SPECS = specs(
    PAPER,
    ("cow-rt-set1", "§3.2a, Figs 2-3", "LGFS gives a lower mean response time "
     "than AFCFS for every owner arrival rate (set 1)", "RT ratio LGFS/AFCFS < 1 for "
     "1/λ' = 1, 0.8, 0.6, 0.4"),
    ("cow-rt-set2", "§3.2a, Figs 4-5", "LGFS gives a lower mean response time "
     "than AFCFS in most cells of set 2", "LGFS superior in most cases; (1/λ, 1/λ') = "
     "(0.6, 2) almost equal"),
    ("cow-u", "§3.2b, Figs 6-7", "Utilization is higher with LGFS in most cells",
     "higher with LGFS in most cases (Tables 2-5 withheld from our copy)"),
    ("cow-shape-owners", "§3.2a, Fig 2", "RT rises as owners come more often, "
     "sharply below 1/λ' = 0.8 (set 1)", "RT grows as 1/λ' falls from 1 to 0.4"),
    ("cow-shape-load", "§3.2a, Fig 4", "RT at 1/λ = 0.6 is very high against "
     "1/λ = 1 and 0.8 (set 2)", "RT at 1/λ = 0.6 far above the other two, both policies"),
    ("cow-shape-ratio", "§3.2a, Fig 5", "LGFS's advantage grows from 1/λ = 1 to "
     "0.8 and shrinks from 0.8 to 0.6 (set 2)", "RT ratio lowest at 1/λ = 0.8 for all λ'"),
)


def run(ctx: Context) -> dict[str, Finding]:
    """Simulate both sets at ``ctx.size`` with ``cow.run_set`` under ``benchmarks.cow``'s
    default reading, and judge the claims."""
    replications = ctx.pick(2, 5, 5)
    jobs = ctx.pick(60, 1000, 3000)
    out = ctx.runs / "cow"
    out.mkdir(parents=True, exist_ok=True)
    sets: dict[int, list[dict[str, Any]]] = {}
    plots = []
    for which in (1, 2):
        ctx.log(f"COW set {which}: {replications} replications of {jobs} gangs")
        sets[which] = cow.run_set(which, replications, jobs)
        (out / f"cow-set{which}.json").write_text(json.dumps({"records": sets[which]}) + "\n")
        cow.plot(sets[which], which, out / f"cow-set{which}.png")
        plots.append(ctx.plot(out / f"cow-set{which}.png", f"cow-set{which}.png"))
    reading = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(cow.Reading()).items())
    setup = (f"16 workstations, {replications} replications of {jobs} gangs per cell (first "
             f"10 % dropped), benchmarks.cow's default reading ({reading}); 95 % t-intervals")
    return judge_records(sets[1], sets[2], setup, tuple(p for p in plots if p))


def judge_records(set1: list[dict[str, Any]], set2: list[dict[str, Any]], setup: str,
                  plots: tuple[str, ...] = ()) -> dict[str, Finding]:
    """The claims judged on ``benchmarks.cow``'s records of both sets (``policy``,
    ``inv_lambda``, ``inv_lambda_owner``, ``inv_mu_owner``, ``rt``, ``rt_ci``, ``u``,
    ``u_ci``, and each replication's ``rts`` and ``us`` by seed; None where a cell did not
    settle)."""
    rt1, rt2 = _runs(set1, "rts"), _runs(set2, "rts")
    u = {**_runs(set1, "us"), **_runs(set2, "us")}
    rt_means = {**_figure(set1, "rt"), **_figure(set2, "rt")}
    u_means = {**_figure(set1, "u"), **_figure(set2, "u")}

    def versus(cells: list[tuple[Runs, Runs, Region]]) -> tuple[list[Decision], list[Decision]]:
        """Each cell judged alone (95 %) and at the claim's Bonferroni confidence."""
        def at(level: float) -> list[Decision]:
            return [judge(None if a is None or b is None else paired_difference(a, b, level),
                          region) for a, b, region in cells]
        return at(CONFIDENCE), at(cell_confidence(len(cells)))

    def lgfs_vs_afcfs(figure: dict[tuple[str, Cell], Runs], lower: bool
                      ) -> tuple[list[Decision], list[Decision]]:
        cells = sorted({c for _, c in figure}, key=lambda c: (-c[0], -c[1]))
        side = below(0.0) if lower else above(0.0)
        return versus([(figure.get(("lgfs", c)), figure.get(("afcfs", c)), side)
                       for c in cells])

    def ratios(figure: dict[tuple[str, Cell], Runs],
               means: dict[tuple[str, Cell], Interval]) -> str:
        cells = sorted({c for _, c in figure}, key=lambda c: (-c[0], -c[1]))
        return "; ".join(f"{_cell(c)}: {_ratio(means, figure, c)}" for c in cells)

    found = {
        "cow-rt-set1": Finding("RT ratio LGFS/AFCFS by 1/λ' (paired difference, s): "
                               + ratios(rt1, rt_means),
                               every(*lgfs_vs_afcfs(rt1, lower=True)), setup, plots),
        "cow-rt-set2": Finding("RT ratio LGFS/AFCFS by (1/λ, 1/λ') (paired difference, s): "
                               + ratios(rt2, rt_means),
                               most(lgfs_vs_afcfs(rt2, lower=True)[1]), setup, plots),
        "cow-u": Finding("U ratio LGFS/AFCFS by (1/λ, 1/λ') (paired difference): "
                         + ratios(u, u_means), most(lgfs_vs_afcfs(u, lower=False)[1]), setup,
                         plots),
    }
    owners = sorted({c for _, c in rt1}, key=lambda c: -c[1])
    rises = versus([(rt1.get((p, later)), rt1.get((p, earlier)), above(0.0))
                    for p in cow.POLICIES
                    for earlier, later in zip(owners, owners[1:], strict=False)])
    found["cow-shape-owners"] = Finding(
        "RT by 1/λ': " + "; ".join(
            f"{p} " + ", ".join(f"{num(c[1])}: {_short(rt_means.get((p, c)))}" for c in owners)
            for p in cow.POLICIES), every(*rises), setup, plots)
    owner_rates = sorted({c[1] for _, c in rt2})
    heavy = versus([(rt2.get((p, (0.6, k, k))), rt2.get((p, (light, k, k))), above(0.0))
                    for p in cow.POLICIES for k in owner_rates for light in (1.0, 0.8)])
    found["cow-shape-load"] = Finding(
        "RT at 1/λ = 1 / 0.8 / 0.6: " + "; ".join(
            f"{p} λ'={num(k)}: " + " / ".join(_short(rt_means.get((p, (x, k, k))))
                                            for x in (1.0, 0.8, 0.6))
            for p in cow.POLICIES for k in owner_rates), every(*heavy), setup, plots)
    shape: list[tuple[Runs, Runs, Region]] = []
    shown = []
    for k in owner_rates:
        ratio = {x: _per_seed_ratio(rt2.get(("lgfs", (x, k, k))), rt2.get(("afcfs", (x, k, k))))
                 for x in (1.0, 0.8, 0.6)}
        shape += [(ratio[0.8], ratio[1.0], below(0.0)), (ratio[0.6], ratio[0.8], above(0.0))]
        shown.append(f"λ'={num(k)}: " + " / ".join(_mean(ratio[x]) for x in (1.0, 0.8, 0.6)))
    found["cow-shape-ratio"] = Finding(
        "mean of the replications' RT ratio at 1/λ = 1 / 0.8 / 0.6: " + "; ".join(shown),
        every(*versus(shape)), setup, plots)
    return found


Runs = list[float] | None
"""A cell's figure, one value per replication by seed (None where the cell did not settle)."""


def _figure(records: list[dict[str, Any]], key: str) -> dict[tuple[str, Cell], Interval]:
    out = {}
    for r in records:
        interval = plus_minus(r[key], r[f"{key}_ci"])
        if interval is not None:
            out[(r["policy"], (r["inv_lambda"], r["inv_lambda_owner"], r["inv_mu_owner"]))] = \
                interval
    return out


def _runs(records: list[dict[str, Any]], key: str) -> dict[tuple[str, Cell], Runs]:
    """Each record's per-replication values of ``key`` (``rts``, ``us``) by policy and cell."""
    return {(r["policy"], (r["inv_lambda"], r["inv_lambda_owner"], r["inv_mu_owner"])):
            r.get(key) for r in records}


def _per_seed_ratio(subject: Runs, reference: Runs) -> Runs:
    """Replication by replication, subject / reference (None when either did not settle)."""
    if subject is None or reference is None:
        return None
    return [a / b for a, b in zip(subject, reference, strict=True)]


def _mean(values: Runs) -> str:
    return "-" if values is None else f"{sum(values) / len(values):.3g}"


def _ratio(means: dict[tuple[str, Cell], Interval], figure: dict[tuple[str, Cell], Runs],
           cell: Cell) -> str:
    """``0.83 (-2.1 ± 0.4)``: the ratio of the policies' means in ``cell`` and the paired
    difference LGFS - AFCFS with its 95 % half-width (``-`` where a cell did not settle)."""
    lgfs, afcfs = figure.get(("lgfs", cell)), figure.get(("afcfs", cell))
    mine, theirs = means.get(("lgfs", cell)), means.get(("afcfs", cell))
    if lgfs is None or afcfs is None or mine is None or theirs is None or theirs.value == 0:
        return "-"
    diff = paired_difference(lgfs, afcfs)
    half = "" if diff is None or diff.half_width is None else f" ± {diff.half_width:.2g}"
    shown = "" if diff is None else f" ({diff.value:.3g}{half})"
    return f"{mine.value / theirs.value:.3g}{shown}"


def _cell(cell: Cell) -> str:
    return f"({num(cell[0])}, {num(cell[1])})"


def _short(interval: Interval | None) -> str:
    if interval is None:
        return "-"
    half = interval.half_width
    return f"{interval.value:.3g}" + ("" if half is None else f" ± {half:.2g}")
