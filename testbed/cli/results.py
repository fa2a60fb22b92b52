"""``testbed report``, ``top`` and ``shim``: what a run left, read again."""

from __future__ import annotations

import argparse
from pathlib import Path

from testbed.emulation import shim
from testbed.emulation.mpi_info import detect_mpi
from testbed.events import read_events
from testbed.experiments.report import write_report as write_experiment_report
from testbed.results.batsim import write_batsim
from testbed.results.report import first_runs, format_table, run_dirs, write_results, write_swf
from testbed.results.top import follow
from testbed.results.trace import write_trace
from testbed.run import UsageError


def cmd_report(args: argparse.Namespace) -> int:
    """Re-derive results from the event logs of a run, compare or experiment directory and
    print them."""
    from testbed.results.plots import write_plots  # matplotlib: only the report needs it

    try:
        dirs = run_dirs(args.dir)
        summaries = {name: write_results(path) for name, path in dirs.items()}
    except (FileNotFoundError, NotADirectoryError, ValueError) as err:
        raise UsageError(str(err)) from None
    repeated = (args.dir / "experiment.json").exists()
    if repeated:
        try:
            tables = write_experiment_report(args.dir)
        except ValueError as err:
            raise UsageError(str(err)) from None
        firsts = first_runs(args.dir)
        if len(firsts) == len(dirs):
            tables = format_table({label: write_results(path) for label, path in firsts.items()})
        print(tables)
    else:
        print(format_table(summaries))
    logs = {name: read_events(path / "events.jsonl") for name, path in dirs.items()}
    for name, path in dirs.items():
        write_plots({name: logs[name]}, path)
        write_trace(path)
        if args.swf:
            write_swf(path)
        if args.batsim:
            write_batsim(path)
    if len(dirs) > 1:
        firsts = first_runs(args.dir) if repeated else dirs
        write_plots({name: read_events(path / "events.jsonl") for name, path in firsts.items()},
                    args.dir)
    extra = [name for name, wanted in (("jobs.swf", args.swf), ("batsim_jobs.csv", args.batsim))
             if wanted]
    print(f"figures, trace.json{''.join(', ' + e for e in extra)} written under {args.dir}")
    return 0

def cmd_top(args: argparse.Namespace) -> int:
    """Show a run's matrix, current row, job states and progress, live until it ends."""
    if not args.dir.is_dir():
        raise UsageError(f"{args.dir}: no such run directory")
    try:
        follow(args.dir, interval=args.interval, once=args.once)
    except KeyboardInterrupt:
        return 0
    return 0

def cmd_shim(args: argparse.Namespace) -> int:
    """Print the path of the spin-block shim library (building it first if needed)."""
    print(shim.library_path(detect_mpi(), rebuild=args.build))
    return 0

def setup_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path)
    p.add_argument("--swf", action="store_true", help="also export each run as jobs.swf")
    p.add_argument("--batsim", action="store_true",
                   help="also write each run's jobs in Batsim's jobs.csv columns "
                        "(batsim_jobs.csv, read by evalys)")

def setup_top(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="a run directory (running or finished)")
    p.add_argument("--once", action="store_true", help="print one frame and exit")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between frames")

def setup_shim(p: argparse.ArgumentParser) -> None:
    p.add_argument("--path", action="store_true", help="print the library's path (the default)")
    p.add_argument("--build", action="store_true", help="compile it again even if it exists")
