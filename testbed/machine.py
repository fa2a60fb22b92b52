"""The machine: PEs (CPUs the coordinator owns) grouped into nodes, or the hosts of a cluster.

On one host the PEs are this process's CPUs, split into equal emulated nodes.  With hosts (a
hostfile or a Slurm allocation) every host is a node with its slots as PEs.  Hosts are
*emulated* when they all run on this machine (hydra's ``fork`` launcher): their PEs then take
this machine's CPUs round-robin, as one host's do.  On real hosts ``cpus[pe]`` is the PE's
index on its host, which that host's node manager maps to the CPUs it may use.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from testbed.hosts import Host


@dataclass(frozen=True)
class Node:
    """One node: an index and the PE indices it holds."""

    index: int
    pes: tuple[int, ...]


@dataclass(frozen=True)
class Machine:
    """PEs 0..n-1, each bound to one host CPU, split into equal nodes.

    ``cpus[pe]`` is the host CPU that PE ``pe`` runs on.  When there are more PEs than CPUs the
    CPUs are reused round-robin and the machine is ``oversubscribed``.
    """

    cpus: tuple[int, ...]
    nodes: tuple[Node, ...]
    host_cpus: tuple[int, ...]
    hostname: str
    hosts: tuple[Host, ...] = ()
    launcher: str | None = None
    emulated_hosts: bool = False

    @property
    def pes(self) -> int:
        """Number of PEs."""
        return len(self.cpus)

    @property
    def oversubscribed(self) -> bool:
        """True when more PEs than host CPUs: figures are then not dedicated-machine figures.
        (Real hosts have as many PEs as the slots they were given.)"""
        if self.hosts and not self.emulated_hosts:
            return False
        return len(self.cpus) > len(self.host_cpus)

    def node_of(self, pe: int) -> Node:
        """The node that holds PE ``pe``."""
        return next(node for node in self.nodes if pe in node.pes)

    def describe(self) -> dict[str, object]:
        """A JSON-ready description for ``config.json``."""
        return {
            "hostname": self.hostname,
            "pes": self.pes,
            "nodes": len(self.nodes),
            "pes_per_node": len(self.nodes[0].pes),
            "pe_cpus": list(self.cpus),
            "host_cpus": list(self.host_cpus),
            "oversubscribed": self.oversubscribed,
            "hosts": [{"name": h.name, "slots": h.slots} for h in self.hosts] or None,
            "launcher": self.launcher,
            "emulated_hosts": self.emulated_hosts,
        }


def build_machine(pes: int | None = None, nodes: int = 1) -> Machine:
    """Make a machine from this process's CPU affinity mask.

    ``pes`` defaults to the number of CPUs in the mask; ``nodes`` must divide ``pes``.
    Raises ``ValueError`` with a user-facing message on a bad combination.
    """
    host_cpus = tuple(sorted(os.sched_getaffinity(0)))
    count = len(host_cpus) if pes is None else pes
    if count < 1:
        raise ValueError(f"--pes must be at least 1, got {count}")
    if nodes < 1 or count % nodes:
        raise ValueError(f"--nodes {nodes} must be >= 1 and divide the {count} PEs")
    per_node = count // nodes
    return Machine(
        cpus=tuple(host_cpus[pe % len(host_cpus)] for pe in range(count)),
        nodes=tuple(Node(i, tuple(range(i * per_node, (i + 1) * per_node))) for i in range(nodes)),
        host_cpus=host_cpus,
        hostname=socket.gethostname(),
    )


def build_cluster(hosts: tuple[Host, ...], launcher: str | None) -> Machine:
    """A machine of one node per host, each with its slots as PEs, numbered host by host.
    ``launcher`` is hydra's (``fork``: the hosts are emulated on this machine; None: hydra
    chooses, e.g. Slurm's inside an allocation)."""
    host_cpus = tuple(sorted(os.sched_getaffinity(0)))
    emulated = launcher == "fork"
    nodes, cpus, first = [], [], 0
    for index, host in enumerate(hosts):
        pes = tuple(range(first, first + host.slots))
        nodes.append(Node(index, pes))
        cpus += [host_cpus[pe % len(host_cpus)] if emulated else pe - first for pe in pes]
        first += host.slots
    return Machine(cpus=tuple(cpus), nodes=tuple(nodes),
                   host_cpus=host_cpus if emulated else (),
                   hostname=socket.gethostname(), hosts=hosts, launcher=launcher,
                   emulated_hosts=emulated)
