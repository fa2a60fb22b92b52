"""benchmarks.papers.reproduce: the verdict rules, the papers' claims judged on given numbers, and
the
report."""

from __future__ import annotations

import datetime
import json
import math
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool

import pytest

from benchmarks.papers import cow as cow_bench
from benchmarks.papers import memory_queueing, t3d_fig6
from benchmarks.papers.reproduce import __main__ as cli
from benchmarks.papers.reproduce import claims, cow, memory, report, t3d, t3e, thesis
from benchmarks.papers.reproduce.claims import (
    AGREES,
    CANNOT_TELL,
    DISAGREES,
    Decision,
    Finding,
    Row,
    Spec,
    above,
    below,
    judge,
    within,
)
from benchmarks.papers.reproduce.context import Context, failure
from testbed.experiments.stats import Interval
from testbed.experiments.stats import Test as RankTest
from testbed.results.metrics import JobRow


def test_an_interval_inside_the_claimed_region_agrees_outside_disagrees_across_cannot_tell():
    assert judge(Interval(1.2, 1.1, 1.3), above(1.0)).verdict == AGREES
    assert judge(Interval(0.8, 0.7, 0.9), above(1.0)).verdict == DISAGREES
    assert judge(Interval(1.0, 0.9, 1.1), above(1.0)).verdict == CANNOT_TELL
    assert judge(Interval(0.5, 0.4, 0.6), below(1.0)).verdict == AGREES
    assert judge(Interval(1.0, 0.95, 1.05), within(0.9, 1.1)).verdict == AGREES
    assert judge(Interval(1.3, 1.2, 1.4), within(0.9, 1.1)).verdict == DISAGREES
    assert judge(Interval(0.8, 0.7, 0.85), within(0.9, 1.1)).verdict == DISAGREES
    assert judge(Interval(1.1, 1.0, 1.2), within(0.9, 1.1)).verdict == CANNOT_TELL


def test_no_interval_cannot_tell():
    assert judge(None, above(1.0)).verdict == CANNOT_TELL
    assert judge(Interval(2.0, None, None), above(1.0)) == Decision(CANNOT_TELL, "no interval")


def test_a_levels_band_lies_around_it_and_a_ratios_around_its_effect():
    assert claims.around(0.075).describe() == "in [0.05, 0.1125]"
    assert claims.magnitude(1.18).describe() == "in [1.12, 1.27]"


def test_an_interval_of_too_few_runs_gives_no_verdict():
    inside = Interval(1.0, 0.9, 1.1, confidence=0.75)
    decision = judge(inside, within(0.8, 1.25))
    assert decision.verdict == CANNOT_TELL and "states only 75.0 %" in decision.why
    assert judge(Interval(1.0, 0.9, 1.1, confidence=0.9), within(0.8, 1.25)).verdict == AGREES
    assert judge(Interval(1.0, 0.9, 1.1, confidence=0.875), below(0.8)).verdict == CANNOT_TELL


def test_a_claimed_difference_also_needs_the_rank_test():
    interval = Interval(1.2, 1.1, 1.3)
    assert judge(interval, above(1.0), p=0.01, null=1.0).verdict == AGREES
    weak = judge(interval, above(1.0), p=0.2, null=1.0)
    assert weak.verdict == CANNOT_TELL and "p = 0.2" in weak.why
    assert judge(Interval(0.8, 0.7, 0.9), above(1.0), p=0.2, null=1.0).verdict == CANNOT_TELL
    assert judge(Interval(0.8, 0.7, 0.9), above(1.0), p=0.01, null=1.0).verdict == DISAGREES


def test_a_band_around_no_difference_agrees_without_the_rank_test_but_leaving_it_needs_one():
    band = within(0.8, 1.25)
    assert judge(Interval(1.05, 1.02, 1.08), band, p=0.9, null=1.0).verdict == AGREES
    assert judge(Interval(1.5, 1.4, 1.6), band, p=0.3, null=1.0).verdict == CANNOT_TELL
    assert judge(Interval(1.5, 1.4, 1.6), band, p=0.01, null=1.0).verdict == DISAGREES


def test_an_absolute_threshold_ignores_the_rank_test():
    assert judge(Interval(0.95, 0.92, 0.97), above(0.9), p=0.9).verdict == AGREES


def test_a_claims_cells_are_one_family_where_one_cell_could_decide_it():
    up = [(Interval(1.2, 1.1, 1.3), above(1.0), RankTest(0.03, 0.001, "x")),
          (Interval(1.3, 1.2, 1.4), above(1.0), RankTest(0.04, 0.001, "x"))]
    raw, corrected = claims.judge_cells(up, 1.0)
    assert [d.verdict for d in raw] == [AGREES] * 2
    assert [d.verdict for d in corrected] == [CANNOT_TELL] * 2      # Holm: 0.06, 0.06
    assert claims.every(raw, corrected).verdict == AGREES            # every cell, each alone
    down = [(Interval(0.8, 0.7, 0.9), above(1.0), test) for _, _, test in up]
    assert claims.every(*claims.judge_cells(down, 1.0)).verdict == CANNOT_TELL  # one of two
    assert claims.every(*claims.judge_cells(down[:1], 1.0)).verdict == DISAGREES
    assert claims.cell_confidence(5) == pytest.approx(0.99)


def test_paired_difference_is_a_t_interval_of_the_pairs_differences():
    d = claims.paired_difference([11.0, 21.0, 32.0], [10.0, 20.0, 30.0])
    assert d.value == pytest.approx(4 / 3) and d.low < 4 / 3 < d.high
    assert d.half_width == pytest.approx(4.303 * math.sqrt(1 / 3) / math.sqrt(3), rel=1e-3)
    wider = claims.paired_difference([11.0, 21.0, 32.0], [10.0, 20.0, 30.0], 0.99)
    assert wider.half_width > d.half_width and wider.confidence == 0.99
    assert claims.paired_difference([1.0], [0.5]) == Interval(0.5, None, None)
    assert claims.paired_difference([], []) is None


def test_every_needs_all_cells_and_any_disagreement_disagrees():
    yes, no, unsure = (Decision(v, "") for v in (AGREES, DISAGREES, CANNOT_TELL))
    assert claims.every([yes, yes]).verdict == AGREES
    assert claims.every([yes, unsure]).verdict == CANNOT_TELL
    assert claims.every([yes, no, unsure]).verdict == DISAGREES
    assert claims.every([]).verdict == CANNOT_TELL
    assert claims.every([yes, unsure]).why == "of 2 cells: 1 agrees, 1 cannot tell"


def test_most_needs_more_than_half():
    yes, no, unsure = (Decision(v, "") for v in (AGREES, DISAGREES, CANNOT_TELL))
    assert claims.most([yes, yes, no]).verdict == AGREES
    assert claims.most([yes, unsure, unsure, no]).verdict == CANNOT_TELL
    assert claims.most([yes, no, no, unsure]).verdict == DISAGREES
    assert claims.most([yes, yes, no, no]).verdict == DISAGREES


def test_proportion_needs_six_of_six_to_call_a_usual_outcome():
    six = claims.proportion(6, 6)
    assert six.value == 1 and six.low == pytest.approx(0.5407, abs=1e-4)
    assert judge(six, above(0.5)).verdict == AGREES
    assert judge(claims.proportion(5, 5), above(0.5)).verdict == CANNOT_TELL
    assert judge(claims.proportion(0, 6), above(0.5)).verdict == DISAGREES


def test_classes_match_rank_by_rank_with_none_for_any():
    assert thesis.matches(("F", "CS"), ("F", None))
    assert not thesis.matches(("CS", "CS"), ("F", None))
    assert not thesis.matches(("DC",), ("DC", "DC"))


def _fig6(points: dict[str, list[tuple[float, float | None, bool]]],
          loads: tuple[float, ...] = (0.3, 0.9)) -> list[dict]:
    """``t3d_fig6`` records: per scheme, (slowdown, half-width, saturated) at each load."""
    return [{"policy": p, "load": x, "slowdown": s, "ci": ci, "growth": 2.5 if sat else 1.05,
             "saturated": t3d_fig6.saturated(2.5 if sat else 1.05),
             "delivered": x * (0.8 if sat else 0.99)}
            for p, curve in points.items() for x, (s, ci, sat) in zip(loads, curve, strict=True)]


FIG6 = {"fcfs": [(1000, 100, True), (9000, 900, True)],
        "backfill": [(100, 10, False), (500, 50, False)],
        "prime": [(300, 20, False), (900, 60, True)],
        "gang 10 s": [(2, 1, False), (8000, 900, True)],           # bounded: lost by 0.9
        "gang 600 s": [(10, 2, False), (9000, 900, True)],
        "gang 10 s ∞": [(2, 1, False), (12, 6, False)],
        "gang 600 s ∞": [(10, 2, False), (60, 20, False)]}


def _t3d_verdicts(records: list[dict]) -> dict[str, str]:
    return {k: f.decision.verdict for k, f in t3d.judge_records(records, "given").items()}


def test_t3d_claims_are_judged_on_the_unbounded_gang_with_the_bounded_beside():
    found = t3d.judge_records(_fig6(FIG6), "given")
    assert set(found) == {s.key for s in t3d.SPECS if not s.key.startswith("t3d-prod")} - {
        "t3d-prime-insensitive", "t3d-fig4-example"}           # run by run(), not from Fig 6
    assert {k: f.decision.verdict for k, f in found.items()} == dict.fromkeys(found, AGREES)
    gang = found["t3d-gang"]
    assert gang.ours.startswith("gang 10 s ∞: 0.3: 2 ± 1, 0.9: 12 ± 6; gang 600 s ∞:")
    assert "for comparison, 16 rows: gang 10 s: 0.3: 2 ± 1, 0.9: 8000 ± 900 (sat.) (fails)" \
        in gang.ours
    assert gang.decision.why.startswith("gang 10 s ∞ holds: below every batch scheme at 0.3, "
                                        "0.9; not at none; above one at none; gang 600 s ∞ ")
    near = found["t3d-gang-near-one"]
    assert "16 rows: gang 10 s: 0.3: 1.05 (0.99), 0.9: 2.5 (0.8) (sat.) (holds)" in near.ours
    assert near.decision.why == "gang 10 s ∞ holds: saturated never; gang 600 s ∞ holds: " \
                                "saturated never"
    assert "gang 10 s" not in found["t3d-fcfs-first"].decision.why.replace("gang 10 s ∞", "")


def test_t3d_saturation_is_a_queue_that_keeps_growing():
    steady = [JobRow(f"j{i}", 1, float(i), end=i + 0.5) for i in range(100)]
    assert t3d_fig6.growth(steady) == pytest.approx(1.0, rel=0.05)
    assert not t3d_fig6.saturated(t3d_fig6.growth(steady))
    # one job served per 2 s of arrivals at one a second: the backlog grows linearly from empty
    backlog = [JobRow(f"j{i}", 1, float(i), end=2.0 * i + 1) for i in range(100)]
    grows = t3d_fig6.growth(backlog)
    assert 2.5 < grows < 3.5 and t3d_fig6.saturated(grows)
    assert not t3d_fig6.saturated(t3d_fig6.GROWTH)


def test_t3d_rows_read_t3d_fig6_verdicts_holds_partly_fails():
    wide = {**FIG6, "gang 600 s ∞": [(10, 2, False), (60, 1e4, False)]}
    assert _t3d_verdicts(_fig6(wide))["t3d-gang"] == CANNOT_TELL        # partly: overlaps
    above = {**FIG6, "gang 600 s ∞": [(10, 2, False), (800, 20, False)]}
    assert _t3d_verdicts(_fig6(above))["t3d-gang"] == DISAGREES         # above easy at 0.9
    early = {**FIG6, "gang 10 s ∞": [(2, 1, True), (12, 6, True)]}
    verdicts = _t3d_verdicts(_fig6(early))
    assert verdicts["t3d-gang-near-one"] == DISAGREES
    assert verdicts["t3d-fcfs-first"] == AGREES                         # a tie at 0.3
    late = {**FIG6, "fcfs": [(1000, 100, False), (9000, 900, False)]}
    assert _t3d_verdicts(_fig6(late))["t3d-fcfs-first"] == DISAGREES    # fcfs never
    for points in (FIG6, wide, above, early, late):              # each row: fig6's verdicts
        records = _fig6(points)
        judged = t3d_fig6.claims([r for r in records if r["policy"] not in t3d.BOUNDED])
        found = t3d.judge_records(records, "given")
        for row, key in t3d.CLAIMS.items():
            mine = {t3d.VERDICTS[c["verdict"]] for c in judged if c["key"] == key}
            verdict = found[row].decision.verdict
            assert mine and (verdict == mine.pop() if len(mine) == 1 else
                             verdict == (DISAGREES if DISAGREES in mine else CANNOT_TELL))


SEEDS = (0.6, 1.0, 1.5, 0.8, 1.2)      # how each replication's draws scale every cell's RT


def _cow_records(cells: list[tuple[float, float, float]], rt: dict[str, list[float]],
                 u: dict[str, list[float]]) -> list[dict]:
    """Records of five replications a cell whose RTs follow the seed (as replications that
    share their seeds do), around the given means; U the same in every replication."""
    out = []
    for p in ("afcfs", "lgfs"):
        for i, (lam, own, mu) in enumerate(cells):
            rts = [rt[p][i] * scale * (1 + 0.002 * k) for k, scale in enumerate(SEEDS)]
            us = [u[p][i] + 0.001 * k for k in range(len(SEEDS))]
            out.append({"policy": p, "inv_lambda": lam, "inv_lambda_owner": own,
                        "inv_mu_owner": mu, "rt": sum(rts) / 5, "rt_ci": cow_bench.interval(rts),
                        "u": sum(us) / 5, "u_ci": cow_bench.interval(us), "rts": rts, "us": us,
                        "us_owners": [0.1 / own] * len(SEEDS), "growth": 1.05,
                        "delivered": 0.99, "rts_early": [0.98 * x for x in rts],
                        "rts_late": [1.02 * x for x in rts]})
    return out


def test_cow_claims_are_judged_on_paired_replications():
    set1 = _cow_records([(1.0, x, 1.0) for x in (1.0, 0.8, 0.6, 0.4)],
                        {"afcfs": [20, 80, 170, 500], "lgfs": [15, 70, 160, 470]},
                        {"afcfs": [0.5, 0.45, 0.37, 0.23], "lgfs": [0.52, 0.47, 0.36, 0.24]})
    cells2 = [(lam, k, k) for lam in (1.0, 0.8, 0.6) for k in (1.0, 2.0, 4.0, 8.0)]
    afcfs = [20, 22, 25, 28, 95, 75, 78, 88, 240, 225, 227, 235]
    lgfs = [17, 15, 17, 20, 84, 52, 43, 47, 207, 225, 186, 188]
    set2 = _cow_records(cells2, {"afcfs": afcfs, "lgfs": lgfs},
                        {"afcfs": [0.5] * 12, "lgfs": [0.55] * 11 + [0.4]})
    found = cow.judge_records(set1, set2, "given")
    verdicts = {k: f.decision.verdict for k, f in found.items()}
    assert verdicts["cow-rt-set1"] == AGREES
    assert verdicts["cow-rt-set2"] == AGREES          # 11 of 12 cells; (0.6, 2) is a tie
    assert found["cow-rt-set2"].decision.why == "of 12 cells: 11 agrees, 1 cannot tell"
    assert verdicts["cow-u"] == AGREES
    assert verdicts["cow-shape-owners"] == AGREES
    assert verdicts["cow-shape-load"] == AGREES
    # The replications' spread hides LGFS's lead from intervals side by side, not from pairs.
    lead = [r for r in set1 if r["inv_lambda_owner"] == 0.8]
    assert lead[1]["rt"] + lead[1]["rt_ci"] > lead[0]["rt"] - lead[0]["rt_ci"]
    diff = claims.paired_difference(lead[1]["rts"], lead[0]["rts"])
    assert diff.high < 0 and 2 * diff.half_width < lead[0]["rt_ci"]
    one = cow.judge_records(_cow_records([(1.0, 1.0, 1.0)], {"afcfs": [20], "lgfs": [20]},
                                         {"afcfs": [0.5], "lgfs": [0.5]}), [], "given")
    assert one["cow-rt-set1"].decision.verdict == CANNOT_TELL


def test_cow_cells_that_did_not_settle_are_judged_at_the_runs_length():
    cells = [(1.0, x, 1.0) for x in (1.0, 0.8, 0.6, 0.4)]
    set1 = _cow_records(cells, {"afcfs": [20, 80, 170, 500], "lgfs": [15, 70, 160, 470]},
                        {"afcfs": [0.5, 0.45, 0.37, 0.23], "lgfs": [0.52, 0.47, 0.36, 0.24]})
    for r in set1:
        if r["inv_lambda_owner"] <= 0.6:          # backlogs: the late arrivals wait longer
            r["delivered"] = cow_bench.DELIVERED_SETTLED - 0.2
            r["rts_late"] = [2 * x for x in r["rts_early"]]
    found = cow.judge_records(set1, [], "given")
    assert found["cow-rt-set1"].decision.verdict == AGREES
    assert "(1, 0.4)†: 0.94" in found["cow-rt-set1"].ours
    assert "0.4†: 512 ± 2.2e+02" in found["cow-shape-owners"].ours
    assert found["cow-threshold"].decision.verdict == AGREES
    assert "lgfs 1/λ'=0.6 (14.33 PEs left): 2 [2, 2]" in found["cow-threshold"].ours
    for r in set1:
        if r["inv_lambda_owner"] == 0.8:          # 14.75 PEs left, yet growing
            r["rts_late"] = [2 * x for x in r["rts_early"]]
    assert cow.judge_records(set1, [], "given")["cow-threshold"].decision.verdict == DISAGREES
    for r in set1:
        if r["inv_lambda_owner"] == 0.4:          # a replication stopped at the horizon
            r.update(dict.fromkeys(cow_bench.FIGURES), settled=False)
    stopped = cow.judge_records(set1, [], "given")
    assert stopped["cow-rt-set1"].decision.verdict == CANNOT_TELL
    assert "(1, 0.4): stopped at its horizon" in stopped["cow-rt-set1"].ours


def test_cow_u_counts_every_busy_processor_with_the_gangs_beside():
    cells = [(1.0, 1.0, 1.0)]
    # the gangs' U higher under AFCFS, but LGFS's owners busier: every busy processor counts
    set1 = _cow_records(cells, {"afcfs": [20], "lgfs": [15]}, {"afcfs": [0.5], "lgfs": [0.48]})
    for r in set1:
        r["us_owners"] = [0.2 if r["policy"] == "lgfs" else 0.1] * len(SEEDS)
    found = cow.judge_records(set1, [], "given")
    assert found["cow-u"].decision.verdict == AGREES
    assert "the gangs' U alone (not judged): (1, 1): 0.96" in found["cow-u"].ours


def test_cow_advantage_largest_with_owners_as_often_as_gangs_and_constant_below_08():
    cells = [(1.0, x, 1.0) for x in (1.0, 0.8, 0.6, 0.4)]
    u = {"afcfs": [0.5] * 4, "lgfs": [0.5] * 4}
    holds = _cow_records(cells, {"afcfs": [20, 80, 170, 500], "lgfs": [14, 72, 158, 462]}, u)
    assert cow.judge_records(holds, [], "given")["cow-advantage-owners"].decision.verdict \
        == AGREES
    apart = _cow_records(cells, {"afcfs": [20, 80, 170, 500], "lgfs": [14, 72, 100, 480]}, u)
    assert cow.judge_records(apart, [], "given")["cow-advantage-owners"].decision.verdict \
        == DISAGREES                                  # 0.59 at 0.6 against 0.96 at 0.4


def test_cow_tie_at_06_2_and_the_u_gap_at_06():
    cells2 = [(lam, k, k) for lam in (1.0, 0.8, 0.6) for k in (1.0, 2.0)]
    rt = {"afcfs": [20, 22, 95, 75, 240, 225], "lgfs": [17, 15, 84, 52, 207, 226]}
    u = {"afcfs": [0.5] * 6, "lgfs": [0.52, 0.52, 0.53, 0.53, 0.6, 0.6]}
    found = cow.judge_records([], _cow_records(cells2, rt, u), "given")
    assert found["cow-equal-06-2"].decision.verdict == AGREES
    assert found["cow-u-gap"].decision.verdict == AGREES
    apart = {"afcfs": rt["afcfs"], "lgfs": [17, 15, 84, 52, 207, 150]}
    assert cow.judge_records([], _cow_records(cells2, apart, u), "given")[
        "cow-equal-06-2"].decision.verdict == DISAGREES


def test_t3e_claims_are_paired_by_seed():
    records = []
    for seed in range(1, 9):
        records += [{"config": "before", "seed": seed, "busy": 0.80 + seed / 1000,
                     "large_mean": 260.0 + seed},
                    {"config": "nersc", "seed": seed, "busy": 0.95 + seed / 1000,
                     "busy_days": [0.9] * 13 + [0.97], "bins": [0.065, 0.557, 0.287, 0.091],
                     "large_mean": 11.0 + seed, "large_wait": 5.0 + seed,
                     "small_wait": 4.0 + seed},
                    {"config": "no-prime", "seed": seed, "busy": 0.83,
                     "large_mean": 430.0 + seed},
                    {"config": "split-gang", "seed": seed, "busy": 0.85 + seed / 900}]
    found = t3e.judge_records(records, "given")
    assert {k: f.decision.verdict for k, f in found.items()} == {
        "t3e-utilization": AGREES, "t3e-acceptance": AGREES, "t3e-utilization-gain": AGREES,
        "t3e-utilization-steps": CANNOT_TELL, "t3e-table2-shares": AGREES,
        "t3e-large-turnaround": AGREES, "t3e-even-waits": AGREES,
        "t3e-balancer-example": AGREES, "t3e-slice-formula": AGREES}
    assert found["t3e-slice-formula"].ours.startswith("switch 0 s -> slice 60 s (paper 60 s), "
                                                      "switch 60 s -> slice 1260 s")
    assert "utilization split-gang / before: 1.06" in found["t3e-utilization-steps"].ours
    assert "dedicated" in found["t3e-utilization-steps"].decision.why
    assert "129-512 PEs: 9.1 [9.1, 9.1] % (paper 9.1 %)" in found["t3e-table2-shares"].ours
    for r in records:
        if r["config"] == "nersc":
            r["large_wait"] = 20 * r["small_wait"]
            r["busy_days"] = [0.9] * 14
            r["bins"] = [0.02, 0.557, 0.287, 0.136]
    worse = t3e.judge_records(records, "given")
    assert worse["t3e-even-waits"].decision.verdict == CANNOT_TELL      # NQS's, not ours
    assert "not expected to match" in worse["t3e-even-waits"].decision.why
    assert worse["t3e-acceptance"].decision.verdict == DISAGREES        # no day at 95 %
    assert worse["t3e-table2-shares"].decision.verdict == DISAGREES
    few = t3e.judge_records([r for r in records if r["seed"] <= 5], "given")
    assert few["t3e-large-turnaround"].decision.verdict == CANNOT_TELL  # 5 pairs: p >= 0.0625


def _rows() -> list[Row]:
    spec = Spec("k", "COW", "§3.2", "LGFS | AFCFS", "< 1")
    return [Row(spec, Finding("0.9 [0.8, 0.95]", Decision(AGREES, "all < 1"), "16 PEs",
                              ("cow-set1.png",))),
            Row(Spec("m", "MEMORY", "Fig 5", "admission", "linear"),
                Finding("-", claims.unavailable("needs root: memory cgroups and swapon")))]


def _header() -> dict:
    return {"host": "vm (Linux 6, x86_64)", "cores": 2, "date": "2026-11-25 08:00:00 +0000",
            "command": "python -m benchmarks.papers.reproduce --quick", "commit": "abc123",
            "size": "quick", "seconds": 600.0}


def test_report_page_has_the_header_a_row_per_claim_and_the_plots():
    page = report.markdown(_rows(), _header())
    assert "Written by `python -m benchmarks.papers.reproduce --quick`" in page
    for fact in ("vm (Linux 6, x86_64), 2 cores", "2026-11-25 08:00:00", "abc123",
                 "wall time 600 s (10.0 min)"):
        assert fact in page
    assert "Verdicts: 1 agrees, 0 disagrees, 1 cannot tell" in page
    table = [line for line in page.splitlines() if line.startswith("| ")]
    assert len(table) == 3                              # the heading and two claims
    assert "LGFS \\| AFCFS" in table[1] and "**agrees**" in table[1]
    assert "needs root: memory cgroups and swapon" in table[2]
    assert "![cow-set1.png](cow-set1.png)" in page
    assert page.index("## COW") < page.index("## MEMORY")


def test_report_json_holds_every_row_and_the_tally():
    doc = json.loads(json.dumps(report.document(_rows(), _header())))
    assert doc["verdicts"] == {AGREES: 1, DISAGREES: 0, CANNOT_TELL: 1}
    assert [c["key"] for c in doc["claims"]] == ["k", "m"]
    assert doc["claims"][0]["plots"] == ["cow-set1.png"] and doc["commit"] == "abc123"


def test_a_claim_without_a_finding_says_why():
    rows = claims.rows([Spec("a", "T3D", "Fig 6", "x", "y")], {}, "not measured at size quick")
    assert rows[0].finding.decision == Decision(CANNOT_TELL, "not measured at size quick")


def test_papers_are_chosen_by_name_in_report_order():
    assert [p.name for p in cli.choose("cow,thesis")] == ["THESIS", "COW"]
    assert len(cli.choose(None)) == 5
    with pytest.raises(ValueError, match="unknown paper 'NOPE'"):
        cli.choose("nope")


def test_claim_keys_are_unique_across_papers():
    keys = [s.key for p in cli.PAPERS for s in p.module.SPECS]
    assert len(keys) == len(set(keys))


def test_a_paper_that_cannot_run_here_says_why_in_every_row(monkeypatch, tmp_path):
    monkeypatch.setattr(cli.t3e, "unavailable", lambda: "needs a T3E", raising=False)
    found = cli.measure("T3E", Context("quick", tmp_path, tmp_path))
    assert set(found) == {s.key for s in cli.t3e.SPECS}
    assert all(f.decision == Decision(CANNOT_TELL, "needs a T3E") for f in found.values())


def test_memory_without_paging_still_simulates_the_queueing(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "paging_unavailable", lambda: "needs root: memory cgroups")
    # the jumps' row builds the C walk (a compiler process): its own test is realtime
    monkeypatch.setattr(memory, "jump_shares", lambda: Finding("-", claims.unavailable("x")))
    found = cli.measure("MEMORY", Context("tiny", tmp_path, tmp_path))
    assert set(found) == {s.key for s in memory.SPECS}
    paging = [k for k in found if k.startswith(("memory-f5", "memory-f6", "memory-f7"))]
    assert all(found[k].decision == Decision(CANNOT_TELL, "needs root: memory cgroups")
               for k in paging)
    assert found["memory-43-queued-80"].ours.startswith("queued share at load 0.8: ")
    assert "no model of paging" in found["memory-43-saturation-locality"].decision.why


def test_memory_queueing_level_to_half_load_then_growing_and_80_percent_at_08():
    def points(shares: dict[float, list[float]]) -> list[dict[str, object]]:
        return [{"load": x, "seed": s, "queued": v} for x, values in shares.items()
                for s, v in enumerate(values, start=1)]

    paper = points({0.3: [0.02, 0.03, 0.01, 0.02], 0.5: [0.05, 0.06, 0.04, 0.05],
                    0.8: [0.79, 0.81, 0.80, 0.82]})
    found = memory.queueing_rows(paper, "given")
    assert found["memory-43-queued-grows"].decision.verdict == AGREES
    assert found["memory-43-queued-80"].decision.verdict == AGREES
    early = points({0.3: [0.02, 0.03, 0.01, 0.02], 0.5: [0.35, 0.36, 0.34, 0.35],
                    0.8: [0.40, 0.41, 0.39, 0.42]})
    found = memory.queueing_rows(early, "given")
    assert found["memory-43-queued-grows"].decision.verdict == DISAGREES   # grows before 0.5
    assert found["memory-43-queued-80"].decision.verdict == DISAGREES      # 40 %, not 80 %


def test_a_queued_job_is_one_that_waited():
    assert memory_queueing.queued_fraction([0.0, 0.0, 5.0, 1e-7]) == 0.25


def test_the_estimate_spreads_simulations_over_the_workers():
    papers = cli.choose("t3d,cow,thesis")
    t3d_s, cow_s = (p.seconds[1] for p in papers if not p.emulated)
    (thesis_s,) = (p.seconds[1] for p in papers if p.emulated)
    assert cli.estimate(papers, "quick", 2) == thesis_s + (t3d_s + cow_s) / 2
    assert cli.estimate(papers, "quick", 1) == thesis_s + t3d_s + cow_s


def test_ctrl_c_ends_the_run_with_one_line_and_status_130(tmp_path, monkeypatch, capsys):
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_all", interrupted)
    try:
        status = cli.main(["--only", "COW", "--size", "tiny", "--out", str(tmp_path)])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C left benchmarks.papers.reproduce as a traceback")
    assert status == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"benchmarks.papers.reproduce: interrupted; the papers done are kept in {tmp_path} (the "
        f"same "
        "command with --resume goes on)")


@pytest.mark.realtime
def test_t3d_at_tiny_size_measures_the_production_figures_on_real_processes(tmp_path):
    assert cli.main(["--only", "T3D", "--size", "tiny", "--out", str(tmp_path)]) == 0
    rows = {c["key"]: c for c in json.loads((tmp_path / "claims.json").read_text())["claims"]}
    for key in t3d.PRODUCTION_ROWS:
        assert rows[key]["ours"] != "-" and "failed" not in rows[key]["why"], rows[key]
    assert rows["t3d-prod-utilization"]["checks"] == "measurement"


@pytest.mark.realtime
def test_only_cow_at_tiny_size_writes_the_report(tmp_path):
    assert cli.main(["--only", "COW", "--size", "tiny", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "claims.json").read_text())
    assert [c["key"] for c in doc["claims"]] == [s.key for s in cow.SPECS]
    assert all(c["verdict"] in claims.VERDICTS for c in doc["claims"])
    assert (tmp_path / "cow-set1.png").stat().st_size > 1000
    assert "| COW |" in (tmp_path / "report.md").read_text()


def test_a_failed_part_loses_only_its_own_rows(tmp_path):
    ctx = Context("quick", tmp_path, tmp_path)

    def broken(_: Context) -> dict[str, Finding]:
        raise subprocess.CalledProcessError(
            1, [sys.executable, "-m", "testbed.cli", "run", "w.txt", "--out", "runs/x"])

    found = ctx.attempt(broken, ["a", "b"])
    assert set(found) == {"a", "b"}
    assert found["a"].decision == Decision(CANNOT_TELL,
                                           "the run failed: testbed run exited 1 (runs/x)")
    assert failure(ValueError("bad walk")) == "bad walk"


def test_each_invocation_has_run_directories_of_its_own(tmp_path):
    # A paper run again into the same --runs met its first run's directories, which
    # `testbed run` refuses to overwrite (T3D's production figures failed so, 2026-12-07).
    began = datetime.datetime(2026, 12, 7, 1, 45, 7, tzinfo=datetime.UTC)
    first = cli.invocation_runs(tmp_path, began)
    assert first == tmp_path / "20261207T014507Z"
    first.mkdir()
    second = cli.invocation_runs(tmp_path, began)
    assert second != first and second.parent == tmp_path and not second.exists()


def test_a_dead_worker_ends_the_run_rather_than_failing_one_paper(tmp_path):
    # A Ctrl-C kills the pool's workers too: the paper must not be kept as failed rows.
    ctx = Context("quick", tmp_path, tmp_path)

    def interrupted(_: Context) -> dict[str, Finding]:
        raise BrokenProcessPool("a worker died")

    with pytest.raises(BrokenProcessPool):
        ctx.attempt(interrupted, ["a"])


def test_a_figure_row_checks_the_magnitude_and_says_when_a_miniature_cannot_match():
    band = claims.magnitude(1.26)                    # +26 %: the effect within 1/1.5 to 1.5 x
    assert (round(band.low, 4), round(band.high, 4)) == (1.1733, 1.39)
    assert claims.magnitude(0.8).low == pytest.approx(0.7) and \
        claims.magnitude(0.8).high == pytest.approx(1 - 0.2 / 1.5)
    up = Decision(AGREES, "all > 1")
    near = Interval(1.25, 1.2, 1.3)
    assert claims.figure(up, near, 1.26, band).verdict == AGREES
    small = Interval(1.025, 1.02, 1.03)            # the right side, a tenth of the size
    assert claims.figure(up, small, 1.26, band).verdict == DISAGREES
    why = claims.figure(up, small, 1.26, band, "2 ranks against 32")
    assert why.verdict == CANNOT_TELL and why.why.endswith("not expected to match: 2 ranks "
                                                           "against 32")
    # a wrong direction disagrees whatever the setup
    down = Decision(DISAGREES, "all < 1")
    assert claims.figure(down, Interval(0.9, 0.8, 0.95), 1.26, band, "miniature").verdict \
        == DISAGREES
    # the figure in the band but the direction's rank test not backing it: cannot tell
    unsure = Decision(CANNOT_TELL, "p = 0.1")
    assert claims.figure(unsure, near, 1.26, band).verdict == CANNOT_TELL


def _slowdowns(curves: dict[str, list[float]], loads=(0.3, 0.9)) -> list[dict]:
    return [{"policy": p, "load": x, "slowdown": s, "ci": s / 20, "growth": 1.0,
             "saturated": False, "delivered": x} for p, curve in curves.items()
            for x, s in zip(loads, curve, strict=True)]


def test_easy_and_prime_much_better_than_fcfs_needs_half_its_slowdown_at_every_load():
    much = _slowdowns({"fcfs": [1000, 9000], "backfill": [100, 500], "prime": [300, 900]})
    assert t3d.better_than_fcfs(much).verdict == AGREES
    little = _slowdowns({"fcfs": [1000, 9000], "backfill": [100, 500], "prime": [700, 900]})
    assert t3d.better_than_fcfs(little).verdict == CANNOT_TELL     # prime 0.7 of fcfs at 0.3
    worse = _slowdowns({"fcfs": [1000, 9000], "backfill": [2000, 500], "prime": [300, 900]})
    assert t3d.better_than_fcfs(worse).verdict == DISAGREES


def test_thesis_ratios_judge_every_pair_with_the_rank_test():
    wait = {"gang": [1.0, 1.1, 0.9, 1.05], "fcs": [2.0, 2.1, 1.9, 2.05],
            "ics": [3.0, 3.1, 2.9, 3.05], "local": [4.0, 4.1, 3.9, 4.05]}
    text, decision = thesis._ratios(wait, [("gang", "fcs"), ("fcs", "ics"), ("ics", "local")],
                                    claims.below(1.0), "long-job wait")
    assert decision.verdict == AGREES and text.startswith("gang / fcs: 0.5")
    flipped = {**wait, "fcs": [3.5, 3.6, 3.4, 3.55]}
    assert thesis._ratios(flipped, [("fcs", "ics")], claims.below(1.0), "w")[1].verdict \
        == DISAGREES
    same = {"gang": [1.78, 1.79, 1.77, 1.78], "ics": [1.776, 1.78, 1.77, 1.775]}
    assert thesis._ratios(same, [("gang", "ics")], thesis.EQUAL, "r")[1].verdict == AGREES


def test_memory_fig6_overallocation_slows_low_locality_only():
    def runs(x: float) -> list[float]:
        return [x * (1 + 0.01 * k) for k in range(6)]      # full size: 6 rounds

    total = {(1.0, 8, "C=1"): runs(10), (1.0, 8, "C=2"): runs(25), (1.0, 8, "C=0.8"): runs(10.5),
             (1.0, 8, "C=1.5"): runs(14), (2.0, 8, "C=1"): runs(8), (2.0, 8, "C=2"): runs(8.4)}
    found = memory._fig6(total, 8, "given")
    assert found["memory-f6-overallocation"].decision.verdict == AGREES
    assert found["memory-f6-stays-low"].decision.verdict == AGREES
    assert found["memory-c1-best"].decision.verdict == AGREES    # 0.8 and 1.5 both slower
    faster = {**total, (1.0, 8, "C=0.8"): runs(9)}
    assert memory._fig6(faster, 8, "given")["memory-c1-best"].decision.verdict == DISAGREES
    paged = {**total, (2.0, 8, "C=2"): runs(20)}
    assert memory._fig6(paged, 8, "given")["memory-f6-stays-low"].decision.verdict == DISAGREES


def test_t3d_production_figures_from_given_jobs():
    rows = [JobRow("i1", 1, 0.0, start=0.0, end=2.0, work=1.0, runtime=1.5, response=2.0,
                   job_class="interactive"),
            JobRow("i2", 1, 0.0, start=1.0, end=4.0, work=0.5, runtime=2.5, response=4.0,
                   job_class="interactive"),
            JobRow("p1", 2, 0.0, start=0.0, end=9.0, work=8.0, runtime=9.0, response=9.0,
                   stops=2),
            JobRow("p2", 2, 0.0, start=0.0, end=9.0, work=8.0, runtime=9.0, response=9.0)]
    found = t3d.production_figures(rows)
    assert found["t3d-prod-slowdown"] == pytest.approx(6.0 / 4.0)
    assert found["t3d-prod-bounded"] == pytest.approx((2.0 + 4.0) / 2)   # threshold 1 s
    assert found["t3d-prod-preempted"] == pytest.approx(0.25)
    assert found["t3d-prod-mean-slowdown"] == pytest.approx((2.0 / 1.5 + 4.0 / 2.5) / 2)
    assert math.isnan(found["t3d-prod-preempt-sizes"])       # no 1-PE job was preempted
    rows[0] = JobRow("i1", 1, 0.0, start=0.0, end=2.0, work=1.0, runtime=1.5, response=2.0,
                     job_class="interactive", stops=1)
    assert t3d.production_figures(rows)["t3d-prod-preempt-sizes"] == pytest.approx(1.0)
    bounded = claims.figure(None, Interval(2.2, 2.0, 2.4), 2.27, claims.magnitude(2.27))
    assert bounded.verdict == AGREES
    far = claims.figure(None, Interval(1.05, 1.0, 1.1), 2.27, claims.magnitude(2.27), "2 PEs")
    assert far.verdict == CANNOT_TELL and "not expected to match: 2 PEs" in far.why


def test_fig_5_1_is_linear_with_a_fixed_cost_per_job_and_not_with_a_switch_cost():
    def rounds(runtime) -> list[dict[int, float]]:
        return [{k: runtime(k) * (1 + 0.001 * i) for k in (1, 2, 4, 8)} for i in range(5)]

    text, decision = thesis.linearity(rounds(lambda k: 0.15 + 1.0 * k))  # a line, intercept
    assert decision.verdict == AGREES
    assert "R(k) / (k R(1)): k=2: 0.93" in text and "intercept, a fixed cost per job, 0.15" \
        in text
    text, decision = thesis.linearity(rounds(lambda k: k + 0.02 * k * k))    # bends upwards
    assert decision.verdict == DISAGREES and "k=8: 1.113" in text


def test_every_row_says_what_it_checks():
    for module in (thesis, memory, t3d, t3e, cow):
        assert all(s.checks in claims.CHECKS for s in module.SPECS)
    with pytest.raises(ValueError, match="unknown checks 'vibes'"):
        Spec("k", "COW", "§3", "c", "p", "vibes")
    page = report.markdown(_rows(), _header())
    assert "| paper | where | claim | checks | published |" in page
    assert "| COW | §3.2 | LGFS \\| AFCFS | direction | < 1 |" in page


def test_fcfs_runtime_is_work_plus_the_launch_overhead_in_each_group():
    launch = [1.40, 1.42, 1.45, 1.41, 1.43]
    fits = [{"short": (1.60 + 0.01 * i, 0.2), "long": (70.5 + 0.1 * i, 68.7)} for i in range(5)]
    text, decision = thesis.fcfs_overhead(fits, launch)
    assert decision.verdict == AGREES and "short: 1 [0.98" in text and "runtime - work 1.4" in text
    slow = [{"short": (3.5 + 0.01 * i, 0.2), "long": (70.5 + 0.1 * i, 68.7)} for i in range(5)]
    assert thesis.fcfs_overhead(slow, launch)[1].verdict == DISAGREES    # short 2.1 x
    assert thesis.fcfs_overhead(fits, [])[1].verdict == CANNOT_TELL
    alone = [{"long": r["long"]} for r in fits]
    assert thesis.fcfs_overhead(alone, launch)[1].verdict == CANNOT_TELL   # no short job


def test_group_means_average_the_done_jobs_of_each_group():
    # compress 10: short = work under 6 s.  j1 and j2 short and done, j3 long and done, j4 failed.
    def job(name: str, start: float, end: float, status: str = "done"
            ) -> list[dict[str, object]]:
        return [{"t": 0.0, "event": "arrival", "job": name, "due": 0.0},
                {"t": start, "event": "start", "job": name},
                {"t": end, "event": "finish", "job": name, "status": status,
                 "exit_code": 0 if status == "done" else 1, "reason": ""}]

    works = {"j1": 2.0, "j2": 1.0, "j3": 8.0, "j4": 1.0}
    log = [{"t": 0.0, "event": "run_start",
            "config": {"scheduler": "fcfs", "machine": {"pes": 1, "oversubscribed": False}}},
           {"t": 0.0, "event": "workload", "meta": {"compress": "10"}, "jobs": [
               {"job": j, "arrival": 0.0, "pes": 1, "work": w} for j, w in works.items()]},
           *job("j1", 0.0, 3.5), *job("j2", 3.5, 5.0), *job("j3", 5.0, 14.0),
           *job("j4", 14.0, 14.5, "failed"),
           {"t": 14.5, "event": "run_end", "status": "complete"}]
    assert thesis.group_means(log) == {"short": (2.5, 1.5), "long": (9.0, 8.0)}


def test_memory_admission_is_what_queues_the_simulated_jobs():
    tight = memory_queueing.point(150, 0.8, 1, fits=1)
    roomy = memory_queueing.point(150, 0.8, 1, fits=1000)
    assert tight["done"] == roomy["done"] == 150
    assert tight["queued"] > 0.2 and roomy["queued"] == 0.0


def test_memory_fig7_rows_say_why_the_quick_run_leaves_them_out(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "paging_unavailable", lambda: None)
    monkeypatch.setattr(memory, "_fig5", lambda ctx: {})
    monkeypatch.setattr(memory, "_queueing", lambda ctx: {})
    monkeypatch.setattr(memory, "jump_shares", lambda: Finding("-", claims.unavailable("x")))
    found = memory.run(Context("quick", tmp_path, tmp_path))
    for key in ("memory-f7-response", "memory-f7-slowdown"):
        why = found[key].decision.why
        assert why.startswith("not run at size quick") and "16 nodes" in why
        assert "1000 jobs per load" in why


def test_t3d_rows_say_how_many_batches_each_point_counted():
    records = [{**r, "batches": 29} for r in _fig6(FIG6)]
    found = t3d.judge_records(records, "given")
    assert found["t3d-gang"].ours.startswith("29 batches a point (the first dropped besides): "
                                             "gang 10 s ∞: 0.3:")
    assert found["t3d-better-than-fcfs"].ours.startswith("29 batches a point")


@pytest.mark.realtime
def test_the_header_does_not_count_the_reports_own_directory_as_a_change(tmp_path, monkeypatch):
    from benchmarks.papers.reproduce import report

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                       check=True, capture_output=True)

    (tmp_path / "out").mkdir()
    (tmp_path / "code.py").write_text("a = 1\n")
    (tmp_path / "out" / "report.md").write_text("old\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "x")
    monkeypatch.setattr(report, "ROOT", tmp_path)
    (tmp_path / "out" / "report.md").write_text("new\n")
    assert "uncommitted" not in report.head("c", "tiny", 0.0, tmp_path / "out")["commit"]
    assert "uncommitted" in report.head("c", "tiny", 0.0)["commit"]
    (tmp_path / "code.py").write_text("a = 2\n")
    assert "uncommitted" in report.head("c", "tiny", 0.0, tmp_path / "out")["commit"]


def test_memory_fig5_counts_are_past_what_the_loosest_limit_admits():
    assert memory.fig5_jobs(4) == (6, 12)            # C = 1.5 admits 6 on memory for 4
    assert memory.fig5_jobs(2) == (3, 6)


@pytest.mark.realtime
def test_memory_jumps_row_checks_the_walks_own_generator():
    found = memory.jump_shares()
    assert found.decision.verdict == AGREES
    assert "θ=2: 0.93" in found.ours and "(paper 0.94)" in found.ours


def test_t3d_quanta_are_the_runs_between_switches_by_size():
    evs = [{"t": 0.0, "event": "start", "job": "a", "pes": [0]},
           {"t": 1.0, "event": "suspend", "job": "a"},
           {"t": 1.0, "event": "start", "job": "b", "pes": [0, 1]},
           {"t": 5.0, "event": "suspend", "job": "b"},
           {"t": 5.0, "event": "resume", "job": "a"},
           {"t": 8.0, "event": "finish", "job": "a"},
           {"t": 8.0, "event": "resume", "job": "b"},
           {"t": 10.0, "event": "finish", "job": "b"}]
    assert t3d.quantum_ratio(evs) == pytest.approx(3.0 / 2.0)    # (4 + 2) / 2 over (1 + 3) / 2
    assert math.isnan(t3d.quantum_ratio(evs[:2]))


def test_t3d_prime_insensitivity_reads_the_paired_differences():
    def record(label, slowdown, diff, half):
        return {"policy": label, "slowdown": slowdown,
                "versus": {"prime": {"diff": diff, "ci": half}}}
    variants = [v.label for v in t3d_fig6.PRIME_VARIANTS]
    near = [{"policy": "prime", "slowdown": 100.0, "versus": {}},
            *(record(label, 105.0, 5.0, 8.0) for label in variants)]
    found = t3d.insensitive(near, "given")
    assert found.decision.verdict == AGREES and "prime large > 16: 1.05 [0.97, 1.13]" in found.ours
    far = [*near[:-1], record(variants[-1], 200.0, 100.0, 20.0)]
    assert t3d.insensitive(far, "given").decision.verdict == DISAGREES


def test_t3d_fig4_example_gives_the_papers_utilizations():
    found = t3d.fig4_example()
    assert found.decision.verdict == AGREES
    assert found.ours.startswith("gang: 87.5 % with all three, 62.5 % once")


def _queue(arrivals: list[float], waits: list[float], run: float = 1.0) -> list[JobRow]:
    return [JobRow(f"j{i}", 1, a, start=a + w, end=a + w + run, wait=w)
            for i, (a, w) in enumerate(zip(arrivals, waits, strict=True))]


def test_thesis_saturation_and_fcfs_waits_read_the_runs_jobs():
    steady = _queue([0, 2, 4, 6, 8, 10, 12, 14], [0.5] * 8)
    piling = _queue([0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7])
    text, decision = thesis.no_saturation({"gang": [steady] * 6, "fcfs": [steady] * 6})
    assert decision.verdict == AGREES and text.startswith("queue growth (second half / first")
    assert thesis.no_saturation({"fcfs": [piling] * 6})[1].verdict == DISAGREES
    text, decision = thesis.fcfs_wait_grows([piling] * 6)
    assert decision.verdict == AGREES and "longest wait 7 s" in text
    assert thesis.fcfs_wait_grows([steady] * 6)[1].verdict != AGREES
