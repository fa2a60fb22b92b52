"""The run's watchdog: kills every process of the run once the coordinator is gone.

Started by the coordinator in a session of its own with a pipe on stdin.  When the pipe closes
(the coordinator ended, however it ended, SIGKILL included) it SIGKILLs every process carrying
the run's marker, stopped ones too, and removes the run's shim records, its launches'
temporary directories and the files their launchers left in /tmp, and the MPI shared-memory
segments created during the run that no live process maps any more.

It also removes the run's node memory cgroups and swap file when named; with
``--cgroup-home`` (v2 below a delegated cgroup) it moves itself and the coordinator's leaf back
to that cgroup first.

Usage: ``python -m testbed.emulation.watchdog RUN_ID [--cgroup DIR [--cgroup-home DIR]]
[--swap FILE]``
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from testbed.emulation.launch_tmp import remove_run
from testbed.emulation.memory import remove_cgroup, remove_swap
from testbed.emulation.procs import kill_marked, orphan_segments, unlink_all
from testbed.shim_record import remove_run_records


def main(argv: list[str] | None = None) -> int:
    """Wait for EOF on stdin, then sweep the run and remove what it set up."""
    p = argparse.ArgumentParser(prog="python -m testbed.emulation.watchdog")
    p.add_argument("run_id")
    p.add_argument("--cgroup", default=None)
    p.add_argument("--cgroup-home", default=None)
    p.add_argument("--swap", default=None)
    args = p.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    started = time.time()
    while sys.stdin.buffer.read(4096):
        pass
    kill_marked(args.run_id)
    remove_run(args.run_id)
    unlink_all(orphan_segments(since=started - 1.0))
    remove_run_records(args.run_id)
    if args.cgroup:
        remove_cgroup(args.cgroup, args.cgroup_home)
    if args.swap:
        try:
            remove_swap(args.swap)
        except OSError as err:
            print(f"testbed watchdog: {err}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
