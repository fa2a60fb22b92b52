"""The run library's exit codes, and the rule for a command that stands for one job.

0 success; 1 a job or run failed; 2 bad input (nothing run, no run directory made); 3 no
usable MPI (or the shim cannot be built); 4 the machine cannot provide what was asked (node
memory or swap without root or cgroups, node managers that cannot be started); 5 a file of
the run could not be written; 130 the run was interrupted (its partial results are kept and
say so).  Kept apart from ``testbed.run`` so that the light clients (``testbed mpirun``, the
service's protocol) share them without importing the run library.  Also how a process exits
on SIGTERM (``exit_on_sigterm``: 128 + the signal, as a shell reports it).
"""

from __future__ import annotations

import signal
import sys

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NO_MPI = 3
EXIT_UNAVAILABLE = 4
EXIT_WRITE_FAILED = 5
EXIT_INTERRUPTED = 130


def job_exit_code(status: str, code: int | None) -> int:
    """The exit code a command standing for one job exits with (``testbed exec``, ``mpirun``):
    the job's own exit code if it ended ``done`` or with a positive code, otherwise 1 (killed,
    timed out, failed to start, a rank lost to a signal)."""
    if status == "done" or (code or 0) > 0:
        return code or 0
    return EXIT_FAILED


def run_exit_code(status: str) -> int:
    """The exit code of a run that ended ``status``: 130 interrupted, 1 error (a simulation
    that stalled), else 0 (a job's failure is in the run's results, not its exit code)."""
    if status == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_FAILED if status == "error" else 0


def exit_on_sigterm() -> None:
    """Make SIGTERM exit this process as ``sys.exit(143)`` does, so ``with`` blocks and
    ``finally`` clauses (temporary directories, stopped runs) are undone; Python's default
    ends the process on the spot.  For a command's main, a rank program and pool workers."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
