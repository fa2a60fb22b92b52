"""T3D (Feitelson and Jette 1997) Fig 6 in the simulator, through ``benchmarks.t3d_fig6``.

Each point's mean slowdown carries its 90 % batch-means interval, as in the paper.  Two
schemes are told apart at a load when the interval of their difference (half-widths added in
quadrature, as for independent estimates: the schemes run the same job sequence, so this is
conservative) lies on one side of 0.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from benchmarks import t3d_fig6
from benchmarks.reproduce.claims import (
    Decision,
    Finding,
    Spec,
    above,
    below,
    difference,
    every,
    judge,
    num,
    plus_minus,
)
from benchmarks.reproduce.context import Context

PAPER = "T3D"
BATCH_SCHEMES = ("fcfs", "easy", "prime")
GANG_SCHEMES = ("gang 10 s", "gang 600 s")

SPECS = (
    Spec("t3d-fcfs", PAPER, "§3.3, Fig 6", "FCFS saturates first: the highest slowdown at "
         "every load", "FCFS saturates at extremely low loads"),
    Spec("t3d-easy-prime", PAPER, "§3.3, Fig 6", "Backfilling gives lower slowdowns than "
         "prime/non-prime at every load", "backfilling below prime, sustaining a higher load"),
    Spec("t3d-gang", PAPER, "§3.3, Fig 6", "Gang scheduling (10 s and 10 min quanta) has the "
         "lowest slowdown at every load, saturating only near load 1",
         "gang lowest; saturation delayed until load approaches 1"),
)


def estimate(size: str) -> float:
    """CPU seconds the T3D rows take at ``size``, roughly."""
    return {"tiny": 5.0, "quick": 140.0, "full": 400.0}[size]


def run(ctx: Context) -> dict[str, Finding]:
    """Simulate Fig 6 at ``ctx.size`` and judge the three claims."""
    batches = ctx.pick(3, 5, 6)
    batch = ctx.pick(200, 1500, t3d_fig6.BATCH)
    loads = ctx.pick("0.5", "0.3,0.6,0.9", "0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9")
    out = ctx.runs / "t3d-fig6"
    ctx.log(f"T3D Fig 6: loads {loads}, {batches} batches of {batch}")
    with contextlib.redirect_stdout(io.StringIO()):
        t3d_fig6.main(["--batches", str(batches), "--batch-size", str(batch), "--loads", loads,
                       "--out", str(out)])
    records = json.loads((out / "fig6.json").read_text())["records"]
    plots = tuple(p for p in (ctx.plot(out / "fig6.png", "t3d-fig6.png"),) if p)
    setup = (f"{t3d_fig6.PES} PEs, Lublin model without daily cycle, {batches} batches of "
             f"{batch} terminations (first dropped), 90 % batch-means intervals; loads {loads}")
    return judge_records(records, setup, plots)


def judge_records(records: list[dict[str, Any]], setup: str,
                  plots: tuple[str, ...] = ()) -> dict[str, Finding]:
    """The three claims judged on ``t3d_fig6``'s records (``policy``, ``load``,
    ``slowdown``, ``ci``)."""
    point = {(r["policy"], r["load"]): plus_minus(r["slowdown"], r["ci"]) for r in records}
    loads = sorted({r["load"] for r in records})

    def compare(a: str, b: str, lower: bool) -> list[Decision]:
        return [judge(difference(point.get((a, x)), point.get((b, x))),
                      below(0.0) if lower else above(0.0)) for x in loads]

    def slowdowns(scheme: str) -> str:
        return ", ".join(f"{num(x)}: {_point(point.get((scheme, x)))}" for x in loads)

    fcfs = [d for other in (*BATCH_SCHEMES[1:], *GANG_SCHEMES)
            for d in compare("fcfs", other, lower=False)]
    gang = [d for g in GANG_SCHEMES for other in BATCH_SCHEMES
            for d in compare(g, other, lower=True)]
    return {
        "t3d-fcfs": Finding(f"fcfs: {slowdowns('fcfs')}", every(fcfs), setup, plots),
        "t3d-easy-prime": Finding(f"easy: {slowdowns('easy')}; prime: {slowdowns('prime')}",
                                  every(compare("easy", "prime", lower=True)), setup, plots),
        "t3d-gang": Finding("; ".join(f"{g}: {slowdowns(g)}" for g in GANG_SCHEMES),
                            every(gang), setup, plots),
    }


def _point(interval: Any) -> str:
    if interval is None:
        return "-"
    half = interval.half_width
    return num(interval.value) + ("" if half is None else f" ± {num(half)}")
