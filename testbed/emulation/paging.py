"""Moving a stopped process's memory to swap and back, as T3D moved a preempted job to disk.

``page_out`` asks the kernel to reclaim the process's private anonymous memory at once
(``process_madvise(MADV_PAGEOUT)``, Linux 5.10+; with no swap there is nowhere to put it and
little moves).  ``page_in`` brings it back before the process continues by reading it through
``/proc/PID/mem``, which faults every page in (only mappings with pages in swap are read, so
it costs next to nothing when memory was not short).  Both are synchronous, so their durations are
the swap-out and swap-in costs of a preemption.  Both need the right to trace the process
(root, or the same user where ptrace is allowed), and ``page_out`` on another process also needs
``CAP_SYS_NICE`` (``may_page_out``); a process that has gone counts as 0 bytes.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass

import psutil

_CAP_SYS_NICE = 23
_SYS_PROCESS_MADVISE = 440          # the same number on x86-64 and arm64
_MADV_PAGEOUT = 21
_IOV_MAX = 1024
_CHUNK = 1 << 20
_libc = ctypes.CDLL(None, use_errno=True)


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


@dataclass(frozen=True)
class Moved:
    """What one page-out or page-in did: seconds taken and KiB of swap used by the process
    before and after."""

    seconds: float
    swap_kib_before: int
    swap_kib_after: int


def may_page_out(status: str | None = None) -> bool:
    """Whether this process has ``CAP_SYS_NICE``, which ``process_madvise`` asks of a caller
    advising another process (``status``: the text of ``/proc/self/status``, read if None)."""
    if status is None:
        with open("/proc/self/status") as f:
            status = f.read()
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> _CAP_SYS_NICE & 1)
    return False


def anonymous_regions(pid: int) -> list[tuple[int, int]]:
    """The process's writable memory that belongs to no file, as (start, end) addresses:
    private mappings without a path (heap, stacks, anonymous mmaps) and shared anonymous ones
    (``/dev/zero``, as the memory walk maps its array); [] if it has gone."""
    regions = []
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                fields = line.split()
                perms = fields[1]
                path = fields[5] if len(fields) > 5 else ""
                if perms[1] != "w" or (path.startswith("/") and not
                                       path.startswith("/dev/zero")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                regions.append((start, end))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return []
    return regions


def swap_kib(pid: int) -> int:
    """KiB of the process's memory now in swap, shared anonymous memory included (0 if it
    has gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Swap:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def page_out(pid: int) -> Moved:
    """Reclaim the process's anonymous memory now (to swap); raises ``OSError`` if the
    kernel refuses (no permission, no ``process_madvise``)."""
    before = swap_kib(pid)
    t0 = time.monotonic()
    regions = anonymous_regions(pid)
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return Moved(0.0, before, before)
    try:
        for at in range(0, len(regions), _IOV_MAX):
            batch = regions[at:at + _IOV_MAX]
            iov = (_Iovec * len(batch))(*[_Iovec(start, end - start) for start, end in batch])
            done = _libc.syscall(_SYS_PROCESS_MADVISE, pidfd, iov, len(batch), _MADV_PAGEOUT, 0)
            if done < 0:
                errno = ctypes.get_errno()
                if errno == 3:              # ESRCH: it exited meanwhile
                    break
                raise OSError(errno, f"process_madvise(MADV_PAGEOUT) on {pid}: "
                                     f"{os.strerror(errno)}")
    finally:
        os.close(pidfd)
    return Moved(time.monotonic() - t0, before, swap_kib(pid))


def swapped_regions(pid: int) -> list[tuple[int, int]]:
    """The process's mappings of which some part is in swap (``smaps``), as (start, end)
    addresses; [] if none is or it has gone."""
    regions = []
    current: tuple[int, int] | None = None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                head = line.split(None, 1)[0]
                if "-" in head and not head.endswith(":"):
                    start, end = (int(x, 16) for x in head.split("-"))
                    current = (start, end)
                elif head == "Swap:" and current is not None and int(line.split()[1]) > 0:
                    regions.append(current)
    except (FileNotFoundError, ProcessLookupError):
        return []
    return regions


def page_in(pid: int) -> Moved:
    """Fault back in every mapping of the process that has pages in swap, by reading it
    whole; nothing to do (and almost no time) when none has."""
    before = swap_kib(pid)
    t0 = time.monotonic()
    regions = swapped_regions(pid)
    if not regions:
        return Moved(time.monotonic() - t0, before, before)
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except (FileNotFoundError, ProcessLookupError):
        return Moved(0.0, before, before)
    try:
        for start, end in regions:
            for at in range(start, end, _CHUNK):
                try:
                    os.pread(fd, min(_CHUNK, end - at), at)
                except OSError:
                    break               # a guard page or a region unmapped meanwhile
    finally:
        os.close(fd)
    return Moved(time.monotonic() - t0, before, swap_kib(pid))


def available() -> bool:
    """Whether this process may page others out (it can trace them: root here)."""
    return os.geteuid() == 0 and psutil.LINUX
