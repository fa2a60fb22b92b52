"""The spin-block shim: building the preload library, and the node manager's socket for the
ranks' block and unblock events.

The library (``native/shim.c``; ``doorbell.c``: how blocked ranks sleep and are
woken; ``arrival.c``: how the ranks of a communicator meet at a barrier) is compiled
with the ``mpicc`` of the MPI that mpi4py loads, once per MPI library and version of the
sources and headers (see ``testbed.emulation.build``).  One source serves every MPI: as
mpiP and Caliper configure their PMPI wrappers, the build first checks what the installed
``mpi.h`` declares (``features``: the large-count ``_c`` forms, partitioned communication,
whether ``MPI_Pready_list`` takes a ``const`` array, and ULFM's ``MPIX_Comm_is_revoked``) and
compiles only the wrappers it has, with implicit declarations as errors.
``scripts/demo`` and ``scripts/test`` build it during set-up; any other use builds it on first
need.  The records the shim and the node manager share are ``testbed.shim_record``.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
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


def compiler_env(compiler: str) -> dict[str, str]:
    """The environment to run ``compiler`` in: ours, plus ``I_MPI_ROOT`` for an Intel MPI
    ``mpicc`` from PyPI, whose install directory is left unsubstituted unless it is set."""
    env = dict(os.environ)
    if "I_MPI_ROOT" not in env:
        with open(compiler, "rb") as f:
            intel = b"I_MPI_" in f.read(65536)
        prefix = Path(compiler).resolve().parent.parent
        if intel and (prefix / "include" / "mpi.h").exists():
            env["I_MPI_ROOT"] = str(prefix)
    return env


def _large_count_calls() -> list[str]:
    """The ``PMPI_*_c`` functions the shim's large-count wrappers call (``shim.c``'s
    ``WRAPPERS`` and ``polled.c``'s ``POLLED`` forms)."""
    wrapped = re.findall(r"PMPI_(\w+)##S", (build.NATIVE / "shim.c").read_text())
    polled = re.findall(r"^POLLED\((\w+)_c,", (build.NATIVE / "polled.c").read_text(), re.M)
    return sorted({f"PMPI_{name}_c" for name in [*wrapped, *polled]})


def _probes() -> dict[str, str]:
    """Each feature's probe: C that compiles (syntax only) exactly when ``mpi.h`` has it."""
    large = ", ".join(f"(void (*)(void)){name}" for name in _large_count_calls())
    return {
        "TB_HAVE_LARGE_COUNT": f"void (*tb_probe[])(void) = {{{large}}};",
        "TB_HAVE_PARTITIONED": "void (*tb_probe[])(void) = {(void (*)(void))PMPI_Pready, "
                               "(void (*)(void))PMPI_Pready_range, "
                               "(void (*)(void))PMPI_Pready_list};",
        "TB_PREADY_LIST_CONST": "int PMPI_Pready_list(int, const int[], MPI_Request);",
        "TB_HAVE_REVOKED": "#include <mpi-ext.h>\nint tb_probe(MPI_Comm c, int *f) "
                           "{ return PMPIX_Comm_is_revoked(c, f); }",
    }


def features(compiler: str, env: dict[str, str]) -> dict[str, bool]:
    """Which of the shim's optional parts ``compiler``'s ``mpi.h`` supports (see
    ``_probes``), each checked by compiling a probe, as a configure script would."""
    found = {}
    with tempfile.TemporaryDirectory(prefix="testbed-shim-probe-") as tmp:
        for name, body in _probes().items():
            probe = Path(tmp) / f"{name}.c"
            probe.write_text(f"#include <mpi.h>\n{body}\n")
            done = subprocess.run([compiler, "-fsyntax-only", "-Werror", str(probe)],
                                  capture_output=True, text=True, env=env)
            found[name] = done.returncode == 0
    return found


def defines(found: dict[str, bool]) -> list[str]:
    """The compiler's ``-D`` options for the features ``found``."""
    flags = [f"-D{name}={int(have)}" for name, have in found.items()
             if name.startswith("TB_HAVE_")]
    const = "const" if found.get("TB_PREADY_LIST_CONST") else ""
    return [*flags, f"-DTB_PREADY_LIST_CONST={const}"]


def library_path(mpi: MpiInfo, rebuild: bool = False) -> Path:
    """The shim library for ``mpi``, compiled first if needed (or if ``rebuild``), with the
    wrappers its ``mpi.h`` supports.  The features are probed only when it is compiled: they
    follow from the MPI (its library and version) and the probes, which select the build."""
    try:
        compiler = mpicc(mpi)
        env = compiler_env(compiler)
        headers = "\0".join(h.read_text() for h in HEADERS)
        probes = "\0".join(f"{name}\0{body}" for name, body in _probes().items())
        # the ranks find the MPI the shim was built for whatever their library path says
        # (Intel's pip mpicc adds no run path of its own)
        rpath = [f"-Wl,-rpath,{Path(mpi.library).parent}"] if mpi.library else []
        return build.library("testbed_shim", SOURCES,
                             [compiler, "-O2", "-fPIC", "-shared", "-Wall",
                              "-Werror=implicit-function-declaration", *rpath],
                             depends=f"{mpi.library}\0{mpi.version}\0{headers}\0{probes}"
                                     f"\0{rpath}",
                             rebuild=rebuild, env=env,
                             flags=lambda: defines(features(compiler, env)))
    except (build.BuildError, OSError) as err:
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
