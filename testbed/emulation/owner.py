"""A workstation owner's job (COW §2.1): a process that keeps one CPU busy.

The emulation executor starts one per owner visit, pinned to the owner's PE's CPU and carrying
the run's marker, and kills it when the visit ends; it stops by itself after ``SECONDS`` in case
nobody does (the run's sweep and watchdog catch it too).

Usage: ``python -m testbed.emulation.owner SECONDS``
"""

from __future__ import annotations

import sys
import time


def spin(seconds: float) -> int:
    """Busy the CPU for ``seconds`` (wall-clock s); returns how many loop rounds it made."""
    deadline = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < deadline:
        rounds += 1
    return rounds


def main(argv: list[str] | None = None) -> int:
    """Spin for the seconds given as the only argument."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m testbed.emulation.owner SECONDS", file=sys.stderr)
        return 2
    spin(float(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
