"""Scheduling policies, registered by name, each built from one ``PolicyConfig``."""

from __future__ import annotations

from testbed.policies.base import Action, JobRequest, Launch, Migrate, Policy, Requeue, Run
from testbed.policies.config import MemoryAdmission, PolicyConfig, PrimeTime
from testbed.policies.conservative import Conservative
from testbed.policies.cow import Afcfs, Lgfs
from testbed.policies.easy import Easy
from testbed.policies.fcfs import Fcfs
from testbed.policies.fcs import Fcs
from testbed.policies.gang import Gang
from testbed.policies.ics import Ics
from testbed.policies.local import Local
from testbed.policies.prime import Prime
from testbed.policies.psched import Psched, PschedSplit
from testbed.policies.t3d import T3d

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls for cls in (Fcfs, Gang, Local, Ics, Fcs, Easy, Conservative, Prime,
                              Afcfs, Lgfs, T3d, Psched, PschedSplit)}


def make_policy(name: str, config: PolicyConfig) -> Policy:
    """Build the policy called ``name`` from ``config``; raises ``ValueError`` naming the known
    ones."""
    try:
        cls = POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(POLICIES))
        raise ValueError(f"unknown scheduler {name!r} (known: {known})") from None
    return cls(config)


__all__ = ["POLICIES", "Action", "JobRequest", "Launch", "MemoryAdmission", "Migrate", "Policy",
           "PolicyConfig", "PrimeTime", "Requeue", "Run", "make_policy"]
