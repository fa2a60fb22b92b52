"""COW (Karatza 2001) §3.2 in the simulator, through ``benchmarks.papers.cow.run_set``: AFCFS and
LGFS on 16 workstations with owners, sets 1 and 2, under the model's default reading (``Reading``;
an interrupted gang keeps its place and holds no PEs: docs/schedulers.md says why).

Each cell's RT and U carry their 95 % t-interval over independent replications, as in the
paper.  Replication k of every cell and policy has seed k (the same gangs and owners for both
policies, the same draws scaled across cells), so two figures are told apart on the
replications' paired differences: the t interval of the mean difference (of the ratio
LGFS / AFCFS for the ratios' shape) lies on one side of 0.  A claim's cells are one family:
any cell disagreeing (and "most" cells agreeing) is judged at the Bonferroni confidence
1 - 0.05 / cells, every cell agreeing at 95 % each.

A cell whose queue did not settle (it delivered less than
``benchmarks.papers.cow.DELIVERED_SETTLED``
of the work offered) has no steady-state RT or U: by the paper's own parameters some cells
offer more than the gangs can be given (at 1/λ = 0.6 the gangs offer 14.17 of the 15 PEs the
owners leave, and a gang needs all its PEs at once), so the paper's "very high" RTs there are
figures of its runs' length.  Such a cell is judged as the paper ran it, on its replications
of the run's length, marked † wherever it is shown, with the RT of the gangs arriving in the
second half of the arrivals over that of the first half beside it (how RT grows with the
run's length).  Only a cell with a replication stopped at the horizon (20 times its last
arrival) has no figures: "stopped".

U is the paper's "mean processor utilisation", which it says is partly repeated gang work and
does not otherwise define: a workstation serving its owner is a busy processor too, so the
claims about U are judged on every busy processor (gangs, their repeated work and owners:
``us`` plus ``us_owners`` under the default reading, which counts the gangs' busy time), and
the gang-only reading is shown beside it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from benchmarks.papers import cow
from benchmarks.papers.reproduce.claims import (
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
    show,
    specs,
    within,
)
from benchmarks.papers.reproduce.context import Context
from testbed.experiments.stats import CONFIDENCE, Interval

U_SAME = ("; with a restarted gang's work drawn afresh (redo=fresh), a gang's busy time does "
          "not depend on the policy, and in a cell both policies settle the same work is done "
          "over nearly the same span: U can differ between them only where throughput limits "
          "(a cell one policy does not settle, which has no U here), so a settled cell's U "
          "ratio near 1 is what the model gives, not a failure of LGFS")
PAPER = "COW"
STOPPED = "stopped at its horizon"
MARK = "†"
ACCEPTABLE_PES = 16 - 1 / 0.6     # 14.33: P - λ'/μ' at (1/λ', 1/μ') = (0.6, 1)
KEEPS_UP = within(0.8, 1.25)     # a queue that keeps up: late and early arrivals wait alike
PAPER_WIDTH = 0.05               # "All confidence intervals are less than 5% of the mean values"
CONSTANT = 0.1     # "about constant", "almost the same": RT ratios within a tenth
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
    ("cow-advantage-owners", "§3.2a, Fig 3", "LGFS's advantage is largest at 1/λ' = 1 (its RT "
     "ratio lower there than at 0.8, 0.6 and 0.4) and about constant below 0.8 (ratios at 0.6 "
     f"and 0.4 within ±{CONSTANT:g}) (set 1); direction, and a stated band",
     "\"The difference in performance between the two policies is higher in the case where "
     "the inter-arrival time of the workstation owner jobs is equal to the inter-arrival time "
     "of gangs. As the arrival rate of workstation owner jobs increases, the difference in "
     "performance decreases and tends to be constant for 1/λ' < 0.8.\""),
    ("cow-equal-06-2", "§3.2a, Fig 5", "At (1/λ, 1/λ') = (0.6, 2) the two policies give "
     f"almost the same RT (ratio LGFS/AFCFS within {1 - CONSTANT:g}-{1 + CONSTANT:g}); a "
     "stated band", "\"Especially for 1/λ = 0.6, and 1/λ' = 1/μ' = 2 the two policies "
     "produce almost the same RT.\""),
    ("cow-threshold", "§3.2a, Fig 2", "Gangs perform acceptably only where the owners leave "
     "them more than 14.33 PEs on average (P - λ'/μ'; set 1: 15 and 14.75 PEs at 1/λ' = 1 and "
     "0.8, 14.33 and 13.5 at 0.6 and 0.4): there the queue keeps up (RT of the gangs arriving "
     f"in the second half over the first's {KEEPS_UP.describe()}), and at or below it RT "
     "grows with the run (that ratio > 1); a band and a direction",
     "\"We can also observe a sharp increase in the response time of gangs where 1/λ' < 0.8 "
     "... This means that the mean number of processors that are available to serve gangs "
     "has to be greater than 14.33, in order for gangs to have acceptable performance.\""),
    ("cow-u-gap", "§3.2b, Fig 7", "For every λ' the U difference LGFS - AFCFS is largest at "
     "1/λ = 0.6 (larger than at 1 and at 0.8) (set 2); direction",
     "\"for any λ' the largest difference in processor utilization between the two policies "
     "appears for 1/λ = 0.6\""),
    checks={
        "cow-threshold": "band",
        "cow-advantage-owners": "band",
        "cow-equal-06-2": "band",
    }
)


def run(ctx: Context) -> dict[str, Finding]:
    """Simulate both sets at ``ctx.size`` with ``cow.run_set`` under ``benchmarks.papers.cow``'s
    default reading, and judge the claims."""
    # The cost is linear in replications x gangs: 3,000 gangs a replication of both sets take
    # about 10 s of CPU.  The full size's 30 replications of 4,000 bring the interval at
    # (1, 1) near the paper's "less than 5% of the mean values" (5 of 10,000: 12 %).
    replications = ctx.pick(2, 5, 30)
    jobs = ctx.pick(60, 3000, 4000)
    out = ctx.runs / "cow"
    out.mkdir(parents=True, exist_ok=True)
    sets: dict[int, list[dict[str, Any]]] = {}
    plots = []
    for which in (1, 2):
        ctx.log(f"COW set {which}: {replications} replications of {jobs} gangs")
        sets[which] = cow.run_set(which, replications, jobs, spread=ctx.spread)
        (out / f"cow-set{which}.json").write_text(json.dumps({"records": sets[which]}) + "\n")
        cow.plot(sets[which], which, out / f"cow-set{which}.png")
        plots.append(ctx.plot(out / f"cow-set{which}.png", f"cow-set{which}.png"))
    reading = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(cow.Reading()).items())
    setup = (f"16 workstations, {replications} replications of {jobs} gangs per cell (first "
             f"10 % dropped), benchmarks.papers.cow's default reading ({reading}); 95 % "
             f"t-intervals; "
             f"a cell settled when it delivered at least {cow.DELIVERED_SETTLED:g} of the work "
             "offered (arrival span / span to the last end, median over replications); † a "
             f"cell that did not: its figures are those of runs of {jobs} gangs, as the "
             "paper's \"very high\" RTs are of its runs' (whose length it does not give); U "
             "judged on every busy processor (gangs and owners), the gangs' share beside it; "
             f"{_precision(sets[1])}")
    return judge_records(sets[1], sets[2], setup, tuple(p for p in plots if p))


def judge_records(set1: list[dict[str, Any]], set2: list[dict[str, Any]], setup: str,
                  plots: tuple[str, ...] = ()) -> dict[str, Finding]:
    """The claims judged on ``benchmarks.papers.cow``'s records of both sets (``policy``,
    ``inv_lambda``, ``inv_lambda_owner``, ``inv_mu_owner``, ``rt``, ``rt_ci``, ``u``,
    ``u_ci``, and each replication's ``rts`` and ``us`` by seed; None where a cell did not
    settle)."""
    rt1, rt2 = _runs(set1, "rts"), _runs(set2, "rts")
    gangs = {**_runs(set1, "us"), **_runs(set2, "us")}
    owners = {**_runs(set1, "us_owners"), **_runs(set2, "us_owners")}
    u = {key: _busy(gangs[key], owners.get(key)) for key in gangs}
    rt_means = {**_figure(set1, "rt"), **_figure(set2, "rt")}
    finite = finite_cells(set1) | finite_cells(set2)
    early = {**_runs(set1, "rts_early"), **_runs(set2, "rts_early")}
    late = {**_runs(set1, "rts_late"), **_runs(set2, "rts_late")}

    def m(cell: Cell) -> str:
        return MARK if cell in finite else ""
    u_means = {key: _mean_interval(values) for key, values in u.items()}
    gang_means = {key: _mean_interval(values) for key, values in gangs.items()}

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
        return "; ".join(f"{_cell(c)}{m(c)}: {_ratio(means, figure, c)}" for c in cells)

    owner_rates = sorted({c[1] for _, c in rt2})
    found = {
        "cow-rt-set1": Finding("RT ratio LGFS/AFCFS by 1/λ' (paired difference, s): "
                               + ratios(rt1, rt_means),
                               every(*lgfs_vs_afcfs(rt1, lower=True)), setup, plots),
        "cow-rt-set2": Finding("RT ratio LGFS/AFCFS by (1/λ, 1/λ') (paired difference, s): "
                               + ratios(rt2, rt_means),
                               most(lgfs_vs_afcfs(rt2, lower=True)[1]), setup, plots),
        "cow-u": Finding("U (every busy processor: gangs and owners) ratio LGFS/AFCFS by "
                         "(1/λ, 1/λ') (paired difference): " + ratios(u, u_means)
                         + "; beside it, the gangs' U alone (not judged): "
                         + ratios(gangs, gang_means), most(lgfs_vs_afcfs(u, lower=False)[1]),
                         setup + U_SAME, plots),
    }
    by_owner = sorted({c for _, c in rt1}, key=lambda c: -c[1])
    rises = versus([(rt1.get((p, later)), rt1.get((p, earlier)), above(0.0))
                    for p in cow.POLICIES
                    for earlier, later in zip(by_owner, by_owner[1:], strict=False)])
    found["cow-shape-owners"] = Finding(
        "RT by 1/λ': " + "; ".join(
            f"{p} " + ", ".join(f"{num(c[1])}{m(c)}: {_short(rt_means.get((p, c)))}"
                                for c in by_owner)
            for p in cow.POLICIES), every(*rises), setup, plots)
    ratio1 = {c[1]: _per_seed_ratio(rt1.get(("lgfs", c)), rt1.get(("afcfs", c)))
              for c in by_owner}
    largest = [(ratio1.get(1.0), ratio1.get(x), below(0.0)) for x in (0.8, 0.6, 0.4)]
    constant = [(ratio1.get(0.6), ratio1.get(0.4), within(-CONSTANT, CONSTANT))]
    found["cow-advantage-owners"] = Finding(
        "mean of the replications' RT ratio by 1/λ': " + ", ".join(
            f"{num(x)}{m((1.0, x, 1.0))}: {_mean(ratio1.get(x))}"
            for x in sorted(ratio1, reverse=True))
        + "; paired differences: " + ", ".join(
            f"1 - {num(x)}: {_diff(ratio1.get(1.0), ratio1.get(x))}" for x in (0.8, 0.6, 0.4))
        + f", 0.6 - 0.4: {_diff(ratio1.get(0.6), ratio1.get(0.4))}",
        every(*versus(largest + constant)), setup, plots)
    tie = _per_seed_ratio(rt2.get(("lgfs", (0.6, 2.0, 2.0))), rt2.get(("afcfs", (0.6, 2.0, 2.0))))
    tie_interval = _mean_interval(tie)
    found["cow-equal-06-2"] = Finding(
        f"mean of the replications' RT ratio LGFS/AFCFS at (0.6, 2){m((0.6, 2.0, 2.0))}: "
        + (STOPPED if tie is None else show(tie_interval)),
        judge(tie_interval, within(1 - CONSTANT, 1 + CONSTANT)), setup, plots)
    gap = {(x, k): _per_seed_diff(u.get(("lgfs", (x, k, k))), u.get(("afcfs", (x, k, k))))
           for x in (1.0, 0.8, 0.6) for k in owner_rates}
    found["cow-u-gap"] = Finding(
        "U difference LGFS - AFCFS (every busy processor) at 1/λ = 1 / 0.8 / 0.6: " + "; ".join(
            f"λ'={num(k)}: " + " / ".join(_mean(gap[x, k]) + m((x, k, k))
                                          for x in (1.0, 0.8, 0.6))
            for k in owner_rates),
        every(*versus([(gap[0.6, k], gap[x, k], above(0.0)) for k in owner_rates
                       for x in (1.0, 0.8)])), setup + U_SAME, plots)
    heavy = versus([(rt2.get((p, (0.6, k, k))), rt2.get((p, (light, k, k))), above(0.0))
                    for p in cow.POLICIES for k in owner_rates for light in (1.0, 0.8)])
    found["cow-shape-load"] = Finding(
        "RT at 1/λ = 1 / 0.8 / 0.6: " + "; ".join(
            f"{p} λ'={num(k)}: " + " / ".join(_short(rt_means.get((p, (x, k, k))))
                                            + m((x, k, k)) for x in (1.0, 0.8, 0.6))
            for p in cow.POLICIES for k in owner_rates)
        + "; RT of the second half's arrivals over the first's at 1/λ = 0.6: " + "; ".join(
            f"{p} λ'={num(k)}: {_growth(early.get((p, (0.6, k, k))), late.get((p, (0.6, k, k))))}"
            for p in cow.POLICIES for k in owner_rates), every(*heavy), setup, plots)
    shape: list[tuple[Runs, Runs, Region]] = []
    shown = []
    for k in owner_rates:
        ratio = {x: _per_seed_ratio(rt2.get(("lgfs", (x, k, k))), rt2.get(("afcfs", (x, k, k))))
                 for x in (1.0, 0.8, 0.6)}
        shape += [(ratio[0.8], ratio[1.0], below(0.0)), (ratio[0.6], ratio[0.8], above(0.0))]
        shown.append(f"λ'={num(k)}: " + " / ".join(_mean(ratio[x]) + m((x, k, k))
                                                   for x in (1.0, 0.8, 0.6)))
    found["cow-shape-ratio"] = Finding(
        "mean of the replications' RT ratio at 1/λ = 1 / 0.8 / 0.6: " + "; ".join(shown),
        every(*versus(shape)), setup, plots)
    found["cow-threshold"] = threshold(set1, early, late, setup, plots)
    return found


def _precision(records: list[dict[str, Any]]) -> str:
    """How wide our RT intervals are against the paper's ("All confidence intervals are less
    than 5% of the mean values"), and the replications that would narrow them to 5 %."""
    widths = [r["rt_ci"] / r["rt"] for r in records
              if r.get("rt") and r.get("rt_ci") is not None and cow.settled(r)]
    if not widths:
        return "no settled cell to measure the intervals' width on"
    widest = max(widths)
    count = len(records[0].get("rts") or [])
    need = math.ceil(count * (widest / PAPER_WIDTH) ** 2)
    return (f"the widest RT interval of a settled cell of set 1 is ±{100 * widest:.3g} % of "
            f"its mean (the paper's are all under {100 * PAPER_WIDTH:g} %); about {need} "
            f"replications of this length would narrow it to {100 * PAPER_WIDTH:g} %")


def threshold(set1: list[dict[str, Any]], early: dict[tuple[str, Cell], Runs],
              late: dict[tuple[str, Cell], Runs], setup: str,
              plots: tuple[str, ...]) -> Finding:
    """The 14.33-PE threshold on set 1: where the owners leave the gangs more than 14.33 PEs
    on average (P - λ'/μ') the queue keeps up (the second half's arrivals wait no longer
    than the first half's: RT ratio in ``KEEPS_UP``), and at or below it RT grows with the
    run (that ratio above 1), both policies."""
    cells = sorted({_key(r) for r in set1}, key=lambda c: -c[1])
    decisions, shown = [], []
    for c in cells:
        free = cow.PES - c[2] / c[1]
        region = KEEPS_UP if free > ACCEPTABLE_PES + 1e-9 else above(1.0)
        for p in cow.POLICIES:
            interval = _mean_interval(_per_seed_ratio(late.get((p, c)), early.get((p, c))))
            decisions.append(judge(interval, region))
            shown.append(f"{p} 1/λ'={num(c[1])} ({free:.4g} PEs left): {_shown(interval)}")
    return Finding("RT of the second half's arrivals over the first's: " + "; ".join(shown),
                   every(decisions), setup, plots)


def _growth(first: Runs, second: Runs) -> str:
    return _shown(_mean_interval(_per_seed_ratio(second, first)))


def _shown(interval: Interval | None) -> str:
    return STOPPED if interval is None else show(interval)


Runs = list[float] | None
"""A cell's figure, one value per replication by seed (None where the cell did not settle)."""


def _figure(records: list[dict[str, Any]], key: str) -> dict[tuple[str, Cell], Interval]:
    out = {}
    for r in records:
        if r.get(key) is None:
            continue
        interval = plus_minus(r[key], r[f"{key}_ci"])
        if interval is not None:
            out[(r["policy"], (r["inv_lambda"], r["inv_lambda_owner"], r["inv_mu_owner"]))] = \
                interval
    return out




def _runs(records: list[dict[str, Any]], key: str) -> dict[tuple[str, Cell], Runs]:
    """Each record's per-replication values of ``key`` (``rts``, ``us``, ``us_owners``) by
    policy and cell; None where a replication was stopped at its horizon."""
    return {(r["policy"], _key(r)): r.get(key) for r in records}


def _key(record: dict[str, Any]) -> Cell:
    return (record["inv_lambda"], record["inv_lambda_owner"], record["inv_mu_owner"])


def finite_cells(records: list[dict[str, Any]]) -> set[Cell]:
    """The cells where a policy's queue did not settle but ran to its end: their figures are
    the run's length's (shown with †)."""
    return {_key(r) for r in records if r.get("rt") is not None and not cow.settled(r)}


def _busy(gangs: Runs, owners: Runs) -> Runs:
    """Replication by replication, the share of the processors busy with anything: the gangs'
    plus the owners' (None when the cell did not settle or has no owners' share)."""
    if gangs is None or owners is None:
        return None
    return [a + b for a, b in zip(gangs, owners, strict=True)]


def _mean_interval(values: Runs) -> Interval | None:
    """The mean of the replications' ``values`` with its 95 % t interval."""
    if values is None:
        return None
    return plus_minus(sum(values) / len(values), cow.interval(values) if len(values) > 1
                      else None)


def _per_seed_diff(subject: Runs, reference: Runs) -> Runs:
    """Replication by replication, subject - reference (None when either did not settle)."""
    if subject is None or reference is None:
        return None
    return [a - b for a, b in zip(subject, reference, strict=True)]


def _diff(subject: Runs, reference: Runs) -> str:
    if subject is None or reference is None:
        return STOPPED
    return show(paired_difference(subject, reference))


def _per_seed_ratio(subject: Runs, reference: Runs) -> Runs:
    """Replication by replication, subject / reference (None when either did not settle)."""
    if subject is None or reference is None:
        return None
    return [a / b for a, b in zip(subject, reference, strict=True)]


def _mean(values: Runs) -> str:
    return STOPPED if values is None else f"{sum(values) / len(values):.3g}"


def _ratio(means: dict[tuple[str, Cell], Interval], figure: dict[tuple[str, Cell], Runs],
           cell: Cell) -> str:
    """``0.83 (-2.1 ± 0.4)``: the ratio of the policies' means in ``cell`` and the paired
    difference LGFS - AFCFS with its 95 % half-width (``-`` where a cell did not settle)."""
    lgfs, afcfs = figure.get(("lgfs", cell)), figure.get(("afcfs", cell))
    mine, theirs = means.get(("lgfs", cell)), means.get(("afcfs", cell))
    if lgfs is None or afcfs is None or mine is None or theirs is None:
        return STOPPED
    if theirs.value == 0:
        return "-"
    diff = paired_difference(lgfs, afcfs)
    half = "" if diff is None or diff.half_width is None else f" ± {diff.half_width:.2g}"
    shown = "" if diff is None else f" ({diff.value:.3g}{half})"
    return f"{mine.value / theirs.value:.3g}{shown}"


def _cell(cell: Cell) -> str:
    return f"({num(cell[0])}, {num(cell[1])})"


def _short(interval: Interval | None) -> str:
    if interval is None:
        return STOPPED
    half = interval.half_width
    return f"{interval.value:.3g}" + ("" if half is None else f" ± {half:.2g}")
