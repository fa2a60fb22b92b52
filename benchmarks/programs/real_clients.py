"""Unmodified MPI programs under every scheduler: makespan and small-message latency, with
intervals.

Four client programs in the style of public suites, written as plain MPI with no knowledge of
the testbed (``benchmarks/clients/``): ``osu_alltoall`` (mpi4py, ``MPI_Alltoall`` latency),
``osu_barrier`` (mpi4py, ``MPI_Barrier`` latency, printed as size 0), ``osu_latency`` (mpi4py,
ping-pong latency between ranks 0 and 1) and ``pingpong_allreduce`` (C, built on first use
with the ``mpicc`` of the MPI that mpi4py loads: a ping-pong and an ``MPI_Allreduce`` sweep).
Each prints ``size latency_us`` lines per test.  A fifth client is mpi4py's own ``python -m
mpi4py.bench pingpong`` (``mpi4py_bench``), read from its table of mean one-way times.

Every run is one ``testbed run`` of a workload holding two copies of the program, both
arriving at 0 with one rank per PE of the machine (MPL 2; fcfs runs them one after the other).
Under the batch policies (easy, conservative, prime) each copy asks for ``estimate=300`` s, as
a batch user would: without an estimate ``prime`` holds a job larger than a quarter of the
machine until the non-prime shift.  The runs go in rounds: round 1 runs every program under
every scheduler once, round 2 again, and so on for ``--repeats`` rounds, in the order given
(``--order interleaved``) or shuffled within each round by a PRNG seeded with ``--order-seed``
and the round (``--order random``), so that drift of the machine spreads over all schedulers
instead of landing on one.  A scheduler named twice in ``--schedulers`` runs twice as often
under a label of its own (``gang,gang`` gives ``gang`` and ``gang#2``: an A/A comparison,
which should come out "no difference").  Each run directory gets a ``load.json``
(``testbed.experiments.load``): what else used the CPUs during the run, and whether that
counts as disturbed.

Figures of one run, per program and test: ``makespan`` (s, from ``summary.json``),
``small_latency_us`` (the small-message latency, us: each copy's median over the message sizes
up to 1 KiB, so that a context switch landing in one size's loop, which adds about a timeslice
over that loop's iterations, does not decide the figure), ``kib_latency_us`` (the latency of
1 KiB messages, us) and ``mib_latency_us`` (of 1 MiB messages, sent by rendezvous: a rank's
progress then serves its peer's, us; none where a program stops short of 1 MiB), the
latencies each the median over the two copies that printed them (read from each job's
stdout).  Per program and test the runs of each label make one sample per
figure (one value per repeat), summed up by ``testbed.experiments.comparison``: the median with
its 95 % interval, the ratio to the reference's (``--reference``, default gang when it runs,
else the first) with its own 95 % interval, and ``*`` where a difference is called
(Mann-Whitney U, exact, Holm-corrected over the table's comparisons, p < 0.05, and the ratio's
interval excluding 1).  The docstring of ``testbed.experiments.stats`` says what each
interval means; in short, a median's interval lies between two of the runs and covers the
median of many more runs at least 95 % of the time; up to 5 repeats it is their range and
states its own, lower confidence (``†``).  One repeat gives no interval; with 3 repeats a side
the rank test cannot reach p < 0.05, so nothing is called (the table says so, and how many
repeats would do: 5 for the 3 figures of one other label, 6 for up to 8 labels).

The targets, fcs within 1.1x of gang in makespan and 1.5x in small-message latency, are
checked on the ratio fcs / gang and its interval, per program and test: ``met`` when the
interval's upper bound is within the target, ``missed`` when its lower bound is above it, and
``cannot tell`` otherwise (the interval straddles the target, or there is none).

Output: per program and test a table (``comparison.format_table``) and the target verdicts,
then a JSON document (``--out``; default ``real_clients.json`` in the runs directory) holding
per program and test the records (one per label and figure: ``n``, ``median``, ``ci_low``,
``ci_high``, ``ratio``, ``ratio_low``, ``ratio_high``, ``significant``, ``callable``, ...), the
verdicts and every run's figures, from which the records can be derived again (``compare``).
``--from RUNS`` reads the run directories of an earlier ``--runs RUNS`` instead of running
(give the same ``--schedulers``, ``--programs`` and ``--repeats``) and gives the same
intervals; the host, the date and the order recorded are the runs' own (their
``config.json`` and the times their runs started), not the reader's.
``--quick`` runs tiny sweeps to show that it works; its figures mean nothing.

Usage: ``python -m benchmarks.programs.real_clients [--quick] [--schedulers gang,fcs,ics,local]
[--programs osu_alltoall,osu_barrier,osu_latency,pingpong_allreduce,mpi4py_bench] [--repeats N]
[--order interleaved|random] [--order-seed 1] [--reference gang] [--timeslice 0.2] [--spin S]
[--job-timeout S] [--from RUNS] [--runs DIR] [--out FILE|-] [--markdown FILE]``

``--markdown FILE`` also writes the tables as a Markdown page, with the host, the date and the
command that wrote it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    CLIENTS,
    Session,
    emit,
    host,
    jobs,
    median,
    page_head,
    parser,
    run_workload,
    write_whole,
)
from testbed.emulation import build
from testbed.emulation.mpi_info import detect_mpi
from testbed.emulation.shim import mpicc
from testbed.experiments import comparison, load
from testbed.experiments.plan import ORDERS, labels
from testbed.policies import POLICIES

SCHEDULERS = tuple(POLICIES)
KIB = 1024
MIB = 1024 * KIB
MPL = 2
COPIES = 2
ESTIMATE_S = 300.0
METRICS = ("makespan", "small_latency_us", "kib_latency_us", "mib_latency_us")
TARGET = ("fcs", "gang")
TARGETS = {"makespan": 1.1, "small_latency_us": 1.5}


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
    "osu_barrier": Program("osu_barrier.py", ("barrier",), quick_args=("-i", "20", "-x", "2")),
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


def run_dir(runs: Path, name: str, label: str, repeat: int) -> Path:
    """The run directory of program ``name`` under ``label`` in round ``repeat`` (1-based):
    ``RUNS/osu_latency-gang-1``, ``RUNS/osu_latency-gang-2-1`` for label ``gang#2``."""
    return runs / f"{name}-{label.replace('#', '-')}-{repeat}"


def run_order(programs: list[str], names: list[str], repeats: int, order: str,
              seed: int) -> list[tuple[int, str, str]]:
    """Every run as (round, program, label), in the order they run: round after round, each
    round every program under every label once, as listed (``interleaved``) or shuffled by a
    PRNG seeded with ``seed`` and the round (``random``)."""
    out = []
    for number in range(1, repeats + 1):
        runs = [(name, label) for name in programs for label in names]
        if order == "random":
            random.Random(f"{seed}:{number}").shuffle(runs)
        out += [(number, name, label) for name, label in runs]
    return out


def run_case(argv: list[str], program: Program, scheduler: str, pes: int,
             options: list[str], out: Path) -> dict[str, Any]:
    """Run two copies of ``argv`` (``pes`` ranks each) under ``scheduler`` into ``out``, write
    what else used the CPUs meanwhile to ``out/load.json`` and read the result (see
    ``read_case``)."""
    estimate = f"estimate={ESTIMATE_S:g} " if POLICIES[scheduler].uses_estimates else ""
    text = (f"# testbed: benchmark=real_clients copies={COPIES}\n"
            + f"0 {pes} {estimate}{shlex.join(argv)}\n" * COPIES)
    before = load.snapshot()
    run_workload(text, "--scheduler", scheduler, "--mpl", str(MPL), *options, out=out)
    disturbance = load.disturbance(before, load.snapshot())
    (out / "load.json").write_text(json.dumps(disturbance, indent=2) + "\n")
    return read_case(out, program)


def read_case(run: Path, program: Program) -> dict[str, Any]:
    """From a finished run directory: the makespan (s), the copies' statuses, whether the run
    was disturbed (``load.json``; False when there is none) and, per test, the smallest message
    size (bytes), the small-message latency (us, each copy's median over the sizes up to
    1 KiB) and the 1 KiB latency (us), each the median over the copies that printed them
    (None when none did)."""
    summary = json.loads((run / "summary.json").read_text())
    rows = jobs(run)
    tables = [program.parse((run / "jobs" / f"{row['id']}.out").read_text()) for row in rows]
    figures: dict[str, Any] = {}
    for index, test in enumerate(program.tests):
        printed = [t[index] for t in tables if len(t) > index and t[index]]
        smallest = min((min(t) for t in printed), default=None)
        small = [median([us for size, us in t.items() if size <= KIB]) for t in printed]
        figures[test] = {"smallest_size": smallest,
                         "small_latency_us": median(small) if small else None,
                         "kib_latency_us": _median_of(printed, KIB),
                         "mib_latency_us": _median_of(printed, MIB)}
    try:
        disturbed = bool(json.loads((run / "load.json").read_text())["disturbed"])
    except (OSError, ValueError, KeyError):
        disturbed = False
    return {"run": str(run), "makespan": summary["makespan"], "disturbed": disturbed,
            "statuses": [row["status"] for row in rows], "tests": figures}


def _median_of(tables: list[dict[int, float]], size: int) -> float | None:
    values = [t[size] for t in tables if size in t]
    return median(values) if values else None


def runs_of(cases: dict[tuple[str, int], dict[str, Any]], test: str,
            schedulers: dict[str, str]) -> list[dict[str, Any]]:
    """One test's runs as flat rows, by label (in the order of ``schedulers``: label ->
    scheduler) and round: label, scheduler, round, run directory, statuses, whether disturbed,
    the smallest message size (bytes) and the figures of ``METRICS`` (s, us, us).  ``cases``
    maps (label, round) to ``read_case``'s result."""
    rows = []
    for label, scheduler in schedulers.items():
        for repeat in sorted(r for lb, r in cases if lb == label):
            case = cases[(label, repeat)]
            figures = case["tests"][test]
            rows.append({"label": label, "scheduler": scheduler, "repeat": repeat,
                         "run": case["run"], "statuses": case["statuses"],
                         "disturbed": case["disturbed"],
                         "smallest_size": figures["smallest_size"],
                         "makespan": case["makespan"],
                         "small_latency_us": figures["small_latency_us"],
                         "kib_latency_us": figures["kib_latency_us"],
                         "mib_latency_us": figures.get("mib_latency_us")})
    return rows


def run_host(run: Path) -> dict[str, Any]:
    """The host a run directory was measured on, as ``harness.host()`` gives it, from its
    ``config.json`` (hostname and kernel for ``uname``)."""
    config = json.loads((run / "config.json").read_text())
    machine = config.get("machine", {})
    return {"cpus": len(machine.get("host_cpus") or []) or machine.get("pes"),
            "python": config.get("python", "?"),
            "uname": f"Linux {machine.get('hostname', '?')} {config.get('kernel', '?')}"}


def start_time(run: Path) -> float:
    """When a run directory's run started (its ``run_start`` event's wall time, s)."""
    with open(run / "events.jsonl") as f:
        return float(json.loads(f.readline())["wall_time"])


def observed_order(runs: Path, programs: list[str], names: list[str], repeats: int,
                   seed: int) -> tuple[str, int | None]:
    """The order the run directories under ``runs`` ran in, by their start times:
    ``interleaved``, or ``random`` and the seed when it is ``run_order``'s with ``seed``, else
    ``as run`` (neither)."""
    found = run_order(programs, names, repeats, "interleaved", seed)
    ran = sorted(found, key=lambda r: start_time(run_dir(runs, r[1], r[2], r[0])))
    if ran == found:
        return "interleaved", None
    if ran == run_order(programs, names, repeats, "random", seed):
        return "random", seed
    return "as run", None


def verdict(ratio_low: float | None, ratio_high: float | None, limit: float) -> str:
    """A target on a ratio checked on its interval: ``met`` when the upper bound is at most
    ``limit``, ``missed`` when the lower bound is above it, else ``cannot tell``."""
    if ratio_high is not None and ratio_high <= limit:
        return "met"
    if ratio_low is not None and ratio_low > limit:
        return "missed"
    return "cannot tell"


@dataclass
class Result:
    """One program and test: its runs (``runs_of`` rows), the records of the groups made of
    them against the reference, and the fcs / gang target checks."""

    program: str
    test: str
    runs: list[dict[str, Any]]
    records: list[comparison.Record]
    targets: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        """The result as plain data: sizes in bytes, times in s, latencies in us."""
        sizes = [r["smallest_size"] for r in self.runs if r["smallest_size"] is not None]
        return {"program": self.program, "test": self.test,
                "smallest_size": min(sizes, default=None),
                "records": [r.as_dict() for r in self.records], "targets": self.targets,
                "runs": self.runs}


def compare(program: str, test: str, runs: list[dict[str, Any]], reference: str) -> Result:
    """The comparison of one program and test from its runs (``runs_of`` rows, or the
    ``runs`` of a JSON result read back): a ``comparison.Group`` per label, in the order the
    rows name them, with one value per run of each figure of ``METRICS``; their records with
    ratios to the label ``reference``; and the targets (``targets``)."""
    groups: dict[str, comparison.Group] = {}
    for row in runs:
        group = groups.setdefault(row["label"], comparison.Group(row["label"], row["scheduler"]))
        group.add({m: row.get(m) for m in METRICS}, row["disturbed"], row["repeat"])
    found = list(groups.values())
    records = comparison.summarize(found, list(METRICS), reference)
    return Result(program, test, runs, records, targets(found, records, reference))


def targets(groups: list[comparison.Group], records: list[comparison.Record],
            reference: str) -> list[dict[str, Any]]:
    """The fcs targets on the ratio fcs / gang (labels ``fcs`` and ``gang``; none when either
    does not run): per figure of ``TARGETS``, the limit, the ratio with its interval and the
    ``verdict``.  ``records`` are reused when ``reference`` is gang."""
    subject, base = TARGET
    if not {subject, base} <= {g.label for g in groups}:
        return []
    if reference != base:
        records = comparison.summarize(groups, list(TARGETS), base)
    checks = []
    for r in (record.as_dict() for record in records):
        if r["label"] == subject and r["metric"] in TARGETS:
            limit = TARGETS[r["metric"]]
            checks.append({"figure": r["metric"], "limit": limit, "ratio": r["ratio"],
                           "ratio_low": r["ratio_low"], "ratio_high": r["ratio_high"],
                           "verdict": verdict(r["ratio_low"], r["ratio_high"], limit)})
    return checks


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def render(results: list[Result], reference: str, quick: bool) -> str:
    """Per program and test: a heading (smallest message size, copies done per label), the
    table of medians and ratios with their intervals (``comparison.format_table``) and the
    target verdicts."""
    blocks = []
    for result in results:
        sizes = [r["smallest_size"] for r in result.runs if r["smallest_size"] is not None]
        done: dict[str, list[int]] = {}
        for row in result.runs:
            count = done.setdefault(row["label"], [0, 0])
            count[0] += sum(s == "done" for s in row["statuses"])
            count[1] += len(row["statuses"])
        lines = [f"== {result.program} {result.test}: sizes from "
                 f"{min(sizes) if sizes else '-'} B; copies done: "
                 + ", ".join(f"{label} {d}/{n}" for label, (d, n) in done.items()) + " ==",
                 comparison.format_table(result.records, reference)]
        for check in result.targets:
            lines.append(f"target {TARGET[0]}/{TARGET[1]} {check['figure']} <= "
                         f"{check['limit']}x: {_num(check['ratio'])} "
                         f"[{_num(check['ratio_low'])}, {_num(check['ratio_high'])}] "
                         f"-> {check['verdict']}")
        blocks.append("\n".join(lines))
    if any(r.targets for r in results):
        blocks.append("targets: met = the ratio's upper bound is within the target, missed = "
                      "its lower bound is above it, cannot tell = neither")
    if quick:
        blocks.append("quick mode: tiny sweeps, the figures mean nothing")
    return "\n\n".join(blocks)


def markdown(doc: dict[str, Any], tables: str, command: str) -> str:
    """A Markdown page of a run of this benchmark: the command, host, date and settings, then
    the tables as printed."""
    minutes = f", {doc['wall_s'] / 60:.0f} min" if "wall_s" in doc else ""
    return "\n".join([
        *page_head("Unmodified MPI programs under the schedulers",
                   "benchmarks.programs.real_clients",
                   command, doc["host"], doc["date"] + minutes),
        f"- {doc['copies']} copies of each program at MPL {doc['mpl']}, timeslice "
        f"{doc['timeslice_s']:g} s, {doc['repeats']} repeats in {_order(doc)} order; "
        f"schedulers {', '.join(doc['labels'])}", "",
        "Each figure: the median over the repeats [95 % interval]; ratio to "
        f"{doc['reference']}'s (Hodges-Lehmann) [95 % interval]; `*` a difference called; "
        "`†` an interval of less than 95 % (too few repeats), the table's legend says which.",
        "",
        "```", tables, "```", ""])


def _order(doc: dict[str, Any]) -> str:
    """The order of a document's runs, for its page."""
    if doc["order"] == "random":
        return f"random (seed {doc['order_seed']})"
    return doc["order"]


def _names(text: str, known: tuple[str, ...], what: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{what}: choose from {','.join(known)}, got {text!r}")
    return names


def main(argv: list[str] | None = None) -> int:
    """Run every round of programs and schedulers (or read them back with ``--from``), print
    the tables and target verdicts and write the JSON."""
    p = parser("benchmarks.programs.real_clients", "unmodified MPI programs under every scheduler",
               quick="tiny sweeps: shows that it works", json_help=None, out_help=None,
               markdown_help="also write the tables as a Markdown page")
    p.add_argument("--schedulers", type=lambda t: _names(t, SCHEDULERS, "schedulers"),
                   default=list(SCHEDULERS),
                   help="comma-separated, default all; a name given twice runs twice (A/A)")
    p.add_argument("--programs", type=lambda t: _names(t, tuple(PROGRAMS), "programs"),
                   default=list(PROGRAMS), help="comma-separated, default all five")
    p.add_argument("--repeats", type=int, default=3,
                   help="rounds of runs (>= 1, default 3; 5 or more to call differences)")
    p.add_argument("--order", choices=ORDERS, default="interleaved",
                   help="interleaved (a b c a b c ...) or random (each round shuffled)")
    p.add_argument("--order-seed", type=int, default=1, help="seed of the random order")
    p.add_argument("--reference", default=None,
                   help="the label ratios are taken against (default gang, else the first)")
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
                   help="write the JSON here ('-': stdout, the tables then go to stderr)")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    names = labels(args.schedulers)
    schedulers = dict(zip(names, args.schedulers, strict=True))
    reference = args.reference or ("gang" if "gang" in names else names[0])
    if reference not in names:
        p.error(f"--reference {reference}: not one of {', '.join(names)}")
    pes = len(os.sched_getaffinity(0))
    if pes < 2 and not args.source:
        p.error("the ping-pong clients need at least 2 PEs (CPUs)")
    session = Session.start("benchmarks.programs.real_clients", argv, args.source or args.runs,
                            None if args.source else "real-clients")
    runs = session.out
    assert runs is not None
    options = ["--timeslice", str(args.timeslice)]
    if args.job_timeout is not None:
        options += ["--job-timeout", str(args.job_timeout)]
    if args.spin is not None:
        options += ["--spin", str(args.spin)]
    commands = {name: command(name, args.quick) for name in args.programs}
    order_list = run_order(args.programs, names, args.repeats, args.order, args.order_seed)
    cases: dict[str, dict[tuple[str, int], dict[str, Any]]] = {n: {} for n in args.programs}
    began = time.monotonic()
    first_run = time.time()     # when the runs began (read back: the first one's start)
    for done, (repeat, name, label) in enumerate(order_list, start=1):
        out = run_dir(runs, name, label, repeat)
        if args.source:
            if not (out / "summary.json").is_file():
                p.error(f"{out}: no finished run there (read with --repeats, --schedulers "
                        "and --programs as it was run)")
            cases[name][(label, repeat)] = read_case(out, PROGRAMS[name])
            first_run = min(first_run, start_time(out))
            continue
        started = time.monotonic()
        case = run_case(commands[name], PROGRAMS[name], schedulers[label], pes, options, out)
        cases[name][(label, repeat)] = case
        flag = " (disturbed: see load.json)" if case["disturbed"] else ""
        print(f"[{done}/{len(order_list)}] {name} {label} round {repeat}: "
              f"{time.monotonic() - started:.1f} s{flag}", file=sys.stderr, flush=True)
    results = [compare(name, test, runs_of(cases[name], test, schedulers), reference)
               for name in args.programs for test in PROGRAMS[name].tests]
    order, order_seed = args.order, args.order_seed
    machine = host()
    if args.source:
        order, order_seed = observed_order(runs, args.programs, names, args.repeats,
                                           args.order_seed)
        first = run_dir(runs, order_list[0][1], order_list[0][2], order_list[0][0])
        machine = run_host(first)
        pes = json.loads((first / "config.json").read_text())["machine"]["pes"]
    doc = {"benchmark": "real_clients", "host": machine, "quick": args.quick, "pes": pes,
           "copies": COPIES, "mpl": MPL, "timeslice_s": args.timeslice,
           "job_timeout_s": args.job_timeout, "spin_s": args.spin, "repeats": args.repeats,
           "order": order, "order_seed": order_seed, "reference": reference,
           "labels": schedulers, "metrics": list(METRICS), "target_limits": TARGETS,
           "programs": {name: {"argv": commands[name], "tests": list(PROGRAMS[name].tests)}
                        for name in args.programs},
           "results": [r.as_dict() for r in results], "runs": str(runs),
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(first_run))}
    if not args.source:
        doc["wall_s"] = round(time.monotonic() - began, 1)
    to_stdout = args.out == "-"
    tables = render(results, reference, args.quick)
    print(tables, file=sys.stderr if to_stdout else sys.stdout)
    session.page(args.markdown, lambda: markdown(doc, tables, session.command))
    if not emit([doc], to_stdout, indent=2):
        out = Path(args.out) if args.out else runs / "real_clients.json"
        write_whole(out, json.dumps(doc, indent=2) + "\n")
        print(f"JSON: {out}\nrun directories: {runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
