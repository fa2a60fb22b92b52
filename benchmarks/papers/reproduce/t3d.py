"""T3D (Feitelson and Jette 1997) Fig 6 in the simulator, through ``benchmarks.papers.t3d_fig6``.

The claims are judged by ``t3d_fig6.claims``, the one place their rules live: a scheme is below
another at a load when the 90 % batch-means interval of their slowdowns' difference, job by job
(both ran the same jobs), lies wholly below 0, and a point is saturated when its queue keeps
growing through the run (the mean number of jobs in the system over the second half of the
arrivals more than ``t3d_fig6.GROWTH`` times that over the first half: T3D's "the system cannot
handle the load"); the delivered load is shown beside it.  Its verdicts read
as the report's: holds as agrees, partly as cannot tell, fails as disagrees (a slowdown claim
fails there only where the opposite is shown at some load).  They are judged on T3D's model,
gang with an unbounded matrix (the ∞ curves: T3D's simulated gang scheduler had no bound on
its slots); gang with ``t3d_fig6.MPL`` rows is shown beside them for comparison.

§4.7-4.8's production figures are measurements of LLNL's machine.  At full size the
interactive slowdowns and the share of jobs preempted are measured on a model of them,
``benchmarks.papers.t3d_classes``'s 2-PE class mix on real processes under ``t3d`` (after the
simulations, so alone on the machine); the utilization over months no run here can speak to.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from benchmarks.harness import events, testbed
from benchmarks.papers import t3d_classes, t3d_fig6
from benchmarks.papers.reproduce.claims import (
    AGREES,
    CANNOT_TELL,
    DISAGREES,
    Decision,
    Finding,
    above,
    around,
    every,
    figure,
    judge,
    magnitude,
    num,
    show,
    specs,
    within,
)
from benchmarks.papers.reproduce.context import Context
from testbed.class_tables import DEFAULT_TABLE
from testbed.experiments import stats
from testbed.experiments.stats import Interval
from testbed.policies import JobRequest, PolicyConfig, make_policy
from testbed.results.metrics import JobRow, job_rows

PAPER = "T3D"
VERDICTS = {"holds": AGREES, "partly": CANNOT_TELL, "fails": DISAGREES}
MUCH = 0.5      # "much better": at most half FCFS's mean slowdown
UNBOUNDED = tuple(s.label for s in t3d_fig6.SCHEMES if s.unbounded)
BOUNDED = tuple(s.label for s in t3d_fig6.SCHEMES if s.policy == "gang" and not s.unbounded)
GROWTH = ("queue growth (jobs in the system, second half / first half; delivered / offered "
          "load) by load, ")
# the t3d_fig6.claims key each row reads
CLAIMS = {"t3d-fcfs-first": "fcfs-first", "t3d-fcfs-highest": "fcfs-highest",
          "t3d-backfill-prime": "backfill-prime", "t3d-gang": "gang-lowest",
          "t3d-gang-near-one": "gang-near-one"}

INSENSITIVE = within(0.8, 1.25)      # "relatively insensitive"
EQUAL_SHARE = within(0.5, 2.0)       # "roughly equal proportions"
PRIME_LOAD = 0.4

SPECS = specs(
    PAPER,
    ("t3d-fcfs-first", "§3.3, Fig 6", "FCFS saturates first: no other scheme saturates at a "
     "lower load", "FCFS saturates at extremely low loads"),
    ("t3d-fcfs-highest", "§3.3, Fig 6", "FCFS has the highest slowdown at every load, before "
     "saturation too", "even before saturation FCFS tends to create very high slowdowns"),
    ("t3d-backfill-prime", "§3.3, Fig 6", "Backfilling (conservative) gives lower slowdowns than "
     "prime/non-prime at every load and saturates no earlier",
     "backfilling sustains a higher load and produces lower slowdowns"),
    ("t3d-gang", "§3.3, Fig 6", "Gang scheduling (10 s and 10 min quanta, slots unbounded) has "
     "the lowest slowdown at every load", "gang slowdowns very low, even with 10 min quanta"),
    ("t3d-gang-near-one", "§3.3, Fig 6", "Gang scheduling (slots unbounded) saturates only near "
     f"load 1: at no load below {t3d_fig6.NEAR_ONE:g}",
     "saturation delayed until system load approaches 1"),
    ("t3d-better-than-fcfs", "§3.3, Fig 6", "Backfilling (conservative) and prime/non-prime "
     "are both much better than FCFS: below it at every load (paired per-job interval) and at most "
     f"{MUCH:g} of its mean slowdown; direction and a stated band",
     "\"Backfilling and delaying large jobs to non-prime time are both much better\""),
    ("t3d-prod-utilization", "§4.8, Figs 10-11", "Gang scheduling nearly doubled the T3D's "
     "utilization; measurement", "\"utilization nearly doubled from 33.4% to 60.9% on "
     "average\""),
    ("t3d-prod-slowdown", "§4.7, Fig 12", "Interactive jobs' total time in the system over "
     "their total runtime is about 1.18 under the gang scheduler; figure (model: a 2-PE class "
     "mix)", "\"The ratio of the *total* time all interactive jobs spent in the system to "
     "their *total* runtimes was 1.18\""),
    ("t3d-prod-bounded", "§4.7, Fig 12", "Interactive jobs' mean bounded slowdown is about "
     "2.27 (threshold 10 s); figure (model: a 2-PE class mix, the threshold scaled to 1 s)",
     "\"we used a threshold of 10 seconds; the average bounded slowdown is then 2.27\""),
    ("t3d-prod-preempted", "§4.8, Fig 13", "About 7.5 % of the jobs are ever preempted; "
     "figure (model: a 2-PE class mix)", "\"only 7.5% of jobs that completed normally were "
     "ever preempted\""),
    ("t3d-prime-insensitive", "§3.3", "Prime/non-prime is relatively insensitive to its "
     "threshold between small and large jobs and to the length of the prime shift: mean "
     f"slowdown with each moved (large above 16 or 64 PEs instead of 32; shifts of 6 or 18 h "
     f"instead of 12) over the default's {INSENSITIVE.describe()} at load "
     f"{PRIME_LOAD:g}; a band", "\"Attempts to improve the performance of the prime/non-prime "
     "policy by fiddling with its parameters (the threshold between small and large jobs, and "
     "the length of the prime shift) showed that it is relatively insensitive to the exact "
     "values of these parameters.\""),
    ("t3d-fig4-example", "§2, Figs 1 and 4", "With gang scheduling, the example's 32-node job "
     "shares the 64-node job's time slot and the 128-node job gets its own: utilization "
     "87.5 % while all three are active and 62.5 % once the 64-node job ends, where variable "
     "partitioning that does not starve the 128-node job settles for 50 %; a figure (model: "
     "our policies)", "\"As long as all three jobs are active, the utilization is 87.5%. "
     "Even if the 64-node job terminates, leaving the 32-node job to run alone in its "
     "time-slot, the utilization is 62.5%.\"; \"let the 64-node job run to completion, and "
     "settle for 50% utilization\""),
    ("t3d-prod-mean-slowdown", "§4.7, Fig 12", "Interactive jobs' mean slowdown (time in the "
     "system over time running) is about 7.94, far above the ratio of totals; figure (model: "
     "a 2-PE class mix)", "\"The average slowdown was determined to be 7.94.\""),
    ("t3d-prod-preempt-sizes", "§4.8, Fig 13", "Jobs of different sizes are preempted in "
     "roughly equal proportions (the preempted share of 2-PE jobs over that of 1-PE jobs "
     f"{EQUAL_SHARE.describe()}); a band (model: a 2-PE class mix)", "\"different size jobs "
     "were preempted in roughly equal proportions\""),
    ("t3d-prod-quanta", "§4.8, Fig 15", "Larger jobs get longer time quanta (the do-not-disturb "
     "multiplier): the mean uninterrupted run of a 2-PE job over that of a 1-PE job > 1; "
     "direction (model: a 2-PE class mix)", "\"As expected, use of the do-not-disturb time "
     "multiplier leads to larger average time quanta for larger jobs.\""),
    checks={
        "t3d-prime-insensitive": "band",
        "t3d-fig4-example": "figure",
        "t3d-prod-mean-slowdown": "figure",
        "t3d-prod-preempt-sizes": "band",
        "t3d-better-than-fcfs": "band",
        "t3d-prod-utilization": "measurement",
        "t3d-prod-slowdown": "figure",
        "t3d-prod-bounded": "figure",
        "t3d-prod-preempted": "figure",
        "t3d-gang-near-one": "band",
        "t3d-fcfs-first": "direction",
    }
)


# The paper ran up to 100 batches.  The full size runs 25: Fig 6's 56 points grow as
# batches^1.2 (4,220 CPU s at 25 batches on 2026-11-27).  Fewer do not average out the Lublin
# sequence's own swings: its first 10 batches offer 1.28 times as much work in their second
# half as in their first (25 batches: 0.99), so at 10 (2026-12-07) every scheme's queue "grew"
# from load 0.2 (gang, delivering 99.8 % of the offered load, called saturated), where at 25
# none did below 0.6.
FULL_BATCHES = 25


def run(ctx: Context) -> dict[str, Finding]:
    """Simulate Fig 6 at ``ctx.size`` with ``t3d_fig6.run_points`` and judge the claims."""
    # Fewer or shorter batches leave a backlog at the sequence's end that counts as saturation
    # (7,500 jobs: every scheme saturated from load 0.6), so quick runs the full batches.
    batches = ctx.pick(3, 6, FULL_BATCHES)
    batch = ctx.pick(200, t3d_fig6.BATCH, t3d_fig6.BATCH)
    loads = ctx.pick((0.5,), (0.3, 0.6, 0.9), t3d_fig6.LOADS)
    shown = ", ".join(f"{load:g}" for load in loads)
    ctx.log(f"T3D Fig 6: loads {shown}, {batches} batches of {batch}")
    records = t3d_fig6.run_points(loads, batches, batch, spread=ctx.spread)
    out = ctx.runs / "t3d-fig6"
    t3d_fig6.write_outputs({"records": records, "claims": t3d_fig6.claims(records)}, out, None,
                           "")
    plots = tuple(p for p in (ctx.plot(out / "fig6.png", "t3d-fig6.png"),) if p)
    setup = (f"{t3d_fig6.PES} PEs, Lublin model without daily cycle, {batches} batches of "
             f"{batch} terminations (first dropped), 90 % batch-means intervals; loads {shown}; "
             f"gang judged with an unbounded matrix (∞), beside it gang with {t3d_fig6.MPL} "
             "rows; a scheme is below another where the interval of their per-job difference "
             "lies wholly below 0 (paired: the same jobs); saturated: the queue keeps growing, "
             "the mean number of jobs in the system over the second half of the arrivals "
             f"over that over the first half above {t3d_fig6.GROWTH:g}")
    found = judge_records(records, setup, plots)
    labels = tuple(v.label for v in t3d_fig6.PRIME_VARIANTS)
    ctx.log(f"T3D prime/non-prime's parameters: {len(labels)} variants at load {PRIME_LOAD:g}")
    variants = t3d_fig6.run_points((PRIME_LOAD,), batches, batch, schemes=("prime", *labels),
                                   spread=ctx.spread)
    found["t3d-prime-insensitive"] = insensitive(
        variants, f"{t3d_fig6.PES} PEs, the Fig 6 jobs at load {PRIME_LOAD:g}, {batches} "
        f"batches of {batch}; the ratio's interval: the 90 % batch-means interval of the "
        "per-job difference over the default's mean slowdown")
    found["t3d-fig4-example"] = fig4_example()
    found["t3d-prod-utilization"] = Finding("-", Decision(CANNOT_TELL, PRODUCTION))
    if ctx.pick(True, False, True):
        found.update(ctx.attempt(_production, PRODUCTION_ROWS))
    return found


PRODUCTION = ("a measurement of LLNL's production machine over months against its earlier "
              "system software: no run here has that workload, its weekends and its users; "
              "Fig 6's simulation gives the same jobs the same delivered load below saturation")
PRODUCTION_ROWS = ("t3d-prod-slowdown", "t3d-prod-bounded", "t3d-prod-preempted",
                   "t3d-prod-mean-slowdown", "t3d-prod-preempt-sizes", "t3d-prod-quanta")
MINIATURE = ("a 2-PE mix of 1-PE interactive jobs of 0.5-3 s, production and standby jobs "
             "(benchmarks.papers.t3d_classes), the class table's times scaled by 0.1, stands for "
             "LLNL's 256-PE production load; the figures' size depends on that load")


def _production(ctx: Context) -> dict[str, Finding]:
    """The production figures of §4.7-4.8 on ``benchmarks.papers.t3d_classes``'s class mix, run
    under ``t3d`` on real processes (alone: the simulations are done), one run per seed."""
    classes = ctx.runs / "t3d-classes" / "classes.toml"
    classes.parent.mkdir(parents=True, exist_ok=True)
    classes.write_text(DEFAULT_TABLE.read_text().replace(
        "time_scale = 1.0", f"time_scale = {t3d_classes.TIME_SCALE}"))
    seeds, span = ctx.pick(1, 5, 5), ctx.pick(10.0, 90.0, 90.0)
    figures: dict[str, list[float]] = {key: [] for key in PRODUCTION_ROWS}
    for seed in range(1, seeds + 1):
        ctx.log(f"T3D production figures: class mix seed {seed} under t3d")
        workload = classes.parent / f"mix-{seed}.txt"
        workload.write_text(t3d_classes.mix(span, seed))
        run = classes.parent / f"t3d-{seed}"
        testbed("run", str(workload), "--scheduler", "t3d", "--pes", str(t3d_classes.PES),
                "--classes", str(classes), "--out", str(run))
        evs = events(run)
        for key, value in production_figures(job_rows(evs)).items():
            figures[key].append(value)
        figures["t3d-prod-quanta"].append(quantum_ratio(evs))
    setup = (f"{seeds} seeds of benchmarks.papers.t3d_classes's mix ({span:g} s of arrivals, "
             "2 PEs, real processes) under t3d with T3D's daytime table, times x 0.1; "
             "medians over the seeds with 95 % intervals")
    found = {}
    for key, region, shown in (
            ("t3d-prod-preempt-sizes", EQUAL_SHARE,
             "preempted share of 2-PE jobs / of 1-PE jobs"),
            ("t3d-prod-quanta", above(1.0),
             "mean uninterrupted run of a 2-PE job / of a 1-PE job")):
        values = [v for v in figures[key] if v is not None and math.isfinite(v)]
        level = stats.median_interval(values) if values else None
        found[key] = Finding(f"{shown}: {show(level)} ({len(values)} of {seeds} seeds had "
                             "both sizes)", judge(level, region), setup)
    for key, published, shown in (("t3d-prod-slowdown", 1.18, "total response / total runtime"),
                                  ("t3d-prod-bounded", 2.27, "mean bounded slowdown (1 s)"),
                                  ("t3d-prod-preempted", 0.075, "fraction of jobs preempted"),
                                  ("t3d-prod-mean-slowdown", 7.94, "mean slowdown")):
        level = stats.median_interval(figures[key])
        found[key] = Finding(f"interactive {shown}: {show(level)}" if key != "t3d-prod-preempted"
                             else f"{shown}: {show(level)}",
                             figure(None, level, published,
                                    magnitude(published) if published > 1 else around(published),
                                    MINIATURE),
                             setup)
    return found


def production_figures(rows: list[JobRow]) -> dict[str, float]:
    """One run's production figures: the interactive jobs' total response over their total
    runtime and mean bounded slowdown (threshold ``t3d_classes.TAU``), and the fraction of all
    jobs ever preempted."""
    interactive = [r for r in rows if r.job_class == "interactive" and r.response is not None]
    return {"t3d-prod-slowdown": sum(r.response or 0.0 for r in interactive)
            / sum(r.runtime or 0.0 for r in interactive),
            "t3d-prod-bounded": statistics.fmean(
                max(1.0, (r.response or 0.0) / max(r.work or 0.0, t3d_classes.TAU))
                for r in interactive),
            "t3d-prod-preempted": sum(1 for r in rows if r.stops) / len(rows),
            "t3d-prod-mean-slowdown": statistics.fmean(
                (r.response or 0.0) / r.runtime for r in interactive if r.runtime),
            "t3d-prod-preempt-sizes": _share_ratio(rows)}


def _share_ratio(rows: list[JobRow]) -> float:
    """The share of 2-PE jobs ever preempted over that of 1-PE jobs (nan when a size has no
    job, or no 1-PE job was preempted)."""
    share = {}
    for size in (1, 2):
        mine = [r for r in rows if r.size == size]
        share[size] = sum(1 for r in mine if r.stops) / len(mine) if mine else math.nan
    return share[2] / share[1] if share[1] else math.nan


def quantum_ratio(evs: list[dict[str, Any]]) -> float:
    """The mean uninterrupted run (start or resume to suspend or finish, s) of the 2-PE jobs
    over that of the 1-PE jobs, over every run of every job (nan without both sizes)."""
    size: dict[str, int] = {}
    since: dict[str, float] = {}
    runs: dict[int, list[float]] = {1: [], 2: []}
    for e in evs:
        kind, job = e["event"], e.get("job")
        if kind == "start":
            size[job] = len(e["pes"])
            since[job] = e["t"]
        elif kind == "resume" and job in size:
            since[job] = e["t"]
        elif kind in ("suspend", "finish") and job in since:
            runs.setdefault(size[job], []).append(e["t"] - since.pop(job))
    if not runs[1] or not runs[2]:
        return math.nan
    return statistics.fmean(runs[2]) / statistics.fmean(runs[1])


def insensitive(records: list[dict[str, Any]], setup: str) -> Finding:
    """Each prime variant's mean slowdown over the default prime's at the same load, with
    the 90 % batch-means interval of their per-job difference over the default's mean."""
    by = {r["policy"]: r for r in records}
    base = by.get("prime")
    if base is None or not base["slowdown"]:
        return Finding("-", Decision(CANNOT_TELL, "no default prime run"), setup)
    cells, shown = [], []
    for variant in t3d_fig6.PRIME_VARIANTS:
        record = by.get(variant.label)
        versus = None if record is None else record["versus"].get("prime")
        if versus is None or versus["diff"] is None:
            cells.append(Decision(CANNOT_TELL, "no run"))
            shown.append(f"{variant.label}: -")
            continue
        mean = base["slowdown"]
        half = versus["ci"]
        ratio = Interval(1 + versus["diff"] / mean,
                         None if half is None else 1 + (versus["diff"] - half) / mean,
                         None if half is None else 1 + (versus["diff"] + half) / mean,
                         t3d_fig6.CONFIDENCE)
        cells.append(judge(ratio, INSENSITIVE))
        shown.append(f"{variant.label}: {show(ratio)}")
    return Finding(f"mean slowdown over the default prime's ({num(base['slowdown'])}): "
                   + "; ".join(shown), every(cells), setup)


def fig4_example() -> Finding:
    """Figs 1 and 4's example through our policies on 128 PEs: a 64-node job running, a
    32-node and a 128-node job arriving; the share of the PE-time busy under gang (two rows
    taking turns) while all three are placed and once the 64-node job ends, and under FCFS
    with the 128-node job first in line (not starved)."""
    gang = make_policy("gang", PolicyConfig(t3d_fig6.PES, mpl=2))
    for job, pes in (("j64", 64), ("j32", 32), ("j128", 128)):
        gang.arrive(JobRequest(job, pes, 0.0), 0.0)
    together = _busy_over_rows(gang)
    gang.finish("j64", 0.0)
    alone = _busy_over_rows(gang)
    fcfs = make_policy("fcfs", PolicyConfig(t3d_fig6.PES))
    for job, pes in (("j64", 64), ("j128", 128), ("j32", 32)):
        fcfs.arrive(JobRequest(job, pes, 0.0), 0.0)
    batch = sum(len(fcfs.matrix.placed[j][1]) for j in fcfs.running()) / t3d_fig6.PES
    got = (together, alone, batch)
    same = all(abs(a - b) < 1e-9 for a, b in zip(got, (0.875, 0.625, 0.5), strict=True))
    return Finding(f"gang: {100 * together:g} % with all three, {100 * alone:g} % once the "
                   f"64-node job ends; FCFS with the 128-node job first: {100 * batch:g} %",
                   Decision(AGREES if same else DISAGREES, "each share is the paper's" if same
                            else "a share differs from the paper's"),
                   "gang, 2 rows, 128 PEs, buddy; FCFS on 128 PEs; the share of PE-time busy "
                   "over the rows' turns")


def _busy_over_rows(policy: Any) -> float:
    """The share of the PEs busy, averaged over one turn of the gang matrix's rows."""
    rows = len(policy.matrix.occupied_slots())
    busy, now = 0, 0.0
    for _ in range(rows):
        busy += sum(len(policy.matrix.placed[j][1]) for j in policy.running())
        now += policy.config.timeslice
        policy.tick(now)
    return busy / (rows * policy.config.pes)


def judge_records(records: list[dict[str, Any]], setup: str,
                  plots: tuple[str, ...] = ()) -> dict[str, Finding]:
    """The claims judged by ``t3d_fig6.claims`` on ``t3d_fig6``'s records (``policy``,
    ``load``, ``slowdown``, ``ci``, ``delivered``, ``growth``, ``saturated``) without the
    bounded gang's, whose figures and verdicts are shown beside the unbounded gang's."""
    judged = t3d_fig6.claims([r for r in records if r["policy"] not in BOUNDED])
    beside = [c for c in t3d_fig6.claims(records) if c["scheme"] in BOUNDED]
    by = {(r["policy"], r["load"]): r for r in records}
    loads = sorted({r["load"] for r in records})

    def curve(label: str, figure: str) -> str:
        return f"{label}: " + ", ".join(f"{num(x)}: {_figure(by[label, x], figure)}"
                                        for x in loads if (label, x) in by)

    def gang(key: str, figure: str) -> str:
        ours = "; ".join(curve(label, figure) for label in UNBOUNDED)
        bounded = "; ".join(f"{curve(c['scheme'], figure)} ({c['verdict']})"
                            for c in beside if c["key"] == key)
        return ours + (f"; for comparison, {t3d_fig6.MPL} rows: {bounded}" if bounded else "")

    counted = max((r.get("batches", 0) for r in records), default=0)
    prefix = f"{counted} batches a point (the first dropped besides): " if counted else ""

    def finding(row: str, ours: str) -> Finding:
        return Finding(prefix + ours, decide([c for c in judged if c["key"] == CLAIMS[row]]),
                       setup, plots)

    return {
        "t3d-fcfs-first": finding("t3d-fcfs-first", GROWTH + curve("fcfs", "growth")),
        "t3d-fcfs-highest": finding("t3d-fcfs-highest", curve("fcfs", "slowdown")),
        "t3d-backfill-prime": finding("t3d-backfill-prime", "; ".join(
            curve(label, "slowdown") for label in ("backfill", "prime"))),
        "t3d-gang": finding("t3d-gang", gang("gang-lowest", "slowdown")),
        "t3d-gang-near-one": finding("t3d-gang-near-one",
                                     GROWTH + gang("gang-near-one", "growth")),
        "t3d-better-than-fcfs": Finding(
            prefix + "slowdown over fcfs's by load: " + "; ".join(
                f"{label}: " + ", ".join(f"{num(x)}: {num(_over_fcfs(by, label, x))}"
                                         for x in loads if (label, x) in by and ("fcfs", x) in by)
                for label in ("backfill", "prime")),
            better_than_fcfs(records), setup, plots),
    }


def better_than_fcfs(records: list[dict[str, Any]]) -> Decision:
    """Backfilling and prime each much better than FCFS: agrees when at every load each lies below
    FCFS (``t3d_fig6.compare``, 90 %) with at most ``MUCH`` of its mean slowdown; disagrees
    when one lies above FCFS at some load (at the Bonferroni confidence over the claim's
    comparisons); else cannot tell."""
    by = {(r["policy"], r["load"]): r for r in records}
    pairs = [(label, x) for x in sorted({r["load"] for r in records})
             for label in ("backfill", "prime") if (label, x) in by and ("fcfs", x) in by]
    if not pairs:
        return Decision(CANNOT_TELL, "no loads")
    level = t3d_fig6.family(len(pairs))
    above = [p for p in pairs if t3d_fig6.compare(by[p], by["fcfs", p[1]], level) == "above"]
    if above:
        return Decision(DISAGREES, "above fcfs at " + _pairs(above))
    short = [p for p in pairs if t3d_fig6.compare(by[p], by["fcfs", p[1]]) != "below"
             or by[p]["slowdown"] > MUCH * by["fcfs", p[1]]["slowdown"]]
    if short:
        return Decision(CANNOT_TELL, f"not below fcfs with at most {MUCH:g} of its slowdown at "
                        + _pairs(short))
    return Decision(AGREES, f"below fcfs with at most {MUCH:g} of its slowdown at every load")


def _over_fcfs(by: dict[tuple[str, float], dict[str, Any]], label: str, load: float) -> float:
    return by[label, load]["slowdown"] / by["fcfs", load]["slowdown"]


def _pairs(pairs: list[tuple[str, float]]) -> str:
    return ", ".join(f"{label} {x:g}" for label, x in pairs)


def decide(found: list[dict[str, Any]]) -> Decision:
    """The report's verdict on ``t3d_fig6.claims`` entries of one claim (one per gang curve,
    or one): every entry's verdict read through ``VERDICTS`` and combined by ``every``; why
    is each entry's verdict and detail."""
    combined = every([Decision(VERDICTS[c["verdict"]], "") for c in found])
    if not found:
        return combined
    return Decision(combined.verdict, "; ".join(
        (f"{c['scheme']} " if c["scheme"] else "") + f"{c['verdict']}: {c['detail']}"
        for c in found))


def _figure(record: dict[str, Any], figure: str) -> str:
    if figure == "growth":
        return (f"{record['growth']:.3g} ({record['delivered'] / record['load']:.3g})"
                + (" (sat.)" if record["saturated"] else ""))
    half = "" if record["ci"] is None else f" ± {num(record['ci'])}"
    return num(record["slowdown"]) + half + (" (sat.)" if record["saturated"] else "")
