"""Simulator speed: simulated jobs per wall second on a Lublin workload.

``python -m benchmarks.simulator.speed [--jobs 100000[,...]] [--pes 1024]
[--policies easy,conservative,gang] [--repeats N [--once-from JOBS] [--against CHECKOUT]
[--without-log] [--end-to-end POLICIES] [--markdown PAGE]] [--json] [--profile]``
generates a Lublin-Feitelson workload of each size (seed 1, load 0.7, uncompressed; runtime
estimates perfect), simulates it under each policy through the same driver and event log a
``testbed simulate`` run uses (gang with a 600 s quantum and MPL 8, the batch policies
first-fit), and gives jobs / wall second of the simulation (driver, policy, executor, and
writing ``events.jsonl``), and apart from it the seconds ``jobs.csv`` and ``summary.json`` take
to derive from the log; the simulated span (the virtual time from the start to the last event)
and its ratio to the simulation's wall time; and the process's peak RSS.  Generating the
workload is not timed.  Anchor: pyss did ~2,500 jobs/s with EASY on a 550 MHz Pentium III.

Without ``--repeats`` each policy runs once, in this process.  With ``--repeats N`` every run
is a fresh process (this file with ``--json``, one policy), N of them a policy and size (one
for sizes of ``--once-from`` jobs or more, default 1,000,000), and the table gives the median
jobs/s with its 95 % interval (``testbed.experiments.stats``; with fewer than 6 runs the
interval is their range and states its own, lower confidence).  ``--end-to-end POLICIES``
also times, N times each, what a user waits for: ``python -m testbed simulate`` of the largest
repeated size's workload written as an SWF file (``testbed workload lublin --format swf``, perfect
estimates), from the command's start to its exit, its results written.
``--against CHECKOUT`` compares with another checkout through what every checkout has, its
own command line: ``python -m testbed simulate`` of the same SWF workload under each
``--end-to-end`` policy (``--policies`` when none is given), at every repeated size, by this
checkout and by that one, timed from outside, the two taking turns (a drift of the machine
lands on both alike); the ratio of medians with its interval.  This code's modules are never
run over the other's, whose internals may differ; where the other checkout's command lacks
something (an option, a policy), its cell says so with the command's last error line.
``--without-log`` also measures each policy with an event log that writes nothing (``--no-log``
in the runs): what the simulator costs apart from its log, a diagnostic whose runs have no
results.  ``--markdown PAGE`` writes the table as a Markdown page with the host, the date and
the command.  ``--profile`` runs the simulations under cProfile and prints the functions with
the most time of their own, with their share of the simulation's time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    REPO,
    Session,
    checkout_type,
    commit_of,
    emit,
    host,
    page_head,
    parser,
    table,
)
from testbed import run
from testbed.events import EventLog
from testbed.experiments.stats import Interval, below_nominal, median_interval, ratio_interval
from testbed.policies import PolicyConfig, make_policy
from testbed.results.report import write_results
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads import lublin
from testbed.workloads.files import JobSpec, Workload

HERE = REPO
GANG_QUANTUM_S = 600.0
GANG_MPL = 8
SEED = 1
LOAD = 0.7


class NullLog(EventLog):
    """An event log that formats and writes nothing (``--no-log``: the simulator's cost apart
    from its log)."""

    def _nothing(self, *args: Any, **kwargs: Any) -> None:
        """Drop the event."""


for _name in dir(EventLog):
    if _name.startswith("emit"):
        setattr(NullLog, _name, NullLog._nothing)


def lublin_workload(jobs: int, pes: int, seed: int = SEED, load: float = LOAD) -> Workload:
    """A Lublin-Feitelson workload of ``jobs`` jobs for ``pes`` PEs with perfect estimates.
    Its times are Python floats, as those of a workload file are (the generator's arrivals
    are numpy floats, whose arithmetic would cost the simulation some 5 us a job more)."""
    specs = [JobSpec(f"j{i}", i, float(job.arrival), job.size, (), runtime, estimate=runtime)
             for i, job in enumerate(lublin.generate(jobs, pes, seed, load), start=1)
             for runtime in (float(job.runtime),)]
    return Workload(f"<lublin jobs={jobs} pes={pes} seed={seed} load={load}>", specs,
                    {"generator": "lublin", "seed": str(seed), "load": str(load)})


def simulate(workload: Workload, scheduler: str, pes: int, out: Path, log: bool = True,
             profiler: cProfile.Profile | None = None) -> tuple[float, float | None, float]:
    """Simulate ``workload`` under ``scheduler`` into ``out``; the wall seconds the simulation
    took (driver, policy, executor and event log; ``profiler`` on meanwhile), those the
    results took (``jobs.csv`` and ``summary.json`` derived from the log; None without a
    ``log``) and the simulated span (s of virtual time, to the last event)."""
    allocator = "buddy" if scheduler == "gang" else "first-fit"
    config = PolicyConfig(pes, GANG_MPL, GANG_QUANTUM_S, allocator)
    policy = make_policy(scheduler, config)
    executor = SimulationExecutor({job.id: job.work or 0.0 for job in workload.jobs})
    events = (EventLog if log else NullLog)(out / "events.jsonl", flush_each=False)
    config = {"scheduler": scheduler, "machine": {"pes": pes, "oversubscribed": False}}
    if profiler is not None:
        profiler.enable()
    began = time.perf_counter()
    run.drive(workload, policy, executor, out, config, log=events)
    simulated = time.perf_counter()
    if profiler is not None:
        profiler.disable()
    span = executor.now()
    if not log:
        return simulated - began, None, span
    write_results(out)
    return simulated - began, time.perf_counter() - simulated, span


def profile_lines(profiler: cProfile.Profile, top: int = 15) -> list[str]:
    """The ``top`` functions with the most time of their own, with their share of the
    profiled time."""
    stats = pstats.Stats(profiler, stream=io.StringIO()).stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.values()) or 1.0
    ranked = sorted(stats.items(), key=lambda item: -item[1][2])[:top]
    lines = [f"{'share':>6} {'own s':>7} {'calls':>9}  function"]
    for (path, line, name), (_, calls, own, _, _) in ranked:
        where = f"{Path(path).name}:{line}({name})" if line else name
        lines.append(f"{own / total:6.1%} {own:7.3f} {calls:9d}  {where}")
    return lines


def peak_rss_mib() -> float:
    """This process's peak resident set size so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_here(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One run of every policy and size in this process; one record each."""
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="testbed-simbench-") as tmp:
        for jobs in args.jobs:
            workload = lublin_workload(jobs, args.pes)
            for scheduler in args.policies:
                out = Path(tmp) / f"{scheduler}-{jobs}"
                out.mkdir()
                profiler = cProfile.Profile() if args.profile else None
                seconds, report_s, span = simulate(workload, scheduler, args.pes, out,
                                                   not args.no_log, profiler)
                if profiler is not None:
                    print(f"--- {scheduler}: {seconds:.3f} s profiled\n"
                          + "\n".join(profile_lines(profiler)))
                records.append({"policy": scheduler, "jobs": jobs, "pes": args.pes,
                                "seconds": round(seconds, 3),
                                "jobs_per_s": round(jobs / seconds),
                                "report_s": None if report_s is None else round(report_s, 3),
                                "span_s": round(span, 3),
                                "span_per_wall_s": round(span / seconds),
                                "peak_rss_mib": round(peak_rss_mib(), 1)})
                shutil.rmtree(out)
    return records


def run_in(checkout: Path, scheduler: str, jobs: int, pes: int, log: bool) -> dict[str, Any]:
    """One run of ``scheduler`` by this benchmark over ``checkout``'s ``testbed`` (and its
    ``benchmarks.harness``), in a fresh process; its record."""
    command = [sys.executable, str(Path(__file__).resolve()), "--jobs", str(jobs), "--pes",
               str(pes), "--policies", scheduler, "--json", *([] if log else ["--no-log"])]
    done = subprocess.run(command, cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} in {checkout} exited {done.returncode}: "
                           f"{done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def end_to_end_jobs(sizes: list[int], once_from: int) -> int:
    """The size whose workload ``testbed simulate`` is timed on: the largest repeated one."""
    return max((jobs for jobs in sizes if jobs < once_from), default=min(sizes))


def policy_options(scheduler: str) -> list[str]:
    """``testbed simulate``'s options for the settings ``simulate`` gives ``scheduler``: gang's
    quantum and MPL, the batch policies' first fit."""
    if scheduler == "gang":
        return ["--timeslice", f"{GANG_QUANTUM_S:g}", "--mpl", str(GANG_MPL)]
    return ["--allocator", "first-fit"]


def simulate_command(checkout: Path, scheduler: str, swf: Path, pes: int, jobs: int,
                     lacking_ok: bool = False) -> dict[str, Any]:
    """One ``python -m testbed simulate`` of ``swf`` (``jobs`` jobs) under ``scheduler`` by
    ``checkout``'s testbed, timed from the command's start to its exit (its results
    written); its record.  A command that fails raises, unless ``lacking_ok``: then the record
    says what the checkout lacks (``missing``: its last error line) instead of a time."""
    with tempfile.TemporaryDirectory(prefix="testbed-simbench-") as tmp:
        command = [sys.executable, "-m", "testbed", "simulate", str(swf), "--scheduler",
                   scheduler, "--pes", str(pes), "--estimates", "perfect",
                   *policy_options(scheduler), "--out", str(Path(tmp) / "run")]
        began = time.perf_counter()
        done = subprocess.run(command, cwd=checkout, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(checkout)})
        seconds = time.perf_counter() - began
        if done.returncode != 0 or not (Path(tmp) / "run" / "summary.json").is_file():
            last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            if lacking_ok:
                return {"policy": scheduler, "jobs": jobs, "missing": last[:200]}
            raise RuntimeError(f"{' '.join(command)} in {checkout} exited {done.returncode}: "
                               f"{done.stderr.strip()[-500:]}")
    return {"policy": scheduler, "jobs": jobs, "seconds": round(seconds, 3)}


def measure_repeated(args: argparse.Namespace) -> dict[str, Any]:
    """``args.repeats`` runs of every policy and size in this checkout (and without its log;
    sizes of ``args.once_from`` jobs or more once), each a fresh process, taking turns; and
    the end-to-end runs of ``testbed simulate``, by this checkout and ``--against``'s (see the
    module's docstring); the runs and their summaries."""
    sides = {"this": (HERE, True)}
    if args.without_log:
        sides["no_log"] = (HERE, False)
    commands = {"this": HERE}
    if args.against is not None:
        commands["against"] = args.against.resolve()
    if args.against is None:
        policies, sizes = args.end_to_end, [end_to_end_jobs(args.jobs, args.once_from)]
    else:
        policies = args.end_to_end or args.policies
        sizes = [jobs for jobs in args.jobs if jobs < args.once_from] or [min(args.jobs)]
    started = time.time()
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    end_to_end: dict[str, list[dict[str, Any]]] = {side: [] for side in commands}
    with tempfile.TemporaryDirectory(prefix="testbed-simbench-") as tmp:
        traces = {jobs: Path(tmp) / f"lublin-{jobs}.swf" for jobs in sizes} if policies else {}
        for jobs, swf in traces.items():
            subprocess.run([sys.executable, "-m", "testbed", "workload", "lublin", "--jobs",
                            str(jobs), "--pes", str(args.pes), "--seed", str(SEED),
                            "--load", str(LOAD), "--format", "swf", "--output", str(swf)],
                           cwd=HERE, check=True, capture_output=True)
        for repeat in range(args.repeats):
            for jobs in args.jobs:
                once = jobs >= args.once_from
                if once and repeat > 0:
                    continue
                for scheduler in args.policies:
                    for side, (checkout, log) in sides.items():
                        if once and side != "this":
                            continue
                        record = run_in(checkout, scheduler, jobs, args.pes, log)
                        runs[side].append(record)
                        print(f"[{repeat + 1}/{args.repeats}] {jobs} {scheduler} {side}: "
                              f"{record['jobs_per_s']} jobs/s", file=sys.stderr)
            for jobs, swf in traces.items():
                for scheduler in policies:
                    for side, checkout in commands.items():
                        record = simulate_command(checkout, scheduler, swf, args.pes, jobs,
                                                  lacking_ok=side != "this")
                        end_to_end[side].append(record)
                        print(f"[{repeat + 1}/{args.repeats}] testbed simulate {jobs} "
                              f"{scheduler} {side}: "
                              f"{record.get('seconds', record.get('missing'))}",
                              file=sys.stderr)
    checkouts = {**{side: checkout for side, (checkout, _) in sides.items()}, **commands}
    return {"benchmark": "simulator", "host": host(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
            "seconds": round(time.time() - started, 1), "jobs": args.jobs, "pes": args.pes,
            "repeats": args.repeats, "once_from": args.once_from,
            "checkouts": {side: {"path": str(checkout), "commit": commit_of(checkout)}
                          for side, checkout in checkouts.items()},
            "runs": runs, "summary": summarize(runs),
            "end_to_end": end_to_end, "end_to_end_summary": summarize_end_to_end(end_to_end)}


def _interval(interval: Interval | None) -> dict[str, float | None] | None:
    if interval is None:
        return None
    return {"value": interval.value, "low": interval.low, "high": interval.high,
            "confidence": interval.confidence if interval.low is not None else None}


def summarize(runs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per policy and size (in the order first run): the runs of this side, the median jobs/s
    of each side with its interval, this side's median results seconds, simulated span over
    wall seconds and peak RSS; and this side's jobs/s over the others' (ratio of medians with
    its interval)."""
    keys = list(dict.fromkeys((r["policy"], r["jobs"]) for r in runs["this"]))
    summary = []
    for scheduler, jobs in keys:
        by = {side: [r for r in records if (r["policy"], r["jobs"]) == (scheduler, jobs)]
              for side, records in runs.items()}
        by = {side: found for side, found in by.items() if found}
        here = by["this"]
        rates = {side: [r["jobs_per_s"] for r in found] for side, found in by.items()}
        entry: dict[str, Any] = {"policy": scheduler, "jobs": jobs, "runs": len(here)}
        entry.update({side: _interval(median_interval(values)) for side, values in rates.items()})
        for key in ("report_s", "span_per_wall_s", "peak_rss_mib"):
            entry[key] = _interval(median_interval([r[key] for r in here]))
        entry["span_s"] = here[0]["span_s"]
        for side in rates:
            if side != "this":
                entry[f"this_over_{side}"] = _interval(ratio_interval(rates["this"],
                                                                      rates[side]))
        summary.append(entry)
    return summary


def summarize_end_to_end(runs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per size and policy: the median seconds of ``testbed simulate`` on each side with its
    interval, and this side's over the other's; a side whose command lacked something has
    ``{side}_missing`` (its last error line) instead."""
    summary = []
    for jobs, scheduler in dict.fromkeys((r["jobs"], r["policy"])
                                         for r in runs.get("this", [])):
        mine = {side: [r for r in found if (r["jobs"], r["policy"]) == (jobs, scheduler)]
                for side, found in runs.items()}
        entry: dict[str, Any] = {"jobs": jobs, "policy": scheduler, "runs": len(mine["this"])}
        seconds = {}
        for side, found in mine.items():
            missing = [r["missing"] for r in found if "missing" in r]
            if missing:
                entry[f"{side}_missing"] = missing[0]
            else:
                seconds[side] = [r["seconds"] for r in found]
                entry[side] = _interval(median_interval(seconds[side]))
        if "against" in seconds:
            entry["this_over_against"] = _interval(ratio_interval(seconds["this"],
                                                                  seconds["against"]))
        summary.append(entry)
    return summary


def _rate(found: dict[str, float | None] | None, digits: int = 0) -> str:
    if found is None:
        return "-"
    text = f"{found['value']:,.{digits}f}"
    if found["low"] is None or found["high"] is None:
        return text
    return (f"{text} [{found['low']:,.{digits}f}, {found['high']:,.{digits}f}]"
            + below_nominal(found.get("confidence")))


def _span(seconds: float) -> str:
    """A simulated span in days."""
    return f"{seconds / 86400:,.0f} d"


def rows(document: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the table of a ``measure_repeated`` document."""
    sides = list(document["checkouts"])
    header = ["jobs", "policy", "runs", "jobs/s", "us a job", "results s", "simulated span",
              "simulated / wall", "peak RSS MiB"]
    if "no_log" in sides:
        header += ["without log jobs/s", "log's share"]
    out = []
    for entry in document["summary"]:
        this = entry["this"]
        row = [f"{entry['jobs']:,}", entry["policy"], str(entry["runs"]), _rate(this),
               f"{1e6 / this['value']:.1f}", _rate(entry["report_s"], 1), _span(entry["span_s"]),
               _rate(entry["span_per_wall_s"]), _rate(entry["peak_rss_mib"])]
        if "no_log" in sides:
            no_log = entry.get("no_log")
            share = "-" if no_log is None else f"{1 - this['value'] / no_log['value']:.0%}"
            row += [_rate(no_log), share]
        out.append(row)
    return header, out


def end_to_end_rows(document: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the end-to-end table of a ``measure_repeated`` document."""
    header = ["jobs", "policy", "runs", "testbed simulate s"]
    against = "against" in document["end_to_end"]
    if against:
        header += ["against s", "this / against"]
    out = []
    for entry in document["end_to_end_summary"]:
        row = [f"{entry['jobs']:,}", entry["policy"], str(entry["runs"]),
               _rate(entry["this"], 2)]
        if against:
            lacking = entry.get("against_missing")
            row += ([f"lacking: {lacking}", "-"] if lacking is not None else
                    [_rate(entry["against"], 2), _rate(entry["this_over_against"], 2)])
        out.append(row)
    return header, out


def markdown(document: dict[str, Any], command: str) -> str:
    """The Markdown page of a ``measure_repeated`` document."""
    header, body = rows(document)
    checkouts = document["checkouts"]
    sizes = ", ".join(f"{jobs:,}" for jobs in document["jobs"])
    lines = [*page_head("Simulator speed", "benchmarks.simulator.speed", command, document["host"],
                        f"{document['date']}, {document['seconds'] / 60:.0f} min"),
             f"- workload: {sizes} Lublin-Feitelson jobs (seed {SEED}, load "
             f"{LOAD}, uncompressed, runtime estimates perfect) on {document['pes']:,} PEs; "
             f"gang with a {GANG_QUANTUM_S:g} s quantum and MPL {GANG_MPL} (buddy), the batch "
             "policies first fit",
             f"- this checkout: {checkouts['this']['commit']}"]
    if "against" in checkouts:
        lines.append(f"- against: {checkouts['against']['path']} at "
                     f"{checkouts['against']['commit']}")
    once = [f"{jobs:,}" for jobs in document["jobs"] if jobs >= document["once_from"]]
    lines += ["", "Each run is a fresh process that generates the workload (not timed) and "
              "simulates it through the driver, the policy, the simulation executor and the "
              "event log, as `testbed simulate` does; jobs/s is the number of jobs over the "
              "wall seconds of the simulation, writing `events.jsonl` included.  \"results s\" "
              "is the time `jobs.csv` and `summary.json` then take to derive from the log.  "
              "The simulated span is the virtual time from the start to the last event; "
              "\"simulated / wall\" is it over the wall time of the simulation (how many "
              "simulated seconds a wall second covers, to set beside other simulators); peak "
              "RSS is the process's, generating the workload included.  "
              f"{document['repeats']} runs a row"
              + (f", except the {' and '.join(once)}-job rows: one run each, so no interval "
                 "(and no comparison)" if once else "")
              + "; the rows' runs taking turns; medians with "
              "95 % order-statistics intervals and Hodges-Lehmann ratios with the rank test's "
              "(`testbed.experiments.stats`; fewer than 6 runs give their range, whose lower "
              "confidence is shown beside it)."]
    if "no_log" in checkouts:
        lines.append("\"without log\" runs the same simulations with an event log that formats "
                     "and writes nothing (`--no-log`, a diagnostic: its runs have no results); "
                     "the log's share is 1 - jobs/s over that.")
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
              *("| " + " | ".join(row) + " |" for row in body), ""]
    if document["end_to_end_summary"]:
        header, body = end_to_end_rows(document)
        lines += [f"What a user waits for: `python -m testbed simulate lublin.swf --scheduler "
                  f"POLICY --pes {document['pes']} --estimates perfect` (gang with "
                  f"`--timeslice {GANG_QUANTUM_S:g} --mpl {GANG_MPL}`, the batch policies "
                  "`--allocator first-fit`, as above) on the workload "
                  "written as SWF (times rounded to "
                  "seconds), from the command's start to its exit with `jobs.csv` and "
                  "`summary.json` written: starting Python, reading the trace, simulating and "
                  "deriving the results.  Wall seconds, medians with intervals as above"
                  + ("; the other checkout runs its own command on the same files, the two "
                     "taking turns" if "against" in document["end_to_end"] else "")
                  + ".", "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                  *("| " + " | ".join(row) + " |" for row in body), ""]
    return "\n".join(lines)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: not a comma-separated list of job counts") \
            from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text}: job counts must be >= 1")
    return sizes


def main(argv: list[str] | None = None) -> int:
    """Measure and print simulated jobs per second for each policy."""
    p = parser("benchmarks.simulator.speed", __doc__, json_help="print JSON (a record per policy)",
               out_help=None, markdown_help="with --repeats: write the table as a Markdown page")
    p.add_argument("--jobs", type=_sizes, default=[100_000],
                   help="the workload's jobs, or several sizes (comma-separated)")
    p.add_argument("--pes", type=int, default=1024)
    p.add_argument("--policies", default="easy,conservative,gang")
    p.add_argument("--repeats", type=int, default=None,
                   help="runs of every policy, each a fresh process (default: one, in this one)")
    p.add_argument("--once-from", type=int, default=1_000_000, metavar="JOBS",
                   help="with --repeats: sizes of JOBS jobs or more run once, on this side only")
    p.add_argument("--end-to-end", default="", metavar="POLICIES",
                   help="with --repeats: also time testbed simulate under these policies")
    p.add_argument("--against", type=checkout_type("testbed/__main__.py"), default=None,
                   metavar="CHECKOUT",
                   help="with --repeats: also time that checkout's testbed simulate, taking "
                        "turns")
    p.add_argument("--without-log", action="store_true",
                   help="with --repeats: also run every policy with --no-log")
    p.add_argument("--profile", action="store_true", help="print where the time goes")
    p.add_argument("--no-log", action="store_true",
                   help="an event log that writes nothing (diagnostic; no results)")
    args = p.parse_args(argv)
    session = Session.start("benchmarks.simulator.speed", argv, None, None)
    args.policies = [name for name in args.policies.split(",") if name]
    args.end_to_end = [name for name in args.end_to_end.split(",") if name]
    if args.repeats is None:
        if args.against or args.without_log or args.markdown or args.end_to_end:
            p.error("--against, --without-log, --end-to-end and --markdown need --repeats")
        records = measure_here(args)
        if emit(records, args.json):
            return 0
        print(table(["policy", "jobs", "pes", "seconds", "jobs/s", "results s",
                     "simulated / wall", "peak RSS MiB"],
                    [[r["policy"], r["jobs"], r["pes"], r["seconds"], r["jobs_per_s"],
                      "-" if r["report_s"] is None else r["report_s"], r["span_per_wall_s"],
                      r["peak_rss_mib"]] for r in records]))
        print(f"host: {host()}")
        return 0
    if args.repeats < 1 or args.profile or args.no_log:
        p.error("--repeats takes N >= 1, and neither --profile nor --no-log")
    document = measure_repeated(args)
    if not emit([document], args.json, indent=1):
        header, body = rows(document)
        print(table(header, body))
        if document["end_to_end_summary"]:
            header, body = end_to_end_rows(document)
            print(table(header, body))
        print(f"host: {document['host']}")
    session.page(args.markdown, lambda: markdown(document, session.command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
