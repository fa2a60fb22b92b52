"""T3E (Blakeborough and Welcome 1999): NERSC's psched configuration in the simulator, through
``benchmarks.nersc --simulate``.

Each seed is one mix run under the five configurations (NERSC's before UNICOS/mk 2.0.4, the
weeks after it on the same split domains, plain gang, NERSC's after, the same without prime
jobs), so the configurations pair up by seed:
ratios are Hodges-Lehmann on the pairs with the interval of the Wilcoxon signed-rank test,
which judges them.  The "before" is the paper's: the load balancer only, on split Batch and
Mixed domains, no gang scheduling (``psched-split``); Table 6's middle step ("Since 2.0.4",
the weeks before the machine became one region) is 2.0.4's gang scheduling on those same
domains (``psched-split-gang``).
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
from typing import Any

from benchmarks import nersc
from benchmarks.reproduce.claims import (
    AGREES,
    DISAGREES,
    Decision,
    Finding,
    above,
    below,
    every,
    judge,
    judge_cells,
    p_of,
    show,
    specs,
    within,
)
from benchmarks.reproduce.context import Context
from testbed.experiments import stats
from testbed.policies import PolicyConfig, make_policy

PAPER = "T3E"
HIGH_UTILIZATION = 0.9
PUBLISHED_GAIN = 90.0 / 78.9
# Table 6's steps: (the configuration before, the one after, the paper's utilization ratio)
TABLE_6 = (("before", "split-gang", 83.4 / 78.9), ("split-gang", "nersc", 90.0 / 83.4))
EVEN = within(0.5, 2.0)      # "consistent across the queues": within a factor of 2
SLICE_EXAMPLE = ((0.0, 60.0), (60.0, 1260.0), (0.0, 60.0))   # (switch s, next slice s)

SPECS = specs(
    PAPER,
    ("t3e-utilization", "NERSC section, Table 6", "With prime jobs and the load "
     "balancer, utilization stays above 90 % when there is enough work",
     "90.0 % (current configuration), over 92 % in acceptance"),
    ("t3e-utilization-gain", "NERSC section, Table 6", "The psched configuration "
     "raises utilization over the one before 2.0.4 (the balancer only, on split Batch and "
     "Mixed domains, no gang); direction: the paper's ratio 90.0 / 78.9 = 1.14 comes from "
     "months of NERSC's production load, which our mix does not copy, so its size is shown, "
     "not judged", "\"10/01/98 - 03/04/99 78.9% Prior to 2.0.4 ... 03/25/99 - 05/10/99 90.0% "
     "Current Configuration\" (Table 6)"),
    ("t3e-utilization-steps", "NERSC section, Table 6", "Each of Table 6's steps raises "
     "utilization: 2.0.4's gang scheduling on the old split domains over the balancer only "
     "(split-gang / before > 1), and the single region with prime jobs over that (nersc / "
     "split-gang > 1); direction, the sizes shown beside the paper's (production months, "
     "not our mix)", "\"10/01/98 - 03/04/99 78.9% Prior to 2.0.4\"; \"03/05/99 - 03/24/99 "
     "83.4% Since 2.0.4\"; \"03/25/99 - 05/10/99 90.0% Current Configuration\" (Table 6); "
     "\"Within two weeks of the upgrade mcurie was re-configured to use a single uniform 644 "
     "PE APP region with one psched domain\""),
    ("t3e-large-turnaround", "NERSC section, Fig 5", "Making large jobs prime "
     "reduces their turnaround", "large-queue waits reduced, under 16 h"),
    ("t3e-even-waits", "NERSC section, Fig 5", "With large jobs prime, large and small jobs "
     f"wait about alike (mean wait large / small {EVEN.describe()}); a band",
     "\"The wait times are now consistent across the queues and are under 16 hours\""),
    ("t3e-slice-formula", "Gang Scheduler Enhancements (2.0.4)", "The adaptive slice is "
     "config_slice_time + switch_time x variation: the paper's example (60 s, variation 20) "
     "gives 60 s after a switch of 0 s and 1260 s after one of 60 s, and 60 s again once "
     "switching is quick; figure (model: our policy's slice)",
     "\"60 seconds = 60 seconds + (0 * 20)\" and \"1260 seconds = 60 seconds + (60 "
     "seconds * 20)\""),
    checks={
        "t3e-utilization": "figure",
        "t3e-even-waits": "band",
        "t3e-slice-formula": "figure",
    }
)


def run(ctx: Context) -> dict[str, Finding]:
    """Simulate the three configurations on several seeds and judge the claims."""
    seeds = ctx.pick(2, 8, 10)
    span = ctx.pick(100.0, 1000.0, 2000.0)
    pes = ctx.pick(16, 128, 128)
    out = ctx.runs / "nersc"
    ctx.log(f"T3E NERSC: {seeds} seeds of {span:g} s on {pes} PEs, simulated")
    with contextlib.redirect_stdout(io.StringIO()):
        nersc.main(["--simulate", "--seeds", str(seeds), "--span", str(span), "--pes",
                    str(pes), "--workers", str(ctx.workers), "--out", str(out)])
    records = json.loads((out / "nersc.json").read_text())
    plots = tuple(p for p in (ctx.plot(out / "nersc.png", "t3e-nersc.png"),) if p)
    setup = (f"{pes} PEs simulated, {seeds} seeds of {span:g} s of arrivals (small jobs "
             "offering 0.55, large 0.45, the largest 512/644 of the machine); before: "
             "psched-split (Batch domain 512/644 of the PEs, Mixed the rest taking jobs of up "
             "to 64/644, one application a PE, balancer every 2 s); split-gang: "
             "psched-split-gang (the same domains gang-scheduling two applications a PE); "
             "nersc: app_max 1, "
             "abs_app_max 2, large jobs prime, balancer every 2 s; gang: MPL 2; first fit "
             "everywhere; paired by seed")
    return judge_records(records, setup, plots)


def judge_records(records: list[dict[str, Any]], setup: str,
                  plots: tuple[str, ...] = ()) -> dict[str, Finding]:
    """The claims judged on ``benchmarks.nersc``'s records (``config``, ``seed``,
    ``utilization``, ``large_mean``)."""
    by = {(r["config"], r["seed"]): r for r in records}
    seeds = sorted({r["seed"] for r in records})

    def paired(config: str, reference: str, key: str) -> tuple[list[float], list[float]]:
        pairs = [(by[(config, s)][key], by[(reference, s)][key]) for s in seeds
                 if (config, s) in by and (reference, s) in by
                 and by[(config, s)][key] is not None and by[(reference, s)][key] is not None]
        return [a for a, _ in pairs], [b for _, b in pairs]

    utilization = [by[("nersc", s)]["utilization"] for s in seeds if ("nersc", s) in by]
    level = stats.median_interval(utilization) if utilization else None
    mine, before = paired("nersc", "before", "utilization")
    gain = stats.ratio_interval(mine, before, paired=True)
    large, plain = paired("nersc", "no-prime", "large_mean")
    faster = stats.ratio_interval(large, plain, paired=True)
    waits = [(by[("nersc", s)].get("large_wait"), by[("nersc", s)].get("small_wait"))
             for s in seeds if ("nersc", s) in by]
    waits = [(a, b) for a, b in waits if a is not None and b]
    even = stats.ratio_interval([a for a, _ in waits], [b for _, b in waits], paired=True) \
        if waits else None
    steps = [paired(subject, reference, "utilization") for reference, subject, _ in TABLE_6]
    cells = [(stats.ratio_interval(a, b, paired=True), above(1.0), stats.signed_rank_test(a, b))
             for a, b in steps]
    def pe_time(config: str) -> str:
        mine = [r for r in records if r["config"] == config]
        return f"{config} " + "/".join(
            f"{statistics.median(r[key] for r in mine):.3f}"
            for key in ("busy", "held_idle", "free_idle"))

    shown = [c for c in ("before", "split-gang", "nersc")
             if any(r["config"] == c for r in records)]
    shares = ""
    if shown and all("busy" in r for r in records):
        shares = ("; PE-time up to the last arrival, busy / idle holding a job of a row not "
                  "running / idle holding none (medians over seeds): "
                  + ", ".join(pe_time(c) for c in shown))
    return {
        "t3e-utilization-steps": Finding(
            "; ".join(f"utilization {a} / {b}: {show(cell[0])} (the paper's: {x:.3g})"
                      for (b, a, x), cell in zip(TABLE_6, cells, strict=True)) + shares,
            every(*judge_cells(cells, null=1.0)), setup, plots),
        "t3e-utilization": Finding(
            f"nersc utilization {show(level)} (median over seeds)",
            judge(level, above(HIGH_UTILIZATION)), setup, plots),
        "t3e-utilization-gain": Finding(
            f"utilization nersc / before: {show(gain)} (the paper's: "
            f"{PUBLISHED_GAIN:.3g})",
            judge(gain, above(1.0), p_of(stats.signed_rank_test(mine, before)), null=1.0),
            setup, plots),
        "t3e-large-turnaround": Finding(
            f"large-job turnaround nersc / no-prime: {show(faster)}",
            judge(faster, below(1.0), p_of(stats.signed_rank_test(large, plain)), null=1.0),
            setup, plots),
        "t3e-even-waits": Finding(
            f"nersc mean wait large / small: {show(even)}", judge(even, EVEN), setup, plots),
        "t3e-slice-formula": slice_formula(),
    }


def slice_formula() -> Finding:
    """The paper's worked example of the adaptive slice run through the psched policy: each
    switch time observed in turn and the slice that follows, against the paper's."""
    policy = make_policy("psched", PolicyConfig(16, timeslice=60.0, variation=20.0))
    seen = []
    for switch, _ in SLICE_EXAMPLE:
        policy.observe_switch(switch)
        seen.append(policy.timeslice)
    shown = ", ".join(f"switch {s:g} s -> slice {got:g} s (paper {want:g} s)"
                      for (s, want), got in zip(SLICE_EXAMPLE, seen, strict=True))
    same = all(got == want for (_, want), got in zip(SLICE_EXAMPLE, seen, strict=True))
    return Finding(shown, Decision(AGREES if same else DISAGREES,
                                   "every slice equals the paper's" if same
                                   else "a slice differs from the paper's"),
                   "psched with timeslice 60 s and variation 20, given each switch time")
