"""Which MPI the ranks will use: the library mpi4py loads, its version, and its ``mpiexec``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass

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
    """The MPI of a run: vendor, version text, library path, MPI standard, mpiexec path."""

    vendor: str
    version: str
    library: str
    standard: str
    mpi4py: str
    mpiexec: str

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


def detect_mpi(python: str = sys.executable) -> MpiInfo:
    """Ask a fresh interpreter which MPI mpi4py loads, and find the mpiexec next to it.

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
    return MpiInfo(_vendor(probe["version"]), probe["version"].strip(), probe["library"],
                   probe["standard"], probe["mpi4py"], mpiexec)
