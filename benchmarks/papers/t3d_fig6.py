"""T3D Fig 6 in the simulator: mean slowdown against offered load for five schedulers, gang
scheduling both with a bounded matrix and with an unbounded one.

``python -m benchmarks.papers.t3d_fig6 [--quick] [--workers N] [--json] [--out DIR] [--markdown
PAGE]``
simulates, for each offered load, FCFS, backfilling, prime/non-prime, and gang scheduling
with a 10 s and a 600 s quantum on a 128-PE machine (Feitelson & Jette 1997, §3), gang once
with ``--mpl`` rows (16) and once with as many rows as the jobs need (the curves marked ∞),
the points spread over ``--workers`` processes.  Slowdown is
response time over the dedicated runtime (the job's runtime), as T3D §3.2 defines it.

Method (T3D §3.2): one sequence of jobs is generated once and reused for every point; only the
mean inter-arrival time changes with the load (arrival times are scaled).  The mean slowdown
and its 90 % confidence interval come from batch means: jobs are taken in the order they
terminate, in batches of 3,333, the first batch is discarded (warm-up), and the interval is
t(0.95, n-1) * s / sqrt(n) over the n remaining batch means.  The paper ran up to 100 batches;
the default here is 6 (``--batches``), ``--quick`` 3 on fewer loads.

Workload: T3D's own model (Feitelson 1996's, improved) cannot be rebuilt from public sources:
its parameters are published only as code we could not retrieve.  As the issue allows, the
Lublin-Feitelson model stands in, with the daily cycle off (T3D's stream has no daily cycle,
which is also why prime time is switched blindly every 12 h).  Runtimes are known exactly
(T3D assumes perfect estimates for backfilling and prime).  Backfilling is conservative, as
T3D §3.1 describes it: short jobs move forward "provided they do not cause delays for any other
job" (every queued job keeps a reservation), not EASY's, which protects only the first.  FCFS,
backfilling and prime use variable partitioning (any free PEs); gang uses the buddy allocator
with alternate scheduling.  T3D's
simulated gang scheduler packs jobs into slots with no stated bound: the ∞ curves are that
model (``--mpl unbounded``: a new row whenever a job fits in no row, empty rows dropped, so a
job gets one slice in k with k rows in use, more as an alternate).  Paging is not modeled, so a
row costs a job nothing but its share of the time; with 16 rows a job that fits in none waits
in strict FCFS order.

A point is called saturated when its queue keeps growing through the run, as T3D means by
saturation ("the system cannot handle the load"): the mean number of jobs in the system
(arrived, not ended) over the second half of the arrival span is more than ``GROWTH`` (1.3)
times that over the first half (``growth``, the figure and threshold ``benchmarks.papers.cow``
judges
its queues by).  A stationary queue gives about 1 (an excursion of a heavy-tailed queue a
little more), a queue growing linearly from empty 3.  Beside it each record keeps the load the
machine delivered (the work of all jobs over 128 PEs times the time from the first arrival to
the last end), which falls below the offered load only once the backlog left at the last
arrival takes a long time to clear: it calls saturation late, not where it starts.

Every scheme at a load runs the same jobs, so two schemes are compared job by job: the
difference of their slowdowns for each job, in arrival order, in batches of the batch size
(the first dropped), gives batch means of the difference and its 90 % interval (``versus``:
per other scheme, ``diff``, ``ci`` and the batch means, ``means``).  A scheme is below another
where that interval lies below 0; this paired interval is much narrower than the two schemes'
intervals side by side, since the same long jobs raise both.  Where one of a claim's
comparisons (its loads and schemes) showing the opposite fails the claim, each is taken at the
Bonferroni confidence 1 - 0.10 / their number.  Records without ``versus`` (written before it)
are compared by their own intervals.

Each record carries, besides T3D's mean slowdown (``slowdown``, ``ci``), the mean bounded
slowdown (tau = 10 s), which the Lublin model's many jobs of a few seconds make far more
telling here (``bounded_slowdown``, ``bounded_ci``), the batch means, the delivered utilization
and whether the point is saturated, the matrix's row limit (``mpl``, 0: none) and the most rows
used (``peak_rows``), and the wall seconds the simulation took (``wall_s``).  ``run_points``
returns the records in-process.

Writes ``fig6.png`` and ``fig6.json`` under ``--out`` (default ``runs/t3d-fig6-<time>``), and
with ``--markdown PAGE`` a results page with the figure beside it (``PAGE`` with ``.png``);
``--from FILE`` writes the page (and with ``--out`` the figure and records) again from a
``fig6.json`` without simulating; a page keeps its records beside it (the page's name with
``.json``: ``docs/results/t3d-fig6.json`` for the published page).
Prints a table, or with ``--json`` one record per point.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from scipy.stats import t as student

from benchmarks.harness import (
    Session,
    emit,
    host,
    page_head,
    parser,
    table,
    write_page,
    write_whole,
)
from testbed import run
from testbed.events import EventLog, iter_events
from testbed.exit_codes import exit_on_sigterm
from testbed.experiments import engine
from testbed.experiments.engine import Spread
from testbed.policies import PolicyConfig, make_policy
from testbed.policies.config import PrimeTime
from testbed.policies.matrix import UNBOUNDED, Matrix
from testbed.results.metrics import JobRow, job_rows
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads import lublin
from testbed.workloads.files import JobSpec, Workload

PES = 128
BATCH = 3333
SEED = 1
MPL = 16
GROWTH = 1.3            # jobs in the system, second half over first: above this, saturated
CONFIDENCE = 0.90       # T3D's batch-means intervals
NEAR_ONE = 0.9          # "saturation delayed until load approaches 1": none below this load
LOADS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
QUICK_LOADS = (0.3, 0.5, 0.7, 0.9)
T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782,
       1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
       1.708, 1.706, 1.703, 1.701, 1.699, 1.697)


@dataclass(frozen=True)
class Scheme:
    """One curve of the figure: a policy and its settings (``unbounded``: gang without a limit
    on its rows)."""

    label: str
    policy: str
    timeslice: float
    allocator: str
    unbounded: bool = False
    prime: PrimeTime = PrimeTime()

    def mpl(self, bounded: int) -> int:
        """The rows of the matrix: ``bounded``, or ``UNBOUNDED``."""
        return UNBOUNDED if self.unbounded else bounded


SCHEMES = (
    Scheme("fcfs", "fcfs", 600.0, "first-fit"),
    Scheme("backfill", "conservative", 600.0, "first-fit"),
    Scheme("prime", "prime", 600.0, "first-fit"),
    Scheme("gang 10 s", "gang", 10.0, "buddy"),
    Scheme("gang 600 s", "gang", 600.0, "buddy"),
    Scheme("gang 10 s ∞", "gang", 10.0, "buddy", unbounded=True),
    Scheme("gang 600 s ∞", "gang", 600.0, "buddy", unbounded=True),
)
# prime/non-prime with its two parameters moved ("the threshold between small and large jobs,
# and the length of the prime shift"): not in Fig 6, run by the report's insensitivity row
PRIME_VARIANTS = (
    Scheme("prime large > 16", "prime", 600.0, "first-fit", prime=PrimeTime(large_pes=16)),
    Scheme("prime large > 64", "prime", 600.0, "first-fit", prime=PrimeTime(large_pes=64)),
    Scheme("prime shift 6 h", "prime", 600.0, "first-fit", prime=PrimeTime(shift_s=6 * 3600.0)),
    Scheme("prime shift 18 h", "prime", 600.0, "first-fit",
           prime=PrimeTime(shift_s=18 * 3600.0)),
)
LABELS = tuple(scheme.label for scheme in SCHEMES)
BATCH_SCHEMES = ("fcfs", "backfill", "prime")
GANG_SCHEMES = tuple(label for label in LABELS if label.startswith("gang"))


def scheme(label: str) -> Scheme:
    """The scheme called ``label``; ``ValueError`` naming the known ones."""
    for known in (*SCHEMES, *PRIME_VARIANTS):
        if known.label == label:
            return known
    known_labels = (*LABELS, *(v.label for v in PRIME_VARIANTS))
    raise ValueError(f"unknown scheme {label!r} (known: {', '.join(known_labels)})")


def base_workload(jobs: int) -> tuple[list[JobSpec], float]:
    """The job sequence (arrivals unscaled) and its offered load at those arrivals."""
    generated = lublin.generate(jobs, PES, SEED, None, daily_cycle=False)
    specs = [JobSpec(f"j{i}", i, job.arrival, job.size, (), job.runtime, estimate=job.runtime)
             for i, job in enumerate(generated, start=1)]
    span = generated[-1].arrival - generated[0].arrival
    return specs, sum(j.size * j.runtime for j in generated) / (PES * span)


def at_load(specs: list[JobSpec], natural: float, load: float) -> Workload:
    """The sequence with its inter-arrival times scaled to offer ``load``."""
    factor = natural / load
    return Workload(f"<lublin no daily cycle, load {load}>",
                    [replace(s, arrival=s.arrival * factor) for s in specs],
                    {"generator": "lublin", "daily_cycle": "off", "load": str(load)})


def t_quantile_95(df: int) -> float:
    """The 0.95 quantile of Student's t with ``df`` degrees of freedom: the table up to 30,
    beyond it the Cornish-Fisher expansion from the normal quantile (within 0.05 %)."""
    if df <= len(T95):
        return T95[df - 1]
    z = 1.6448536269514722
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def batch_values(values: list[float], size: int = BATCH) -> list[float]:
    """The means of the batches of ``size`` values after the first (warm-up) batch; a last,
    incomplete batch is left out."""
    return [statistics.fmean(values[i:i + size])
            for i in range(size, len(values) - size + 1, size)]


def batch_means(slowdowns: list[float], size: int = BATCH) -> tuple[float, float, int]:
    """Mean of the means of batches of ``size`` values (the first batch discarded), its 90 %
    half-width, and the number of batches used; the half-width is inf with fewer than two."""
    batches = batch_values(slowdowns, size)
    if not batches:
        return math.nan, math.inf, 0
    if len(batches) < 2:
        return batches[0], math.inf, 1
    half = t_quantile_95(len(batches) - 1) * statistics.stdev(batches) / math.sqrt(len(batches))
    return statistics.fmean(batches), half, len(batches)


class Slots:
    """The highest matrix row a job started in, noted as the log streams past (a saturated
    gang point's log holds millions of switches: read whole, it took 13 GB)."""

    def __init__(self) -> None:
        self.highest = 0

    def seen(self, events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """``events`` unchanged, noting each start's row."""
        for event in events:
            if event["event"] == "start":
                self.highest = max(self.highest, event["slot"])
            yield event


def _rounded(value: float) -> float | None:
    return round(value, 3) if math.isfinite(value) else None


def point(workload: Workload, scheme: Scheme, mpl: int, batch: int,
          tmp: Path) -> tuple[dict[str, Any], dict[str, float]]:
    """Simulate one scheme at one load with ``mpl`` rows (bounded gang) and batches of
    ``batch`` terminations; its figure record and each done job's slowdown by job id."""
    config = PolicyConfig(PES, scheme.mpl(mpl), scheme.timeslice, scheme.allocator,
                          prime=scheme.prime)
    policy = make_policy(scheme.policy, config)
    executor = SimulationExecutor({j.id: j.work or 0.0 for j in workload.jobs})
    out = Path(tempfile.mkdtemp(dir=tmp))
    began = time.perf_counter()
    run.drive(workload, policy, executor, out, {"scheduler": scheme.policy,
              "machine": {"pes": PES}}, log=EventLog(out / "events.jsonl", flush_each=False))
    wall = time.perf_counter() - began
    slots = Slots()
    rows = [r for r in job_rows(slots.seen(iter_events(out / "events.jsonl")))
            if r.status == "done"]
    (out / "events.jsonl").unlink()
    peak_rows = 1 + slots.highest
    rows.sort(key=lambda r: (r.end, r.id))
    slowdowns = [r.response_slowdown for r in rows if r.response_slowdown is not None]
    mean, half, batches = batch_means(slowdowns, batch)
    bounded, bounded_half, _ = batch_means([r.bounded_slowdown for r in rows
                                            if r.bounded_slowdown is not None], batch)
    area = sum(r.size * (r.dedicated or 0.0) for r in rows)
    span = max(r.end or 0.0 for r in rows) - min(r.arrival for r in rows)
    load = float(workload.meta["load"])
    delivered = area / (PES * span)
    grows = growth(rows)
    by_job = {r.id: r.response_slowdown for r in sorted(rows, key=lambda r: (r.arrival, r.id))
              if r.response_slowdown is not None}
    return ({"policy": scheme.label, "load": load,
             "slowdown": round(mean, 3), "ci": _rounded(half),
             "jobs": len(rows), "batches": batches, "bounded_slowdown": round(bounded, 3),
             "bounded_ci": _rounded(bounded_half),
             "batch_means": [round(b, 3) for b in batch_values(slowdowns, batch)],
             "delivered": round(delivered, 4), "growth": round(grows, 3),
             "saturated": saturated(grows),
             "mpl": policy.mpl, "peak_rows": peak_rows, "wall_s": round(wall, 3)}, by_job)


def in_system(rows: list[JobRow], start: float, end: float) -> float:
    """The mean number of jobs arrived and not ended between ``start`` and ``end`` (s)."""
    return sum(max(0.0, min(r.end or end, end) - max(r.arrival, start))
               for r in rows) / (end - start)


def growth(rows: list[JobRow]) -> float:
    """The mean number of jobs in the system over the second half of the arrival span over
    that over the first half (inf when the first half holds none)."""
    first = min(r.arrival for r in rows)
    middle = (first + max(r.arrival for r in rows)) / 2
    early = in_system(rows, first, middle)
    late = in_system(rows, middle, 2 * middle - first)
    return late / early if early > 0 else math.inf


def saturated(grows: float) -> bool:
    """Whether a queue whose ``growth`` is ``grows`` keeps growing through the run."""
    return grows > GROWTH


def paired(mine: dict[str, float], theirs: dict[str, float], batch: int) -> dict[str, Any]:
    """Two schemes' slowdowns of the same jobs compared job by job: the mean of the batch
    means of the differences (mine - theirs, jobs in ``mine``'s order, that is by arrival,
    in batches of ``batch``, the first dropped; None without a batch) and its 90 % half-width
    (None with fewer than two batches)."""
    diffs = [value - theirs[job] for job, value in mine.items() if job in theirs]
    mean, half, _ = batch_means(diffs, batch)
    return {"diff": _rounded(mean), "ci": _rounded(half),
            "means": [round(b, 4) for b in batch_values(diffs, batch)]}


def run_points(loads: Iterable[float], batches: int, batch_size: int = BATCH,
               schemes: Iterable[str] = LABELS, mpl: int = MPL,
               workers: int = 1, spread: Spread | None = None) -> list[dict[str, Any]]:
    """Simulate every scheme (by label) at every offered load, on ``batches`` batches of
    ``batch_size`` terminations (the first dropped), bounded gang with ``mpl`` rows, the
    points spread over ``workers`` processes by the experiments engine (1: one after another
    here), or by ``spread`` when given (a ``map`` whose results may come in any order); the
    records are the same whatever the spreading; the records, load by load in the order of
    ``schemes``.  ``ValueError`` for an unknown label."""
    chosen = [scheme(label) for label in schemes]
    specs, natural = base_workload(batches * batch_size)
    plan = [(index, (at_load(specs, natural, load), one, mpl, batch_size))
            for index, (load, one) in enumerate((load, one) for load in loads
                                                for one in chosen)]
    with engine.spreading(min(workers, len(plan))) as pool:
        found = [point for _, point in sorted((spread or pool)(_point, plan),
                                              key=lambda done: done[0])]
    records = []
    for start in range(0, len(found), len(chosen)):
        same_load = found[start:start + len(chosen)]
        for record, by_job in same_load:
            record["versus"] = {other["policy"]: paired(by_job, theirs, batch_size)
                                for other, theirs in same_load if other is not record}
            records.append(record)
    return records


def _point(task: tuple[int, tuple[Workload, Scheme, int, int]]
           ) -> tuple[int, tuple[dict[str, Any], dict[str, float]]]:
    """``point`` on one numbered ``(workload, scheme, mpl, batch)``, in a temporary directory
    of its own; the number and what ``point`` gives."""
    index, (workload, one, mpl, batch) = task
    with tempfile.TemporaryDirectory(prefix="testbed-fig6-") as tmp:
        return index, point(workload, one, mpl, batch, Path(tmp))


def row_bytes(pes: int = PES) -> int:
    """The bytes one empty matrix row of ``pes`` PEs holds (its free-PE list, job dict and
    busy mask; CPython ``sys.getsizeof``, the ints of small PE numbers shared)."""
    matrix = Matrix(1, pes)
    return sum(sys.getsizeof(part[0]) + 8 for part in (matrix.free_pes, matrix.slots,
                                                       matrix.busy))


def compare(a: dict[str, Any], b: dict[str, Any], confidence: float = CONFIDENCE) -> str:
    """``below`` or ``above`` when record ``a``'s slowdowns lie below or above ``b``'s: the
    interval at ``confidence`` of their paired difference (``versus``: its batch means) wholly
    below or above 0, or for records without it ``a``'s own 90 % interval wholly below or
    above ``b``'s; else ``overlap`` (also without an interval)."""
    versus = a.get("versus", {}).get(b["policy"])
    if versus is not None:
        means = versus["means"]
        if len(means) < 2:
            return "overlap"
        mean = statistics.fmean(means)
        half = float(student.ppf((1 + confidence) / 2, len(means) - 1)) * \
            statistics.stdev(means) / math.sqrt(len(means))
        if mean + half < 0:
            return "below"
        return "above" if mean - half > 0 else "overlap"
    if a["ci"] is None or b["ci"] is None:
        return "overlap"
    if a["slowdown"] + a["ci"] < b["slowdown"] - b["ci"]:
        return "below"
    if a["slowdown"] - a["ci"] > b["slowdown"] + b["ci"]:
        return "above"
    return "overlap"


def family(comparisons: int) -> float:
    """The confidence each of a claim's ``comparisons`` is taken at (Bonferroni over the
    claim's 90 %)."""
    return 1 - (1 - CONFIDENCE) / max(1, comparisons)


def first_saturated(records: list[dict[str, Any]], label: str) -> float | None:
    """The lowest load at which ``label`` is saturated; None if at none of the loads."""
    return min((r["load"] for r in records if r["policy"] == label and r["saturated"]),
               default=None)


def _loads(loads: list[float]) -> str:
    return ", ".join(f"{load:g}" for load in loads) or "none"


def _saturation(at: float | None) -> str:
    return "never" if at is None else f"from {at:g}"


def claims(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """T3D §3.3's claims about Fig 6 checked against ``records`` (those schemes that are
    there): each a dict of ``key`` (which claim: ``fcfs-first``, ``fcfs-highest``,
    ``backfill-prime``, ``gang-lowest`` or ``gang-near-one``), ``claim``, ``scheme`` (the gang
    curve it is about, or None), ``verdict`` (``holds``, ``partly`` or ``fails``) and
    ``detail``.  Slowdowns are compared job by job (``compare``); saturation is
    ``first_saturated``.  A slowdown claim holds where it is shown at every load (each
    comparison at 90 %), fails where the opposite is shown at some load (an interval wholly on
    the wrong side, each at the Bonferroni confidence over the claim's comparisons: one of
    many must not decide it by chance), and else holds partly."""
    by = {(r["policy"], r["load"]): r for r in records}
    labels = list(dict.fromkeys(r["policy"] for r in records))
    loads = sorted({r["load"] for r in records})
    out: list[dict[str, Any]] = []
    if "fcfs" in labels:
        fcfs = first_saturated(records, "fcfs")
        others = {label: first_saturated(records, label) for label in labels if label != "fcfs"}
        earlier = [label for label, at in others.items()
                   if at is not None and (fcfs is None or at < fcfs)]
        verdict = "fails" if fcfs is None or earlier else "holds"
        out.append({"key": "fcfs-first", "claim": "FCFS saturates first", "scheme": None,
                    "verdict": verdict,
                    "detail": f"fcfs saturated {_saturation(fcfs)}; " + "; ".join(
                        f"{label} {_saturation(at)}" for label, at in others.items())})
        level = family(len(loads) * len(others))
        pairs = {load: [(by["fcfs", load], by[label, load]) for label in others
                        if (label, load) in by] for load in loads}
        worst = [load for load, ab in pairs.items()
                 if all(compare(a, b) == "above" for a, b in ab)]
        rest = [load for load in loads if load not in worst]
        beaten = [load for load, ab in pairs.items()
                  if any(compare(a, b, level) == "below" for a, b in ab)]
        verdict = "fails" if beaten else "partly" if rest else "holds"
        out.append({"key": "fcfs-highest",
                    "claim": "FCFS slowdown highest (before saturation too)", "scheme": None,
                    "verdict": verdict,
                    "detail": f"above every other scheme at {_loads(worst)}; not at "
                              f"{_loads(rest)}; below one at {_loads(beaten)}"})
    if {"backfill", "prime"} <= set(labels):
        level = family(len(loads))
        above = [load for load in loads
                 if compare(by["backfill", load], by["prime", load], level) == "above"]
        below = [load for load in loads
                 if compare(by["backfill", load], by["prime", load]) == "below"]
        overlap = [load for load in loads if load not in above and load not in below]
        backfill, prime = first_saturated(records, "backfill"), first_saturated(records, "prime")
        later = (backfill is None or (prime is not None and backfill >= prime))
        verdict = "fails" if above or not later else "partly" if overlap else "holds"
        out.append({"key": "backfill-prime",
                    "claim": "backfilling (conservative) below prime, sustaining a higher load",
                    "scheme": None, "verdict": verdict,
                    "detail": f"backfill below prime at {_loads(below)}; intervals overlap at "
                              f"{_loads(overlap)}; above at {_loads(above)}; backfill saturated "
                              f"{_saturation(backfill)}, prime {_saturation(prime)}"})
    batch = [label for label in BATCH_SCHEMES if label in labels]
    for gang in (label for label in GANG_SCHEMES if label in labels):
        if batch:
            level = family(len(loads) * len(batch))
            lead = [load for load in loads
                    if all(compare(by[gang, load], by[other, load]) == "below" for other in batch)]
            lost = [load for load in loads if load not in lead]
            beaten = [load for load in loads
                      if any(compare(by[gang, load], by[other, load], level) == "above"
                             for other in batch)]
            verdict = "fails" if beaten else "partly" if lost else "holds"
            out.append({"key": "gang-lowest", "claim": "gang lowest", "scheme": gang,
                        "verdict": verdict,
                        "detail": f"below every batch scheme at {_loads(lead)}; not at "
                                  f"{_loads(lost)}; above one at {_loads(beaten)}"})
        at = first_saturated(records, gang)
        verdict = "holds" if at is None or at >= NEAR_ONE else "fails"
        out.append({"key": "gang-near-one",
                    "claim": f"gang saturating only near load 1 (not below {NEAR_ONE:g})",
                    "scheme": gang, "verdict": verdict,
                    "detail": f"saturated {_saturation(at)}"})
    return out


def plot(records: list[dict[str, Any]], path: Path) -> None:
    """Slowdown against load, one curve per scheme with its confidence intervals; a gang curve
    with an unbounded matrix is solid, its bounded twin dashed in the same colour."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.2, 4.8))
    colours = plt.get_cmap("tab10").colors
    for one in SCHEMES:
        mine = [r for r in records if r["policy"] == one.label]
        if not mine:
            continue
        twin = one.label.removesuffix(" ∞")
        dashed = one.policy == "gang" and not one.unbounded
        ax.errorbar([r["load"] for r in mine], [r["slowdown"] for r in mine],
                    yerr=[r["ci"] or 0 for r in mine], marker="o", capsize=3,
                    color=colours[LABELS.index(twin)], linestyle="--" if dashed else "-",
                    label=one.label + (f" (MPL {mine[0]['mpl']})" if dashed else ""))
    ax.set_xlabel("offered load")
    ax.set_ylabel("mean slowdown (response / dedicated)")
    ax.set_yscale("log")
    ax.set_ylim(bottom=1)         # a slowdown is never below 1; wider intervals are cut there
    ax.set_title(f"T3D Fig 6, simulated: {PES} PEs, Lublin model without daily cycle",
                 fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _cell(r: dict[str, Any], value: str = "slowdown", ci: str = "ci") -> str:
    half = "∞" if r[ci] is None else f"{r[ci]:.3g}"
    return f"{r[value]:.4g} ± {half}" + (" (sat.)" if r["saturated"] else "")


def _grid(records: list[dict[str, Any]], value: str, ci: str) -> list[str]:
    labels = list(dict.fromkeys(r["policy"] for r in records))
    by = {(r["policy"], r["load"]): r for r in records}
    lines = ["| load | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for load in sorted({r["load"] for r in records}):
        lines.append(f"| {load:g} | " + " | ".join(
            _cell(by[label, load], value, ci) if (label, load) in by else "-"
            for label in labels) + " |")
    return lines


def _delivered(records: list[dict[str, Any]]) -> list[str]:
    labels = list(dict.fromkeys(r["policy"] for r in records))
    by = {(r["policy"], r["load"]): r for r in records}
    lines = ["| load | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for load in sorted({r["load"] for r in records}):
        lines.append(f"| {load:g} | " + " | ".join(
            _growth(by[label, load]) if (label, load) in by else "-"
            for label in labels) + " |")
    return lines


def _growth(record: dict[str, Any]) -> str:
    delivered = f"{record['delivered'] / record['load']:.3f}"
    grows = record.get("growth")
    return delivered if grows is None else f"{grows:.3g}, {delivered}"


def _costs(records: list[dict[str, Any]], row_size: int) -> list[str]:
    by = {(r["policy"], r["load"]): r for r in records}
    pairs = [(label, f"{label} ∞") for label in GANG_SCHEMES
             if not label.endswith("∞") and (f"{label} ∞", records[0]["load"]) in by]
    if not pairs:
        return []
    head = " | ".join(f"{a}: rows, µs/job | {b}: rows, µs/job, row memory" for a, b in pairs)
    lines = [f"| load | {head} |", "|---|" + "---:|" * 2 * len(pairs)]
    for load in sorted({r["load"] for r in records}):
        cells = []
        for a, b in pairs:
            ra, rb = by[a, load], by[b, load]
            cells.append(f"{ra['peak_rows']}, {1e6 * ra['wall_s'] / ra['jobs']:.0f}")
            cells.append(f"{rb['peak_rows']}, {1e6 * rb['wall_s'] / rb['jobs']:.0f}, "
                         f"{rb['peak_rows'] * row_size / 1024:.0f} KiB")
        lines.append(f"| {load:g} | " + " | ".join(cells) + " |")
    lines.append("")
    for a, b in pairs:
        ratios = [by[b, load]["wall_s"] / by[a, load]["wall_s"]
                  for load in sorted({r["load"] for r in records})]
        lines.append(f"- {b} / {a}, wall time per load: {min(ratios):.2f} to "
                     f"{max(ratios):.2f} (median {statistics.median(ratios):.2f}); most rows "
                     f"{max(by[b, load]['peak_rows'] for load in by_load(records, b))} against "
                     f"{max(by[a, load]['peak_rows'] for load in by_load(records, a))}")
    return lines


def by_load(records: list[dict[str, Any]], label: str) -> list[float]:
    """The loads at which ``label`` has a record."""
    return [r["load"] for r in records if r["policy"] == label]


def markdown(doc: dict[str, Any], figure: str, command: str) -> str:
    """The results page of a ``fig6.json`` document: what was run, on what host and when, the
    figure (the file name ``figure``, beside the page), the slowdowns with their intervals,
    the paper's claims with a verdict each, and what the unbounded matrix cost."""
    records = doc["records"]
    lines = page_head("T3D Fig 6 in the simulator: gang with a bounded and an unbounded matrix",
                      "benchmarks.papers.t3d_fig6", command, doc["host"], doc["measured"])
    kept = Path(figure).with_suffix(".json").name
    lines += [f"- simulated by `{doc['command']}`; the records are kept in `{kept}` beside "
              f"this page (`--from {kept} --markdown PAGE` writes the page again)",
              f"- {doc['pes']} PEs; Lublin-Feitelson model without the daily cycle (seed "
              f"{SEED}), one job sequence scaled to each load; {doc['batches']} batches of "
              f"{doc['batch']} terminations, the first dropped",
              f"- gang: buddy allocator with alternate scheduling, MPL {doc['mpl']} (dashed) "
              "or unbounded (∞, solid); fcfs, backfill and prime: variable partitioning, exact "
              "runtimes",
              f"- simulated in {doc['seconds'] / 60:.1f} min", "",
              f"![slowdown against load]({figure})", "",
              "## Mean slowdown (response / dedicated runtime) ± 90 % batch-means half-width",
              "", "(sat.): saturated, the number of jobs in the system grew through the run "
              f"(second half of the arrivals over the first above {GROWTH:g}); the interval of a "
              "saturated point is not a confidence interval (its batch means grow), only their "
              "spread.",
              "", *_grid(records, "slowdown", "ci"), "",
              "## Mean bounded slowdown (τ = 10 s) ± 90 % half-width", "",
              *_grid(records, "bounded_slowdown", "bounded_ci"), "",
              "## Growth of the queue, and delivered / offered load", "",
              "Growth: the mean number of jobs in the system over the second half of the "
              f"arrivals over that over the first half; above {GROWTH:g}: saturated. Delivered: "
              "the work of all jobs over the PEs and the time from the first arrival to the "
              "last end, over the offered load.", "",
              *_delivered(records), "",
              "## T3D §3.3's claims", "",
              "Slowdowns are compared job by job (every scheme ran the same jobs): a scheme is "
              "below another only where the 90 % batch-means interval of their per-job "
              "difference lies wholly below 0 (records without it: where its own interval lies "
              "wholly below the other's). A claim about slowdowns holds when it is shown at "
              "every load, fails when the opposite is shown at some load, judged at the "
              "Bonferroni confidence 1 - 0.10 / the claim's comparisons (its loads and "
              "schemes) so that one of many does not decide it by chance, and else holds "
              "partly.", "",
              "| claim | gang curve | verdict | evidence |", "|---|---|---|---|"]
    lines += [f"| {c['claim']} | {c['scheme'] or '-'} | {c['verdict']} | {c['detail']} |"
              for c in doc["claims"]]
    costs = _costs(records, doc["row_bytes"])
    if costs:
        lines += ["", "## What the unbounded matrix costs", "",
                  "Rows: the most rows the matrix held (1 + the highest row number a job got; "
                  "a new row takes the lowest free number, so empty rows below an occupied one "
                  "are few). µs/job: wall time of the simulation (driver, policy, executor, event "
                  "log) over the jobs, one run each, not repeated. Row memory: rows × "
                  f"{doc['row_bytes']} bytes, what one empty row of {doc['pes']} PEs holds "
                  "(its cells, free-PE list, job dict and mask).", "", *costs]
    return "\n".join(lines) + "\n"


def write_outputs(doc: dict[str, Any], out: Path | None, markdown_path: Path | None,
                  command: str) -> None:
    """Write ``fig6.json`` and ``fig6.png`` under ``out`` (if any), and the page with its
    figure and records (the page's name with ``.png`` and ``.json``) when ``markdown_path``
    is given."""
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "fig6.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        plot(doc["records"], out / "fig6.png")
    if markdown_path is not None:
        figure = markdown_path.with_suffix(".png")
        write_whole(markdown_path.with_suffix(".json"),
                    json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        plot(doc["records"], figure)
        write_page(markdown_path, lambda: markdown(doc, figure.name, command))


def main(argv: list[str] | None = None) -> int:
    """Run every scheme at every load, print and save the figure (or redraw a saved one)."""
    p = parser("benchmarks.papers.t3d_fig6", __doc__, raw=True, quick="3 batches, 4 loads",
               json_help="one JSON record per point",
               markdown_help="also write a results page (and PAGE with .png beside it)")
    p.add_argument("--batches", type=int, default=6, help="batches, the first dropped")
    p.add_argument("--batch-size", type=int, default=BATCH, help="terminations per batch")
    p.add_argument("--loads", default=None, help="comma-separated offered loads")
    p.add_argument("--schemes", default=",".join(LABELS),
                   help="comma-separated curves (default all: " + ", ".join(LABELS) + ")")
    p.add_argument("--mpl", type=int, default=MPL, help="rows of the bounded gang matrix")
    p.add_argument("--workers", type=int, default=1,
                   help="processes to spread the points over (the records are the same)")
    p.add_argument("--from", dest="source", type=Path, default=None, metavar="FIG6_JSON",
                   help="write the figure and page from a saved fig6.json, simulating nothing")
    args = p.parse_args(argv)
    schemes = args.schemes.split(",")
    for label in schemes:
        try:
            scheme(label)
        except ValueError as err:
            p.error(str(err))
    exit_on_sigterm()
    session = Session.start("benchmarks.papers.t3d_fig6", argv, args.out,
                            None if args.source is not None else "t3d-fig6")
    if args.source is not None:
        doc = json.loads(args.source.read_text())
        doc["claims"] = claims(doc["records"])
    else:
        batches = 3 if args.quick else args.batches
        loads = (QUICK_LOADS if args.quick and args.loads is None else
                 LOADS if args.loads is None else
                 tuple(float(x) for x in args.loads.split(",")))
        began = time.perf_counter()
        records = run_points(loads, batches, args.batch_size, schemes, args.mpl, args.workers)
        seconds = time.perf_counter() - began
        doc = {"host": host(), "pes": PES, "batch": args.batch_size, "batches": batches,
               "mpl": args.mpl, "records": records, "claims": claims(records),
               "measured": session.measured(), "seconds": round(seconds, 1),
               "row_bytes": row_bytes(), "command": session.command}
    out = session.out
    write_outputs(doc, out, args.markdown, session.command)
    if emit(doc["records"], args.json):
        return 0
    print(table(["policy", "load", "slowdown", "90% ci", "bounded", "jobs", "batches", "sat.",
                 "rows", "wall s"],
                [[r["policy"], r["load"], r["slowdown"], r["ci"], r["bounded_slowdown"],
                  r["jobs"], r["batches"], "yes" if r["saturated"] else "", r["peak_rows"],
                  r["wall_s"]] for r in doc["records"]]))
    for c in doc["claims"]:
        print(f"{c['verdict']:>7}: {c['claim']}{' (' + c['scheme'] + ')' if c['scheme'] else ''}"
              f": {c['detail']}")
    print(f"{doc['seconds']:.0f} s of simulation" + (f"; figure and records under {out}"
                                                      if out is not None else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
