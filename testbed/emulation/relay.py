"""A node manager's place in the fan-out tree (``testbed.emulation.tree``): its links to its
parent and children, and what it does with a broadcast.

A broadcast comes from the parent, or from the MM itself when this node is one of the MM's
children (or adopted).  The relay forwards it to its children first, then has it carried out
here, and sends its ``Gathered`` (its own answers and its children's) up to whoever sent it
once every child's has come in or the child is gone.  If the MM sends the same broadcast
again (its parent was lost), the answer goes to the MM instead, at once if it is complete; a
*solo* re-send (the MM's second try) is answered with this node's own answers alone, without
forwarding.  A broadcast straight from the MM means the MM has adopted this node: the parent
link is dropped.  When the parent link ends by itself the MM is told (``Orphaned``), so that
it sends to this node from then on; a child whose link ends is dropped, its subtree left to
the MM.

The tree links use the run's key as the MM's link does (``testbed.emulation.auth``): the
parent connects to each child, which accepts only its parent.
"""

from __future__ import annotations

import pickle
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection

from testbed.emulation import auth, tree
from testbed.emulation.messages import Gathered, NodeSetup, Orphaned, Push, TreeHello

LINK_TIMEOUT = 60.0
# a tree link whose peer has not read for this long (its socket buffer full) is dropped
# rather than holding up the broadcast
FORWARD_TIMEOUT = 1.0


class ManagerLost(Exception):
    """The connection to the machine manager ended."""


def to_manager(mm: Connection, msg: object) -> None:
    """Send ``msg`` to the MM; ``ManagerLost`` if it cannot be."""
    try:
        mm.send(msg)
    except OSError as err:
        raise ManagerLost from err


@dataclass(frozen=True)
class TreeLink:
    """What a tree link is registered under in the NM's selector: a child's index, or None
    for the parent."""

    child: int | None


def link_up(setup: NodeSetup, listener: socket.socket, key: bytes
            ) -> tuple[Connection | None, dict[int, Connection]]:
    """This NM's tree links: accept its parent's connection on ``listener`` (none for the
    MM's children), then connect to each child; ``SystemExit`` if the parent does not connect
    within ``LINK_TIMEOUT`` s.  Parents connect before they accept, children accept before
    they connect, so the tree links up from the top down."""
    parent = None
    if setup.parent is not None:
        parent = _accept_parent(listener, key, setup.parent, time.monotonic() + LINK_TIMEOUT)
    kids = {}
    for index, host, port in setup.children:
        link = Client((host, port), authkey=key)
        link.send(TreeHello(setup.index))
        kids[index] = link
    for link in [*kids.values(), *([parent] if parent else [])]:
        auth.set_timeout(link, socket.SO_SNDTIMEO, FORWARD_TIMEOUT)
    return parent, kids


def _accept_parent(listener: socket.socket, key: bytes, parent: int,
                   deadline: float) -> Connection:
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SystemExit(f"nm_daemon: node {parent} (the parent) did not connect within "
                             f"{LINK_TIMEOUT:g} s")
        listener.settimeout(left)
        try:
            sock, _ = listener.accept()
        except TimeoutError:
            continue
        greeting, link = auth.accept(sock, key)
        if greeting == TreeHello(parent):
            return link
        link.close()


@dataclass
class _Gathering:
    """The broadcast this node handled last: where its answer goes, this node's own answers,
    everything gathered so far, and the children still to answer."""

    seq: int
    source: Connection
    own: Gathered
    result: Gathered
    waiting: set[int]


class Relay:
    """The tree links of node ``index``, registered in ``selector``; ``clock()``: the NM's
    clock (s since the run started)."""

    def __init__(self, index: int, mm: Connection, parent: Connection | None,
                 children: dict[int, Connection], selector: selectors.BaseSelector,
                 clock: Callable[[], float]) -> None:
        self.index = index
        self.mm = mm
        self.parent = parent
        self.children = dict(children)
        self.selector = selector
        self.clock = clock
        self.current: _Gathering | None = None
        if parent is not None:
            selector.register(parent, selectors.EVENT_READ, TreeLink(None))
        for child, link in self.children.items():
            selector.register(link, selectors.EVENT_READ, TreeLink(child))

    def ready(self, link: TreeLink, act: Callable[[object], list[object]]) -> None:
        """Read what came on ``link``: a broadcast from the parent, or a child's answer."""
        if link.child is not None:
            self._from_child(link.child)
            return
        assert self.parent is not None
        try:
            data = self.parent.recv_bytes()
        except (EOFError, OSError):
            self._drop_parent(ended=True)
            return
        if tree.header(data)[0]:
            self.take(data, self.parent, act)

    def take(self, data: bytes, source: Connection,
             act: Callable[[object], list[object]]) -> None:
        """Handle a broadcast frame from ``source`` (the MM or the parent): forward it, have
        ``act`` carry it out here, answer when the subtree has; or answer the MM's repeat
        (a repeat from the parent is ignored)."""
        seq, solo, stamp = tree.header(data)
        if source is self.mm and not solo and self.parent is not None:
            self._drop_parent(ended=False)
        current = self.current
        if current is not None and seq <= current.seq:
            if seq == current.seq and solo:
                to_manager(self.mm, current.own)
            elif seq == current.seq and source is self.mm:
                current.source = source
                if not current.waiting:
                    self._up(current)
            return
        lost, payload = tree.body(data)
        msg = pickle.loads(payload)
        if lost:
            for child in [c for c in self.children if lost >> c & 1]:
                self._drop_child(child)
        ready = self.clock()
        sent = self._forward(data) if self.children and not solo else []
        send = (self.clock() - ready) / len(sent) if sent else None
        own = tree.gathered(seq, self.index, act(msg), ready - stamp, send)
        self.current = _Gathering(seq, self.mm if solo else source, own, own, set(sent))
        if not sent:
            self._up(self.current)

    def _forward(self, data: bytes) -> list[int]:
        """Send the frame to every child, each stamped with its send time; the children sent
        to."""
        frame = bytearray(data)
        sent = []
        for child, link in list(self.children.items()):
            tree.restamp(frame, self.clock())
            try:
                link.send_bytes(frame)
            except OSError:
                self._drop_child(child)
            else:
                sent.append(child)
        return sent

    def _from_child(self, child: int) -> None:
        try:
            got = self.children[child].recv()
        except (EOFError, OSError):
            self._drop_child(child)
            return
        current = self.current
        if (isinstance(got, Gathered) and current is not None and got.seq == current.seq
                and child in current.waiting):
            current.result = tree.merge(current.result, got)
            current.waiting.discard(child)
            if not current.waiting:
                self._up(current)

    def _up(self, current: _Gathering) -> None:
        """Send the subtree's answer up; to the MM if the parent link fails."""
        if current.source is self.mm:
            to_manager(self.mm, current.result)
            return
        try:
            current.source.send(current.result)
        except OSError:
            self._drop_parent(ended=True)       # which sends it to the MM instead

    def _drop_child(self, child: int) -> None:
        link = self.children.pop(child)
        self.selector.unregister(link)
        link.close()
        current = self.current
        if current is not None and child in current.waiting:
            current.waiting.discard(child)
            if not current.waiting:
                self._up(current)

    def _drop_parent(self, ended: bool) -> None:
        """Close the parent link: the MM has adopted this node, or the link ``ended`` by
        itself; then the MM is told, and the answer owed to the parent goes to the MM."""
        if self.parent is None:
            return
        self.selector.unregister(self.parent)
        self.parent.close()
        parent, self.parent = self.parent, None
        if not ended:
            return
        to_manager(self.mm, Push([Orphaned()]))
        current = self.current
        if current is not None and current.source is parent:
            current.source = self.mm
            if not current.waiting:
                to_manager(self.mm, current.result)

    def close(self) -> None:
        """Close every tree link (the NM is exiting)."""
        for link in [*self.children.values(), *([self.parent] if self.parent else [])]:
            link.close()
