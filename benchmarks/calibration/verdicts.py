"""How often do the reproduction's rules give a verdict the truth does not support?  Measured
on numbers drawn from known distributions (pure: no processes, no timing; about a minute on 2
cores, ``--quick`` a few seconds).

``python -m benchmarks.calibration.verdicts [--quick] [--draws N] [--sizes 3,5,8] [--seed S]
[--json]
[--markdown PAGE]``

``benchmarks.papers.reproduce`` reads each claim's verdict off an interval and a rank test
(``benchmarks/papers/reproduce/claims.py``): *agrees* when the whole interval lies where the claim
puts the figure, *disagrees* when it lies wholly on the other side (a difference also needs
the rank test below 0.05), else *cannot tell*.  ``benchmarks.calibration.coverage`` measures the
intervals and the tests; this measures the verdicts they lead to, for the rules the report
uses, on two samples of n runs (or n pairs) whose true ratio r is known: the subject is the
reference's distribution (``benchmarks.calibration.coverage.DISTRIBUTIONS``) scaled by r.

* **direction** (``> 1``, a ratio with its rank test): r = 1 and 0.9 (the claim is false:
  *agrees* is wrong), r = 1.2 (it holds: *disagrees* is wrong).
* **band** (``in [0.8, 1.25]``, as "launch overhead does not grow"): r = 1 (holds), r = 1.25
  (on the edge: either verdict is unsupported), r = 1.4 (false).
* **every cell** (``> 1`` in each of 3 cells; the claim's *disagrees* Holm-corrected over its
  cells, as ``claims.every``): cells at (1.2, 1.2, 1.2) (holds) and (1.2, 1.2, 1) (false in
  one cell: *agrees* is wrong).

Each verdict's rate comes with its 95 % Clopper-Pearson interval.  The target: no rule gives
an unsupported verdict in more than 5 % of draws (within the rate's binomial interval), for
any distribution, n and design (independent runs, or pairs sharing a workload effect).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.calibration.coverage import DISTRIBUTIONS, Rate, _draws, sizes_arg
from benchmarks.harness import Session, emit, host, now_iso, page_head, parser
from benchmarks.papers.reproduce import claims
from benchmarks.papers.reproduce.claims import AGREES, DISAGREES, Decision, Region
from testbed.experiments import stats
from testbed.experiments.stats import ALPHA

SIZES = (3, 5, 8, 12)
QUICK_SIZES = (3, 5)
DRAWS = 2000
QUICK_DRAWS = 200
SEED = 37
DIRECTION = claims.above(1.0)
BAND = claims.within(0.8, 1.25)


@dataclass(frozen=True)
class Case:
    """A rule at a known truth: its name, where the claim puts the ratio, the true ratio of
    each cell, and the verdicts the truth does not support."""

    rule: str
    region: Region
    truths: tuple[float, ...]
    wrong: tuple[str, ...]

    @property
    def truth(self) -> str:
        """The true ratio(s), as the tables show them."""
        return ", ".join(f"{t:g}" for t in self.truths)


CASES = (
    Case("direction", DIRECTION, (1.0,), (AGREES,)),
    Case("direction", DIRECTION, (0.9,), (AGREES,)),
    Case("direction", DIRECTION, (1.2,), (DISAGREES,)),
    Case("band", BAND, (1.0,), (DISAGREES,)),
    Case("band", BAND, (1.25,), (AGREES, DISAGREES)),
    Case("band", BAND, (1.4,), (AGREES,)),
    Case("every cell", DIRECTION, (1.2, 1.2, 1.2), (DISAGREES,)),
    Case("every cell", DIRECTION, (1.2, 1.2, 1.0), (AGREES,)),
)


def _cell(subject: np.ndarray, reference: np.ndarray, region: Region, paired: bool
          ) -> claims.Cell:
    """One cell as the report builds it: the ratio's interval, the region, the rank test."""
    test = (stats.signed_rank_test if paired else stats.rank_test)(subject, reference)
    return stats.ratio_interval(subject, reference, paired=paired), region, test


def verdict(case: Case, samples: Sequence[tuple[np.ndarray, np.ndarray]], paired: bool
            ) -> Decision:
    """The claim's verdict on one draw: one (subject, reference) sample per cell."""
    cells = [_cell(s, r, case.region, paired) for s, r in samples]
    if len(cells) == 1:
        interval, region, test = cells[0]
        return claims.judge(interval, region, claims.p_of(test), null=1.0)
    alone, corrected = claims.judge_cells(cells, null=1.0)
    return claims.every(alone, corrected)


def measure_case(case: Case, name: str, n: int, paired: bool, draws: int, seed: int = SEED
                 ) -> dict[str, Any]:
    """The rates of each verdict of ``case`` on ``draws`` draws of distribution ``name``, n
    runs (or pairs) a side, from a generator seeded by the case, distribution, n and design
    (so that a record is the same whatever else is measured)."""
    sampler, median = DISTRIBUTIONS[name]
    rng = np.random.default_rng([seed, CASES.index(case), list(DISTRIBUTIONS).index(name), n,
                                 int(paired)])
    drawn = [_draws(rng, sampler, median, n, draws, paired, truth) for truth in case.truths]
    found = [verdict(case, [(s[i], r[i]) for s, r in drawn], paired).verdict
             for i in range(draws)]
    rates = {v: Rate(found.count(v), draws) for v in claims.VERDICTS}
    wrong = Rate(sum(found.count(v) for v in case.wrong), draws)
    return {"rule": case.rule, "region": case.region.describe(), "truth": case.truth,
            "wrong_verdicts": list(case.wrong), "design": "paired" if paired else "independent",
            "distribution": name, "n": n, "draws": draws,
            **{v.replace(" ", "_"): rates[v].value for v in claims.VERDICTS},
            "wrong": wrong.value, "wrong_low": wrong.interval()[0],
            "wrong_high": wrong.interval()[1]}


def measure(sizes: Sequence[int], draws: int, seed: int = SEED,
            progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every case's record for every distribution, n and design."""
    records = []
    for case in CASES:
        if progress is not None:
            progress(f"{case.rule} at {case.truth}")
        for paired in (False, True):
            for name in DISTRIBUTIONS:
                records += [measure_case(case, name, n, paired, draws, seed) for n in sizes]
    return records


def check(records: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether every unsupported-verdict rate is at most ``ALPHA`` within its binomial
    interval, and the worst record seen."""
    worst = max(records, key=lambda r: r["wrong"])
    return (all(r["wrong_low"] <= ALPHA for r in records),
            f"highest {100 * worst['wrong']:.1f} %: {worst['rule']} at r = {worst['truth']}, "
            f"{worst['design']}, {worst['distribution']}, n = {worst['n']}")


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


def rows(records: list[dict[str, Any]]) -> list[list[str]]:
    """One table row per record: the rule, truth, design, distribution, n, the rate of each
    verdict and of the unsupported ones with its interval (%)."""
    return [[r["rule"], r["region"], r["truth"], " / ".join(r["wrong_verdicts"]), r["design"],
             r["distribution"], str(r["n"]), _percent(r["agrees"]), _percent(r["disagrees"]),
             _percent(r["cannot_tell"]),
             f"{_percent(r['wrong'])} [{_percent(r['wrong_low'])}, "
             f"{_percent(r['wrong_high'])}]"] for r in records]


HEADER = ["rule", "claim", "true r", "unsupported", "design", "distribution", "n", "agrees %",
          "disagrees %", "cannot tell %", "unsupported % [95 %]"]


def markdown(records: list[dict[str, Any]], meta: dict[str, Any], command: str) -> str:
    """The results page: what was drawn, the target's check and the table."""
    met, detail = check(records)
    lines = page_head("How often the reproduction's verdicts are unsupported",
                      "benchmarks.calibration.verdicts", command, meta["host"],
                      f"{meta['date']}, {meta['seconds']:.0f} s")
    lines += [f"- {meta['draws']} draws per row; n = {', '.join(map(str, meta['sizes']))} "
              f"runs (or pairs) a side; seed {meta['seed']}",
              "- the rules of `benchmarks/papers/reproduce/claims.py` on the intervals and rank "
              "tests "
              "of `testbed/experiments/stats.py`; distributions as "
              "`benchmarks.calibration.coverage`'s",
              "- unsupported: a verdict the true ratio does not support (agrees with a false "
              "claim, disagrees with a true one, either on a band's edge)", "",
              f"- {'met' if met else '**missed**'}: no rule gives an unsupported verdict in "
              f"more than {100 * ALPHA:g} % of draws, within the rate's binomial interval "
              f"({detail})", "",
              "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER),
              *("| " + " | ".join(row) + " |" for row in rows(records)), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure every case; print the table (or ``--json``) and the target's check; exit 1
    when it is missed."""
    p = parser("benchmarks.calibration.verdicts",
               "unsupported verdicts of the reproduction's rules",
               quick=f"{QUICK_DRAWS} draws at n = {', '.join(map(str, QUICK_SIZES))}",
               out_help=None, markdown_help="also write a results page")
    p.add_argument("--draws", type=int, default=None, help=f"per row (default {DRAWS})")
    p.add_argument("--sizes", type=sizes_arg, default=None,
                   help=f"runs a side, comma-separated (default {','.join(map(str, SIZES))})")
    p.add_argument("--seed", type=int, default=SEED)
    args = p.parse_args(argv)
    draws = args.draws or (QUICK_DRAWS if args.quick else DRAWS)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    if draws < 1:
        p.error("--draws must be >= 1")
    session = Session.start("benchmarks.calibration.verdicts", argv, None, None)
    records = measure(sizes, draws, args.seed,
                      lambda message: print(f"verdicts: {message}", file=sys.stderr,
                                            flush=True))
    meta = {"host": host(), "date": now_iso(), "seconds": time.time() - session.started,
            "draws": draws, "sizes": list(sizes), "seed": args.seed}
    if not emit(({k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}
                 for record in records), args.json):
        print("| " + " | ".join(HEADER) + " |")
        for row in rows(records):
            print("| " + " | ".join(row) + " |")
    met, detail = check(records)
    print(f"{'met' if met else 'MISSED'}: unsupported verdicts at most {100 * ALPHA:g} % "
          f"({detail})", file=sys.stderr)
    session.page(args.markdown, lambda: markdown(records, meta, session.command))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
