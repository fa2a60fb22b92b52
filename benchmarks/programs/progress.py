"""Progress-dependent MPI patterns under every scheduler, against plain ``mpiexec``.

``benchmarks/clients/progress_patterns.py`` runs patterns whose completion needs a waiting
peer's progress (issue 35's passive-target program among them: a rank locks every window while
its peer waits in a barrier), checks its own results and prints each pattern's seconds.  This
runs it on 2 ranks under plain ``mpiexec -n 2`` (the reference) and under ``testbed exec -n 2
--scheduler S`` for every scheduler (``prime`` with ``--prime-shift 0.5``: a job without an
estimate waits for non-prime time), ``--repeats`` rounds, each round in an order shuffled by a
PRNG seeded with ``--order-seed`` and the round, so that drift of the machine spreads over
every mode.  A run that does not end within ``--timeout`` seconds is killed (its whole process
group) and counted as hung; one that ends non-zero or without the program's "ok" as failed.

Figures of one run: ``issue_program`` (s: the issue's program, ``rma_lock_all``, as timed inside
the program), ``patterns`` (s: every pattern, summed, timed inside the program: what the
scheduler and the shim cost the program itself) and ``wall`` (s: the whole command, which for
``testbed exec`` includes starting the coordinator and its node manager, about a second).  Per
mode and figure: the median with its 95 % interval and the ratio to plain's with its own
(``testbed.experiments.comparison``); the target, at most 3x plain, is checked on the ratio's
interval (``met``: upper bound within 3, ``missed``: lower bound above, else ``cannot
tell``).  Every pattern's own seconds are in the JSON.

Usage: ``python -m benchmarks.programs.progress [--quick] [--schedulers ics,fcs,...] [--repeats 5]
[--rounds 50] [--timeout 60] [--order-seed 1] [--runs DIR] [--out JSON] [--markdown PAGE]``.
``--quick`` runs 2 repeats of 3 rounds under plain, gang and ics: it shows that it works.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    CLIENTS,
    Session,
    host,
    markdown_table,
    now_iso,
    page_head,
    parser,
)
from benchmarks.programs.real_clients import verdict
from testbed.emulation.mpi_info import detect_mpi
from testbed.experiments import comparison
from testbed.experiments.stats import below_nominal
from testbed.policies import POLICIES

CLIENT = CLIENTS / "progress_patterns.py"
PLAIN = "plain"
METRICS = ("issue_program", "patterns", "wall")
LIMIT = 3.0
RANKS = 2
# A job without a runtime estimate waits under prime for non-prime time, 12 h away by default.
OPTIONS = {"prime": ["--prime-shift", "0.5"]}


def command(mode: str, rounds: int, out: Path) -> list[str]:
    """The command of one run of the client under ``mode`` (``plain`` or a scheduler's name),
    writing any run directory to ``out``."""
    program = [sys.executable, str(CLIENT), str(rounds)]
    if mode == PLAIN:
        return [detect_mpi().mpiexec, "-n", str(RANKS), *program]
    return [sys.executable, "-m", "testbed", "exec", "-n", str(RANKS), "--scheduler", mode,
            *OPTIONS.get(mode, []), "--out", str(out), "--", *program]


def parse_output(text: str) -> dict[str, float] | None:
    """Each pattern's seconds from the client's standard output, None unless it printed "ok"
    and its JSON line."""
    lines = text.splitlines()
    if len(lines) < 2 or lines[0] != "ok":
        return None
    try:
        times = json.loads(lines[1])
    except ValueError:
        return None
    return {str(k): float(v) for k, v in times.items()} if isinstance(times, dict) else None


def figures(times: dict[str, float], wall: float) -> dict[str, float]:
    """One finished run's figures (seconds) from its patterns' times and its wall time."""
    return {"issue_program": times["rma_lock_all"], "patterns": sum(times.values()),
            "wall": wall}


def run_once(mode: str, rounds: int, out: Path, timeout: float) -> dict[str, Any]:
    """Run the client once under ``mode``: its status (``ok``, ``failed`` or ``hung``), wall
    seconds, its patterns' seconds and, when it failed, the end of its standard error."""
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    job = subprocess.Popen(command(mode, rounds, out), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = job.communicate(timeout=timeout)
        status = "ok" if job.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGTERM)
        try:
            stdout, stderr = job.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            stdout, stderr = job.communicate()
        status = "hung"
    wall = time.monotonic() - started
    times = parse_output(stdout) if status == "ok" else None
    if status == "ok" and times is None:
        status = "failed"
    result: dict[str, Any] = {"mode": mode, "status": status, "wall_s": round(wall, 4),
                              "patterns": times}
    if status != "ok":
        result["stderr"] = stderr[-2000:]
    return result


def run_order(modes: list[str], repeats: int, seed: int) -> list[tuple[int, str]]:
    """Every run as (round, mode): each round every mode once, shuffled by a PRNG seeded with
    ``seed`` and the round."""
    order = []
    for number in range(1, repeats + 1):
        round_modes = list(modes)
        random.Random(f"{seed}:{number}").shuffle(round_modes)
        order += [(number, mode) for mode in round_modes]
    return order


def summarize(runs: list[dict[str, Any]], modes: list[str]
              ) -> tuple[list[comparison.Record], dict[str, dict[str, Any]]]:
    """The comparison records of the finished runs against plain's, and per mode its count of
    runs, hung and failed runs and the 3x verdicts on each figure."""
    groups = {mode: comparison.Group(mode, mode) for mode in modes}
    counts = {mode: {"runs": 0, "hung": 0, "failed": 0} for mode in modes}
    for run in runs:
        counts[run["mode"]]["runs"] += 1
        if run["status"] != "ok":
            counts[run["mode"]][run["status"]] += 1
            continue
        groups[run["mode"]].add(figures(run["patterns"], run["wall_s"]), disturbed=False)
    records = comparison.summarize(list(groups.values()), list(METRICS), PLAIN)
    for record in records:
        if record.label != PLAIN:
            counts[record.label][f"{record.metric}_verdict"] = (
                "missed" if counts[record.label]["hung"] or counts[record.label]["failed"]
                else verdict(record.ratio_low, record.ratio_high, LIMIT))
    return records, counts


def _ratio(record: comparison.Record) -> str:
    if record.ratio is None:
        return "-"
    if record.ratio_low is None or record.ratio_high is None:
        return f"{record.ratio:.2f}"
    return (f"{record.ratio:.2f} [{record.ratio_low:.2f}, {record.ratio_high:.2f}]"
            + below_nominal(record.ratio_confidence))


def table(records: list[comparison.Record], counts: dict[str, dict[str, Any]],
          modes: list[str]) -> tuple[list[str], list[list[Any]]]:
    """The summary table: per mode its runs, hung and failed runs, and per figure the median
    (ms) and the ratio to plain's with its 95 % interval and the 3x verdict."""
    cell = {(r.label, r.metric): r for r in records}
    header = ["mode", "runs", "hung", "failed"]
    for metric in METRICS:
        header += [f"{metric} median (ms)", f"{metric} / plain", "3x"]
    rows = []
    for mode in modes:
        row: list[Any] = [mode, counts[mode]["runs"], counts[mode]["hung"],
                          counts[mode]["failed"]]
        for metric in METRICS:
            r = cell[(mode, metric)]
            row += ["-" if r.median is None else f"{1e3 * r.median:.1f}", _ratio(r),
                    counts[mode].get(f"{metric}_verdict", "reference")]
        rows.append(row)
    return header, rows


def markdown(doc: dict[str, Any], header: list[str], rows: list[list[Any]],
             command_line: str) -> str:
    """The results page."""
    lines = page_head("Progress-dependent MPI patterns under every scheduler",
                      "benchmarks.programs.progress", command_line, doc["host"], doc["date"])
    lines += [f"- MPI: {doc['mpi']}; {RANKS} ranks, {doc['rounds']} rounds of each pattern, "
              f"{doc['repeats']} repeats in random order (seed {doc['order_seed']})", "",
              "Each run is `benchmarks/clients/progress_patterns.py`: patterns whose completion "
              "needs a waiting peer's progress (passive-target RMA while the target waits in a "
              "barrier, a rendezvous send to a rank in a barrier, pending nonblocking "
              "collectives and `MPI_Comm_idup` across a barrier, generalized and partitioned "
              "requests, intercommunicator and unwrapped collectives, probes of large "
              "messages). `issue_program` is issue 35's program (`rma_lock_all`), `patterns` "
              "all of them summed, both timed inside the program; `wall` is the whole command "
              "(`testbed exec` starts a coordinator and a node manager first). Medians; "
              "Hodges-Lehmann ratios to plain `mpiexec` with their 95 % intervals (a lower "
              "confidence, too few repeats for 95 %, is given beside one); 3x: the target "
              "checked on the ratio's interval (met: its upper bound is within 3).", "",
              *markdown_table(header, rows), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run every repeat of every mode, print the summary table and write the JSON (and the
    page with ``--markdown``)."""
    p = parser("benchmarks.programs.progress", "progress-dependent MPI patterns per scheduler",
               quick="2 repeats of 3 rounds, 3 modes", json_help=None, out_help=None,
               markdown_help="also write a results page")
    p.add_argument("--schedulers", default=None,
                   help="comma-separated (default: every scheduler)")
    p.add_argument("--repeats", type=int, default=5, help="runs of each mode (default 5)")
    p.add_argument("--rounds", type=int, default=50,
                   help="rounds of each pattern a run (default 50)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds before a run counts as hung and is killed (default 60)")
    p.add_argument("--order-seed", type=int, default=1, help="seed of the random order")
    p.add_argument("--runs", type=Path, default=None,
                   help="directory for the run directories (default runs/progress-TIME)")
    p.add_argument("--out", type=Path, default=None, help="the JSON (default RUNS/progress.json)")
    args = p.parse_args(argv)
    schedulers = (["gang", "ics"] if args.quick else list(POLICIES)) if args.schedulers is None \
        else [s for s in args.schedulers.split(",") if s]
    unknown = [s for s in schedulers if s not in POLICIES]
    if unknown or not schedulers:
        p.error(f"--schedulers: choose from {','.join(POLICIES)}")
    repeats, rounds = (2, 3) if args.quick else (args.repeats, args.rounds)
    if repeats < 1 or rounds < 1:
        p.error("--repeats and --rounds must be >= 1")
    modes = [PLAIN, *schedulers]
    session = Session.start("benchmarks.programs.progress", argv, args.runs, "progress")
    runs_dir = session.out
    assert runs_dir is not None
    measured = now_iso()
    runs = []
    order = run_order(modes, repeats, args.order_seed)
    for done, (number, mode) in enumerate(order, start=1):
        run = run_once(mode, rounds, runs_dir / f"{mode}-{number}", args.timeout)
        runs.append(run | {"round": number})
        print(f"[{done}/{len(order)}] {mode} round {number}: {run['status']}, "
              f"{run['wall_s']:.2f} s", file=sys.stderr, flush=True)
    records, counts = summarize(runs, modes)
    header, rows = table(records, counts, modes)
    mpi = detect_mpi()
    doc = {"benchmark": "progress", "host": host(), "date": measured,
           "mpi": mpi.version.splitlines()[0] if mpi.version else mpi.vendor,
           "ranks": RANKS, "rounds": rounds,
           "repeats": repeats, "order_seed": args.order_seed, "limit": LIMIT,
           "modes": counts, "records": [r.as_dict() for r in records], "runs": runs}
    print("\n".join(markdown_table(header, rows)))
    out = args.out or runs_dir / "progress.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    session.page(args.markdown, lambda: markdown(doc, header, rows, session.command))
    print(f"JSON: {out}", file=sys.stderr)
    hung = sum(c["hung"] + c["failed"] for c in counts.values())
    return 1 if hung else 0


if __name__ == "__main__":
    raise SystemExit(main())
