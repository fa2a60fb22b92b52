"""``testbed run``, ``simulate``, ``exec`` and ``serve``: one workload (or one command, or
the service) run by the run library."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from testbed import run
from testbed.cli.options import options_of, owner_options, policy_options, scheduler_options
from testbed.events import read_events
from testbed.policies import POLICIES
from testbed.results.report import format_table
from testbed.run import EXIT_FAILED, EXIT_INTERRUPTED, UsageError
from testbed.service.client import socket_path
from testbed.service.server import ServiceError, listen
from testbed.workloads.files import Workload


def cmd_run(args: argparse.Namespace) -> int:
    """Run a workload under one scheduler and print its table."""
    options = options_of(args)
    machine = run.check_emulation(options, [args.scheduler])
    workload = run.load(args.workload, args.timeslice, machine)
    run.check_owners(options, [args.scheduler], workload)
    run_dir = run.new_run_dir(args.out, args.scheduler)
    viewer = None
    if args.live:
        viewer = subprocess.Popen([sys.executable, "-m", "testbed.cli", "top", str(run_dir)])
    try:
        status, summary = run.emulate(workload, options, machine, run_dir)
    finally:
        if viewer is not None:
            try:
                viewer.wait(timeout=5)
            except subprocess.TimeoutExpired:
                viewer.terminate()
                viewer.wait()
    print(format_table({args.scheduler: summary}))
    print(f"run directory: {run_dir}")
    for line in run.hang_lines(read_events(run_dir / "events.jsonl")):
        print(f"testbed: {line}", file=sys.stderr)
    return EXIT_INTERRUPTED if status == "interrupted" else 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulate a workload under one scheduler in virtual time and print its table."""
    options = options_of(args)
    pes = run.simulated_pes(options)
    run.check_simulation(options, [args.scheduler], pes)
    workload = run.simulated_workload(args.workload, options, pes)
    run.check_owners(options, [args.scheduler], workload)
    run_dir = run.new_run_dir(args.out, f"sim-{args.scheduler}")
    status = run.simulate(workload, options, pes, run_dir)
    if status == "error":
        return EXIT_FAILED
    # run.simulate has written the results: the table is read back, not derived again
    summary = json.loads((run_dir / "summary.json").read_text())
    print(format_table({args.scheduler: summary}))
    print(f"run directory: {run_dir}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the coordinator as a service: jobs come from testbed mpirun/submit until stopped."""
    options = options_of(args)
    machine = run.check_emulation(options, [args.scheduler])
    path = args.socket or socket_path()
    try:
        server = listen(path)
    except (ServiceError, OSError) as err:
        raise UsageError(str(err)) from None
    try:
        run_dir = run.new_run_dir(args.out, f"serve-{args.scheduler}")
    except UsageError:
        server.close()
        path.unlink(missing_ok=True)
        raise
    print(f"testbed: serving {args.scheduler} on {machine.pes} PEs at {path}; "
          f"run directory {run_dir}", file=sys.stderr, flush=True)
    _, summary = run.emulate(Workload("<service>", [], {}), options, machine, run_dir,
                             (server, path))
    print(format_table({args.scheduler: summary}))
    print(f"run directory: {run_dir}")
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    """Run one MPI command as a job (like the T3D mppexec) and pass its output and exit code on."""
    return run.exec_job(args.command, args.n, options_of(args), args.out)


def setup_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload")
    p.add_argument("--scheduler", default="gang", help=f"one of {', '.join(sorted(POLICIES))}")
    p.add_argument("--live", action="store_true", help="show the live view while it runs")
    owner_options(p)
    scheduler_options(p)

def setup_simulate(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", help="a workload file (every job with a work) or an SWF trace")
    p.add_argument("--scheduler", default="gang",
                   help="one of " + ", ".join(sorted(n for n, c in POLICIES.items()
                                                     if c.simulable)))
    p.add_argument("--switch-cost", type=float, default=0.0, metavar="S",
                   help="seconds a job loses each time it is continued (default 0)")
    p.add_argument("--launch-cost", type=float, default=0.0, metavar="S",
                   help="seconds each job needs beyond its work to start (default 0)")
    p.add_argument("--uncompress", action="store_true",
                   help="undo the workload's time compression (compress= in its header)")
    owner_options(p)
    policy_options(p)

def setup_exec(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, required=True, help="number of ranks")
    p.add_argument("--scheduler", default="gang")
    scheduler_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")

def setup_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scheduler", default="gang", help=f"one of {', '.join(sorted(POLICIES))}")
    p.add_argument("--socket", type=Path, default=None,
                   help="the socket to listen on (default: TESTBED_SOCKET, else "
                        "$XDG_RUNTIME_DIR/testbed/coordinator.sock or "
                        "/tmp/testbed-UID/coordinator.sock)")
    scheduler_options(p)
