"""The machine: PEs (CPUs the coordinator owns) grouped into nodes."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass


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

    @property
    def pes(self) -> int:
        """Number of PEs."""
        return len(self.cpus)

    @property
    def oversubscribed(self) -> bool:
        """True when more PEs than host CPUs: figures are then not dedicated-machine figures."""
        return len(self.cpus) > len(self.host_cpus)

    def node_of(self, pe: int) -> Node:
        """The node that holds PE ``pe``."""
        return self.nodes[pe // len(self.nodes[0].pes)]

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
