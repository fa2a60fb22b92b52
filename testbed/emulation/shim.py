"""The spin-block shim: building the preload library, and the node manager's socket for the
ranks' block and unblock events.

The library (``testbed/native/shim.c``; ``doorbell.c``: how blocked ranks sleep and are
woken; ``arrival.c``: how the ranks of a communicator meet at a barrier) is compiled
with the ``mpicc`` of the MPI that mpi4py loads, once per MPI library and version of the
sources and headers (see ``testbed.emulation.build``).
``scripts/demo`` and ``scripts/test`` build it during set-up; any other use builds it on first
need.  The records the shim and the node manager share are ``testbed.shim_record``.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from testbed.emulation import build
from testbed.emulation.mpi_info import MpiInfo
from testbed.shim_record import EVENT, HEADER

SOURCES = [build.NATIVE / name
           for name in ("shim.c", "doorbell.c", "arrival.c", "activity.c", "polled.c")]
HEADERS = [HEADER, *(build.NATIVE / name for name in ("doorbell.h", "arrival.h", "activity.h"))]


class ShimBuildError(RuntimeError):
    """The shim could not be compiled; the message carries the compiler's output."""


def mpicc(mpi: MpiInfo) -> str:
    """The MPI C compiler wrapper of ``mpi`` (``MPICC`` overrides)."""
    for candidate in (os.environ.get("MPICC", ""), str(Path(mpi.mpiexec).with_name("mpicc")),
                      shutil.which("mpicc") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise ShimBuildError("no mpicc found beside mpiexec or on PATH (set MPICC)")


def library_path(mpi: MpiInfo, rebuild: bool = False) -> Path:
    """The shim library for ``mpi``, compiled first if needed (or if ``rebuild``)."""
    try:
        headers = "\0".join(h.read_text() for h in HEADERS)
        return build.library("testbed_shim", SOURCES,
                             [mpicc(mpi), "-O2", "-fPIC", "-shared", "-Wall"],
                             depends=f"{mpi.library}\0{mpi.version}\0{headers}",
                             rebuild=rebuild)
    except build.BuildError as err:
        raise ShimBuildError(str(err)) from None


class EventSocket:
    """A node manager's datagram socket (abstract namespace) for block/unblock events."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK
                                  | socket.SOCK_CLOEXEC)
        self.sock.bind("\0" + name)

    def fileno(self) -> int:
        """The socket's descriptor, for a selector."""
        return self.sock.fileno()

    def read(self) -> list[tuple[int, bool, int]]:
        """Every pending event as (record id, blocked, sequence number)."""
        events = []
        while True:
            try:
                data = self.sock.recv(64)
            except BlockingIOError:
                return events
            if len(data) == EVENT.size:
                record_id, blocked, seq = EVENT.unpack(data)
                events.append((record_id, bool(blocked), seq))

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()
