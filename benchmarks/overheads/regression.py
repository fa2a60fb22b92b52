"""The testbed's own overheads on this host, with intervals, and a regression check.

The suite measures, in ``--rounds`` rounds (each round a fresh run of every part, the parts
taking turns, so drift of the machine spreads over all of them):

* ``launch``: job launch overhead (an empty job's response minus its work), N = 1 ... all PEs
  (THESIS Table 5.1): ``launch_overhead_s[n=N]``, the median of the round's empty jobs;
* ``switch``: multi-context-switch latency under gang, every job on every PE, against MPL:
  ``switch_p50_us[mpl=K]`` and ``switch_p99_us[mpl=K]`` over the round's switches;
* ``linearity``: MPL linearity (THESIS Fig 5.1), the mean runtime of k identical fine-grained
  all-to-all jobs at MPL k over k times one job's at MPL 1: ``mpl_linearity[Tms][k=K]``, and
  the smallest timeslice at which every median ratio stays within 3 %;
* ``shim``: the shim's ping-pong cost (``shim_pingpong_ratio``: the median round trip with it
  over the median without, alternated three times in the round) and spin-block wake-up (a
  rank blocked after 100 us of spinning on a peer away 2-10 ms: ``wakeup_p50_us``,
  ``wakeup_p99_us``, ``blocked_cpu_share``, the waiting rank's CPU use as a fraction of a
  core, spinning included, and ``asleep_cpu_share``, its CPU use while blocked over its time
  blocked), beside the operating system's own wake-up of a process blocked in a pipe read
  under the same waits (``pipe_wakeup_p50_us``, ``pipe_wakeup_p99_us``), the floor under the
  shim's;
* ``progress``: what keeping MPI's semantics costs an ordinary program: one run of
  ``benchmarks.programs.progress_cost``'s IMB pair (two copies at MPL 2 on 2 PEs; IMB-MPI1 where
  ``scripts/setup-mpi impi`` installed it, else its stand-in) under gang, ics and fcs:
  ``progress_makespan[S]`` (s) and ``progress_barrier_us[S]``, ``progress_allreduce_us[S]``,
  ``progress_alltoall_us[S]``, ``progress_pingpong_us[S]`` (us).

Every figure is one value per round; the document holds the samples (``samples``) and, per
figure, the median with its 95 % interval (``figures``; ``confidence`` below 0.95 with 5
rounds or fewer, whose interval is then their range); a table of them goes to
stderr.  ``--baseline FILE`` (an earlier ``--out``) compares every figure both documents have
by ``testbed.experiments.regression.check`` (a one-sided rank test, Holm-corrected over the
figures, and a ratio of medians above 1 + the figure's margin with its interval above 1;
larger is worse for every figure; the margins are 0.10, more for the figures that drift
between runs, ``DRIFT_MARGINS``, or ``--margin`` for all, or per figure from ``--margins``),
prints a table of the comparison and exits 1 when a figure regressed.
``--against CHECKOUT`` measures that checkout's code as the baseline instead, in the same
invocation: the two sides' rounds take turns (A B, B A, A B, ...: a drift of the machine lands
on both alike), and this side is checked against the other as with ``--baseline``.  Both
sides are measured by this code through what every checkout has, its command line: the
launch, switch, linearity and progress parts run the side's own ``python -m testbed run``
(its coordinator, node managers, ranks and shim), this code reading what the runs wrote.  The
shim part is the exception: its ranks run on shim records that Python of the checkout whose
shim reads them must make, so each side's shim part is that checkout's own suite
(its ``--rounds 1 --parts shim`` there).  Where the other
checkout
lacks something (an option of its ``testbed run``, a field of its event log, a suite with a
shim part), its part is left out of the comparison and said (``lacking``: the part and its
command's last error line).  ``--parts`` measures only some parts;
``--markdown FILE`` also writes the table (and the comparison) as a Markdown page with the
host and date.  ``--as-user USER`` (as root) runs the suite twice, as root and then as that
unprivileged user, side by side (``root`` and ``unprivileged`` halves in the JSON).
``--quick`` runs a tiny version to show the suite works (CI); its figures mean nothing.

Usage: ``python -m benchmarks.overheads.regression [--quick] [--rounds N] [--parts
launch,switch,...]
[--as-user USER] [--baseline FILE | --against CHECKOUT] [--margin M] [--margins FILE]
[--out FILE] [--markdown FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    REPO,
    Session,
    checkout_type,
    commit_of,
    emit,
    events,
    host,
    jobs,
    lacking,
    page_head,
    parser,
    run_workload,
    table,
    testbed_of,
    write_whole,
)
from benchmarks.overheads import launch_overhead, shim_cost, switch_latency, unprivileged
from benchmarks.programs import progress_cost
from testbed.emulation import injection
from testbed.experiments.regression import MARGIN, Finding, check, least_rounds
from testbed.experiments.stats import below_nominal, median_interval

LINEARITY_LIMIT = 0.03
PARTS = ("launch", "switch", "linearity", "shim", "progress")
FULL = {"rounds": 7, "parts": PARTS, "launch_sizes": None, "launch_jobs": 3, "launch_gap": 0.3,
        "switch_mpls": (2, 3, 4), "switch_work": 1.0, "switch_timeslice": 0.05,
        "timeslices": (0.2, 0.05, 0.02, 0.01), "mpls": (1, 2, 3, 4), "work": 1.0,
        "pingpong_iterations": 20000, "pingpong_alternations": 3, "waits": 100,
        "progress_schedulers": progress_cost.SCHEDULERS, "progress_iter": 50000,
        "progress_time": 10.0}
QUICK = {"rounds": 1, "parts": PARTS, "launch_sizes": None, "launch_jobs": 1, "launch_gap": 0.3,
         "switch_mpls": (2,), "switch_work": 0.6, "switch_timeslice": 0.05,
         "timeslices": (0.2,), "mpls": (1, 2), "work": 0.4,
         "pingpong_iterations": 500, "pingpong_alternations": 1, "waits": 12,
         "progress_schedulers": progress_cost.SCHEDULERS, "progress_iter": 200,
         "progress_time": 1.0}
HERE = REPO
SIDES = ("root", "unprivileged")
# Figures that drift between runs more than the rounds of one run show: a larger shift is
# needed before one is called.  Set to cover the largest ratio of medians seen between two
# runs of the same code in ``benchmarks.overheads.noise`` on a 2-core VM, sequential design
# (docs/results/noise-sequential.md): launch 1.36 (1.71 beside a slowed run), blocked CPU
# share 1.22, switch p99 1.20, wake-up p99 4.9 (the p99 of 100 waits is nearly their maximum;
# a doubling is the least worth calling).
DRIFT_MARGINS = {"launch_overhead_s": 0.75, "blocked_cpu_share": 0.25, "switch_p99_us": 0.25,
                 "wakeup_p99_us": 1.0, "pipe_wakeup_p99_us": 1.0}


class CopiesDidNotShare(RuntimeError):
    """A run of k copies that cannot be one point of Fig 5.1: a copy did not run its work, or
    the copies did not all run at once."""


def mean_runtime(k: int, timeslice: float, work: float) -> float:
    """Mean time (s) ``k`` identical fine-grained all-to-all jobs on every PE, at MPL k, spend
    in the benchmark (the slowest rank's ``wall_s``: launch and MPI start-up, which do not grow
    with k, are left out).  ``CopiesDidNotShare`` unless every rank ran its ``work`` of CPU
    time (at least 90 % of it: the variance is none) and every copy started before any ended
    (so that they shared the machine the whole time)."""
    pes = len(os.sched_getaffinity(0))
    job = f"0 {pes} bsp --work {work} --granularity 0.1 --pattern aa\n"
    run = run_workload(job * k, "--scheduler", "gang", "--mpl", str(k), "--timeslice",
                       str(timeslice))
    try:
        stats = [ev["ranks"] for ev in events(run) if ev["event"] == "stats"]
        rows = jobs(run)
    finally:
        shutil.rmtree(run.parent)
    if len(stats) != k:
        raise RuntimeError(f"only {len(stats)} of {k} jobs reported")
    short = [r["cpu_s"] for ranks in stats for r in ranks if r["cpu_s"] < 0.9 * work]
    if short:
        raise CopiesDidNotShare(f"{k} copies of {work:g} s: ranks ran {short} s of CPU")
    starts, ends = [float(r["start"]) for r in rows], [float(r["end"]) for r in rows]
    if max(starts) > min(ends):
        raise CopiesDidNotShare(f"{k} copies: one started at {max(starts):.2f} s, after one "
                                f"ended at {min(ends):.2f} s")
    return statistics.fmean(max(r["wall_s"] for r in ranks) for ranks in stats)


Round = tuple[dict[str, float], dict[str, Any]]
"""What one round of a part gives: its figures, and facts about the run worth recording."""


def launch_round(plan: dict[str, Any]) -> Round:
    """One round of launch overhead figures (s), for N in ``plan["launch_sizes"]`` (None:
    1 ... all PEs)."""
    sizes = plan["launch_sizes"] or range(1, len(os.sched_getaffinity(0)) + 1)
    return {f"launch_overhead_s[n={n}]":
            launch_overhead.measure(n, plan["launch_jobs"], plan["launch_gap"])["median_s"]
            for n in sizes}, {}


def switch_round(plan: dict[str, Any]) -> Round:
    """One round of switch latency figures (us) per MPL, and the priorities the coordinator
    and the ranks ran at."""
    figures, context = {}, {}
    for mpl in plan["switch_mpls"]:
        done = switch_latency.measure(plan["switch_work"], plan["switch_timeslice"], mpl)
        figures[f"switch_p50_us[mpl={mpl}]"] = done["latency_us"]["p50"]
        figures[f"switch_p99_us[mpl={mpl}]"] = done["latency_us"]["p99"]
        context = {"coordinator_priority": done["coordinator_priority"],
                   "rank_priority": done["rank_priority"]}
    return figures, context


def linearity_round(plan: dict[str, Any]) -> Round:
    """One round of MPL linearity ratios, by timeslice (ms) and k > 1."""
    figures = {}
    for timeslice in plan["timeslices"]:
        runtime = {k: mean_runtime(k, timeslice, plan["work"]) for k in sorted({1, *plan["mpls"]})}
        for k in plan["mpls"]:
            if k > 1:
                figures[f"mpl_linearity[{timeslice * 1000:g}ms][k={k}]"] = \
                    runtime[k] / (k * runtime[1])
    return figures, {}


def shim_round(plan: dict[str, Any]) -> Round:
    """One round of the shim's figures: the ping-pong ratio with / without, the spin-block
    wake-up latency (us) and the waiting rank's CPU share, while waiting and while blocked,
    and the operating system's wake-up latency (us) under the same waits."""
    done = shim_cost.measure(plan["pingpong_alternations"], plan["pingpong_iterations"],
                             plan["waits"], long_waits=False)
    blocked = done["wakeup"]["shim_spin_block_100us"]
    return {"shim_pingpong_ratio": done["pingpong"]["ratio"],
            "wakeup_p50_us": blocked["wakeup_us"]["p50"],
            "wakeup_p99_us": blocked["wakeup_us"]["p99"],
            "blocked_cpu_share": blocked["cpu_share"],
            "asleep_cpu_share": blocked["asleep_cpu_share"],
            "pipe_wakeup_p50_us": done["wakeup"]["os_pipe"]["wakeup_us"]["p50"],
            "pipe_wakeup_p99_us": done["wakeup"]["os_pipe"]["wakeup_us"]["p99"]}, {}


def progress_round(plan: dict[str, Any], checkout: Path = HERE) -> Round:
    """One round of the IMB pair under each of ``plan["progress_schedulers"]``, run by the
    testbed of ``checkout``: its makespan (s) and mean latencies (us) per scheduler."""
    argv, program = progress_cost.program(progress_cost.IMB, plan["progress_iter"],
                                          plan["progress_time"])
    figures = {}
    with tempfile.TemporaryDirectory(prefix="testbed-overheads-") as tmp:
        for scheduler in plan["progress_schedulers"]:
            done = progress_cost.run_one(checkout, scheduler, argv, Path(tmp) / scheduler)
            if any(status != "done" for status in done["statuses"]):
                raise RuntimeError(f"the IMB pair under {scheduler} in {checkout}: "
                                   f"{done['statuses']}")
            for metric, value in done["figures"].items():
                if value is not None:
                    figures[f"progress_{metric}[{scheduler}]"] = value
    return figures, {"progress_program": program}


ROUNDS = {"launch": launch_round, "switch": switch_round, "linearity": linearity_round,
          "shim": shim_round, "progress": progress_round}


def summarise(samples: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Per figure: the number of rounds, the median and its 95 % interval (the confidence
    it states: below 0.95 with 5 rounds or fewer)."""
    figures = {}
    for name, values in samples.items():
        interval = median_interval(values)
        figures[name] = {"n": len(values), "median": interval.value, "ci_low": interval.low,
                         "ci_high": interval.high,
                         "confidence": None if interval.low is None else interval.confidence}
    return figures


def smallest_linear_timeslice(figures: dict[str, dict[str, Any]]) -> float | None:
    """The smallest timeslice (ms) whose every linearity ratio's median is within 3 % of 1."""
    by_timeslice: dict[float, list[float]] = {}
    for name, figure in figures.items():
        if name.startswith("mpl_linearity["):
            timeslice = float(name.split("[")[1].removesuffix("ms]"))
            by_timeslice.setdefault(timeslice, []).append(figure["median"])
    within = [t for t, medians in by_timeslice.items()
              if all(abs(m - 1) <= LINEARITY_LIMIT for m in medians)]
    return min(within) if within else None


def measure(plan: dict[str, Any], progress: Any = None) -> dict[str, Any]:
    """Every figure of the suite for this host: ``plan["rounds"]`` rounds of each part of
    ``plan["parts"]``, in turn.  ``progress(message)`` is told of each round."""
    started = time.time()
    samples: dict[str, list[float]] = {}
    context: dict[str, Any] = {}
    for round_index in range(plan["rounds"]):
        if progress is not None:
            progress(f"round {round_index + 1} of {plan['rounds']}")
        for part in plan["parts"]:
            figures_now, found = ROUNDS[part](plan)
            context.update(found)
            for name, value in figures_now.items():
                samples.setdefault(name, []).append(value)
    figures = summarise(samples)
    document = {
        "benchmark": "overheads", "host": host(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 1),
        "plan": {k: list(v) if isinstance(v, tuple) else v for k, v in plan.items()},
        "samples": samples, "figures": figures, **context,
        "mpl_linearity": {"smallest_linear_timeslice_ms": smallest_linear_timeslice(figures),
                          "limit": LINEARITY_LIMIT},
    }
    delays = injection.describe(os.environ)
    if delays is not None:
        document["injected_delays"] = delays
    return document


def round_order(rounds: int, sides: Sequence[str]) -> list[tuple[int, str]]:
    """The order of interleaved rounds, as (round, side): every round takes each side in
    turn, in the given order in even rounds and reversed in odd ones (A B, B A, A B, ...), so
    a drift of the machine that is linear in time costs every side alike."""
    return [(r, side) for r in range(rounds)
            for side in (sides if r % 2 == 0 else tuple(reversed(sides)))]


def measure_interleaved(rounds: int, sides: Sequence[str],
                        one_round: Callable[[str], dict[str, Any]],
                        progress: Any = None) -> dict[str, dict[str, Any]]:
    """Per side, a suite document of ``rounds`` rounds taken in turn with the other sides'
    (``round_order``): ``one_round(side)`` measures one round of that side and returns its
    one-round document; each side's samples are those rounds' together, with their
    figures, and its seconds the sum of its rounds'."""
    documents: dict[str, dict[str, Any]] = {}
    for round_index, side in round_order(rounds, sides):
        if progress is not None:
            progress(f"round {round_index + 1} of {rounds}, {side}")
        done = one_round(side)
        if side not in documents:
            documents[side] = {**done, "samples": {}, "seconds": 0.0}
        kept = documents[side]
        kept["seconds"] = round(kept["seconds"] + done["seconds"], 1)
        for name, values in done["samples"].items():
            kept["samples"].setdefault(name, []).extend(values)
    for document in documents.values():
        document["figures"] = summarise(document["samples"])
        document["plan"] = {**document["plan"], "rounds": rounds}
    return documents


def round_in(checkout: Path, parts: tuple[str, ...], quick: bool) -> dict[str, Any]:
    """One round of the suite over ``checkout``'s command line, its one-round document: this
    code measuring the launch, switch, linearity and progress parts with ``checkout``'s
    ``testbed run`` (``harness.testbed_of``), and ``checkout``'s own suite its shim part
    (``shim_round_in``).  On another checkout than this one a part it lacks is left out and
    said under ``lacking`` (part: its command's last error line); on this one, or when a run
    of the other fails otherwise, ``RuntimeError``."""
    plan = {**(QUICK if quick else FULL), "rounds": 1, "parts": parts}
    started = time.time()
    samples: dict[str, list[float]] = {}
    context: dict[str, Any] = {}
    lacks: dict[str, str] = {}
    for part in parts:
        try:
            if part == "shim":
                figures, found = shim_round_in(checkout, quick)
            elif part == "progress":
                figures, found = progress_round(plan, checkout)
            else:
                with testbed_of(checkout):
                    figures, found = ROUNDS[part](plan)
        except (subprocess.CalledProcessError, KeyError) as err:
            said = lacking(err) if isinstance(err, subprocess.CalledProcessError) else \
                f"its event log has no {err}"
            if checkout == HERE:
                raise RuntimeError(f"the {part} part failed: {said}") from err
            lacks[part] = said
            print(f"overheads: {checkout} lacking: {part}: {said}", file=sys.stderr)
            continue
        context.update(found)
        for name, value in figures.items():
            samples[name] = [value]
    document = {"benchmark": "overheads", "host": host(),
                "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
                "seconds": round(time.time() - started, 1),
                "plan": {k: list(v) if isinstance(v, tuple) else v for k, v in plan.items()},
                "samples": samples, **context}
    if lacks:
        document["lacking"] = lacks
    return document


def shim_round_in(checkout: Path, quick: bool) -> Round:
    """One round of the shim part by ``checkout``'s own suite (its ``--rounds 1 --parts shim``
    run there, under the suite's name in that checkout: ``suite_module``): the ranks' shim
    records are made by the Python of the checkout whose shim reads them, which no command
    line offers.  ``CalledProcessError`` (with its error output) when that checkout cannot
    run it."""
    argv = [sys.executable, "-m", suite_module(checkout), "--rounds", "1", "--parts", "shim",
            *(["--quick"] if quick else [])]
    done = subprocess.run(argv, cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    done.check_returncode()
    return {name: values[0] for name, values in json.loads(done.stdout)["samples"].items()}, {}


def suite_module(checkout: Path) -> str:
    """The module of the overheads suite in ``checkout``: ``benchmarks.overheads.regression``
    since the benchmarks were grouped into packages, ``benchmarks.overheads`` before."""
    grouped = (checkout / "benchmarks" / "overheads" / "regression.py").is_file()
    return "benchmarks.overheads.regression" if grouped else "benchmarks.overheads"


def sample_sets(result: dict[str, Any]) -> dict[str, list[float]]:
    """The samples compared against a baseline; those of a side-by-side document are named
    ``root:...`` and ``unprivileged:...``; an interleaved document (``--against``) gives
    its own side's."""
    if "sides" in result:
        return result["sides"]["this"]["samples"]
    if "root" in result:
        return {f"{side}:{name}": values for side in SIDES
                for name, values in sample_sets(result[side]).items()}
    return result["samples"]


def _interval(figure: dict[str, Any]) -> str:
    if figure["ci_low"] is None:
        return f"{figure['median']:.4g}"
    return (f"{figure['median']:.4g} [{figure['ci_low']:.4g}, {figure['ci_high']:.4g}]"
            + below_nominal(figure.get("confidence")))


def figures_table(result: dict[str, Any]) -> str:
    """A table of every figure: median [95 % interval] and rounds (both halves of a
    side-by-side document; this checkout's of an interleaved one)."""
    if "sides" in result:
        return figures_table(result["sides"]["this"])
    if "root" in result:
        root, user = (result[side]["figures"] for side in SIDES)
        rows = [[name, _interval(root[name]), _interval(user[name])]
                for name in root if name in user]
        return table(["figure", "root", f"unprivileged ({result['unprivileged']['user']})"],
                     rows)
    rows = [[name, _interval(f), f["n"]] for name, f in result["figures"].items()]
    return table(["figure", "median [95 % interval]", "rounds"], rows)


def findings_table(findings: list[Finding]) -> str:
    """A table of a comparison with a baseline: per figure the medians, the ratio with its
    interval, the Holm-corrected p-value and the verdict."""
    rows = []
    for f in findings:
        ratio = "-" if f.ratio is None else f"{f.ratio.value:.3f}"
        if f.ratio is not None and f.ratio.low is not None:
            ratio += f" [{f.ratio.low:.3f}, {f.ratio.high:.3f}]"
        rows.append([f.figure, f"{f.now.value:.4g}", f"{f.then.value:.4g}", ratio,
                     "-" if f.p_adjusted is None else f"{f.p_adjusted:.3g}",
                     "REGRESSED" if f.regressed else "ok"])
    return table(["figure", "now", "baseline", "ratio [95 %]", "Holm p", "verdict"], rows)


def markdown(result: dict[str, Any], findings: list[Finding] | None, command: str) -> str:
    """A Markdown page of a run of the suite (and its comparison with a baseline): what was
    run, on what host and when, and every figure with its interval."""
    minutes = f", {result['seconds'] / 60:.0f} min" if "seconds" in result else ""
    lines = page_head("The testbed's overheads", "benchmarks.overheads.regression", command,
                      result["host"], result["date"] + minutes)
    if "sides" in result:
        interleaved = result["interleaved"]
        commits = interleaved.get("commits", {})
        lines.append(f"- rounds interleaved with those of {interleaved['checkouts']['baseline']}"
                     + (f" at {commits['baseline']} (the baseline); this side at "
                        f"{commits['this']}" if commits else " (the baseline)"))
        lines += [f"- lacking in the baseline: {part}: {said}"
                  for part, said in result["sides"]["baseline"].get("lacking", {}).items()]
        result = {**result["sides"]["this"], "date": result["date"]}
    if "root" in result:
        plan = result["root"]["plan"]
        lines += [f"- {plan['rounds']} rounds of {', '.join(plan['parts'])} as root, then as "
                  f"many as `{result['unprivileged']['user']}` (the two halves one after the "
                  "other, not interleaved)", "",
                  "Median over the rounds [95 % order-statistics interval].", "",
                  "| figure | root | unprivileged |", "|---|---:|---:|"]
        root, user = (result[side]["figures"] for side in SIDES)
        lines += [f"| {name} | {_interval(root[name])} | {_interval(user[name])} |"
                  for name in root if name in user]
        if "linearity" in plan["parts"]:
            linear = [result[side]["mpl_linearity"]["smallest_linear_timeslice_ms"]
                      for side in SIDES]
            lines += ["", "Smallest timeslice with every linearity ratio within 3 %, root / "
                      "unprivileged: " + " / ".join("none" if t is None else f"{t:g} ms"
                                                    for t in linear)]
    else:
        lines += [f"- {result['plan']['rounds']} rounds of {', '.join(result['plan']['parts'])}",
                  "", "Median over the rounds [95 % order-statistics interval].", "",
                  "| figure | median [95 % interval] | rounds |", "|---|---:|---:|"]
        lines += [f"| {name} | {_interval(f)} | {f['n']} |"
                  for name, f in result["figures"].items()]
        if "linearity" in result["plan"]["parts"]:
            linear = result["mpl_linearity"]["smallest_linear_timeslice_ms"]
            lines += ["", "Smallest timeslice with every linearity ratio within 3 %: "
                      + ("none" if linear is None else f"{linear:g} ms")]
    if findings is not None:
        lines += ["", "Against the baseline:", "", "```", findings_table(findings), "```"]
    return "\n".join(lines) + "\n"


def as_unprivileged(user: str, quick: bool, rounds: int | None,
                    parts: tuple[str, ...]) -> dict[str, Any]:
    """The suite's document measured by ``user`` (we must be root); ``RuntimeError`` with its
    error output if that run fails."""
    argv = [sys.executable, "-m", "benchmarks.overheads.regression", "--parts", ",".join(parts),
            *(["--quick"] if quick else []), *(["--rounds", str(rounds)] if rounds else [])]
    done = unprivileged.as_user(user, argv, Path("/"))
    if done.returncode != 0:
        raise RuntimeError(f"the suite failed as {user}: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout)
    result["user"] = user
    return result


def read_baseline(path: Path) -> dict[str, Any]:
    """The JSON document of an earlier run of this suite; ``ValueError`` when ``path`` cannot
    be read or holds no samples of figures."""
    try:
        baseline = json.loads(path.read_text())
        samples = sample_sets(baseline)
        odd = sorted(name for name, values in samples.items()
                     if not isinstance(values, list) or not values
                     or any(isinstance(v, bool) or not isinstance(v, int | float)
                            for v in values))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: not a baseline of this suite ({err!r}; documents written "
                         "before the suite kept its rounds' samples cannot be compared: "
                         "measure a new baseline)") from err
    if odd or not samples:
        raise ValueError(f"{path}: not a baseline of this suite (not lists of numbers: "
                         f"{', '.join(odd) or 'no figures'})")
    return baseline


def figure_margins(names: Any, margin: float | None = None,
                   given: dict[str, float] | None = None) -> dict[str, float]:
    """The margin of each figure of ``names``: from ``given`` (a ``--margins`` file) when it
    names the figure, else ``margin`` when set, else the drift margin of its kind
    (``DRIFT_MARGINS``), else ``MARGIN``."""
    given = given or {}
    chosen = {}
    for name in names:
        kind = name.split(":")[-1].split("[")[0]
        chosen[name] = given.get(name, margin if margin is not None
                                 else DRIFT_MARGINS.get(kind, MARGIN))
    return chosen


def read_margins(path: Path) -> dict[str, float]:
    """Per-figure margins from a JSON object ``{"figure": margin, ...}`` (as
    ``benchmarks.overheads.noise`` writes in ``margins.json``); ``ValueError`` naming the file and
    the
    figure when one is not a number >= 0."""
    try:
        given = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a JSON file of margins ({err})") from err
    if not isinstance(given, dict):
        raise ValueError(f"{path}: not a JSON object of figure: margin")
    for name, value in given.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise ValueError(f"{path}: figure {name}: margin {value!r} is not a number >= 0")
    return {name: float(value) for name, value in given.items()}


def compare(result: dict[str, Any], baseline: dict[str, Any], margins: dict[str, float],
            findings: list[Finding] | None = None) -> int:
    """Print the comparison of ``result`` with ``baseline`` (``findings``, when already
    made) and each regression to stderr; the exit status: 1 when a figure regressed, else 0.
    ``margins`` are per figure (``figure_margins``)."""
    now, then = sample_sets(result), sample_sets(baseline)
    if findings is None:
        findings = check(now, then, margins=margins)
    print(findings_table(findings), file=sys.stderr)
    needed = least_rounds(len(findings))
    fewest = min((min(len(now[f.figure]), len(then[f.figure])) for f in findings),
                 default=needed)
    if fewest < needed:
        print(f"note: with {fewest} rounds no regression can be called among {len(findings)} "
              f"figures (it takes {needed} a side)", file=sys.stderr)
    for finding in findings:
        if finding.regressed:
            print(f"regression: {finding.describe()}", file=sys.stderr)
    return 1 if any(f.regressed for f in findings) else 0


def against(checkout: Path, plan: dict[str, Any], quick: bool,
            progress: Any = None) -> dict[str, Any]:
    """The suite measured by the code of ``checkout`` (side ``baseline``) and by this
    checkout's (side ``this``), ``plan["rounds"]`` rounds each, interleaved
    (``measure_interleaved``), every round a fresh process of its checkout."""
    checkouts = {"baseline": checkout.resolve(), "this": HERE}
    started = time.time()
    sides = measure_interleaved(
        plan["rounds"], tuple(checkouts),
        lambda side: round_in(checkouts[side], plan["parts"], quick), progress)
    return {"benchmark": "overheads", "host": host(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
            "seconds": round(time.time() - started, 1), "quick": quick,
            "interleaved": {"rounds": plan["rounds"], "parts": list(plan["parts"]),
                            "checkouts": {side: str(path) for side, path in checkouts.items()},
                            "commits": {side: commit_of(path)
                                        for side, path in checkouts.items()}},
            "sides": sides}


def _parts(text: str) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise argparse.ArgumentTypeError(f"parts are {', '.join(PARTS)}; got {text!r}")
    return parts


def main(argv: list[str] | None = None) -> int:
    """Run the suite, print (and optionally save) the JSON, compare with a baseline."""
    p = parser("benchmarks.overheads.regression", "the testbed's overhead regression suite",
               quick="tiny runs: shows the suite works", json_help=None, out_help=None,
               markdown_help="also write a Markdown page")
    p.add_argument("--rounds", type=int, default=None,
                   help=f"rounds of every part (default {FULL['rounds']}, quick "
                        f"{QUICK['rounds']})")
    p.add_argument("--parts", type=_parts, default=PARTS,
                   help=f"comma-separated, of {','.join(PARTS)} (default all)")
    p.add_argument("--baseline", type=Path, default=None, help="JSON of an earlier run")
    p.add_argument("--against", type=checkout_type("testbed/__main__.py"), default=None,
                   metavar="CHECKOUT",
                   help="measure that checkout's code too, through its command line, rounds "
                        "interleaved with this one's, and compare this one against it")
    p.add_argument("--margin", type=float, default=None,
                   help="relative shift below which nothing is called, for every figure "
                        "(default 0.10, and more for figures that drift: DRIFT_MARGINS)")
    p.add_argument("--margins", type=Path, default=None,
                   help="JSON of per-figure margins (benchmarks.overheads.noise writes "
                        "margins.json)")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    p.add_argument("--as-user", default=None, metavar="USER",
                   help="as root: also measure as this unprivileged user, side by side")
    args = p.parse_args(argv)
    if args.rounds is not None and args.rounds < 1:
        print("overheads: --rounds must be >= 1", file=sys.stderr)
        return 2
    if args.as_user is not None and (os.geteuid() != 0 or unprivileged.missing_tools()):
        print("overheads: --as-user needs root, runuser and unshare", file=sys.stderr)
        return 2
    if args.against is not None and (args.baseline is not None or args.as_user is not None):
        print("overheads: --against compares with another checkout; it takes neither "
              "--baseline nor --as-user", file=sys.stderr)
        return 2
    baseline, given = None, None
    try:
        if args.baseline is not None:
            baseline = read_baseline(args.baseline)
        if args.margins is not None:
            given = read_margins(args.margins)
    except ValueError as err:
        print(f"overheads: {err}", file=sys.stderr)
        return 2
    session = Session.start("benchmarks.overheads.regression", argv, None, None)
    plan = {**(QUICK if args.quick else FULL), "parts": args.parts}
    if args.rounds is not None:
        plan["rounds"] = args.rounds

    def progress(message: str) -> None:
        print(f"overheads: {message}", file=sys.stderr, flush=True)

    if args.against is not None:
        try:
            result = against(args.against, plan, args.quick, progress)
        except RuntimeError as err:
            print(f"overheads: {err}", file=sys.stderr)
            return 1
        baseline = result["sides"]["baseline"]
    else:
        result = measure(plan, progress)
        result["quick"] = args.quick
    if args.as_user is not None:
        user = as_unprivileged(args.as_user, args.quick, args.rounds, args.parts)
        result = {"benchmark": "overheads", "host": result["host"], "date": result["date"],
                  "seconds": round(result["seconds"] + user["seconds"], 1),
                  "quick": args.quick, "root": result, "unprivileged": user}
    print(figures_table(result), file=sys.stderr)
    emit([result], True, indent=2)
    if args.out is not None:
        write_whole(args.out, json.dumps(result, indent=2) + "\n")
    margins = figure_margins(sample_sets(result), args.margin, given)
    findings = None if baseline is None else check(sample_sets(result), sample_sets(baseline),
                                                   margins=margins)
    session.page(args.markdown, lambda: markdown(result, findings, session.command))
    return 0 if baseline is None else compare(result, baseline, margins, findings)


if __name__ == "__main__":
    raise SystemExit(main())
