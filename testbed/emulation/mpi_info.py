"""Which MPI the ranks will use: the library mpi4py loads, its version, its ``mpiexec`` and
which launcher that is (``testbed.emulation.launchers``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass

from testbed.emulation import launchers

_PROBE = """
import json, mpi4py
mpi4py.rc.initialize = False
from mpi4py import MPI
maps = [l.split()[-1] for l in open('/proc/self/maps') if '/libmpi' in l]
print(json.dumps({'library': maps[0] if maps else '', 'version': MPI.Get_library_version(),
                  'standard': '%d.%d' % MPI.Get_version(), 'mpi4py': mpi4py.__version__}))
"""


@dataclass(frozen=True)
class MpiInfo:
    """The MPI of a run: vendor, version text, library path, MPI standard, mpiexec path and
    the kind of launcher it is (``launchers.KINDS``)."""

    vendor: str
    version: str
    library: str
    standard: str
    mpi4py: str
    mpiexec: str
    launcher: str

    def name(self) -> str:
        """The library's version text up to its first line's first comma (e.g. ``MPICH
        Version: 5.0.2``, ``Open MPI v5.0.11``)."""
        first = self.version.strip().splitlines()[0] if self.version.strip() else self.vendor
        return " ".join(first.split(",")[0].split())[:80]

    def describe(self) -> dict[str, str]:
        """A JSON-ready description for ``config.json``."""
        return asdict(self)


class MpiNotFound(RuntimeError):
    """mpi4py cannot load an MPI, or no mpiexec belongs to it."""


def _vendor(version: str) -> str:
    first = version.strip().splitlines()[0] if version.strip() else ""
    for name in ("MPICH", "Open MPI", "Intel(R) MPI", "MVAPICH"):
        if name in first:
            return name
    return first.split(" Version")[0] or "unknown"


def launcher_kind(mpiexec: str, vendor: str) -> str:
    """The kind of launcher ``mpiexec`` is: ``TESTBED_MPI_LAUNCHER`` if set, else what its
    ``--version`` says; ``MpiNotFound`` when neither tells."""
    override = os.environ.get(launchers.OVERRIDE_ENV, "")
    if override:
        if override not in launchers.KINDS:
            raise MpiNotFound(f"{launchers.OVERRIDE_ENV}={override!r} is not a launcher "
                              f"(one of {', '.join(launchers.KINDS)})")
        return override
    try:
        done = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        text = done.stdout + done.stderr
    except (subprocess.SubprocessError, OSError) as err:
        text = str(err)
    kind = launchers.kind_of(text)
    if kind is None:
        first = text.strip().splitlines()[0] if text.strip() else "nothing"
        raise MpiNotFound(f"cannot tell which launcher {mpiexec} ({vendor}) is: its --version "
                          f"said {first!r}; set {launchers.OVERRIDE_ENV} to one of "
                          f"{', '.join(launchers.KINDS)}")
    return kind


def detect_mpi(python: str = sys.executable) -> MpiInfo:
    """Ask a fresh interpreter which MPI mpi4py loads, find the mpiexec next to it and tell
    which launcher that is.

    ``TESTBED_MPIEXEC`` overrides the search; otherwise the ``bin/`` beside the library's
    ``lib/``, then this interpreter's ``bin/``, then ``PATH``.
    """
    try:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, check=True,
                             timeout=60).stdout
        probe = json.loads(out)
    except (subprocess.SubprocessError, OSError, json.JSONDecodeError) as err:
        raise MpiNotFound(f"mpi4py cannot load an MPI library: {err}") from None
    candidates = [os.environ.get("TESTBED_MPIEXEC", "")]
    if probe["library"]:
        candidates.append(os.path.join(os.path.dirname(os.path.dirname(probe["library"])),
                                       "bin", "mpiexec"))
    candidates += [os.path.join(os.path.dirname(python), "mpiexec"), shutil.which("mpiexec") or ""]
    mpiexec = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
    if mpiexec is None:
        raise MpiNotFound("no mpiexec found for the MPI that mpi4py loads; set TESTBED_MPIEXEC")
    vendor = _vendor(probe["version"])
    return MpiInfo(vendor, probe["version"].strip(), probe["library"], probe["standard"],
                   probe["mpi4py"], mpiexec, launcher_kind(mpiexec, vendor))
