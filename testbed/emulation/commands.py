"""Whether a job's command can be run the way its ranks will be started.

The node manager starts ``mpiexec`` in the job's working directory (the coordinator's when the
job names none), and hydra's proxies start each rank with ``execvp`` there: a command with a
slash is a path relative to that directory, a command without one is looked up on ``PATH``
only (never in the working directory unless ``PATH`` names it).  ``command_problem`` mirrors
that; the node manager asks it before each launch, and ``check_commands`` asks it of a whole
workload before an emulated run or a service submission starts anything.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping

from testbed.machine import Machine
from testbed.workloads.files import JobSpec, WorkloadError


def command_problem(argv0: str, env: Mapping[str, str], cwd: str) -> str | None:
    """Why ``argv0`` cannot be run by a rank started in directory ``cwd`` with environment
    ``env`` (``PATH`` from it, else the system's default, as ``execvp``); None if it can."""
    if os.sep not in argv0:
        if shutil.which(argv0, path=env.get("PATH", os.defpath)) is None:
            return f"no such program {argv0!r} on PATH"
        return None
    path = os.path.join(cwd, argv0)
    where = "" if os.path.isabs(argv0) else f" (relative to {cwd})"
    if not os.path.exists(path):
        return f"no such program {argv0!r}{where}"
    if not os.path.isfile(path):
        return f"{argv0!r}{where} is not a file"
    if not os.access(path, os.X_OK):
        return f"{argv0!r}{where} is not executable"
    return None


def check_commands(path: str, jobs: Iterable[JobSpec], env: Mapping[str, str],
                   cwd: str) -> None:
    """Raise ``WorkloadError`` (``path``, line, field ``command``) for the first job, in file
    order, whose command ``command_problem`` refuses; a job without a ``cwd`` of its own is
    launched in ``cwd``."""
    for job in sorted(jobs, key=lambda j: j.line):
        problem = command_problem(job.argv[0], env, job.cwd or cwd)
        if problem is not None:
            raise WorkloadError(path, job.line, "command", problem)


def checks_commands_here(machine: Machine) -> bool:
    """True when ``machine``'s jobs are launched on this host, so that their commands can be
    checked here: one host, or hosts emulated on it.  On real hosts a job's first rank's host
    launches it, and what that host holds is its own."""
    return not machine.hosts or machine.emulated_hosts
