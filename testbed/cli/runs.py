"""``testbed run``, ``simulate``, ``exec`` and ``serve``: one workload (or one command, or
the service) run by the run library."""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from testbed import run
from testbed.cli.options import (
    options_of,
    owner_options,
    policy_options,
    scheduler_choice,
    scheduler_options,
    simulator_options,
)
from testbed.policies import POLICIES
from testbed.results.report import format_table
from testbed.run import UsageError
from testbed.service.client import socket_path
from testbed.service.server import ServiceError, listen
from testbed.workloads.files import Workload


def cmd_run(args: argparse.Namespace) -> int:
    """Run a workload under one scheduler and print its table."""
    prepared = run.prepare(options_of(args), args.workload)
    out = run.new_run_dir(args.out, prepared.label) if args.live else args.out
    with _live_view(out) if args.live else contextlib.nullcontext():
        result = run.execute(prepared, out)
    return _print_result(args.scheduler, result)


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulate a workload under one scheduler in virtual time and print its table."""
    result = run.execute(run.prepare(options_of(args, executor="simulation"), args.workload),
                         args.out)
    return _print_result(args.scheduler, result, hangs=False)


def _print_result(scheduler: str, result: run.Result, hangs: bool = True) -> int:
    """Print a run's table under ``scheduler``, its directory and (with ``hangs``) the jobs
    found hung; its exit code."""
    if result.summary is not None:
        print(format_table({scheduler: result.summary}))
        print(f"run directory: {result.run_dir}")
    for line in result.hangs() if hangs else []:
        print(f"testbed: {line}", file=sys.stderr)
    return result.exit_code


@contextlib.contextmanager
def _live_view(run_dir: Path) -> Iterator[None]:
    """``testbed top`` on ``run_dir`` while the body runs (given 5 s to see the end)."""
    viewer = subprocess.Popen([sys.executable, "-m", "testbed.cli", "top", str(run_dir)])
    try:
        yield
    finally:
        try:
            viewer.wait(timeout=5)
        except subprocess.TimeoutExpired:
            viewer.terminate()
            viewer.wait()


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the coordinator as a service: jobs come from testbed mpirun/submit until stopped."""
    prepared = run.prepare(options_of(args), Workload("<service>", [], {}))
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
    print(f"testbed: serving {args.scheduler} on {prepared.pes} PEs at {path}; "
          f"run directory {run_dir}", file=sys.stderr, flush=True)
    _print_result(args.scheduler, run.execute(prepared, run_dir, serve=(server, path)),
                  hangs=False)
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    """Run one MPI command as a job (like the T3D mppexec) and pass its output and exit code on."""
    return run.exec_job(args.command, args.n, options_of(args), args.out)


def setup_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload")
    scheduler_choice(p)
    p.add_argument("--live", action="store_true", help="show the live view while it runs")
    owner_options(p)
    scheduler_options(p)

def setup_simulate(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", help="a workload file (every job with a work) or an SWF trace")
    scheduler_choice(p, sorted(n for n, c in POLICIES.items() if c.simulable))
    simulator_options(p)
    owner_options(p)
    policy_options(p)

def setup_exec(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, required=True, help="number of ranks")
    scheduler_choice(p)
    scheduler_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")

def setup_serve(p: argparse.ArgumentParser) -> None:
    scheduler_choice(p)
    p.add_argument("--socket", type=Path, default=None,
                   help="the socket to listen on (default: TESTBED_SOCKET, else "
                        "$XDG_RUNTIME_DIR/testbed/coordinator.sock or "
                        "/tmp/testbed-UID/coordinator.sock)")
    scheduler_options(p)
