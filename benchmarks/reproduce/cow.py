"""COW (Karatza 2001) §3.2 in the simulator, through ``benchmarks.cow.run_set``: AFCFS and
LGFS on 16 workstations with owners, sets 1 and 2, under the model's default reading (``Reading``;
an interrupted gang keeps its place and holds no PEs: docs/schedulers.md says why).

Each cell's RT and U carry their 95 % t-interval over independent replications, as in the
paper.  Two figures are told apart when the interval of their difference (or ratio: half-widths
added in quadrature, as for independent estimates; both policies see the same seeds, so this is
conservative) lies on one side of 0 (or 1).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from benchmarks import cow
from benchmarks.reproduce.claims import (
    Finding,
    above,
    below,
    difference,
    every,
    judge,
    most,
    num,
    plus_minus,
    quotient,
    specs,
)
from benchmarks.reproduce.context import Context
from testbed.experiments.stats import Interval

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
    ``u_ci``)."""
    rt1, rt2 = _figure(set1, "rt"), _figure(set2, "rt")
    u = {**_figure(set1, "u"), **_figure(set2, "u")}

    def lgfs_vs_afcfs(figure: dict[tuple[str, Cell], Interval], lower: bool) -> list[Any]:
        cells = sorted({c for _, c in figure}, key=lambda c: (-c[0], -c[1]))
        return [judge(difference(figure.get(("lgfs", c)), figure.get(("afcfs", c))),
                      below(0.0) if lower else above(0.0)) for c in cells]

    def ratios(figure: dict[tuple[str, Cell], Interval]) -> str:
        cells = sorted({c for _, c in figure}, key=lambda c: (-c[0], -c[1]))
        return "; ".join(
            f"{_cell(c)}: {_short(quotient(figure.get(('lgfs', c)), figure.get(('afcfs', c))))}"
            for c in cells)

    found = {
        "cow-rt-set1": Finding("RT ratio LGFS/AFCFS by 1/λ': " + ratios(rt1),
                               every(lgfs_vs_afcfs(rt1, lower=True)), setup, plots),
        "cow-rt-set2": Finding("RT ratio LGFS/AFCFS by (1/λ, 1/λ'): " + ratios(rt2),
                               most(lgfs_vs_afcfs(rt2, lower=True)), setup, plots),
        "cow-u": Finding("U ratio LGFS/AFCFS by (1/λ, 1/λ'): " + ratios(u),
                         most(lgfs_vs_afcfs(u, lower=False)), setup, plots),
    }
    owners = sorted({c for _, c in rt1}, key=lambda c: -c[1])
    rises = [judge(difference(rt1.get((p, later)), rt1.get((p, earlier))), above(0.0))
             for p in cow.POLICIES for earlier, later in zip(owners, owners[1:], strict=False)]
    found["cow-shape-owners"] = Finding(
        "RT by 1/λ': " + "; ".join(
            f"{p} " + ", ".join(f"{num(c[1])}: {_short(rt1.get((p, c)))}" for c in owners)
            for p in cow.POLICIES), every(rises), setup, plots)
    owner_rates = sorted({c[1] for _, c in rt2})
    heavy = [judge(difference(rt2.get((p, (0.6, k, k))), rt2.get((p, (light, k, k)))),
                   above(0.0))
             for p in cow.POLICIES for k in owner_rates for light in (1.0, 0.8)]
    found["cow-shape-load"] = Finding(
        "RT at 1/λ = 1 / 0.8 / 0.6: " + "; ".join(
            f"{p} λ'={num(k)}: " + " / ".join(_short(rt2.get((p, (x, k, k))))
                                            for x in (1.0, 0.8, 0.6))
            for p in cow.POLICIES for k in owner_rates), every(heavy), setup, plots)
    shape, shown = [], []
    for k in owner_rates:
        ratio = {x: quotient(rt2.get(("lgfs", (x, k, k))), rt2.get(("afcfs", (x, k, k))))
                 for x in (1.0, 0.8, 0.6)}
        shape += [judge(difference(ratio[0.8], ratio[1.0]), below(0.0)),
                  judge(difference(ratio[0.6], ratio[0.8]), above(0.0))]
        shown.append(f"λ'={num(k)}: " + " / ".join(_short(ratio[x]) for x in (1.0, 0.8, 0.6)))
    found["cow-shape-ratio"] = Finding(
        "RT ratio at 1/λ = 1 / 0.8 / 0.6: " + "; ".join(shown), every(shape), setup, plots)
    return found


def _figure(records: list[dict[str, Any]], key: str) -> dict[tuple[str, Cell], Interval]:
    out = {}
    for r in records:
        interval = plus_minus(r[key], r[f"{key}_ci"])
        if interval is not None:
            out[(r["policy"], (r["inv_lambda"], r["inv_lambda_owner"], r["inv_mu_owner"]))] = \
                interval
    return out


def _cell(cell: Cell) -> str:
    return f"({num(cell[0])}, {num(cell[1])})"


def _short(interval: Interval | None) -> str:
    if interval is None:
        return "-"
    half = interval.half_width
    return f"{interval.value:.3g}" + ("" if half is None else f" ± {half:.2g}")
