"""The service's client commands: ``submit``, ``queue``, ``cancel``, ``suspend``, ``resume``,
``class``, ``migrate`` and ``stop``; ``client`` builds the compiled mpirun client."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.run import UsageError
from testbed.service import native_client
from testbed.service.client import NoService, socket_path
from testbed.service.client import request as client_request
from testbed.service.protocol import (
    Cancel,
    MigrateJob,
    Queue,
    Request,
    Resume,
    SetClass,
    Shutdown,
    SubmitWorkload,
    Suspend,
)


class ServiceUnavailable(Exception):
    """No service answers, or it went away: reported as one line, exit code 1."""

def _client_request(args: argparse.Namespace, message: Request) -> dict[str, Any]:
    path = socket_path(args.socket)
    try:
        reply = client_request(path, message)
    except (NoService, ConnectionError) as err:
        raise ServiceUnavailable(str(err)) from None
    if reply["type"] == "error":
        raise UsageError(reply["message"])
    return reply

def cmd_submit(args: argparse.Namespace) -> int:
    """Submit a workload file to the service (arrivals relative to now)."""
    try:
        lines = tuple(Path(args.workload).read_text().splitlines())
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{args.workload}: cannot read: {err}") from None
    reply = _client_request(args, SubmitWorkload(tuple(s for s in lines if s.strip()),
                                                 str(Path(args.workload).resolve())))
    for row in reply["jobs"]:
        print(f"{row['job']}  line {row['line']}  arrives in {row['arrival']:g} s")
    return 0

def cmd_queue(args: argparse.Namespace) -> int:
    """List the service's jobs (like squeue)."""
    rows = _client_request(args, Queue())["jobs"]
    header = ["JOB", "USER", "PES", "STATE", "WAIT", "RUNTIME", "CLASS", "ROW", "COMMAND"]
    cells = [header] + [[r["job"], r["user"], str(r["pes"]), r["state"],
                         "-" if r["wait"] is None else f"{r['wait']:.1f}",
                         "-" if r["runtime"] is None else f"{r['runtime']:.1f}",
                         r["class"] or "-", "-" if r["row"] is None else str(r["row"]),
                         r["command"]] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0

def job_command(kind: type[Cancel] | type[Suspend] | type[Resume], doc: str) -> Callable[
        [argparse.Namespace], int]:
    """The subcommand that sends ``kind(JOB)`` to the service; ``doc`` is its help."""
    def command(args: argparse.Namespace) -> int:
        _client_request(args, kind(args.job))
        return 0
    command.__doc__ = doc
    return command

def cmd_class(args: argparse.Namespace) -> int:
    """Move a job of yours to another class (the t3d scheduler; gangster)."""
    _client_request(args, SetClass(args.job, args.job_class))
    return 0

def cmd_migrate(args: argparse.Namespace) -> int:
    """Move a job of yours to other PEs (T3E psched's migrate; gang-family schedulers)."""
    _client_request(args, MigrateJob(args.job, tuple(args.pes)))
    return 0

def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the service: what still runs is killed, the run directory is completed."""
    _client_request(args, Shutdown())
    return 0

def setup_client(p: argparse.ArgumentParser) -> None:
    p.add_argument("--socket", default=None, help="the service's socket (as for serve)")

def setup_submit(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload")
    setup_client(p)

def setup_job(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="a job id, as testbed queue shows it (j12)")
    setup_client(p)

def setup_class(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="a job id, as testbed queue shows it (j12)")
    p.add_argument("job_class", metavar="CLASS", help="a class of the t3d class table")
    setup_client(p)

def setup_migrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="a job id, as testbed queue shows it (j12)")
    p.add_argument("pes", metavar="PE", type=int, nargs="+", help="the PE of each rank, in order")
    setup_client(p)


def cmd_client(args: argparse.Namespace) -> int:
    """Build the compiled mpirun client and link it beside the testbed command; print its path.

    ``testbed mpirun`` builds it on first need anyway; this does it ahead (set-up)."""
    directory = native_client.command_dir()
    print(native_client.link(directory) if directory else native_client.client_path())
    return 0


def setup_nothing(p: argparse.ArgumentParser) -> None:
    """A command without options."""
