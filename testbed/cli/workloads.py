"""``testbed workload``: write generated and imported workload files."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from testbed.run import UsageError
from testbed.workloads import lublin
from testbed.workloads.mix import MixParams, generate_mix
from testbed.workloads.swf import ImportOptions, SwfError, SwfJob, read_swf, to_workload


def write_text(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, output)

def cmd_mix(args: argparse.Namespace) -> int:
    """Write the THESIS §4.6 job mix to stdout or ``--output``."""
    params = MixParams(args.jobs, args.pes, args.load, args.seed, args.compress, args.work_min,
                       args.work_max, args.io_blocks)
    try:
        text = generate_mix(params)
    except ValueError as err:
        raise UsageError(str(err)) from None
    write_text(text, args.output)
    return 0

def cmd_lublin(args: argparse.Namespace) -> int:
    """Write a Lublin-Feitelson workload (as benchmark jobs, or as SWF)."""
    try:
        jobs = lublin.generate(args.jobs, args.pes, args.seed, args.load,
                               daily_cycle=not args.no_daily_cycle)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.format == "swf":
        cycle = "no daily cycle" if args.no_daily_cycle else "daily cycle"
        lines = ["; Version: 2.2", f"; Note: Lublin-Feitelson model, seed {args.seed}, "
                 f"load {args.load}, {cycle}; queue 1 = batch, 0 = interactive",
                 f"; MaxProcs: {args.pes}"]
        lines += [SwfJob(i, round(j.arrival), -1, round(j.runtime), j.size, -1, -1, j.size, -1,
                         -1, 1, -1, -1, -1, int(j.kind == "batch"), -1, -1, -1).line()
                  for i, j in enumerate(jobs, start=1)]
        write_text("\n".join(lines) + "\n", args.output)
        return 0
    text = lublin.workload_text(jobs, args.pes, args.seed, args.load, args.compress,
                                daily_cycle=not args.no_daily_cycle)
    write_text(text, args.output)
    return 0

def cmd_from_swf(args: argparse.Namespace) -> int:
    """Turn an SWF trace into a workload file of benchmark jobs."""
    if args.pes < 1 or args.compress <= 0:
        raise UsageError("--pes must be >= 1 and --compress > 0")
    try:
        _, jobs = read_swf(args.trace)
    except SwfError as err:
        raise UsageError(str(err)) from None
    options = ImportOptions(args.pes, args.compress, args.sizes, args.seed, args.granularity,
                            args.variance, args.pattern)
    text, skipped = to_workload(jobs, options, args.trace)
    if skipped:
        print(f"testbed: {skipped} of {len(jobs)} jobs skipped (no size or runtime)",
              file=sys.stderr)
    write_text(text, args.output)
    return 0

def setup_mix(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--pes", type=int, required=True)
    p.add_argument("--load", type=float, default=0.75, help="offered load")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--compress", type=float, default=100.0, help="time compression factor")
    p.add_argument("--work-min", type=float, default=10.0, help="seconds, before compression")
    p.add_argument("--work-max", type=float, default=14400.0, help="seconds, before compression")
    p.add_argument("--io-blocks", type=int, default=0, help="B for every job")
    p.add_argument("--output", "-o", type=Path, default=None)

def setup_lublin(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--pes", type=int, required=True)
    p.add_argument("--load", type=float, default=None, help="offered load (scales arrivals)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--compress", type=float, default=100.0, help="time compression factor")
    p.add_argument("--format", choices=("workload", "swf"), default="workload")
    p.add_argument("--no-daily-cycle", action="store_true",
                   help="the same arrival rate at every hour (as T3D's workload)")
    p.add_argument("--output", "-o", type=Path, default=None)

def setup_from_swf(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace")
    p.add_argument("--pes", type=int, required=True, help="PEs of the machine to run on")
    p.add_argument("--compress", type=float, default=100.0, help="time compression factor")
    p.add_argument("--sizes", choices=("cap", "scale"), default="cap",
                   help="cap sizes at the machine, or scale them by machine / largest job")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--granularity", type=float, default=None, help="fixed G (else drawn)")
    p.add_argument("--variance", type=float, default=None, help="fixed V (else drawn)")
    p.add_argument("--pattern", choices=("none", "nn", "aa"), default=None)
    p.add_argument("--output", "-o", type=Path, default=None)
