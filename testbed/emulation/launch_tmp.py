"""Temporary directories of the launches a node manager makes, and what they leave in /tmp.

Every launch gets a directory of its own under the node manager's (``testbed-RUN-nmN-*`` in
the system's temporary directory): the launcher and the ranks have it as ``TMPDIR``.  hydra
writes its topology file to ``/tmp/hydra_hwloc_xmlfile_*`` whatever ``TMPDIR`` says, and leaves
it behind when the launch is killed, so the launcher runs with a small preloaded library
(``native/launch_tmp.c``) that notes every temporary file the launcher's processes make
(``mkstemp`` and kin).  When the launch ends, on any path, its directory goes and so does every
noted file that is still a regular file of ours directly in a temporary directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from testbed.emulation import build

SOURCE = build.NATIVE / "launch_tmp.c"
RECORD_ENV = "TESTBED_TMP_RECORD"
RECORD_NAME = ".launcher-files"
HYDRA_PREFIX = "hydra_hwloc_xmlfile_"


def library() -> Path:
    """The preloaded library that notes the launcher's temporary files (built with ``$CC``,
    default ``cc``, on first need); ``build.BuildError`` when it cannot be compiled."""
    return build.library("testbed_launch_tmp", [SOURCE],
                         [os.environ.get("CC", "cc"), "-O2", "-fPIC", "-shared", "-Wall"])


def _temporary_dirs() -> set[str]:
    return {"/tmp", os.path.realpath(tempfile.gettempdir())}


class LaunchDirs:
    """The temporary directories of one node manager's launches, under one of its own."""

    def __init__(self, prefix: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
        try:
            self.preload = str(library())
        except build.BuildError:
            self.preload = ""       # no C compiler: each launch still has its own TMPDIR
        self.dirs: dict[str, Path] = {}

    def env(self, job: str, env: dict[str, str]) -> dict[str, str]:
        """``env`` for launching ``job``: its own ``TMPDIR`` (made here), the record of the
        launcher's temporary files and the library that keeps it, before any other
        ``LD_PRELOAD`` (none when no C compiler could build it)."""
        directory = self.root / job
        directory.mkdir(mode=0o700, exist_ok=True)
        self.dirs[job] = directory
        preload = ":".join(p for p in (self.preload, env.get("LD_PRELOAD", "")) if p)
        return {**env, "TMPDIR": str(directory), RECORD_ENV: str(directory / RECORD_NAME),
                "LD_PRELOAD": preload}

    def remove(self, job: str) -> list[str]:
        """Remove ``job``'s directory and the temporary files its launcher noted; the paths of
        those files removed."""
        directory = self.dirs.pop(job, None)
        if directory is None:
            return []
        removed = [path for path in _noted(directory / RECORD_NAME) if _remove_own_file(path)]
        shutil.rmtree(directory, ignore_errors=True)
        return removed

    def close(self) -> None:
        """Remove every launch's directory and noted files, then the node manager's own."""
        for job in list(self.dirs):
            self.remove(job)
        shutil.rmtree(self.root, ignore_errors=True)


def hydra_files() -> set[str]:
    """The names of hydra's topology files in /tmp (one a bound launch; what a killed launch
    leaves behind unless its node manager removes it)."""
    return {name for name in os.listdir("/tmp") if name.startswith(HYDRA_PREFIX)}


def run_dirs(run_id: str) -> list[Path]:
    """The launch directories of run ``run_id``'s node managers still in the temporary
    directory."""
    return sorted(Path(tempfile.gettempdir()).glob(f"testbed-{run_id}-nm*"))


def remove_run(run_id: str) -> None:
    """Remove what the launches of run ``run_id`` left in the temporary directory: their
    directories and the files their launchers noted (the watchdog's sweep, when the node
    managers could not do it themselves)."""
    for root in run_dirs(run_id):
        for record in root.glob(f"*/{RECORD_NAME}"):
            for path in _noted(record):
                _remove_own_file(path)
        shutil.rmtree(root, ignore_errors=True)


def _noted(record: Path) -> list[str]:
    with contextlib.suppress(OSError):
        return [line for line in record.read_text(errors="replace").splitlines() if line]
    return []


def _remove_own_file(path: str) -> bool:
    """Unlink ``path`` if it is a regular file (not a link) of this user directly in a
    temporary directory: what the record says is never trusted further."""
    if not os.path.isabs(path) or os.path.realpath(os.path.dirname(path)) \
            not in _temporary_dirs():
        return False
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return False
        os.unlink(path)
    except OSError:
        return False
    return True
