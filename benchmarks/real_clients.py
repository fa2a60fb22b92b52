"""Unmodified MPI programs under every scheduler: makespan and small-message latency.

Three client programs in the style of public suites, written as plain MPI with no knowledge of
the testbed (``benchmarks/clients/``): ``osu_alltoall`` (mpi4py, ``MPI_Alltoall`` latency),
``osu_latency`` (mpi4py, ping-pong latency between ranks 0 and 1) and ``pingpong_allreduce``
(C, built on first use with the ``mpicc`` of the MPI that mpi4py loads: a ping-pong and an
``MPI_Allreduce`` sweep).  Each prints ``size latency_us`` lines per test.  A fourth client is
mpi4py's own ``python -m mpi4py.bench pingpong`` (``mpi4py_bench``), read from its table of
mean one-way times.

For every repeat, program and scheduler (all registered ones by default), one ``testbed run`` of a
workload holding two copies of the program, both arriving at 0 with one rank per PE of the
machine (MPL 2; fcfs runs them one after the other).  Under the batch policies (easy,
conservative, prime) each copy asks for ``estimate=300`` s, as a batch user would: without an
estimate ``prime`` holds a job larger than a quarter of the machine until the non-prime shift.
Reported per program, test and scheduler:
the makespan (s, from ``summary.json``), the small-message latency (us: the median over the
message sizes up to 1 KiB, so that a context switch landing in one size's loop, which adds about
a timeslice over that loop's iterations, does not decide the figure) and the latency of 1 KiB
messages, each the median over the two copies (read from each job's stdout), then the median
and min/max over repeats, and the ratios of the medians to gang's.  The targets (fcs within
1.1x of gang in makespan and 1.5x in small-message latency) are checked and printed, and ics is
shown beside them without a target.  ``--quick`` runs tiny sweeps to show that it works; its
figures mean nothing.

Usage: ``python -m benchmarks.real_clients [--quick] [--schedulers fcfs,gang,...]
[--programs osu_alltoall,osu_latency,pingpong_allreduce,mpi4py_bench] [--repeats 3]
[--timeslice 0.2] [--spin S] [--job-timeout S] [--from RUNS] [--runs DIR] [--out FILE|-]``
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import default_out, host, jobs, median, run_workload, table
from testbed.emulation import build
from testbed.emulation.mpi_info import detect_mpi
from testbed.emulation.shim import mpicc
from testbed.policies import POLICIES

CLIENTS = Path(__file__).parent / "clients"
SCHEDULERS = tuple(POLICIES)
KIB = 1024
MPL = 2
COPIES = 2
ESTIMATE_S = 300.0
TARGETS = {"makespan": 1.1, "small": 1.5}


def parse_latencies(text: str) -> list[dict[int, float]]:
    """The tables of an OSU-style output, in order: message size (bytes) -> latency (us).

    A table is a run of ``size latency ...`` lines; comment lines (``#``) between two runs
    start a new table, and any other line is ignored.
    """
    tables: list[dict[int, float]] = []
    in_table = False
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            in_table = False
            continue
        try:
            size, latency = int(words[0]), float(words[1])
        except (ValueError, IndexError):
            continue
        if not in_table:
            tables.append({})
            in_table = True
        tables[-1][size] = latency
    return tables


def parse_mpi4py_bench(text: str) -> list[dict[int, float]]:
    """The table of ``python -m mpi4py.bench pingpong``: size (bytes) -> mean one-way time,
    converted from seconds to us (lines ``size bandwidth | mean ± stdev samples``)."""
    table: dict[int, float] = {}
    for line in text.splitlines():
        left, bar, right = line.partition("|")
        try:
            size, mean = int(left.split()[0]), float(right.split()[0])
        except (ValueError, IndexError):
            continue
        if bar:
            table[size] = mean * 1e6
    return [table] if table else []


@dataclass(frozen=True)
class Program:
    """A client program: its source under ``clients/`` (or a module of mpi4py), the tests it
    prints, in order, and how to read them."""

    source: str
    tests: tuple[str, ...]
    parse: Callable[[str], list[dict[int, float]]] = parse_latencies
    quick_args: tuple[str, ...] = ("-i", "20", "-x", "2", "-m", "4096")


PROGRAMS = {
    "osu_alltoall": Program("osu_alltoall.py", ("alltoall",)),
    "osu_latency": Program("osu_latency.py", ("latency",)),
    "pingpong_allreduce": Program("pingpong_allreduce.c", ("pingpong", "allreduce")),
    "mpi4py_bench": Program("mpi4py.bench", ("bench_pingpong",), parse_mpi4py_bench,
                            ("-l", "20", "-s", "2", "-n", "4096")),
}
MPI4PY_BENCH_ARGS = ("pingpong", "-n", str(2**20))


def build_c_client(source: Path) -> Path:
    """The executable of the C program ``source``, compiled first if needed with the ``mpicc``
    of the MPI that mpi4py loads (``testbed.emulation.build``: cached under a name tagged with a
    hash of the source and of that MPI)."""
    mpi = detect_mpi()
    return build.program(source.stem, [source], [mpicc(mpi), "-O2", "-Wall"],
                         depends=f"{mpi.library}\0{mpi.version}")


def command(name: str, quick: bool) -> list[str]:
    """The command line of client ``name`` (``quick``: tiny sweeps)."""
    program = PROGRAMS[name]
    args = list(program.quick_args) if quick else []
    if program.source == "mpi4py.bench":
        return [sys.executable, "-m", "mpi4py.bench", *MPI4PY_BENCH_ARGS[:1], *args,
                *([] if quick else MPI4PY_BENCH_ARGS[1:])]
    source = CLIENTS / program.source
    if source.suffix == ".py":
        return [sys.executable, str(source), *args]
    return [str(build_c_client(source)), *args]


def run_case(argv: list[str], program: Program, scheduler: str, pes: int,
             options: list[str], out: Path) -> dict[str, Any]:
    """Run two copies of ``argv`` (``pes`` ranks each) under ``scheduler`` into ``out`` and
    read the result (see ``read_case``)."""
    estimate = f"estimate={ESTIMATE_S:g} " if POLICIES[scheduler].uses_estimates else ""
    text = (f"# testbed: benchmark=real_clients copies={COPIES}\n"
            + f"0 {pes} {estimate}{shlex.join(argv)}\n" * COPIES)
    return read_case(run_workload(text, "--scheduler", scheduler, "--mpl", str(MPL), *options,
                                  out=out), program)


def read_case(run: Path, program: Program) -> dict[str, Any]:
    """From a finished run directory: the makespan (s), the copies' statuses and, per test,
    the smallest message size (bytes), the small-message latency (us, each copy's median over
    the sizes up to 1 KiB) and the 1 KiB latency (us), each the median over the copies that
    printed them (None when none did)."""
    summary = json.loads((run / "summary.json").read_text())
    rows = jobs(run)
    tables = [program.parse((run / "jobs" / f"{row['id']}.out").read_text()) for row in rows]
    figures: dict[str, Any] = {}
    for index, test in enumerate(program.tests):
        printed = [t[index] for t in tables if len(t) > index and t[index]]
        smallest = min((min(t) for t in printed), default=None)
        small = [median([us for size, us in t.items() if size <= KIB]) for t in printed]
        figures[test] = {"smallest_size": smallest,
                         "small_us": median(small) if small else None,
                         "kib_us": _median_of(printed, KIB)}
    return {"run": str(run), "makespan_s": summary["makespan"],
            "statuses": [row["status"] for row in rows], "tests": figures}


def _median_of(tables: list[dict[int, float]], size: int | None) -> float | None:
    values = [t[size] for t in tables if size in t]
    return median(values) if values else None


def spread(values: list[float | None]) -> dict[str, float | None]:
    """Median, min and max of the values that are not None, rounded to 4 decimals (all None
    when there are none)."""
    present = [v for v in values if v is not None]
    if not present:
        return {"median": None, "min": None, "max": None}
    return {"median": round(median(present), 4), "min": round(min(present), 4),
            "max": round(max(present), 4)}


def _ratio(value: float | None, reference: float | None) -> float | None:
    return None if value is None or not reference else round(value / reference, 4)


def summarize(cases: dict[tuple[str, str], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One result per (program, scheduler) from its repeats: makespan (s) and, per test, the
    small-message and 1 KiB latencies (us) as median/min/max, with ratios of medians to gang."""
    results = []
    for (name, scheduler), repeats in cases.items():
        tests = {test: {"smallest_size": repeats[0]["tests"][test]["smallest_size"],
                        **{key: spread([r["tests"][test][key] for r in repeats])
                           for key in ("small_us", "kib_us")}}
                 for test in PROGRAMS[name].tests}
        results.append({"program": name, "scheduler": scheduler,
                        "makespan_s": spread([r["makespan_s"] for r in repeats]),
                        "statuses": [s for r in repeats for s in r["statuses"]],
                        "tests": tests, "runs": [r["run"] for r in repeats]})
    by_key = {(r["program"], r["scheduler"]): r for r in results}
    for r in results:
        gang = by_key.get((r["program"], "gang"))
        vs: dict[str, float | None] = {}
        if gang is not None:
            vs["makespan"] = _ratio(r["makespan_s"]["median"], gang["makespan_s"]["median"])
            for test, fig in r["tests"].items():
                for key in ("small_us", "kib_us"):
                    vs[f"{test}.{key}"] = _ratio(fig[key]["median"],
                                                 gang["tests"][test][key]["median"])
        r["vs_gang"] = vs
    return results


def targets(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fcs targets: per program, makespan ratio to gang <= 1.1 (test ``all``); per test,
    small-message latency ratio to gang <= 1.5 (``met`` is None when a figure is missing)."""
    checks = []
    for r in results:
        if r["scheduler"] != "fcs" or not r["vs_gang"]:
            continue
        figures = [("all", "makespan", "makespan")]
        figures += [(test, "small", f"{test}.small_us") for test in PROGRAMS[r["program"]].tests]
        for test, figure, key in figures:
            ratio = r["vs_gang"][key]
            checks.append({"program": r["program"], "test": test, "figure": figure,
                           "ratio": ratio, "limit": TARGETS[figure],
                           "met": None if ratio is None else ratio <= TARGETS[figure]})
    return checks


def _cell(fig: dict[str, float | None], digits: int, ranges: bool) -> str:
    if fig["median"] is None:
        return "-"
    text = f"{fig['median']:.{digits}f}"
    if ranges:
        text += f" [{fig['min']:.{digits}f}-{fig['max']:.{digits}f}]"
    return text


def _times(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def render(doc: dict[str, Any]) -> str:
    """The results as a plain-text table, then the targets and ics beside gang."""
    ranges = doc["repeats"] > 1
    header = ["program", "test", "scheduler", "done", "makespan s", "/gang", "from B",
              "<=1KiB us", "/gang", "1KiB us", "/gang"]
    rows = []
    for r in doc["results"]:
        done = sum(s == "done" for s in r["statuses"])
        for test, fig in r["tests"].items():
            vs = r["vs_gang"]
            rows.append([r["program"], test, r["scheduler"], f"{done}/{len(r['statuses'])}",
                         _cell(r["makespan_s"], 3, ranges), _times(vs.get("makespan")),
                         "-" if fig["smallest_size"] is None else fig["smallest_size"],
                         _cell(fig["small_us"], 2, ranges), _times(vs.get(f"{test}.small_us")),
                         _cell(fig["kib_us"], 2, ranges), _times(vs.get(f"{test}.kib_us"))])
    lines = [table(header, rows)]
    if ranges:
        lines.append(f"median [min-max] over {doc['repeats']} repeats; /gang: ratio of medians")
    for check in doc["targets"]:
        verdict = {True: "met", False: "NOT met", None: "no figure"}[check["met"]]
        lines.append(f"target fcs/gang {check['program']} {check['test']} {check['figure']}: "
                     f"{_times(check['ratio'])} (<= {check['limit']}x) {verdict}")
    for r in doc["results"]:
        if r["scheduler"] == "ics" and r["vs_gang"]:
            figures = ", ".join(f"{key} {_times(v)}" for key, v in r["vs_gang"].items())
            lines.append(f"ics/gang {r['program']} (no target): {figures}")
    if doc["quick"]:
        lines.append("quick mode: tiny sweeps, the figures mean nothing")
    return "\n".join(lines)


def _names(text: str, known: tuple[str, ...], what: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{what}: choose from {','.join(known)}, got {text!r}")
    return names


def main(argv: list[str] | None = None) -> int:
    """Run every (repeat, program, scheduler), print the table and write the JSON."""
    p = argparse.ArgumentParser(description="unmodified MPI programs under every scheduler")
    p.add_argument("--quick", action="store_true", help="tiny sweeps: shows that it works")
    p.add_argument("--schedulers", type=lambda t: _names(t, SCHEDULERS, "schedulers"),
                   default=list(SCHEDULERS), help="comma-separated, default all")
    p.add_argument("--programs", type=lambda t: _names(t, tuple(PROGRAMS), "programs"),
                   default=list(PROGRAMS), help="comma-separated, default all four")
    p.add_argument("--repeats", type=int, default=3, help="runs of each case (>= 1)")
    p.add_argument("--timeslice", type=float, default=0.2, help="seconds, default 0.2")
    p.add_argument("--spin", type=float, default=None,
                   help="the shim's spin, seconds: fixed for ics, MAX_spin for fcs (testbed's "
                        "default when not given)")
    p.add_argument("--job-timeout", type=float, default=None,
                   help="kill a copy after S seconds of runtime (default: no limit)")
    p.add_argument("--runs", type=Path, default=None,
                   help="directory for the run directories (default runs/real-clients-TIME)")
    p.add_argument("--from", dest="source", type=Path, default=None,
                   help="re-read the run directories of an earlier --runs DIR (nothing is run)")
    p.add_argument("--out", default=None,
                   help="write the JSON here ('-': stdout, the table then goes to stderr)")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    pes = len(os.sched_getaffinity(0))
    if pes < 2:
        p.error("the ping-pong clients need at least 2 PEs (CPUs)")
    runs = args.source or args.runs or default_out("real-clients")
    options = ["--timeslice", str(args.timeslice)]
    if args.job_timeout is not None:
        options += ["--job-timeout", str(args.job_timeout)]
    if args.spin is not None:
        options += ["--spin", str(args.spin)]
    commands = {name: command(name, args.quick) for name in args.programs}
    cases: dict[tuple[str, str], list[dict[str, Any]]] = {
        (name, scheduler): [] for name in args.programs for scheduler in args.schedulers}
    for repeat in range(args.repeats):
        for name in args.programs:
            for scheduler in args.schedulers:
                out = runs / f"{name}-{scheduler}-{repeat + 1}"
                if args.source and not (out / "summary.json").is_file():
                    p.error(f"{out}: no finished run there (read with --repeats, --schedulers "
                            "and --programs as it was run)")
                cases[(name, scheduler)].append(
                    read_case(out, PROGRAMS[name]) if args.source else
                    run_case(commands[name], PROGRAMS[name], scheduler, pes, options, out))
    results = summarize(cases)
    doc = {"benchmark": "real_clients", "host": host(), "quick": args.quick, "pes": pes,
           "copies": COPIES, "mpl": MPL, "timeslice_s": args.timeslice,
           "job_timeout_s": args.job_timeout, "spin_s": args.spin, "repeats": args.repeats,
           "programs": {name: {"argv": commands[name], "tests": list(PROGRAMS[name].tests)}
                        for name in args.programs},
           "results": results, "targets": targets(results), "runs": str(runs)}
    text = json.dumps(doc, indent=2)
    to_stdout = args.out == "-"
    print(render(doc), file=sys.stderr if to_stdout else sys.stdout)
    if to_stdout:
        print(text)
    else:
        out = Path(args.out) if args.out else runs / "real_clients.json"
        out.write_text(text + "\n")
        print(f"JSON: {out}\nrun directories: {runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
