"""The run's watchdog: kills every process of the run once the coordinator is gone.

Started by the coordinator in a session of its own with a pipe on stdin.  When the pipe closes
(the coordinator ended, however it ended, SIGKILL included) it SIGKILLs every process carrying
the run's marker, stopped ones too, and removes the run's shim records and the MPI
shared-memory segments created during the run that no live process maps any more.

Usage: ``python -m testbed.watchdog RUN_ID``
"""

from __future__ import annotations

import signal
import sys
import time

from testbed.procs import kill_marked, orphan_segments, unlink_all
from testbed.shim import remove_run_records


def main(argv: list[str] | None = None) -> int:
    """Wait for EOF on stdin, then sweep the run named by the only argument."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m testbed.watchdog RUN_ID", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    started = time.time()
    while sys.stdin.buffer.read(4096):
        pass
    kill_marked(args[0])
    unlink_all(orphan_segments(since=started - 1.0))
    remove_run_records(args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
