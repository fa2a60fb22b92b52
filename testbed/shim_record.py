"""The shim's shared records, through cffi: one per rank, ``/dev/shm/testbed-RUN-JOB-RANK``
(mode 0600), created before launch and removed after the job by its node manager.

The layout is the C header ``native/shim_record.h``, which the shim (C) includes and
cffi reads here, so the two cannot drift apart.  A neutral module: the node manager writes the
records, the shim fills them in, and the benchmark's ranks read their own with
``testbed.stopped_clock``, which reads the few fields it needs without cffi.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from pathlib import Path

import cffi

from testbed import native, stopped_clock
from testbed.hang import Activity
from testbed.policies.spin import Counters, Spin
from testbed.stopped_clock import RECORD_PREFIX
from testbed.stopped_clock import record_path as record_path

HEADER = native.DIR / "shim_record.h"

ffi = cffi.FFI()
ffi.cdef(HEADER.read_text())
RECORD_SIZE = ffi.sizeof("struct tb_record")
EVENT = struct.Struct("=IIQ")
assert EVENT.size == ffi.sizeof("struct tb_event")
assert ffi.offsetof("struct tb_record", "doorbell") % 64 == 0   # a cache line of its own
lib = ffi.dlopen(None)
# stopped_clock reads a rank's record without cffi, from its own copy of the layout.
LAYOUT = (lib.TB_MAGIC, lib.TB_VERSION, RECORD_SIZE, ffi.offsetof("struct tb_record", "stopped_s"))
assert LAYOUT == (stopped_clock.TB_MAGIC, stopped_clock.TB_VERSION, stopped_clock.RECORD_SIZE,
                  stopped_clock.STOPPED_OFFSET)
SPIN_MODES = {"forever": lib.TB_SPIN_FOREVER, "fixed": lib.TB_SPIN_FIXED,
              "adaptive": lib.TB_SPIN_ADAPTIVE}


class Record:
    """One rank's shared record, mapped into this process."""

    def __init__(self, path: str, mapping: mmap.mmap) -> None:
        self.path = path
        self._mapping = mapping
        self._buffer = ffi.from_buffer(mapping)
        self.c = ffi.cast("struct tb_record *", self._buffer)

    @classmethod
    def create(cls, path: str, record_id: int, job: str, rank: int, nm_socket: str,
               spin: Spin, native_collectives: bool = False) -> Record:
        """Create the record file (mode 0600, must not exist) and fill in the settings.

        ``native_collectives`` must be the same for every rank of a job (the shim then makes
        every collective as the blocking call, else as its nonblocking form and a wait)."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, RECORD_SIZE)
            record = cls(path, mmap.mmap(fd, RECORD_SIZE))
        finally:
            os.close(fd)
        c = record.c
        c.id, c.rank, c.version = record_id, rank, lib.TB_VERSION
        for target, text in ((c.nm_socket, nm_socket), (c.job, job)):
            encoded = text.encode()[: len(target) - 1]
            ffi.memmove(target, encoded, len(encoded))
        record.set_spin(spin)
        c.native_collectives = int(native_collectives)
        c.magic = lib.TB_MAGIC
        return record

    def set_spin(self, spin: Spin) -> None:
        """Set how this rank's waits spin."""
        self.c.spin_mode = SPIN_MODES[spin.mode]
        self.c.spin_fixed_s = spin.fixed_s
        self.c.spin_max_s = spin.max_s
        self.c.spin_min_s = spin.min_s

    def add_stopped(self, seconds: float) -> None:
        """Add ``seconds`` the process spent stopped; call it before continuing the process,
        so the shim never sees the process running with the stop unaccounted."""
        self.c.stopped_s += seconds

    def set_coscheduled(self, flag: bool) -> None:
        """Say whether the rank is scheduled coscheduled (its waits count as C_CS/T_CS)."""
        self.c.coscheduled = int(flag)

    def counters(self) -> Counters:
        """A snapshot of the counters."""
        c = self.c
        return Counters(c.pid, bool(c.attached), c.c_cs, c.c_dc, c.t_cs, c.t_dc,
                        c.max_nonblock_s, bool(c.blocked), c.block_seq, c.blocks, c.blocked_s,
                        c.cpu_s, c.spin_s, c.stopped_s, c.wakes_rung, c.wakes_timed,
                        c.blocked_cpu_s, c.meetings, c.drains)

    def activity(self) -> Activity | None:
        """What the rank is doing in MPI now (``Activity``: calls returned, threads in a call,
        the call and on whom it waits); None while no shim has attached to the record."""
        c = self.c
        if not c.attached:
            return None
        return Activity(c.calls_done, c.in_calls, c.polling, c.waits_on,
                        ffi.string(c.call, len(c.call)).decode(errors="replace"),
                        bool(c.blocked))

    def close(self) -> None:
        """Unmap (the file stays)."""
        ffi.release(self._buffer)
        self._mapping.close()

    def remove(self) -> None:
        """Unmap and delete the file."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def remove_run_records(run_id: str) -> None:
    """Delete every record of a run (after its processes are gone)."""
    prefix = f"{Path(RECORD_PREFIX).name}{run_id}-"
    for name in os.listdir("/dev/shm"):
        if name.startswith(prefix):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"/dev/shm/{name}")
