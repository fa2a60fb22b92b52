"""The ``testbed`` command: a registry of subcommands, each a thin argparse adapter over the
run library (``testbed.run``) or the service's client.  Exit codes are the run library's."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from testbed import __version__, run
from testbed.cli.experiments import (
    cmd_compare,
    cmd_experiment_block,
    cmd_experiment_cancel,
    cmd_experiment_report,
    cmd_experiment_run,
    cmd_experiment_status,
    setup_compare,
    setup_experiment_block,
    setup_experiment_dir,
    setup_experiment_report,
    setup_experiment_run,
    setup_experiment_status,
)
from testbed.cli.results import cmd_report, cmd_shim, cmd_top, setup_report, setup_shim, setup_top
from testbed.cli.runs import (
    cmd_exec,
    cmd_run,
    cmd_serve,
    cmd_simulate,
    setup_exec,
    setup_run,
    setup_serve,
    setup_simulate,
)
from testbed.cli.service import (
    ServiceUnavailable,
    cmd_class,
    cmd_client,
    cmd_migrate,
    cmd_queue,
    cmd_stop,
    cmd_submit,
    job_command,
    setup_class,
    setup_client,
    setup_job,
    setup_migrate,
    setup_nothing,
    setup_submit,
)
from testbed.cli.workloads import (
    cmd_from_swf,
    cmd_lublin,
    cmd_mix,
    setup_from_swf,
    setup_lublin,
    setup_mix,
)
from testbed.exit_codes import EXIT_FAILED
from testbed.service.protocol import Cancel, Resume, Suspend

Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
COMMANDS: dict[str, Command] = {
    "run": (setup_run, cmd_run),
    "simulate": (setup_simulate, cmd_simulate),
    "serve": (setup_serve, cmd_serve),
    "submit": (setup_submit, cmd_submit),
    "queue": (setup_client, cmd_queue),
    "cancel": (setup_job, job_command(Cancel, "Cancel a job of yours (root: any)")),
    "suspend": (setup_job, job_command(Suspend, "Hold a job of yours stopped (gangster)")),
    "resume": (setup_job, job_command(Resume, "Let a suspended job run again")),
    "class": (setup_class, cmd_class),
    "migrate": (setup_migrate, cmd_migrate),
    "stop": (setup_client, cmd_stop),
    "compare": (setup_compare, cmd_compare),
    "report": (setup_report, cmd_report),
    "exec": (setup_exec, cmd_exec),
    "shim": (setup_shim, cmd_shim),
    "client": (setup_nothing, cmd_client),
    "top": (setup_top, cmd_top),
}
EXPERIMENT_COMMANDS: dict[str, Command] = {
    "run": (setup_experiment_run, cmd_experiment_run),
    "report": (setup_experiment_report, cmd_experiment_report),
    "status": (setup_experiment_status, cmd_experiment_status),
    "cancel": (setup_experiment_dir, cmd_experiment_cancel),
    "block": (setup_experiment_block, cmd_experiment_block),
}
WORKLOAD_COMMANDS: dict[str, Command] = {
    "mix": (setup_mix, cmd_mix),
    "lublin": (setup_lublin, cmd_lublin),
    "from-swf": (setup_from_swf, cmd_from_swf),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``testbed`` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="testbed", description="MPI scheduling testbed")
    parser.add_argument("--version", action="version", version=f"testbed {__version__}")
    sub = parser.add_subparsers(dest="command_name", required=True)
    for name, (setup, handler) in COMMANDS.items():
        p = sub.add_parser(name, help=(handler.__doc__ or "").splitlines()[0])
        setup(p)
        p.set_defaults(handler=handler)
    for group, helptext, commands in (
            ("workload", "generate workload files", WORKLOAD_COMMANDS),
            ("experiment", "run experiment files and report on them", EXPERIMENT_COMMANDS)):
        top = sub.add_parser(group, help=helptext)
        groupsub = top.add_subparsers(dest=f"{group}_command", required=True)
        for name, (setup, handler) in commands.items():
            p = groupsub.add_parser(name, help=(handler.__doc__ or "").splitlines()[0])
            setup(p)
            p.set_defaults(handler=handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``testbed`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    if getattr(args, "command", None) and args.command[:1] == ["--"]:
        args.command = args.command[1:]
    try:
        return args.handler(args)
    except ServiceUnavailable as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as err:
        return run.exit_with(err, "testbed")
