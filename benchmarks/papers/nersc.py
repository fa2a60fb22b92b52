"""The NERSC T3E configuration in miniature (Blakeborough and Welcome 1999) against plain gang.

``python -m benchmarks.papers.nersc [--quick] [--seed N] [--span S] [--simulate] [--pes N]
[--seeds K] [--workers N] [--json] [--out DIR] [--markdown PAGE]``

Two mixes.  Simulated (``--simulate``), NERSC's own workload as the paper's Table 2 gives it
(``table2_mix``): four application-size bins, 2-16, 17-64, 65-128 and 129-512 PEs of 644,
scaled to the machine, holding 55.8, 38.1, 4.8 and 1.3 % of the applications and 6.5, 55.7,
28.7 and 9.1 % of the PE-hours, offered at 1.3 times the machine (NQS's "global MPP PE limit
of 832" on 644 PEs: "sufficient work in the NQS queues"); the large jobs are the top bin.  On
real processes (2 PEs, where those bins cannot be told apart) a miniature (``mix``): small jobs
(1 PE up to a quarter of the machine, work 1-6 s) and large jobs (half the machine, or 512/644
of it: NERSC's largest queue, pe512; work 4-10 s), Poisson arrivals over ``--span`` seconds
offering about 0.55 and 0.45 of the machine.
Five configurations run the same jobs, all placing an application on any free PEs (first fit:
the T3E's torus had no buddy blocks):

* ``before``: psched as NERSC ran it before UNICOS/mk 2.0.4: the load balancer only, no gang
  scheduling, the PEs split into a Batch and a Mixed domain (``psched-split``), and NERSC's
  de-fragment script (``--defrag``: a job at the head of the queue for 120 s holds back the
  jobs behind it);
* ``split-gang``: our guess at the weeks after the upgrade (the paper's Table 6, "Since
  2.0.4", which does not say what ran then: 2.0.4 had been tested "in non-production,
  dedicated timeslots"): the same domains, balancer and de-fragmenting with 2.0.4's gang
  scheduling, two applications a PE, no prime jobs
  (``psched-split-gang``);
* ``gang``: plain gang scheduling, MPL 2, 0.2 s slices, no load balancer;
* ``nersc``: psched as NERSC ran it: app_max=1, abs_app_max=2, the large jobs ``prime``, the
  load balancer every 2 s;
* ``no-prime``: the same limits and balancer without prime jobs (what prime status changes).

By default each runs once on real processes on 2 PEs (no matrix row holds more processes than
the machine has CPUs); ``--simulate`` runs them in the simulator instead, on ``--pes`` PEs (128
by default), for ``--seeds`` seeds, spread over ``--workers`` processes by the experiments
engine (the records are the same whatever the number; runs on real processes stay one at a
time, since they measure the machine).  Reported per configuration: utilization (CPU seconds over
PEs x makespan; simulated: work done), turnaround (response time) of the large and the small
jobs, mean and median, the migrations the balancer made, and the makespan; with several seeds,
the median over seeds and the range.  Writes ``nersc.json`` and ``nersc.png`` under ``--out``;
``--json`` prints one record per configuration and seed: ``{"config", "seed", "utilization",
"large_mean", "large_median", "small_mean", "small_median", "large_wait", "small_wait",
"migrations", "makespan", "busy", "held_idle", "free_idle"}`` (``large_wait``, ``small_wait``:
mean waits, s; the last three: how the PE-time up to the last arrival divides, ``pe_time``).
``--markdown PAGE`` also writes the table as a page, with the host, the date and the command
recorded.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    Session,
    emit,
    events,
    host,
    markdown_table,
    page_head,
    parser,
    table,
    testbed,
)
from testbed.experiments import engine
from testbed.policies.psched import batch_pes
from testbed.results.metrics import job_rows

SMALL_LOAD, LARGE_LOAD = 0.55, 0.45
NERSC_PES = 644
ACCEPTANCE_DAYS = 14         # the acceptance ran two weeks: a run's span as 14 "days"
# Table 2: (smallest, largest PEs of 644, % of all applications, % of PE-hours)
TABLE_2 = ((2, 16, 55.8, 6.5), (17, 64, 38.1, 55.7), (65, 128, 4.8, 28.7), (129, 512, 1.3, 9.1))
TABLE_2_LOAD = 832 / 644     # NQS's global MPP PE limit over the APP region's PEs
TABLE_2_MEAN_WORK = 10.0     # s: the mean job's work (the paper gives shares, not seconds)
SMALL_WORK, LARGE_WORK = (1.0, 6.0), (4.0, 10.0)
FIRST_FIT = ("--allocator", "first-fit")
PSCHED = ("--scheduler", "psched", "--app-max", "1", "--abs-app-max", "2", "--balance", "2",
          *FIRST_FIT)
# NERSC's de-fragment script ran "once or twice a day"; with the mean job's work at 10 s
# standing for about an hour, half a day is about 120 s
DEFRAG = ("--defrag", "120")
CONFIGS: dict[str, tuple[bool, tuple[str, ...]]] = {       # name: (large jobs prime, options)
    "before": (False, ("--scheduler", "psched-split", "--balance", "2", *DEFRAG, *FIRST_FIT)),
    "split-gang": (False, ("--scheduler", "psched-split-gang", "--app-max", "2",
                           "--abs-app-max", "2", "--balance", "2", *DEFRAG, *FIRST_FIT)),
    "gang": (False, ("--scheduler", "gang", "--mpl", "2", *FIRST_FIT)),
    "nersc": (True, PSCHED),
    "no-prime": (False, PSCHED),
}
METRICS = ("utilization", "busy", "large_mean", "large_median", "small_mean", "small_median",
           "migrations", "makespan")


def sizes(pes: int) -> tuple[list[int], list[int]]:
    """The small sizes (powers of two up to a quarter of the machine) and the large ones
    (half the machine, and NERSC's largest queue's share of it, 512 of 644 PEs)."""
    small = [1]
    while small[-1] * 2 <= pes // 4:
        small.append(small[-1] * 2)
    return small, sorted({max(2, pes // 2), batch_pes(pes)})


def mix(pes: int, span: float, seed: int, prime: bool) -> str:
    """The workload text over ``span`` s on ``pes`` PEs; large jobs carry ``prime`` if asked."""
    rng = random.Random(seed)
    small, large = sizes(pes)
    lines = []
    for choices, work, load, word in ((small, SMALL_WORK, SMALL_LOAD, ""),
                                      (large, LARGE_WORK, LARGE_LOAD, "prime " if prime else "")):
        gap = statistics.fmean(choices) * statistics.fmean(work) / (load * pes)
        t = rng.expovariate(1 / gap)
        while t < span:
            lines.append((t, f"{rng.choice(choices)} {word}bsp --work {rng.uniform(*work):.2f}"))
            t += rng.expovariate(1 / gap)
    header = f"# testbed: seed={seed} benchmark=nersc span={span} pes={pes}\n"
    return header + "".join(f"{t:.2f} {rest}\n" for t, rest in sorted(lines))


def table2_bins(pes: int) -> list[tuple[int, int]]:
    """Table 2's size bins (2-16, 17-64, 65-128, 129-512 PEs of NERSC's 644) scaled to
    ``pes`` PEs: each bin's top scaled and rounded, each bottom one above the bin before."""
    bins, low = [], 1
    for _, top, _, _ in TABLE_2:
        high = max(low, round(top * pes / NERSC_PES))
        bins.append((low, high))
        low = high + 1
    return bins


def table2_mix(pes: int, span: float, seed: int, prime: bool,
               load: float = TABLE_2_LOAD) -> str:
    """The workload text of NERSC's Table 2 over ``span`` s on ``pes`` PEs: Poisson arrivals
    offering ``load`` of the machine; a job's bin drawn by Table 2's share of applications, its
    size uniform over the bin, its work exponential with the bin's mean, the means set so that
    each bin carries Table 2's share of the PE-hours and the mean job works
    ``TABLE_2_MEAN_WORK`` s; the top bin's jobs carry ``prime`` if asked."""
    rng = random.Random(seed)
    bins = table2_bins(pes)
    apps = [row[2] / 100 for row in TABLE_2]
    sizes_mean = [(low + high) / 2 for low, high in bins]
    unit = [row[3] / (share * size) for row, share, size in zip(TABLE_2, apps, sizes_mean,
                                                                strict=True)]
    scale = TABLE_2_MEAN_WORK / sum(a * u for a, u in zip(apps, unit, strict=True))
    works = [u * scale for u in unit]
    offered = sum(a * s * w for a, s, w in zip(apps, sizes_mean, works, strict=True))
    gap = offered / (load * pes)
    lines = []
    t = rng.expovariate(1 / gap)
    while t < span:
        b = rng.choices(range(len(bins)), weights=apps)[0]
        word = "prime " if prime and b == len(bins) - 1 else ""
        work = max(0.01, rng.expovariate(1 / works[b]))
        lines.append(f"{t:.2f} {rng.randint(*bins[b])} {word}bsp --work {work:.2f}\n")
        t += rng.expovariate(1 / gap)
    header = (f"# testbed: seed={seed} benchmark=nersc-table2 span={span} pes={pes} "
              f"load={load}\n")
    return header + "".join(lines)


def large_sizes(pes: int, simulate: bool) -> set[int]:
    """The sizes of the large jobs: Table 2's top bin when simulated, else the miniature's."""
    if simulate:
        low, high = table2_bins(pes)[-1]
        return set(range(low, high + 1))
    return set(sizes(pes)[1])


def bin_shares(evs: list[dict[str, Any]], pes: int) -> list[float]:
    """The PE-time of the jobs that finished, by Table 2's size bins (scaled to ``pes``), as
    shares of the whole (0-1): what the machine delivered to each bin."""
    bins = table2_bins(pes)
    done = [0.0] * len(bins)
    for r in job_rows(evs):
        if r.runtime is None:
            continue
        b = next(i for i, (low, high) in enumerate(bins) if low <= r.size <= high)
        done[b] += r.size * r.work
    total = sum(done)
    return [round(d / total, 4) if total else 0.0 for d in done]


def measure(evs: list[dict[str, Any]], summary: dict[str, Any], pes: int,
            large: set[int]) -> dict[str, Any]:
    """The figures of one run from its events and ``summary.json``; ``large``: the sizes
    of the large jobs."""
    rows = job_rows(evs)
    large_r = [r.response for r in rows if r.size in large and r.response is not None]
    small_r = [r.response for r in rows if r.size not in large and r.response is not None]
    large_w = [r.wait for r in rows if r.size in large and r.wait is not None]
    small_w = [r.wait for r in rows if r.size not in large and r.wait is not None]
    migrations = sum(1 for e in evs if e["event"] == "migrate" and e["error"] is None)
    utilization = summary["utilization"] or summary["useful_utilization"]
    return {"utilization": round(utilization, 3),
            "large_mean": _stat(statistics.fmean, large_r),
            "large_median": _stat(statistics.median, large_r),
            "small_mean": _stat(statistics.fmean, small_r),
            "small_median": _stat(statistics.median, small_r),
            "large_wait": _stat(statistics.fmean, large_w),
            "small_wait": _stat(statistics.fmean, small_w),
            "migrations": migrations, "makespan": round(summary["makespan"], 3),
            "large": len(large_r), "small": len(small_r), **pe_time(evs, pes)}


def pe_time(evs: list[dict[str, Any]], pes: int) -> dict[str, float]:
    """How the machine's PE-time from the start to the last arrival divides (shares of
    ``pes`` x that span, 0-1): ``busy`` (a job runs on the PE), ``held_idle`` (the PE holds
    the job of a matrix row that is not running, and none that is) and ``free_idle`` (no job
    holds it).  Where the balancer or gang scheduling loses time shows here: a PE waiting
    for its row is idle although it holds work."""
    until = _last_arrival(evs)
    share = {"busy": 0.0, "held_idle": 0.0, "free_idle": 0.0}
    for begin, end, count in _pe_states(evs, pes, until):
        for key in share:
            share[key] += count[key] * (end - begin)
    total = pes * until
    return {key: round(value / total, 3) if total else 0.0 for key, value in share.items()}


def busy_windows(evs: list[dict[str, Any]], pes: int, windows: int) -> list[float]:
    """The busy share of the PE-time (0-1) in each of ``windows`` equal windows from the start
    to the last arrival, in order: how utilization varied over the run."""
    until = _last_arrival(evs)
    width = until / windows if until > 0 else 0.0
    busy = [0.0] * windows
    for begin, end, count in _pe_states(evs, pes, until):
        for w in range(windows):
            low, high = w * width, (w + 1) * width if w < windows - 1 else until
            busy[w] += count["busy"] * max(0.0, min(end, high) - max(begin, low))
    return [round(b / (pes * width), 4) if width else 0.0 for b in busy]


def _last_arrival(evs: list[dict[str, Any]]) -> float:
    return max((e["t"] for e in evs if e["event"] == "arrival"), default=0.0)


def _pe_states(evs: list[dict[str, Any]], pes: int,
               until: float) -> Iterator[tuple[float, float, dict[str, int]]]:
    """The intervals up to ``until`` between the events that change a PE's state, each with
    the number of PEs in each state (``busy``, ``held_idle``, ``free_idle``)."""
    held, running = [0] * pes, [0] * pes
    where: dict[str, list[int]] = {}
    active: set[str] = set()
    count = {"busy": 0, "held_idle": 0, "free_idle": pes}
    last = 0.0

    def state(pe: int) -> str:
        return "busy" if running[pe] else "held_idle" if held[pe] else "free_idle"

    def change(job: str, hold: int, run: int) -> None:
        for pe in where[job]:
            count[state(pe)] -= 1
            held[pe] += hold
            running[pe] += run
            count[state(pe)] += 1

    for e in evs:
        kind, job = e["event"], e.get("job")
        if kind not in ("start", "resume", "suspend", "finish", "migrate"):
            continue
        now = min(e["t"], until)
        if now > last:
            yield last, now, dict(count)
        last = now
        if kind == "start":
            where[job] = list(e["pes"])
            active.add(job)
            change(job, 1, 1)
        elif kind == "resume" and job not in active:
            active.add(job)
            change(job, 0, 1)
        elif kind == "suspend" and job in active:
            active.discard(job)
            change(job, 0, -1)
        elif kind == "finish" and job in where:
            change(job, -1, -1 if job in active else 0)
            active.discard(job)
        elif kind == "migrate" and job in where:
            run = 1 if job in active else 0
            change(job, -1, -run)
            where[job] = list(e["pes"])
            change(job, 1, run)
    if until > last:
        yield last, until, dict(count)


def _stat(stat: Callable[[list[float]], float], values: list[float]) -> float | None:
    return round(stat(values), 3) if values else None


def run(out: Path, pes: int, span: float, seed: int, simulate: bool) -> list[dict[str, Any]]:
    """Run every configuration on one seeded mix (Table 2's when ``simulate``, else the
    miniature); one record each."""
    records = []
    make = table2_mix if simulate else mix
    for config, (prime, options) in CONFIGS.items():
        path = out / f"workload-{seed}-{'prime' if prime else 'plain'}.txt"
        path.write_text(make(pes, span, seed, prime))
        run_dir = out / f"{config}-{seed}"
        if (run_dir / "config.json").is_file():
            shutil.rmtree(run_dir)  # this benchmark's own run of an earlier invocation
        testbed("simulate" if simulate else "run", str(path), "--pes", str(pes), *options,
                "--out", str(run_dir))
        summary = json.loads((run_dir / "summary.json").read_text())
        evs = events(run_dir)
        record = {"config": config, "seed": seed,
                  **measure(evs, summary, pes, large_sizes(pes, simulate))}
        if simulate:
            record["bins"] = bin_shares(evs, pes)
            record["busy_days"] = busy_windows(evs, pes, ACCEPTANCE_DAYS)
        records.append(record)
    return records


def describe_mix(pes: int, simulate: bool) -> str:
    """The mix in a sentence."""
    if not simulate:
        return (f"small jobs (1 PE to a quarter of the machine) offering {SMALL_LOAD:g} of the "
                f"machine, large ones (half of it or 512/644 of it) {LARGE_LOAD:g}")
    bins = ", ".join(f"{low}-{high} PEs ({row[2]:g} % of the jobs, {row[3]:g} % of the "
                     "PE-time)" for (low, high), row in zip(table2_bins(pes), TABLE_2,
                                                          strict=True))
    return (f"NERSC's Table 2 scaled to {pes} of 644 PEs, bins {bins}, offering "
            f"{TABLE_2_LOAD:.3g} of the machine (NQS's limit of 832 PEs on 644), a job's work "
            f"exponential with its bin's mean, {TABLE_2_MEAN_WORK:g} s on average; large jobs: "
            "the top bin")


def summarize(records: list[dict[str, Any]]) -> list[list[Any]]:
    """One table row per configuration: each metric's median over seeds (and its range when
    there are several)."""
    rows = []
    for config in CONFIGS:
        mine = [r for r in records if r["config"] == config]
        cells: list[Any] = [config]
        for key in METRICS:
            values = [r[key] for r in mine if r[key] is not None]
            if not values:
                cells.append("-")
            elif len(values) == 1:
                cells.append(values[0])
            else:
                cells.append(f"{statistics.median(values):.4g} "
                             f"({min(values):.4g}-{max(values):.4g})")
        rows.append(cells)
    return rows


def markdown(records: list[dict[str, Any]], pes: int, span: float, simulate: bool,
             command: str, measured: str) -> str:
    """The results page: the mix, then per configuration each metric (the median over seeds
    and their range when there are several)."""
    seeds = sorted({r["seed"] for r in records})
    where = ("in the simulator" if simulate else
             "on real processes, one rank a PE, so no matrix row holds more processes than "
             "the machine has CPUs")
    return "\n".join([
        *page_head("NERSC's psched configuration against gang", "benchmarks.papers.nersc", command,
                   host(), measured),
        f"- {pes} PEs, {where}; seeds {', '.join(map(str, seeds))}, {span:g} s of Poisson "
        f"arrivals each: {describe_mix(pes, simulate)}; every configuration places on any "
        "free PEs (first fit)",
        "- before: psched-split, the balancer only on a Batch and a Mixed domain, one "
        "application a PE, de-fragmenting after 120 s at the head of the queue; split-gang: "
        "the same domains, balancer and de-fragmenting gang-scheduling two applications a PE "
        "(our guess at 2.0.4 before the single region); gang: MPL 2, 0.2 s slices; "
        "nersc: psched with app_max 1, abs_app_max 2, the balancer every 2 s, the large jobs "
        "prime; no-prime: the same without prime jobs", "",
        "Utilization: " + ("work done over PEs x makespan" if simulate else
                           "CPU seconds over PEs x makespan") + "; busy: the share of the "
        "PE-time up to the last arrival in which a job ran (a production machine's utilization "
        "over a window in which work kept arriving); turnaround: response time "
        "(s); " + ("the median over the seeds and their range." if len(seeds) > 1 else
                   "one run of each configuration."), "",
        *markdown_table(["config", "utilization", "busy to the last arrival", "large mean",
                         "large median", "small mean", "small median", "migrations",
                         "makespan (s)"], summarize(records)),
        ""])


def plot(records: list[dict[str, Any]], path: Path, title: str) -> None:
    """Utilization, large-job and small-job turnaround per configuration (one dot per seed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = (("utilization", "utilization"), ("large_mean", "large-job turnaround (s)"),
            ("small_mean", "small-job turnaround (s)"))
    fig, axes = plt.subplots(1, len(keys), figsize=(12, 3.8))
    for ax, (key, label) in zip(axes, keys, strict=True):
        for x, config in enumerate(CONFIGS):
            values = [r[key] for r in records if r["config"] == config and r[key] is not None]
            ax.scatter([x] * len(values), values, alpha=0.7)
            if values:
                ax.hlines(statistics.median(values), x - 0.3, x + 0.3)
        ax.set_xticks(range(len(CONFIGS)), list(CONFIGS))
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run the configurations, print the table and save the JSON and the figure."""
    p = parser("benchmarks.papers.nersc", __doc__, raw=True,
               quick="a 15 s mix: shows that it works",
               json_help="one JSON record per run")
    p.add_argument("--seed", type=int, default=1, help="first seed")
    p.add_argument("--seeds", type=int, default=None,
                   help="seeds to run (default: 1 on real processes, 5 simulated)")
    p.add_argument("--span", type=float, default=None,
                   help="seconds of arrivals (default: 60 on real processes, 2000 simulated)")
    p.add_argument("--simulate", action="store_true", help="run in the simulator")
    p.add_argument("--pes", type=int, default=None,
                   help="PEs (default: 2 on real processes, 128 simulated)")
    p.add_argument("--workers", type=int, default=1,
                   help="--simulate: processes to spread the seeds over (the records are "
                        "the same)")
    args = p.parse_args(argv)
    pes = args.pes or (128 if args.simulate else 2)
    span = 15.0 if args.quick else args.span or (2000.0 if args.simulate else 60.0)
    seeds = args.seeds or (5 if args.simulate else 1)
    session = Session.start("benchmarks.papers.nersc", argv, args.out, "nersc")
    out = session.out
    assert out is not None
    workers = min(args.workers, seeds) if args.simulate else 1
    with engine.spreading(workers) as spread:
        found = spread(functools.partial(run, out, pes, span, simulate=args.simulate),
                       range(args.seed, args.seed + seeds))
        records = [r for ran in sorted(found, key=lambda ran: ran[0]["seed"]) for r in ran]
    (out / "nersc.json").write_text(json.dumps(records, indent=1))
    where = "simulated" if args.simulate else "real processes"
    plot(records, out / "nersc.png",
         f"NERSC's psched configuration against gang: {pes} PEs, {where}, {seeds} seed(s)")
    session.page(args.markdown, lambda: markdown(records, pes, span, args.simulate,
                                                 session.command, session.measured()))
    if emit(records, args.json):
        return 0
    print(table(["config", *METRICS], summarize(records)))
    print(f"\n{pes} PEs, {where}, {seeds} seed(s) of {span:g} s; figure: {out / 'nersc.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
