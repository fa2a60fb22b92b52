"""Emulated node memory: a memory cgroup per node, and a swap file made for the run.

``--node-mem`` gives every emulated node a memory limit enforced by a cgroup (v1 ``memory``
hierarchy or v2 with the ``memory`` controller, whichever is writable) that holds the node's
ranks, so overcommitting a node makes the kernel page.  ``--swap`` creates, enables and
afterwards removes a swap file so that there is somewhere to page to.  Both need root; without
it, or without a writable hierarchy, they raise ``MemorySetupError`` with a plain message and
the run does not start: there is no fallback that would produce unpaged numbers.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 2**20, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class MemorySetupError(RuntimeError):
    """The machine cannot give the run the memory set-up it asked for."""


def parse_size(text: str) -> int:
    """Bytes in ``text``: a number with an optional K, M, G or T (powers of 1024); a bare
    number means MiB.  Raises ``ValueError`` naming the text."""
    match = _SIZE.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"not a size: {text!r} (use e.g. 512M or 2G)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def _require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise MemorySetupError(f"{what} needs root (it is not available to this user)")


def memory_hierarchy() -> tuple[int, Path]:
    """The writable memory cgroup hierarchy: (1, its path) for v1, (2, its path) for v2."""
    v1 = CGROUP_FS / "memory"
    if (v1 / "memory.limit_in_bytes").exists():
        candidates = [(1, v1)]
    else:
        candidates = [(2, path) for path in (CGROUP_FS, CGROUP_FS / "unified")
                      if "memory" in _read(path / "cgroup.controllers").split()]
    for version, path in candidates:
        if os.access(path, os.W_OK):
            return version, path
    raise MemorySetupError("--node-mem needs a writable memory cgroup hierarchy, and "
                           f"none is mounted writable under {CGROUP_FS}")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class NodeCgroups:
    """One memory cgroup per emulated node under ``testbed-RUN``, each limited to ``limit``
    bytes."""

    def __init__(self, run_id: str, nodes: int, limit: int) -> None:
        _require_root("--node-mem")
        self.version, root = memory_hierarchy()
        self.base = root / f"testbed-{run_id}"
        self.limit = limit
        try:
            if self.version == 2:
                _enable_memory(root)
            self.base.mkdir()
            if self.version == 2:
                _enable_memory(self.base)
            self.nodes = [self.base / f"node{i}" for i in range(nodes)]
            for node in self.nodes:
                node.mkdir()
                if self.version == 1:
                    (node / "memory.limit_in_bytes").write_text(str(limit))
                    # Recent kernels refuse this (deprecated); ranks join their node's cgroup
                    # right after exec, before they allocate, so little is charged elsewhere.
                    with contextlib.suppress(OSError):
                        (node / "memory.move_charge_at_immigrate").write_text("3")
                else:
                    (node / "memory.max").write_text(str(limit))
        except OSError as err:
            remove_cgroup(str(self.base))
            raise MemorySetupError(f"cannot set up memory cgroups in {root}: {err}") from None

    def add(self, node: int, pid: int) -> None:
        """Move process ``pid`` (all its threads) into node ``node``'s cgroup."""
        with contextlib.suppress(ProcessLookupError, OSError):
            (self.nodes[node] / "cgroup.procs").write_text(str(pid))

    def used_kib(self) -> list[int]:
        """Memory charged to each node now (KiB)."""
        name = "memory.usage_in_bytes" if self.version == 1 else "memory.current"
        return [int(_read(node / name) or 0) // 1024 for node in self.nodes]

    def describe(self) -> dict[str, object]:
        """A JSON-ready description for ``config.json``."""
        return {"cgroup_version": self.version, "path": str(self.base),
                "limit_bytes": self.limit, "nodes": len(self.nodes)}


def _enable_memory(path: Path) -> None:
    control = path / "cgroup.subtree_control"
    if "memory" not in _read(control).split():
        control.write_text("+memory")


def remove_cgroup(base: str) -> None:
    """Remove a run's cgroup directory tree (its processes must be gone; retries briefly)."""
    root = Path(base)
    for _ in range(50):
        if not root.exists():
            return
        for node in sorted(p for p in root.iterdir() if p.is_dir()):
            with contextlib.suppress(OSError):
                node.rmdir()
        with contextlib.suppress(OSError):
            root.rmdir()
        time.sleep(0.02)


class SwapFile:
    """A swap file of ``size`` bytes at ``path``, enabled now and removed by ``remove``."""

    def __init__(self, path: Path, size: int) -> None:
        _require_root("--swap")
        if shutil.which("mkswap") is None or shutil.which("swapon") is None:
            raise MemorySetupError("--swap needs the mkswap and swapon commands (util-linux)")
        self.path = path
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as err:
            raise MemorySetupError(f"cannot create the swap file {path}: {err.strerror}") from None
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as err:
            os.close(fd)
            remove_swap(str(path))
            raise MemorySetupError(
                f"cannot allocate {size} bytes for {path}: {err.strerror}") from None
        os.close(fd)
        for argv in (["mkswap", str(path)], ["swapon", str(path)]):
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode != 0:
                remove_swap(str(path))
                raise MemorySetupError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        self.size = size

    def describe(self) -> dict[str, object]:
        """A JSON-ready description for ``config.json``."""
        return {"path": str(self.path), "bytes": self.size}


def remove_swap(path: str) -> None:
    """Disable (if enabled) and delete a swap file made by the testbed."""
    if path in _read(Path("/proc/swaps")):
        subprocess.run(["swapoff", path], capture_output=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
