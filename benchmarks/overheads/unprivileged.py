"""Running this checkout as an unprivileged user, from root: for tests and for side-by-side
figures.

The interpreter may live where other users cannot reach it (pyenv under a ``/root`` of mode
700).  ``as_user`` then runs the command in a mount namespace of its own, in which each such
directory is an empty tmpfs with only the entries on the way to the interpreter, the virtual
environment and the checkout bound back in.  Nothing outside that namespace changes.  Needs
root, ``runuser`` and ``unshare``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def missing_tools() -> list[str]:
    """The commands ``as_user`` needs that this machine lacks."""
    return [tool for tool in ("runuser", "unshare") if shutil.which(tool) is None]


def hidden_dirs() -> dict[Path, set[str]]:
    """Directories closed to other users on the way to the interpreter, the virtual
    environment or the checkout, each with the entries below it that must be seen."""
    hidden: dict[Path, set[str]] = {}
    for needed in {Path(os.path.realpath(p)) for p in (sys.base_prefix, sys.prefix, CHECKOUT)}:
        for above in reversed(needed.parents):
            if not above.stat().st_mode & stat.S_IXOTH:
                hidden.setdefault(above, set()).add(needed.relative_to(above).parts[0])
                break
    return hidden


def as_user(user: str, argv: list[str], cwd: Path, cgroup: Path | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as ``user`` in ``cwd`` (and in the cgroup directory ``cgroup`` if given),
    capturing its text output; ``timeout`` in seconds."""
    script = ["set -e"]
    if cgroup is not None:
        script.append(f"echo $$ > {shlex.quote(str(cgroup / 'cgroup.procs'))}")
    stash = Path(tempfile.mkdtemp(prefix="testbed-unprivileged-mounts-"))
    for n, (hidden, entries) in enumerate(sorted(hidden_dirs().items())):
        kept = {entry: stash / f"{n}-{entry}" for entry in sorted(entries)}
        for entry, keep in kept.items():
            keep.mkdir()
            script.append(shlex.join(["mount", "--bind", str(hidden / entry), str(keep)]))
        script.append(shlex.join(["mount", "-t", "tmpfs", "-o", "mode=755", "testbed",
                                  str(hidden)]))
        for entry, keep in kept.items():
            script.append(shlex.join(["mkdir", str(hidden / entry)]))
            script.append(shlex.join(["mount", "--bind", str(keep), str(hidden / entry)]))
    script.append(shlex.join(["exec", "runuser", "-u", user, "--", *argv]))
    try:
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               "\n".join(script)], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout)
    finally:
        shutil.rmtree(stash)
