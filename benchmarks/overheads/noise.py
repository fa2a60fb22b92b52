"""How often the overhead suite's regression check raises a false alarm, and how often it
catches a known slowdown, measured on this host.

The overhead suite (``benchmarks.overheads.regression``) is measured again and again on the same
code,
some of it carrying a known slowdown injected through ``testbed.emulation.injection``: every
switch delayed by ``--slowdown`` (20 %) of the median switch latency, and every MPI call the
shim wraps delayed so that the ping-pong round trip with the shim grows by ``--slowdown`` (the
delay per call is calibrated first: ping-pongs with and without a test delay, alternated).

Two designs (``--design``):

* ``interleaved`` (the default; what ``overheads --against`` does): ``--pairs`` groups, each of
  three sides measured with their rounds interleaved (``regression.measure_interleaved``: A A2
  B, then B A2 A, ...): A and A2 the code as it is, B slowed.  Its switch and shim parts run,
  the switch runs with 0.6 s of work a job.  A2 against A is an **A/A pair**; B against A an
  **A/B pair**.
* ``sequential`` (what ``overheads --baseline`` does): whole suite runs (launch, switch and
  shim parts) in the order A0 B0 A1 B1 ... An; A(i+1) against A(i) is an A/A pair, B(i)
  against A(i) an A/B pair.

In an A/A pair any figure called a regression is a false alarm.  An A/B pair *detects* the
slowdown of a figure when that figure is called; the figures aimed at are
``switch_p50_us[mpl=2]`` and ``shim_pingpong_ratio``.  The delays touch the other switch and
shim figures too (a switch p99 or a wake-up grows with them), but not the launch overhead: a
call on an untouched figure is a false alarm too.

The last ``--hog-pairs`` pairs run with a CPU hog (a busy loop) pinned to the last CPU through
both sides, as on a loaded machine.  Each suite run (each group, interleaved) records what
else used the CPUs (``testbed.experiments.load``).  The rates come with 95 % Clopper-Pearson
intervals (``scipy.stats.binomtest``).  Every side's document is kept in the output
directory, and ``--from DIR`` derives the rates again from them (with other margins if asked:
``--margin``, ``--margins``, as ``overheads`` takes them).  From the A/A pairs it also reports
how far each figure drifted between sides, and writes ``margins.json``: per figure, the margin
that would have covered the largest drift seen (for ``overheads --margins`` on this machine).
Margins fitted to these very runs cannot show how often they raise a false alarm on others:
each A/A pair is also judged with the margins fitted on the *other* A/A pairs' drift (leave
one out; ``false_alarms_held_out``), the rate to expect from margins fitted this way.
``--markdown FILE`` writes a Markdown page of the results, with the host and date.
``--combine K`` also judges the same sides merged K at a time (the A sides of K consecutive
groups or runs together, A2 and B likewise): what K times the rounds a side would give.

Usage: ``python -m benchmarks.overheads.noise [--pairs 20] [--hog-pairs 5] [--rounds 12]
[--design interleaved|sequential]
[--slowdown 0.2] [--margin M] [--margins FILE] [--combine 2] [--out DIR] [--from DIR]
[--markdown FILE] [--quick]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scipy.stats import binomtest

from benchmarks.harness import Session, emit, host, page_head, parser, table, write_whole
from benchmarks.overheads import regression, shim_cost
from testbed.emulation import injection
from testbed.emulation.mpi_info import detect_mpi
from testbed.emulation.shim import library_path
from testbed.experiments import load
from testbed.experiments.regression import MARGIN, check

SWITCH_FIGURE = "switch_p50_us[mpl=2]"
SHIM_FIGURE = "shim_pingpong_ratio"
TARGETS = (SWITCH_FIGURE, SHIM_FIGURE)
# The figures the injected delays act on: every switch figure, and everything the shim times.
TOUCHED = ("switch_", "shim_", "wakeup_", "blocked_")
CALIBRATION_NS = 2000.0
SIDES = ("A", "A2", "B")


def noise_plan(rounds: int, design: str = "interleaved") -> dict[str, Any]:
    """The suite as measured here: switch (MPL 2) and shim parts, and the launch part
    (N = all PEs) in the sequential design; interleaved, the switch runs are shorter (0.6 s
    of work a job: some 30 switches) to fit three sides' rounds in the time."""
    plan = {**regression.FULL, "rounds": rounds, "parts": ("launch", "switch", "shim"),
            "launch_sizes": (len(os.sched_getaffinity(0)),), "launch_jobs": 2,
            "switch_mpls": (2,), "waits": 60}
    if design == "interleaved":
        plan.update(parts=("switch", "shim"), switch_work=0.6)
    return plan


def quick_plan() -> dict[str, Any]:
    """A tiny suite (switch and shim, one round) that only shows the benchmark works; it
    takes the calibration's test delay as the shim delay instead of calibrating (ping-pongs of
    a few hundred round trips cannot be trusted to show a slope on a loaded machine)."""
    return {**regression.QUICK, "rounds": 1, "parts": ("switch", "shim"), "calibrate": False}


def shim_calibration(slowdown: float, plan: dict[str, Any]) -> dict[str, float | None]:
    """``calibrate_shim``'s result for ``plan``, or the test delay itself when the plan says
    not to calibrate."""
    if not plan.get("calibrate", True):
        return {"round_trip_us": None, "us_per_ns": None, "shim_ns": CALIBRATION_NS}
    return calibrate_shim(slowdown, plan["pingpong_iterations"])


def sequence(pairs: int, hog_pairs: int) -> list[dict[str, Any]]:
    """The suite runs in order: quiet A0 B0 ... A(q), then hogged A0 B0 ... A(h), with
    q = pairs - hog_pairs and h = hog_pairs (no hogged runs when h = 0)."""
    steps = []
    for hog, count in ((False, pairs - hog_pairs), (True, hog_pairs)):
        if count <= 0:
            continue
        for i in range(count):
            steps += [{"side": "A", "index": i, "hog": hog}, {"side": "B", "index": i, "hog": hog}]
        steps.append({"side": "A", "index": count, "hog": hog})
    return steps


def groups(pairs: int, hog_pairs: int) -> list[dict[str, Any]]:
    """The interleaved design's sides in order: group i (quiet groups first, then the last
    ``hog_pairs`` hogged) has sides A, A2 (the same code again) and B (slowed), measured with
    their rounds interleaved."""
    return [{"side": side, "index": i, "hog": i >= pairs - hog_pairs}
            for i in range(pairs) for side in SIDES]


def pair_up(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The comparisons of a sequence: A/A (A2(i) against A(i) in the interleaved design,
    A(i+1) against A(i) in the sequential one) and A/B (B(i) against A(i)), each with the
    positions of its baseline and subject in ``steps``."""
    where = {(s["hog"], s["side"], s["index"]): n for n, s in enumerate(steps)}
    found = []
    for (hog, side, index), n in sorted(where.items()):
        if side != "A":
            continue
        same = (hog, "A2", index) if (hog, "A2", index) in where else (hog, "A", index + 1)
        for kind, subject in (("A/A", same), ("A/B", (hog, "B", index))):
            if subject in where:
                found.append({"kind": kind, "hog": hog, "baseline": n,
                              "subject": where[subject]})
    return sorted(found, key=lambda p: (p["subject"], p["kind"]))


def proportion(k: int, n: int) -> dict[str, Any]:
    """``k`` of ``n`` as a rate with its 95 % Clopper-Pearson interval (None for n = 0)."""
    if n == 0:
        return {"k": 0, "n": 0, "rate": None, "ci_low": None, "ci_high": None}
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return {"k": k, "n": n, "rate": k / n, "ci_low": ci.low, "ci_high": ci.high}


def combine(documents: list[dict[str, Any]], steps: list[dict[str, Any]],
            k: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Runs merged ``k`` at a time: A(0..k-1) become one A run with their rounds together,
    A(k..2k-1) the next, and so on, B runs likewise, within the quiet and the hogged block
    (a trailing group of fewer than ``k`` is left out).  Their pairs are then comparisons
    of ``k`` times the rounds a side, spread over ``k`` suite runs each."""
    groups: dict[tuple[bool, str, int], list[dict[str, Any]]] = {}
    for document, step in zip(documents, steps, strict=True):
        key = (step["hog"], step["side"], step["index"] // k)
        groups.setdefault(key, []).append(document)
    merged, merged_steps = [], []
    for (hog, side, index), members in groups.items():
        if len(members) < k:
            continue
        samples: dict[str, list[float]] = {}
        for member in members:
            for name, values in regression.sample_sets(member).items():
                samples.setdefault(name, []).extend(values)
        merged.append({"samples": samples})
        merged_steps.append({"side": side, "index": index, "hog": hog})
    return merged, merged_steps


def judge(documents: list[dict[str, Any]], steps: list[dict[str, Any]],
          margin: float | None = None, given: dict[str, float] | None = None) -> dict[str, Any]:
    """Compare every pair of ``documents`` (the suite runs of ``steps``, in order) and count:
    false alarms of A/A pairs, false alarms on untouched figures of A/B pairs, detections per
    target figure, and the slowdown the injection caused (median over A/B pairs of the ratio
    of medians, per target figure)."""
    pairs = []
    names = {name for d in documents for name in regression.sample_sets(d)}
    margins = regression.figure_margins(sorted(names), margin, given)
    for pair in pair_up(steps):
        findings = check(regression.sample_sets(documents[pair["subject"]]),
                         regression.sample_sets(documents[pair["baseline"]]), margins=margins)
        pairs.append({**pair, "called": [f.figure for f in findings if f.regressed],
                      "ratios": {f.figure: f.ratio.value for f in findings
                                 if f.ratio is not None}})
    summary: dict[str, Any] = {"pairs": pairs, "margins": margins,
                               "drift": drift(pairs)}
    held_out = dict(zip((id(p) for p in pairs if p["kind"] == "A/A"),
                        alarms_held_out(documents, pairs), strict=True))
    for label, hog in (("all", None), ("quiet", False), ("hog", True)):
        chosen = [p for p in pairs if hog is None or p["hog"] == hog]
        aa = [p for p in chosen if p["kind"] == "A/A"]
        ab = [p for p in chosen if p["kind"] == "A/B"]
        summary[label] = {
            "false_alarms": proportion(sum(bool(p["called"]) for p in aa), len(aa)),
            "false_alarms_held_out": proportion(sum(held_out[id(p)] for p in aa), len(aa)),
            "false_alarms_untouched_in_ab": proportion(
                sum(any(not f.startswith(TOUCHED) for f in p["called"]) for p in ab), len(ab)),
            "detected": {f: proportion(sum(f in p["called"] for p in ab), len(ab))
                         for f in TARGETS},
            "slowdown": {f: statistics.median(p["ratios"][f] for p in ab)
                         if all(f in p["ratios"] for p in ab) and ab else None
                         for f in TARGETS},
        }
    called = [f for p in pairs if p["kind"] == "A/A" for f in p["called"]]
    summary["false_alarms_by_figure"] = {f: called.count(f) for f in sorted(set(called))}
    return summary


def alarms_held_out(documents: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> list[bool]:
    """For each A/A pair of ``pairs`` (``judge``'s, with their ratios), in order: whether the
    regression check calls a figure when its margins are fitted (``drift``) on the other A/A
    pairs only, figures without a fitted margin taking ``MARGIN``."""
    found = []
    for pair in pairs:
        if pair["kind"] != "A/A":
            continue
        fitted = {name: d["margin"] for name, d in drift([q for q in pairs
                                                           if q is not pair]).items()}
        now = regression.sample_sets(documents[pair["subject"]])
        findings = check(now, regression.sample_sets(documents[pair["baseline"]]),
                         margins={name: fitted.get(name, MARGIN) for name in now})
        found.append(any(f.regressed for f in findings))
    return found


def drift(pairs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per figure, how far A/A pairs' ratios of medians strayed from 1: the largest ratio
    seen and the margin that would have covered it (rounded up to 0.05, at least
    ``MARGIN``), which ``overheads --margins`` can take."""
    ratios: dict[str, list[float]] = {}
    for pair in pairs:
        if pair["kind"] == "A/A":
            for name, ratio in pair["ratios"].items():
                ratios.setdefault(name, []).append(ratio)
    return {name: {"largest_ratio": max(values), "pairs": len(values),
                   "margin": max(MARGIN, math.ceil((max(values) - 1) * 20 - 1e-9) / 20)}
            for name, values in sorted(ratios.items())}


def calibrate_shim(slowdown: float, iterations: int, repeats: int = 3) -> dict[str, float]:
    """The shim delay per call (ns) that makes the 8-byte ping-pong's round trip with the shim
    ``slowdown`` slower: ping-pongs with no delay and with ``CALIBRATION_NS`` alternated
    ``repeats`` times; the slope is the round trip's growth per ns of delay."""
    preload = {"LD_PRELOAD": str(library_path(detect_mpi()))}
    plain, delayed = [], []
    for _ in range(repeats):
        plain.append(shim_cost._run("pingpong", iterations, preload)["round_trip_us"])
        delayed.append(shim_cost._run("pingpong", iterations, {
            **preload, injection.SHIM_ENV: f"{CALIBRATION_NS:g}"})["round_trip_us"])
    base = statistics.median(plain)
    slope = (statistics.median(delayed) - base) / CALIBRATION_NS
    if slope <= 0:
        raise RuntimeError("the calibration delay did not slow the ping-pong")
    return {"round_trip_us": base, "us_per_ns": slope,
            "shim_ns": round(slowdown * base / slope, 1)}


HOG = """import os, sys
while os.getppid() == int(sys.argv[1]):
    for _ in range(1_000_000):
        pass
"""


@contextmanager
def cpu_hog(on: bool) -> Iterator[None]:
    """A busy loop pinned to the last CPU while inside (nothing when ``on`` is false).  The
    loop ends by itself when this process is gone (killed, say, where no ``finally`` runs)."""
    if not on:
        yield
        return
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(os.getpid())],
                           stdin=subprocess.DEVNULL)
    try:
        os.sched_setaffinity(hog.pid, {max(os.sched_getaffinity(0))})
        yield
    finally:
        hog.kill()
        hog.wait()


@contextmanager
def injected(delays: dict[str, float] | None) -> Iterator[None]:
    """The injection's environment variables set while inside (for the suite's runs)."""
    names = {"switch_us": injection.SWITCH_ENV, "shim_ns": injection.SHIM_ENV}
    saved = {name: os.environ.get(name) for name in names.values()}
    try:
        for key, value in (delays or {}).items():
            os.environ[names[key]] = f"{value:g}"
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run(steps: list[dict[str, Any]], plan: dict[str, Any], slowdown: float,
        out: Path) -> list[dict[str, Any]]:
    """Run the suite once per step (B steps slowed), writing each document to ``out``; the
    documents in order."""
    calibration = shim_calibration(slowdown, plan)
    print(f"noise: shim delay {calibration['shim_ns']:g} ns per call", file=sys.stderr)
    documents: list[dict[str, Any]] = []
    delays: dict[str, float] | None = None
    started = time.monotonic()
    for n, step in enumerate(steps):
        if step["side"] == "B" and delays is None:
            p50 = documents[0]["figures"][SWITCH_FIGURE]["median"]
            delays = {"switch_us": round(slowdown * p50, 1), "shim_ns": calibration["shim_ns"]}
        with cpu_hog(step["hog"]), injected(delays if step["side"] == "B" else None):
            before = load.snapshot()
            document = regression.measure(plan)
            document["load"] = load.disturbance(before, load.snapshot())
        document["noise_step"] = {**step, "calibration": calibration}
        (out / f"suite-{n:02d}.json").write_text(json.dumps(document, indent=2) + "\n")
        documents.append(document)
        elapsed = time.monotonic() - started
        left = elapsed / (n + 1) * (len(steps) - n - 1)
        print(f"noise: run {n + 1} of {len(steps)} ({step['side']}{step['index']}"
              f"{', hog' if step['hog'] else ''}) done; about {left / 60:.0f} min left",
              file=sys.stderr, flush=True)
    return documents


def run_interleaved(steps: list[dict[str, Any]], plan: dict[str, Any], slowdown: float,
                    out: Path) -> list[dict[str, Any]]:
    """Run every group of ``steps`` (``groups``): its sides' rounds interleaved
    (``regression.measure_interleaved``), the B rounds slowed, writing each side's document to
    ``out``; the documents in the order of ``steps``."""
    calibration = shim_calibration(slowdown, plan)
    switch = regression.measure({**plan, "parts": ("switch",), "rounds": min(3, plan["rounds"])})
    delays = {"switch_us": round(slowdown * switch["figures"][SWITCH_FIGURE]["median"], 1),
              "shim_ns": calibration["shim_ns"]}
    print(f"noise: delays in B rounds: switch {delays['switch_us']:g} us, shim "
          f"{delays['shim_ns']:g} ns per call", file=sys.stderr)

    def one_round(side: str) -> dict[str, Any]:
        with injected(delays if side == "B" else None):
            return regression.measure({**plan, "rounds": 1})

    documents: list[dict[str, Any]] = []
    started = time.monotonic()
    count = len(steps) // len(SIDES)
    for index in range(count):
        hog = steps[index * len(SIDES)]["hog"]
        with cpu_hog(hog):
            before = load.snapshot()
            sides = regression.measure_interleaved(plan["rounds"], SIDES, one_round)
            disturbance = load.disturbance(before, load.snapshot())
        for side in SIDES:
            document = {**sides[side], "load": disturbance,
                        "noise_step": {"side": side, "index": index, "hog": hog,
                                       "calibration": calibration}}
            if side == "B":
                document["injected_delays"] = delays
            n = len(documents)
            (out / f"suite-{n:02d}.json").write_text(json.dumps(document, indent=2) + "\n")
            documents.append(document)
        left = (time.monotonic() - started) / (index + 1) * (count - index - 1)
        print(f"noise: group {index + 1} of {count}{', hog' if hog else ''} done; about "
              f"{left / 60:.0f} min left", file=sys.stderr, flush=True)
    return documents


def read_runs(directory: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The suite documents of an earlier run of this benchmark and their steps;
    ``ValueError`` when ``directory`` holds none."""
    paths = sorted(directory.glob("suite-*.json"))
    if not paths:
        raise ValueError(f"{directory}: no suite-*.json of a noise run")
    documents = []
    for path in paths:
        try:
            documents.append(json.loads(path.read_text()))
            documents[-1]["noise_step"]["side"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a suite document of a noise run ({err})") from err
    steps = [{k: d["noise_step"][k] for k in ("side", "index", "hog")} for d in documents]
    return documents, steps


def _rate(p: dict[str, Any]) -> str:
    if p["rate"] is None:
        return "-"
    return f"{p['k']}/{p['n']} = {p['rate']:.0%} [{p['ci_low']:.0%}, {p['ci_high']:.0%}]"


RATE_COLUMNS = ["pairs", "false alarms (A/A)",
                "false alarms (A/A, margins fitted on the other pairs)",
                "false alarms (A/B, untouched figures)",
                "switch p50 slowdown detected", "shim slowdown detected", "switch p50 B/A",
                "shim ratio B/A"]


def _rate_rows(summary: dict[str, Any]) -> list[list[str]]:
    """A row of ``RATE_COLUMNS`` per group of pairs: quiet, hogged and all together."""
    rows = []
    for label in ("quiet", "hog", "all"):
        s = summary[label]
        rows.append([label, _rate(s["false_alarms"]), _rate(s["false_alarms_held_out"]),
                     _rate(s["false_alarms_untouched_in_ab"]),
                     *(_rate(s["detected"][f]) for f in TARGETS),
                     *("-" if s["slowdown"][f] is None else f"{s['slowdown'][f]:.2f}x"
                       for f in TARGETS)])
    return rows


def rates_table(summary: dict[str, Any]) -> str:
    """The rates, quiet, hogged and all together, as a plain-text table."""
    return table(RATE_COLUMNS, _rate_rows(summary))


def _markdown_table(summary: dict[str, Any]) -> list[str]:
    rows = [RATE_COLUMNS, ["---"] * len(RATE_COLUMNS), *_rate_rows(summary)]
    return ["| " + " | ".join(row) + " |" for row in rows]


def markdown(summary: dict[str, Any], documents: list[dict[str, Any]], command: str) -> str:
    """A Markdown page of the results: what was run, on what, and the rates."""
    first = documents[0]
    plan = first["plan"]
    seconds = sum(d["seconds"] for d in documents)
    disturbed = sum(d["load"]["disturbed"] for d in documents if not d["noise_step"]["hog"])
    delays = next((d["injected_delays"] for d in documents if "injected_delays" in d), {})
    lines = [
        *page_head("False alarms and detections of the overhead regression check",
                   "benchmarks.overheads.noise", command, first["host"],
                   f"{first['date']} to {documents[-1]['date']}, {len(documents)} suite runs, "
                   f"{seconds / 60:.0f} min of suite time ({seconds / len(documents):.0f} s "
                   "a run)"),
        f"- suite: parts {', '.join(plan['parts'])}, {plan['rounds']} rounds a run",
        "- margins: " + ", ".join(f"{name} {m:g}" for name, m in summary["margins"].items()),
        f"- injected in B runs: switch {delays.get('switch_us', 0):g} us, "
        f"shim {delays.get('shim_ns', 0):g} ns per call",
        f"- quiet runs the load check called disturbed: {disturbed}",
        "",
        "Rates with 95 % Clopper-Pearson intervals; B/A is the median over A/B pairs of the "
        "ratio (Hodges-Lehmann). The margins above may have been fitted to these very runs "
        "(`regression.DRIFT_MARGINS` were, to the sequential ones): the held-out column judges "
        "each A/A pair with the margins fitted on the other A/A pairs' drift instead, the "
        "false-alarm rate to expect on runs the margins were not fitted to.",
        "",
        *_markdown_table(summary),
    ]
    for rounds, combined in summary.get("combined", {}).items():
        lines += ["", f"The same runs merged into runs of {rounds} rounds a side (consecutive "
                  "A runs together, B runs likewise; fewer, longer pairs):", "",
                  *_markdown_table(combined)]
    by_figure = summary["false_alarms_by_figure"]
    lines += ["", "False alarms by figure (A/A pairs): "
              + (", ".join(f"{f} {n}" for f, n in by_figure.items()) or "none"), "",
              "Drift between A/A pairs: the largest ratio of medians seen per figure, and the "
              "margin that would have covered it (`margins.json` in the output directory, "
              "which `overheads --margins` takes):", "",
              "| figure | A/A pairs | largest ratio | margin |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {d['pairs']} | {d['largest_ratio']:.3f} | {d['margin']:g} |"
              for name, d in summary["drift"].items()]
    lines.append("")
    return "\n".join(lines)


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = [0]
    if any(k < 2 for k in counts):
        raise argparse.ArgumentTypeError(f"counts of runs >= 2, comma-separated; got {text!r}")
    return counts


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run (or re-read) the pairs and print the rates and the JSON."""
    p = parser("benchmarks.overheads.noise", "false alarms and detections of the overhead suite's "
               "regression check", quick="tiny: shows the benchmark works", json_help=None,
               out_help="directory for the suite runs")
    p.add_argument("--pairs", type=int, default=20, help="A/A pairs (and A/B pairs)")
    p.add_argument("--hog-pairs", type=int, default=5, help="of them with a CPU hog")
    p.add_argument("--rounds", type=int, default=12, help="rounds of the suite a side")
    p.add_argument("--design", choices=("interleaved", "sequential"), default="interleaved",
                   help="sides' rounds interleaved in groups A A2 B (default), or whole suite "
                        "runs in turn A0 B0 A1 ...")
    p.add_argument("--slowdown", type=float, default=0.2, help="injected in B runs")
    p.add_argument("--margin", type=float, default=None, help="as overheads --margin")
    p.add_argument("--margins", type=Path, default=None, help="as overheads --margins")
    p.add_argument("--from", dest="source", type=Path, default=None,
                   help="derive the rates from an earlier --out instead of running")
    p.add_argument("--combine", type=_counts, default=[2],
                   help="also judge runs merged K at a time (comma-separated K, default 2)")
    args = p.parse_args(argv)
    # Ctrl-C works even when started in the background (where SIGINT comes ignored), and
    # SIGTERM unwinds too, so the hog and the run in progress are stopped either way.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    if not 0 <= args.hog_pairs <= args.pairs or args.pairs < 1 or args.rounds < 1 \
            or args.slowdown <= 0:
        print("noise: need pairs >= 1, 0 <= hog-pairs <= pairs, rounds >= 1, slowdown > 0",
              file=sys.stderr)
        return 2
    try:
        given = regression.read_margins(args.margins) if args.margins is not None else None
        if args.source is not None:
            documents, steps = read_runs(args.source)
    except ValueError as err:
        print(f"noise: {err}", file=sys.stderr)
        return 2
    session = Session.start("benchmarks.overheads.noise", argv, args.source or args.out,
                            None if args.source is not None else "noise")
    out = session.out
    assert out is not None
    if args.source is None:
        plan = quick_plan() if args.quick else noise_plan(args.rounds, args.design)
        interleaved = args.design == "interleaved"
        steps = (groups if interleaved else sequence)(args.pairs, args.hog_pairs)
        try:
            documents = (run_interleaved if interleaved else run)(steps, plan, args.slowdown,
                                                                  out)
        except KeyboardInterrupt:
            print(f"noise: interrupted; the suite runs done so far are in {out} (--from reads "
                  "them)", file=sys.stderr)
            return 130
        print(f"noise: suite runs in {out}", file=sys.stderr)
    summary = judge(documents, steps, args.margin, given)
    write_whole(out / "margins.json", json.dumps(
        {name: d["margin"] for name, d in summary["drift"].items()}, indent=2) + "\n")
    print(rates_table(summary), file=sys.stderr)
    rounds = documents[0]["plan"]["rounds"]
    summary["combined"] = {}
    for k in args.combine:
        merged = judge(*combine(documents, steps, k), args.margin, given)
        summary["combined"][str(k * rounds)] = {
            label: merged[label] for label in ("quiet", "hog", "all")}
        print(f"{k} runs combined, {k * rounds} rounds a side:\n{rates_table(merged)}",
              file=sys.stderr)
    session.page(args.markdown, lambda: markdown(summary, documents, session.command))
    emit([{"benchmark": "noise", "host": host(), **summary}], True, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
