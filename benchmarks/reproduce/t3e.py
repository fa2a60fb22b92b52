"""T3E (Blakeborough and Welcome 1999): NERSC's psched configuration in the simulator, through
``benchmarks.nersc --simulate``.

Each seed is one mix run under the four configurations (NERSC's before UNICOS/mk 2.0.4, plain
gang, NERSC's after, the same without prime jobs), so the configurations pair up by seed:
ratios are Hodges-Lehmann on the pairs with the interval of the Wilcoxon signed-rank test,
which judges them.  The "before" is the paper's: the load balancer only, on split Batch and
Mixed domains, no gang scheduling (``psched-split``).
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from benchmarks import nersc
from benchmarks.reproduce.claims import Finding, above, below, judge, p_of, show, specs
from benchmarks.reproduce.context import Context
from testbed.experiments import stats

PAPER = "T3E"
HIGH_UTILIZATION = 0.9
PUBLISHED_GAIN = 90.0 / 78.9

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
    ("t3e-large-turnaround", "NERSC section, Fig 5", "Making large jobs prime "
     "reduces their turnaround", "large-queue waits reduced, under 16 h"),
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
                    str(pes), "--out", str(out)])
    records = json.loads((out / "nersc.json").read_text())
    plots = tuple(p for p in (ctx.plot(out / "nersc.png", "t3e-nersc.png"),) if p)
    setup = (f"{pes} PEs simulated, {seeds} seeds of {span:g} s of arrivals (small jobs "
             "offering 0.55, large 0.45, the largest 512/644 of the machine); before: "
             "psched-split (Batch domain 512/644 of the PEs, Mixed the rest taking jobs of up "
             "to 64/644, one application a PE, balancer every 2 s); nersc: app_max 1, "
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
    return {
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
    }
