"""The compiled mpirun client (``native/mpirun.c``): building it, and linking it beside the
``testbed`` command, which runs it for ``testbed mpirun``/``mpiexec`` when the link is there.

The ``testbed`` command is a small shell script (``native/testbed``, installed by pip beside
``testbed-py``, the Python entry point): ``mpirun`` and ``mpiexec`` go to
``.testbed-mpirun`` in the same directory when it is there, everything else (and those too
when it is not) to ``testbed-py``.  The client is built like the shim (``testbed.emulation.
build``, with ``$CC``, default ``cc``), on first need: the first ``testbed mpirun`` that runs
in Python builds it and makes the link, and ``testbed client`` does so explicitly.  The
client takes its own source's modification time into the build and hands a command to
``testbed-py`` once that source changes, so an edited client is rebuilt, not run stale.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from testbed import native

SOURCE = native.DIR / "mpirun.c"
DISPATCHER = "testbed"
PYTHON_COMMAND = "testbed-py"
LINK = ".testbed-mpirun"


def client_path() -> Path:
    """The compiled client, built first if needed (``build.BuildError`` when it cannot be)."""
    from testbed.emulation import build  # imported only to build, not by every Python mpirun

    mtime = SOURCE.stat().st_mtime_ns
    quoted = str(SOURCE).replace("\\", "\\\\").replace('"', '\\"')
    return build.program("testbed-mpirun", [SOURCE],
                         [os.environ.get("CC", "cc"), "-O2", "-Wall",
                          f'-DTESTBED_SOURCE="{quoted}"', f"-DTESTBED_SOURCE_MTIME={mtime}"],
                         depends=f"{SOURCE}\0{mtime}")


def command_dir() -> Path | None:
    """The directory of the ``testbed`` shell command this process was started by (through
    ``testbed-py`` beside it), or None when it was started otherwise (``python -m testbed``)."""
    started = Path(sys.argv[0])
    if started.name != PYTHON_COMMAND or not (started.parent / DISPATCHER).is_file():
        return None
    return started.parent


def link(directory: Path) -> Path:
    """Build the client if needed and point ``directory/.testbed-mpirun`` at it (replacing an
    older link in one step); the client's path.  ``build.BuildError`` or ``OSError`` when it
    cannot be done."""
    target = client_path()
    place = directory / LINK
    with contextlib.suppress(OSError):
        if os.readlink(place) == str(target):
            return target
    temporary = directory / f"{LINK}.{os.getpid()}"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(target)
    os.replace(temporary, place)
    return target


def link_quietly() -> None:
    """``link`` beside the ``testbed`` command that started this process, if one did; a
    failure (no compiler, a read-only directory) leaves ``testbed mpirun`` in Python."""
    directory = command_dir()
    if directory is None:
        return
    from testbed.emulation.build import BuildError

    with contextlib.suppress(BuildError, OSError):
        link(directory)
