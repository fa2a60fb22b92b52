"""Compiling small C code once, on first need: the shim, the memory walk, benchmark clients.

A library or program is built into ``native/build/`` (``testbed/native/build/`` when installed
from a wheel; ``~/.cache/testbed/`` when that directory is read-only) under a name tagged with
a hash of its sources and whatever else it depends on, so a changed source or a different MPI
gets a fresh build.  Concurrent builders take turns on a lock file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from testbed import native

NATIVE = native.DIR


class BuildError(RuntimeError):
    """A library could not be compiled; the message carries the compiler's output."""


def _dirs() -> list[Path]:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "testbed"
    return [NATIVE / "build", cache]


def library(name: str, sources: list[Path], argv: list[str], depends: str = "",
            rebuild: bool = False, env: dict[str, str] | None = None,
            flags: Callable[[], list[str]] | None = None) -> Path:
    """Path of ``lib<name>-<tag>.so`` built from ``sources``, compiling it first if needed.

    ``argv`` is the compiler command without output and sources; ``depends`` is extra text
    (e.g. the MPI library and version) that also selects the build; ``env`` the compiler's
    environment (default: ours); ``flags`` gives more compiler options, asked only when it
    compiles (``depends`` must then name what they follow from).
    """
    return _built(f"lib{name}", ".so", sources, argv, depends, rebuild, env, flags)


def program(name: str, sources: list[Path], argv: list[str], depends: str = "") -> Path:
    """Path of the executable ``<name>-<tag>`` built from ``sources``, as ``library`` does."""
    return _built(name, "", sources, argv, depends, rebuild=False)


def _built(stem: str, suffix: str, sources: list[Path], argv: list[str], depends: str,
           rebuild: bool, env: dict[str, str] | None = None,
           flags: Callable[[], list[str]] | None = None) -> Path:
    digest = hashlib.sha256(depends.encode())
    for source in sources:
        digest.update(source.read_bytes())
    filename = f"{stem}-{digest.hexdigest()[:12]}{suffix}"
    if not rebuild:
        for directory in _dirs():
            if (directory / filename).exists():
                return directory / filename
    problems = []
    for directory in _dirs():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            return _compile(directory, filename, sources, argv, rebuild, env, flags)
        except PermissionError as err:
            problems.append(f"{directory}: {err.strerror}")
    raise BuildError(f"no writable directory for {stem}: " + "; ".join(problems))


def _compile(directory: Path, filename: str, sources: list[Path], argv: list[str],
             rebuild: bool, env: dict[str, str] | None,
             flags: Callable[[], list[str]] | None) -> Path:
    target = directory / filename
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists() and not rebuild:
            return target
        tmp = directory / f".{filename}.{os.getpid()}"
        command = [*argv, *(flags() if flags else []), "-o", str(tmp), *map(str, sources),
                   "-lm"]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise BuildError(f"compiling failed:\n{' '.join(command)}\n{done.stderr}")
        os.replace(tmp, target)
    return target
