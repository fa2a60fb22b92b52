"""T3D job classes (Feitelson and Jette 1997, §4.2, Table 1) as plain data, scaled to a machine.

A class has a priority (higher is served first), a maximum wait (s) after which processors are
reserved for a waiting job, a do-not-disturb multiplier (s per PE: a job of n PEs is never
preempted before it has held its PEs ``multiplier x n`` seconds since it was last loaded), a
processor limit (PEs its running jobs may hold together) and whether its jobs may be preempted
at all (T3D: debug and benchmark jobs never are).  Global limits: the large-job size (a job of
at least that many PEs is large), the PEs large jobs may hold together, the PEs one job may ask
for, and the system limit (PEs of jobs running or preempted together: the over-allocation).

Reading the TOML file is ``testbed.class_tables``' job; this module only holds and scales.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JobClass:
    """One class: ``priority``, ``max_wait_s`` (s), ``dnd_multiplier_s`` (s per PE),
    ``pe_limit`` (PEs), ``preemptable``."""

    name: str
    priority: int
    max_wait_s: float
    dnd_multiplier_s: float
    pe_limit: int
    preemptable: bool = True


@dataclass(frozen=True)
class ClassTable:
    """Classes by name, the global limits (PEs) and the default class of interactive jobs
    (submitted through the service) and of batch jobs (workload lines)."""

    classes: dict[str, JobClass]
    large_size: int
    large_limit: int
    job_limit: int
    system_limit: int
    interactive: str = "interactive"
    batch: str = "production"

    def of(self, name: str, interactive: bool) -> JobClass:
        """The class called ``name``, or the default for the job's kind when ``name`` is
        empty; raises ``KeyError`` for an unknown name."""
        return self.classes[name or (self.interactive if interactive else self.batch)]

    def scaled(self, pes: int, reference_pes: int, time_scale: float) -> ClassTable:
        """The table for a machine of ``pes`` PEs: every PE limit times ``pes /
        reference_pes`` (rounded, at least 1), every time times ``time_scale``."""

        def size(value: int) -> int:
            return max(1, round(value * pes / reference_pes))

        classes = {name: dataclasses.replace(c, max_wait_s=c.max_wait_s * time_scale,
                                             dnd_multiplier_s=c.dnd_multiplier_s * time_scale,
                                             pe_limit=size(c.pe_limit))
                   for name, c in self.classes.items()}
        return dataclasses.replace(self, classes=classes, large_size=size(self.large_size),
                                   large_limit=size(self.large_limit),
                                   job_limit=size(self.job_limit),
                                   system_limit=max(pes, size(self.system_limit)))

    def describe(self) -> dict[str, Any]:
        """The table as plain data (for ``config.json``)."""
        return dataclasses.asdict(self)
