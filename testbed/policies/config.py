"""The one object every policy is built from: machine size, matrix, shim and batch settings."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from testbed.defaults import TIMESLICE_S
from testbed.policies.classes import ClassTable

HOUR = 3600.0


@dataclass(frozen=True)
class MemoryAdmission:
    """Memory-aware admission: each node's memory (MiB), the factor C, and PE -> node."""

    capacity_mb: tuple[float, ...]
    factor: float
    node_of_pe: tuple[int, ...]
    skip_limit: int = 15


@dataclass(frozen=True)
class PrimeTime:
    """The prime/non-prime policy's settings (T3D §3.1, after NASA Ames' SP2).

    The shifts alternate every ``shift_s`` seconds, starting with prime time when
    ``starts_prime``.  During prime time a job on more than ``large_pes`` PEs may start only if
    it runs at most ``large_limit_s``; a smaller job may run up to ``small_limit_s`` provided
    ``free_pes`` PEs stay free after it starts; any other job may start only if it runs at most
    ``large_limit_s``.  None for a PE threshold means a quarter of the machine (T3D: 32 of 128).
    """

    shift_s: float = 12 * HOUR
    large_pes: int | None = None
    free_pes: int | None = None
    large_limit_s: float = 600.0
    small_limit_s: float = 4 * HOUR
    starts_prime: bool = True


@dataclass(frozen=True)
class PolicyConfig:
    """What a policy is built from.

    ``pes``: PEs of the machine; ``mpl``: rows of the matrix (policies without time slicing
    may fix it; 0, ``matrix.UNBOUNDED``: as many as the jobs need); ``timeslice``: T in
    seconds; ``allocator``: ``buddy`` or ``first-fit``;
    ``spin``: the shim's spin time in seconds (fixed for ics, MAX_spin for fcs; None for the
    policy's default); ``memory``: memory-aware admission, if any; ``prime``: the prime-time
    settings; ``overrun``: what happens to a job that outlives its runtime estimate under the
    batch policies, ``kill`` (killed at its estimate, as a batch system kills at the requested
    time) or ``run`` (it runs on and the reservations are recomputed around it);
    ``classes``: the job classes of the ``t3d`` scheduler; ``variation``: T3E psched's adaptive
    slice, ``timeslice + switch time x variation`` (0: a fixed slice); ``balance_s``: seconds
    between the load balancer's passes (0: none) and ``migration_delay_s`` how long a job whose
    migration failed or was made by hand is left alone (T3E psched); ``app_max`` and
    ``abs_app_max``: the ``psched`` scheduler's GRM limits, normal and all applications per PE;
    ``defrag_s``: the split psched schedulers' de-fragmenting, seconds a job at the head of the
    queue may wait before nothing behind it launches until it does (0: never).
    """

    pes: int
    mpl: int = 2
    timeslice: float = TIMESLICE_S
    allocator: str = "buddy"
    spin: float | None = None
    memory: MemoryAdmission | None = None
    prime: PrimeTime = field(default_factory=PrimeTime)
    overrun: str = "kill"
    classes: ClassTable | None = None
    variation: float = 0.0
    balance_s: float = 0.0
    migration_delay_s: float = 10.0
    app_max: int = 1
    abs_app_max: int = 2
    defrag_s: float = 0.0

    def describe(self) -> dict[str, Any]:
        """The settings as plain data (for ``config.json``)."""
        return dataclasses.asdict(self)
