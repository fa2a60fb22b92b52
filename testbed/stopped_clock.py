"""A rank's own clock that stops while the testbed keeps the rank stopped: monotonic time
minus the ``stopped_s`` its node manager adds to the rank's shared record.

A rank reads only three fields of its record, so they are read here at their offsets in
``native/shim_record.h`` instead of through cffi (``testbed.shim_record``): a rank
imports this before its work starts, and parsing the header with cffi cost every rank about
35 ms of launch.  ``tests/test_stopped_clock.py`` checks these offsets and constants against
the header as cffi lays it out.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import time

RECORD_PREFIX = "/dev/shm/testbed-"
TB_MAGIC = 1413632840
TB_VERSION = 8
RECORD_SIZE = 704
IDENTITY = struct.Struct("=II")     # magic, version at offset 0
STOPPED_OFFSET = 192                # the double stopped_s


def record_path(run_id: str, job: str, rank: int) -> str:
    """Where the record of ``rank`` of ``job`` in run ``run_id`` lives."""
    return f"{RECORD_PREFIX}{run_id}-{job}-{rank}"


class StoppedClock:
    """This process's own view of its record: wall time minus time stopped by the testbed.

    A rank finds its record from ``TESTBED_RUN``, ``TESTBED_JOB`` and its MPI rank; outside
    the testbed (no record) no time is ever stopped.
    """

    def __init__(self, rank: int) -> None:
        run, job = os.environ.get("TESTBED_RUN"), os.environ.get("TESTBED_JOB")
        self._mapping: mmap.mmap | None = None
        self._doubles: memoryview | None = None
        if run and job:
            with contextlib.suppress(OSError, ValueError):
                fd = os.open(record_path(run, job, rank), os.O_RDONLY | os.O_CLOEXEC)
                try:
                    mapping = mmap.mmap(fd, RECORD_SIZE, prot=mmap.PROT_READ)
                finally:
                    os.close(fd)
                if IDENTITY.unpack_from(mapping) == (TB_MAGIC, TB_VERSION):
                    self._mapping = mapping
                    # An aligned 8-byte load, as the node manager's store is.
                    self._doubles = memoryview(mapping).cast("d")
                else:
                    mapping.close()

    def stopped(self) -> float:
        """Seconds this process has spent stopped by the testbed so far (0 outside it)."""
        return 0.0 if self._doubles is None else self._doubles[STOPPED_OFFSET // 8]

    def now(self) -> float:
        """Seconds (monotonic) during which this process was not stopped by the testbed."""
        doubles = self._doubles
        if doubles is None:
            return time.monotonic()
        index = STOPPED_OFFSET // 8
        while True:
            stopped = doubles[index]
            t = time.monotonic()
            if doubles[index] == stopped:
                return t - stopped

    def close(self) -> None:
        """Unmap the record."""
        if self._doubles is not None:
            self._doubles.release()
            self._doubles = None
        if self._mapping is not None:
            self._mapping.close()
            self._mapping = None
