"""One link between the machine manager and a node manager, whichever side of a socket it is on.

The executor speaks to every node manager through ``NodeLink``: it sends messages and gets
the replies (broadcasts to node managers on other hosts go down their fan-out tree,
``testbed.emulation.remote.Fanout``), takes in what the node pushed (its launchers' ends,
class changes, paging records, pids, samples of memory and of the ranks), waits for one job's
launcher to end, and closes.  A node manager on another host
(``testbed.emulation.remote.RemoteNode``) is reached over an authenticated connection and may
be lost; one in the machine manager's own process (``LocalNode``, below) is called directly
and never is.  Both are watched the same way: each has one descriptor, readable when the
node has something to give.
"""

from __future__ import annotations

import selectors
import time
from typing import Protocol

from testbed.emulation.messages import LaunchFailure, LaunchJob, NodeSample, PidInfo, Termination
from testbed.emulation.node_manager import NodeManager
from testbed.machine import Node


class NodeLink(Protocol):
    """What the executor needs of a node manager.  Times are ``time.monotonic()`` seconds."""

    node: Node
    name: str
    lost: str | None
    launched: set[str]
    ended: dict[str, Termination]

    def fileno(self) -> int:
        """A descriptor that is readable when the node has pushed something."""
        ...

    def handle(self, msg: object) -> list[object]:
        """Send ``msg`` and return the replies."""
        ...

    def pump(self) -> None:
        """Take in what the node has pushed, without waiting."""
        ...

    def discover(self) -> list[PidInfo]:
        """Ranks found since the last call."""
        ...

    def sample(self) -> NodeSample | None:
        """What the node sampled since the last call (memory by job, each rank's activity),
        or None."""
        ...

    def awaiting_pids(self) -> bool:
        """Whether the machine manager should poll soon for ranks not found yet."""
        ...

    def take_ended(self) -> list[Termination]:
        """The jobs whose launcher here ended since the last call."""
        ...

    def take_changes(self) -> list[object]:
        """Class changes and paging records since the last call."""
        ...

    def await_end(self, job: str, deadline: float) -> Termination | None:
        """Wait until ``deadline`` for ``job``'s launcher here to end; its termination, or None
        (not launched here, lost, or not ended in time)."""
        ...

    def disconnect(self) -> None:
        """Stop talking to a lost node."""
        ...

    def close(self) -> None:
        """The run is over: the node sweeps what is left."""
        ...


class Pushed:
    """What a node gives without being asked, kept until the executor takes it: the ends of
    launchers here (``launched`` are those still running) and the other changes."""

    def __init__(self) -> None:
        self.launched: set[str] = set()
        self.ended: dict[str, Termination] = {}
        self.changes: list[object] = []

    def take_ended(self) -> list[Termination]:
        """The jobs whose launcher here ended since the last call."""
        ended, self.ended = list(self.ended.values()), {}
        return ended

    def take_changes(self) -> list[object]:
        """The class changes and paging records since the last call."""
        changes, self.changes = self.changes, []
        return changes


class LocalNode(Pushed):
    """A node manager in the machine manager's own process, as a ``NodeLink``: messages are
    handled at once, and its launchers' pidfds and shim event socket sit in a selector of its
    own, whose descriptor the executor watches."""

    lost: str | None = None

    def __init__(self, manager: NodeManager) -> None:
        super().__init__()
        self.manager = manager
        self.node = manager.node
        self.name = f"node {manager.node.index}"
        self.selector = selectors.DefaultSelector()
        if manager.events is not None:
            self.selector.register(manager.events, selectors.EVENT_READ, None)

    def fileno(self) -> int:
        """The selector's descriptor: readable when a launcher ended or a rank blocked."""
        return self.selector.fileno()

    def handle(self, msg: object) -> list[object]:
        """Handle ``msg``; a launch here has its launcher watched."""
        replies = self.manager.handle(msg)      # type: ignore[arg-type]
        if isinstance(msg, LaunchJob):
            fd = self.manager.launcher_fd(msg.job)
            if fd is not None and not any(isinstance(r, LaunchFailure) for r in replies):
                self.selector.register(fd, selectors.EVENT_READ, msg.job)
                self.launched.add(msg.job)
        return replies

    def pump(self) -> None:
        """Reap the launchers that ended and read the ranks' block events."""
        for key, _ in self.selector.select(0):
            if key.data is None:
                self.changes.extend(self.manager.shim_events())
            else:
                self._reap(key.data)

    def _reap(self, job: str) -> Termination:
        fd = self.manager.launcher_fd(job)
        if fd is not None:
            self.selector.unregister(fd)
        self.launched.discard(job)
        term = self.ended[job] = self.manager.reap(job)
        return term

    def discover(self) -> list[PidInfo]:
        """Ranks the node manager found since the last call."""
        return self.manager.discover()

    def sample(self) -> NodeSample | None:
        """The node manager's sample, when one is due (else None)."""
        return self.manager.sample()

    def awaiting_pids(self) -> bool:
        """Whether ranks of a job launched here are still to be found."""
        return self.manager.awaiting_pids()

    def await_end(self, job: str, deadline: float) -> Termination | None:
        """Wait until ``deadline`` for ``job``'s launcher (killed meanwhile) to exit and reap
        it; its termination (None if it was not launched here)."""
        if job in self.ended:
            return self.ended.pop(job)
        fd = self.manager.launcher_fd(job)
        if fd is None:
            return None
        with selectors.DefaultSelector() as ready:
            ready.register(fd, selectors.EVENT_READ)
            ready.select(max(0.0, deadline - time.monotonic()))
        self._reap(job)
        return self.ended.pop(job)

    def disconnect(self) -> None:
        """Nothing: a node in this process is never lost."""

    def close(self) -> None:
        """Remove the node's records and launch directories."""
        self.selector.close()
        self.manager.close()
