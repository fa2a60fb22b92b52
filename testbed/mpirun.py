"""``testbed mpirun`` / ``testbed mpiexec`` in Python: kept light (no plotting or model
imports); the run library is imported only to run a job without a service.

A benchmark suite starts one for every run, so the ``testbed`` command normally runs the
compiled client instead (``testbed.service.native_client``), which hands a command to this
one only when it cannot take it itself (no service, ``--testbed-socket``, a stale build);
the first run here builds that client.
"""

from __future__ import annotations

import os
import sys

from testbed.exit_codes import EXIT_BAD_INPUT
from testbed.service import native_client
from testbed.service.client import NoService, follow, socket_path
from testbed.service.mpirun_args import parse_mpirun


def mpirun_main(argv: list[str], name: str) -> int:
    """Run one MPI program (``argv``: the words after ``name``, mpirun or mpiexec) through the
    service, or under a coordinator of its own when no service answers; the exit code."""
    native_client.link_quietly()
    try:
        req = parse_mpirun(argv, os.environ, os.getcwd())
    except ValueError as err:
        print(f"testbed {name}: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    note = req.note()
    if note:
        print(f"testbed {name}: {note}", file=sys.stderr)
    path = socket_path(req.socket)
    try:
        return follow(path, req, sys.stdout.buffer, sys.stderr.buffer)
    except NoService:
        print(f"testbed {name}: no testbed service at {path}; running the job under a "
              "coordinator of its own", file=sys.stderr, flush=True)
    from testbed import run

    os.environ.update(req.env)
    os.chdir(req.cwd)
    try:
        return run.exec_job(list(req.argv), req.ranks, run.Options(job_timeout=req.limit),
                            prefix=f"testbed {name}")
    except Exception as err:
        return run.exit_with(err, f"testbed {name}")
