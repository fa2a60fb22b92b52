"""The fractal memory walk (MEMORY §4.1, Fig 4) through cffi: ``native/walk.c``.

A walk owns an anonymous array of ``mem_mb`` MiB, touched once at creation so that all of it
is resident, and writes one byte per access at cell ``index * stride`` where the index moves by
jumps X with Pr[X > u] = u^-theta (u >= 1) and a random sign.
"""

from __future__ import annotations

import mmap
import os

import cffi

from testbed.emulation import build

SOURCE = build.NATIVE / "walk.c"
ffi = cffi.FFI()
ffi.cdef("""
uint64_t tb_seed(uint64_t seed);
double tb_jump(double theta, uint64_t *state);
void tb_jumps(double theta, uint64_t *state, double *out, size_t n);
void tb_touch(unsigned char *mem, size_t bytes, size_t page);
uint64_t tb_walk(unsigned char *mem, size_t cells, size_t stride, double theta,
                 uint64_t *state, double *addr, size_t accesses);
""")
_lib = None


def lib():  # noqa: ANN201 (a cffi library object)
    """The compiled walk library (built with ``$CC``, default ``cc``, on first need)."""
    global _lib
    if _lib is None:
        path = build.library("testbed_walk", [SOURCE],
                             [os.environ.get("CC", "cc"), "-O2", "-fPIC", "-shared", "-Wall"])
        _lib = ffi.dlopen(str(path))
    return _lib


def check_theta(theta: float) -> None:
    """Raise ``ValueError`` unless 1 <= theta <= 2 (MEMORY's range)."""
    if not 1.0 <= theta <= 2.0:
        raise ValueError(f"theta must be within [1, 2], got {theta}")


class Walk:
    """A walk over ``mem_mb`` MiB in cells of ``stride`` bytes, seeded by ``seed``."""

    def __init__(self, mem_mb: float, theta: float, stride: int, seed: int) -> None:
        check_theta(theta)
        size = int(mem_mb * 2**20)
        if stride < 1 or size < stride:
            raise ValueError(f"need 1 <= stride <= array size, got stride {stride}")
        self.theta = theta
        self.stride = stride
        self.cells = size // stride
        self.array = mmap.mmap(-1, size)
        self._buffer = ffi.from_buffer("unsigned char[]", self.array)
        self.state = ffi.new("uint64_t *", lib().tb_seed(seed))
        self.addr = ffi.new("double *", 0.0)
        lib().tb_touch(self._buffer, size, mmap.PAGESIZE)

    def run(self, accesses: int) -> int:
        """Make ``accesses`` steps; return the checksum of the cells visited."""
        return lib().tb_walk(self._buffer, self.cells, self.stride, self.theta, self.state,
                             self.addr, accesses)

    def close(self) -> None:
        """Free the array."""
        ffi.release(self._buffer)
        self.array.close()


def jumps(theta: float, seed: int, n: int) -> list[float]:
    """``n`` signed jumps of the walk's generator (for checking its distribution)."""
    check_theta(theta)
    out = ffi.new("double[]", n)
    lib().tb_jumps(theta, ffi.new("uint64_t *", lib().tb_seed(seed)), out, n)
    return list(out)
