"""Run a Python script as this MPI rank, its stdout and stderr each going to a file of the rank's.

``python rank_logs.py DIR SCRIPT ARGS...`` sends this process's standard output to
``DIR/rank-R.out`` and its standard error to ``DIR/rank-R.err`` (``R``: the rank the MPI
launcher gave it, read from ``PMI_RANK`` (Hydra), ``OMPI_COMM_WORLD_RANK`` or ``PMIX_RANK``)
and then runs ``SCRIPT ARGS...`` as ``python SCRIPT ARGS...`` would, in this process, so that
the script and MPI see no difference but where their output goes.  A launcher merges its ranks'
output into one stream, where unittest's ``name ... ok`` lines of two ranks interleave; the
files keep each rank's lines whole.  The exit code is the script's.
"""

from __future__ import annotations

import os
import runpy
import sys

RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def launcher_rank() -> str:
    """The rank of this process as its MPI launcher set it in the environment."""
    for name in RANK_VARIABLES:
        if name in os.environ:
            return os.environ[name]
    raise SystemExit(f"rank_logs: none of {', '.join(RANK_VARIABLES)} is set: not an MPI rank")


def main() -> None:
    """Redirect the output to the rank's files and run the script (see the module's text)."""
    if len(sys.argv) < 3:
        raise SystemExit("usage: rank_logs.py DIR SCRIPT ARGS...")
    directory, script, *args = sys.argv[1:]
    rank = launcher_rank()
    for fd, suffix in ((1, "out"), (2, "err")):
        target = os.open(os.path.join(directory, f"rank-{rank}.{suffix}"),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
