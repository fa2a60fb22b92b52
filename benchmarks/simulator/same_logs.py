"""Same logs: do two checkouts simulate the same workloads into the same event logs?

A refactoring of the driver, the policies or the simulator must not change what a simulated
run writes.  ``python -m benchmarks.simulator.same_logs --against CHECKOUT`` generates a set of
workloads (Lublin traces as workload files and as SWF, the THESIS mix, owner visits,
successors with limits and estimates), simulates each under every simulable scheduler and a
few option sets (MPL and switch cost, job timeouts, the balancer, perfect estimates, an owner
stream), once with this checkout's code and once with ``CHECKOUT``'s, and compares the
``events.jsonl`` files byte for byte after removing what differs by nature (the run id, the
wall-clock time, the command line and the directories), and the ``jobs.csv`` and
``summary.json`` each side derives from its log byte for byte.  Each side is driven only
through its command line (``python -m testbed simulate`` with its directory on
``PYTHONPATH``), so any earlier checkout can be compared; a case the other checkout's command
cannot run (a scheduler or an option it lacks) is said as ``lacking:`` with the command's last
error line.  Exit 0 when every log is the same, 1 when any differs or is lacking (each named).
``--quick`` runs four cases.

Usage: ``python -m benchmarks.simulator.same_logs --against CHECKOUT [--quick] [--json]``
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, emit, parser

HERE = REPO
SIMULABLE = ("fcfs", "easy", "conservative", "gang", "prime", "psched", "t3d", "afcfs", "lgfs")
OWNERS = "0 2 bsp --work 2\n0.1 1 bsp --work 3\nowner 0.5 1 1\n1 2 bsp --work 1\nowner 2 0 3\n"
SUCCESSORS = ("0 1 id=1 bsp --work 2\n0.5 1 id=2 after=1 bsp --work 1\n"
              "0 2 id=3 after=2 limit=0.5 bsp --work 1\n0.2 2 estimate=2 bsp --work 3\n"
              "0 1 id=4 limit=1 bsp --work 3\n0 1 id=5 after=4 bsp --work 1\n")
GENERATED = {
    "lublin.workload": ["lublin", "--jobs", "400", "--pes", "32", "--load", "0.8", "--seed", "3"],
    "lublin-busy.workload": ["lublin", "--jobs", "300", "--pes", "16", "--load", "1.2",
                             "--seed", "5"],
    "mix.workload": ["mix", "--jobs", "40", "--pes", "4", "--load", "0.9", "--seed", "2"],
    "lublin.swf": ["lublin", "--jobs", "300", "--pes", "64", "--format", "swf", "--seed", "7"],
}
PES = {"lublin.workload": 32, "lublin-busy.workload": 16, "mix.workload": 4, "lublin.swf": 64,
       "successors.workload": 2, "owners.workload": 2}


def cases(quick: bool) -> list[tuple[str, str, list[str]]]:
    """(scheduler, workload file name, options) of every case."""
    if quick:
        return [("easy", "lublin.workload", []), ("gang", "successors.workload", []),
                ("lgfs", "owners.workload", []),
                ("gang", "mix.workload", ["--mpl", "3", "--timeslice", "5"])]
    found = [(s, w, []) for s in SIMULABLE for w in (*GENERATED, "successors.workload")]
    found += [(s, "owners.workload", []) for s in ("afcfs", "lgfs")]
    found += [(s, "successors.workload", ["--owners", "0.2:1.0"]) for s in ("afcfs", "lgfs")]
    found += [("gang", "lublin.workload", ["--mpl", "3", "--timeslice", "50",
                                           "--switch-cost", "1"]),
              ("gang", "lublin.workload", ["--job-timeout", "100"]),
              ("psched", "lublin.workload", ["--balance", "100"]),
              ("easy", "lublin.swf", ["--estimates", "perfect"])]
    return found


def _testbed(checkout: Path) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    return [sys.executable, "-m", "testbed"], env


def workloads(directory: Path, names: set[str]) -> None:
    """Write the workloads ``names`` into ``directory`` (with this checkout's generators: both
    sides read the same files)."""
    command, env = _testbed(HERE)
    for name, args in GENERATED.items():
        if name not in names:
            continue
        subprocess.run([*command, "workload", *args, "--output", str(directory / name)],
                       check=True, env=env, cwd=HERE)
    (directory / "owners.workload").write_text(OWNERS)
    (directory / "successors.workload").write_text(SUCCESSORS)


def digest(run_dir: Path, workloads_dir: Path) -> str:
    """The digest of the log, without what differs by nature between two runs, and of the
    tables derived from it."""
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    for key in ("run_id", "wall_time"):
        first.pop(key, None)
    first["config"].pop("argv", None)
    text = "\n".join([json.dumps(first), *lines[1:]])
    text = text.replace(str(run_dir), "RUN").replace(str(workloads_dir), "WORKLOADS")
    tables = [(run_dir / name).read_bytes() if (run_dir / name).exists() else b"-"
              for name in ("jobs.csv", "summary.json")]
    return hashlib.sha256(b"\0".join([text.encode(), *tables])).hexdigest()[:16]


def simulate(checkout: Path, case: tuple[str, str, list[str]], workloads_dir: Path,
             run_dir: Path) -> str:
    """Simulate one case with ``checkout``'s ``testbed simulate``; the log's digest, or why
    there is none (``lacking:`` and the command's last error line)."""
    scheduler, name, options = case
    command, env = _testbed(checkout)
    done = subprocess.run([*command, "simulate", "--scheduler", scheduler, "--pes",
                           str(PES[name]), *options, "--out", str(run_dir),
                           str(workloads_dir / name)], capture_output=True, text=True, env=env,
                          cwd=checkout, timeout=600)
    if not (run_dir / "events.jsonl").exists():
        said = done.stderr.strip().splitlines()
        return f"lacking: {said[-1][:200] if said else f'exit {done.returncode}'}"
    return digest(run_dir, workloads_dir)


def compare(against: Path, quick: bool) -> list[dict[str, Any]]:
    """Every case simulated by both checkouts; one record each."""
    directory = Path(tempfile.mkdtemp(prefix="testbed-same-logs-"))
    try:
        todo = cases(quick)
        workloads(directory, {name for _, name, _ in todo})
        records = []
        for i, case in enumerate(todo):
            this = simulate(HERE, case, directory, directory / f"this-{i}")
            that = simulate(against, case, directory, directory / f"that-{i}")
            records.append({"scheduler": case[0], "workload": case[1],
                            "options": " ".join(case[2]), "this": this, "against": that,
                            "same": this == that})
            said = "same" if this == that else that if that.startswith("lacking:") else "DIFFERS"
            print(f"[{i + 1}/{len(todo)}] {case[0]} {case[1]} {' '.join(case[2])}: {said}",
                  file=sys.stderr)
        return records
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Compare the simulated logs of this checkout and ``--against``; exit 1 if any differs."""
    p = parser("benchmarks.simulator.same_logs", "simulated event logs: this checkout vs another",
               quick="four cases", json_help="print the records as JSON", out_help=None,
               markdown_help=None)
    p.add_argument("--against", type=Path, required=True, help="another checkout's root")
    args = p.parse_args(argv)
    if not (args.against / "testbed" / "__main__.py").is_file():
        print(f"same_logs: {args.against} is not a testbed checkout", file=sys.stderr)
        return 2
    records = compare(args.against.resolve(), args.quick)
    differing = [r for r in records if not r["same"]]
    if not emit([records], args.json, indent=1):
        print(f"{len(records) - len(differing)} of {len(records)} simulated logs the same as "
              f"{args.against}'s")
        for r in differing:
            print(f"  {'lacking' if r['against'].startswith('lacking:') else 'differs'}: "
                  f"{r['scheduler']} {r['workload']} {r['options']}: "
                  f"{r['this']} vs {r['against']}")
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
