"""Emulated node memory: a memory cgroup per node, and a swap file made for the run.

``--node-mem`` gives every emulated node a memory limit enforced by a cgroup that holds the
node's ranks, so overcommitting a node makes the kernel page.  As root the node cgroups go
under the root of the memory hierarchy (v1 ``memory``, or v2 with the ``memory`` controller).
Without root they go under the cgroup the testbed was started in, when it was delegated to the
user: a v1 memory cgroup the user owns, or a v2 cgroup the user owns with the ``memory``
controller available (a systemd user scope with ``Delegate=yes``, a Slurm step's cgroup).  In
v2 a cgroup that holds processes cannot enable controllers for its children, so the
coordinator first moves itself into a leaf, ``testbed-RUN/coordinator``, and moves back when
the run ends.  ``--swap`` creates, enables and afterwards removes a swap file so that there is
somewhere to page to; ``swapon`` is never delegated, so it needs root.  When the machine cannot
give a run what it asked for, ``MemorySetupError`` says what is missing and the run does not
start: there is no fallback that would produce unpaged numbers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
MOUNTINFO = Path("/proc/self/mountinfo")
OWN_CGROUPS = Path("/proc/self/cgroup")
COORDINATOR_LEAF = "coordinator"
_DELEGATE_HINT = ("start the testbed in a cgroup delegated to you (e.g. `systemd-run --user "
                  "--scope -p Delegate=yes testbed run ...`, or a Slurm step whose cgroup is "
                  "yours), or run it as root")


class MemorySetupError(RuntimeError):
    """The machine cannot give the run the memory set-up it asked for."""


def _require_root(what: str, why: str) -> None:
    if os.geteuid() != 0:
        raise MemorySetupError(f"{what} needs root ({why}; it is not available to this user)")


@dataclass(frozen=True)
class CgroupParent:
    """Where a run's node cgroups go: hierarchy ``version`` (1 or 2), the parent ``path``,
    and whether it is the user's own delegated cgroup rather than the hierarchy's root."""

    version: int
    path: Path
    delegated: bool


@dataclass(frozen=True)
class Mount:
    """A cgroup hierarchy's mount ``point`` and the cgroup (``root``) mounted there."""

    point: Path
    root: str


def memory_mounts() -> dict[int, Mount]:
    """The mounts of the memory cgroup hierarchies: {1: the v1 ``memory`` one, 2: the cgroup2
    one}, each present only if mounted (read from ``/proc/self/mountinfo``)."""
    mounts: dict[int, Mount] = {}
    for line in _read(MOUNTINFO).splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        fstype, _source, options = line.split(" - ", 1)[1].split()[:3]
        mount = Mount(Path(fields[4].replace("\\040", " ")), fields[3])
        if fstype == "cgroup" and "memory" in options.split(","):
            mounts.setdefault(1, mount)
        elif fstype == "cgroup2":
            mounts.setdefault(2, mount)
    return mounts


def own_cgroup(version: int) -> str | None:
    """This process's cgroup path in the v1 ``memory`` hierarchy (``version`` 1) or in the v2
    one (2), as ``/proc/self/cgroup`` gives it; None if it is in neither."""
    for line in _read(OWN_CGROUPS).splitlines():
        number, controllers, path = line.split(":", 2)
        if (version == 1 and "memory" in controllers.split(",")) or (
                version == 2 and number == "0" and controllers == ""):
            return path
    return None


def cgroup_parent() -> CgroupParent:
    """The cgroup under which a run's node cgroups go: the root of a writable memory hierarchy
    when we are root, otherwise our own cgroup if it was delegated to us with the memory
    controller.  Raises ``MemorySetupError`` saying what is missing."""
    mounts = memory_mounts()
    if os.geteuid() == 0:
        return _root_parent(mounts)
    if 1 in mounts:
        return _delegated_v1(mounts[1])
    if 2 in mounts:
        return _delegated_v2(mounts[2])
    raise MemorySetupError("--node-mem needs the memory cgroup controller, and no memory "
                           "cgroup hierarchy is mounted")


def _root_parent(mounts: dict[int, Mount]) -> CgroupParent:
    if 1 in mounts and (mounts[1].point / "memory.limit_in_bytes").exists():
        candidates = [(1, mounts[1].point)]
    else:
        candidates = [(2, path) for path in ([mounts[2].point] if 2 in mounts else [])
                      if "memory" in _read(path / "cgroup.controllers").split()]
    for version, path in candidates:
        if os.access(path, os.W_OK):
            return CgroupParent(version, path, delegated=False)
    raise MemorySetupError("--node-mem needs a writable memory cgroup hierarchy, and "
                           f"none is mounted writable under {CGROUP_FS}")


def _own_path(version: int, mount: Mount) -> Path:
    path = own_cgroup(version)
    if path is None:
        raise MemorySetupError(f"--node-mem: this process is in no cgroup of the "
                               f"{mount.point} hierarchy (/proc/self/cgroup)")
    if mount.root != "/" and (path + "/").startswith(mount.root + "/"):
        path = path[len(mount.root):]
    return mount.point / path.lstrip("/")


def _check_owned(cgroup: Path, files: tuple[str, ...]) -> None:
    for name in ("", *files):
        target = cgroup / name if name else cgroup
        if not os.access(target, os.W_OK):
            owner = target.stat().st_uid if target.exists() else "nobody"
            raise MemorySetupError(
                f"--node-mem without root needs a memory cgroup delegated to you, and yours "
                f"({cgroup}) is not: {target} belongs to uid {owner}, you are uid "
                f"{os.geteuid()}; {_DELEGATE_HINT}")


def _delegated_v1(mount: Mount) -> CgroupParent:
    cgroup = _own_path(1, mount)
    _check_owned(cgroup, ("cgroup.procs",))
    return CgroupParent(1, cgroup, delegated=True)


def _delegated_v2(mount: Mount) -> CgroupParent:
    cgroup = _own_path(2, mount)
    controllers = _read(cgroup / "cgroup.controllers").split()
    if "memory" not in controllers:
        raise MemorySetupError(
            f"--node-mem without root needs the memory controller delegated to your cgroup "
            f"({cgroup}), which has {', '.join(controllers) or 'no controllers'}; "
            f"{_DELEGATE_HINT}")
    _check_owned(cgroup, ("cgroup.procs", "cgroup.subtree_control"))
    others = sorted(set(_read(cgroup / "cgroup.procs").split()) - {str(os.getpid())})
    if others:
        raise MemorySetupError(
            f"--node-mem: your cgroup {cgroup} also holds processes {', '.join(others[:5])}; "
            "a v2 cgroup can give its children memory limits only once it holds no process, "
            "and the testbed moves only itself; start it in a scope of its own "
            "(`systemd-run --user --scope -p Delegate=yes testbed run ...`)")
    return CgroupParent(2, cgroup, delegated=True)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class NodeCgroups:
    """One memory cgroup per emulated node under ``testbed-RUN``, each limited to ``limit``
    bytes, below the place ``cgroup_parent`` finds."""

    def __init__(self, run_id: str, nodes: int, limit: int) -> None:
        parent = cgroup_parent()
        self.version, self.delegated = parent.version, parent.delegated
        self.base = parent.path / f"testbed-{run_id}"
        # v2 below a delegated cgroup: it holds us, and must hold nobody to give limits.
        self.home = parent.path if parent.version == 2 and parent.delegated else None
        self.limit = limit
        try:
            self.base.mkdir()
            if self.home is not None:
                leaf = self.base / COORDINATOR_LEAF
                leaf.mkdir()
                (leaf / "cgroup.procs").write_text(str(os.getpid()))
            if self.version == 2:
                _enable_memory(parent.path)
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
            self.remove()
            raise MemorySetupError(
                f"cannot set up memory cgroups in {parent.path}: {err}") from None

    def add(self, node: int, pid: int) -> None:
        """Move process ``pid`` (all its threads) into node ``node``'s cgroup."""
        with contextlib.suppress(ProcessLookupError, OSError):
            (self.nodes[node] / "cgroup.procs").write_text(str(pid))

    def used_kib(self) -> list[int]:
        """Memory charged to each node now (KiB)."""
        name = "memory.usage_in_bytes" if self.version == 1 else "memory.current"
        return [int(_read(node / name) or 0) // 1024 for node in self.nodes]

    def cleanup_args(self) -> list[str]:
        """The watchdog's arguments that make it remove these cgroups."""
        return ["--cgroup", str(self.base),
                *(["--cgroup-home", str(self.home)] if self.home else [])]

    def remove(self) -> None:
        """Remove the node cgroups (their ranks must be gone), and move the coordinator back
        to the cgroup it came from if it had to leave it."""
        remove_cgroup(str(self.base), str(self.home) if self.home else None)

    def describe(self) -> dict[str, object]:
        """A JSON-ready description for ``config.json``."""
        return {"cgroup_version": self.version, "path": str(self.base),
                "delegated": self.delegated, "limit_bytes": self.limit,
                "nodes": len(self.nodes)}


def _enable_memory(path: Path) -> None:
    control = path / "cgroup.subtree_control"
    if "memory" not in _read(control).split():
        control.write_text("+memory")


def remove_cgroup(base: str, home: str | None = None) -> None:
    """Remove a run's cgroup directory tree (its ranks must be gone; retries briefly).  With
    ``home`` (v2 below a delegated cgroup), first turn the memory controller off again and
    move the processes of the coordinator's leaf back to ``home``."""
    root = Path(base)
    for _ in range(50):
        if not root.exists():
            return
        nodes = [p for p in root.iterdir() if p.is_dir() and p.name != COORDINATOR_LEAF]
        for node in nodes:
            with contextlib.suppress(OSError):
                node.rmdir()
        if home is not None and not any(node.exists() for node in nodes):
            _return_home(root, Path(home))
        with contextlib.suppress(OSError):
            root.rmdir()
        time.sleep(0.02)


def _return_home(root: Path, home: Path) -> None:
    for cgroup in (root, home):
        with contextlib.suppress(OSError):
            (cgroup / "cgroup.subtree_control").write_text("-memory")
    leaf = root / COORDINATOR_LEAF
    for pid in _read(leaf / "cgroup.procs").split():
        with contextlib.suppress(OSError):
            (home / "cgroup.procs").write_text(pid)
    with contextlib.suppress(OSError):
        leaf.rmdir()


class SwapFile:
    """A swap file of ``size`` bytes at ``path``, enabled now and removed by ``remove``."""

    def __init__(self, path: Path, size: int) -> None:
        _require_root("--swap", "swapon is never delegated to users")
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


SWAPOFF_TRIES = 5


def remove_swap(path: str) -> None:
    """Disable (if enabled) and delete a swap file made by the testbed.  ``swapoff`` fails
    while the machine lacks the memory to take the pages back (another process's memory
    pressure), so it is tried ``SWAPOFF_TRIES`` times a second apart; a file still enabled
    after that is not deleted (the kernel refuses) and ``OSError`` names it and the command
    that removes it."""
    failure = ""
    for attempt in range(SWAPOFF_TRIES):
        if path not in _read(Path("/proc/swaps")):
            break
        done = subprocess.run(["swapoff", path], capture_output=True, text=True)
        failure = done.stderr.strip()
        if attempt + 1 < SWAPOFF_TRIES and path in _read(Path("/proc/swaps")):
            time.sleep(1.0)
    else:
        raise OSError(f"swap file {path} is still enabled ({failure or 'swapoff failed'}); "
                      f"remove it with: swapoff {path} && rm {path}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
