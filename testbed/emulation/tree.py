"""The fan-out tree of node managers across hosts (Slurm's ``TreeWidth``): its shape, the
routes the machine manager sends a broadcast on, the frames that carry messages down, and
what comes back up.

The MM sends a broadcast (heartbeat, kill, release, move, shutdown) to at most ``width``
node managers; each forwards it to its own children (at most ``width``) before acting on it,
and sends one ``Gathered`` for its whole subtree up to whoever sent it the broadcast once its
children's have come in.  The MM's own work per broadcast is then ``width`` sends and at most
``width`` answers, whatever the number of hosts; the tree is as shallow as ``width`` allows
(``depth``: the least d with width + width^2 + ... + width^d >= n, at most
ceil(log_width n)).  Requests to one node (launch, set-up, close) and what an NM pushes by
itself go straight between the MM and that NM, over the connection every NM keeps to the MM.

A lost node is routed around: its live children become the MM's own (``Routes.lose``), as
does a node whose link to its parent ended (``Routes.adopt``); each keeps its subtree.

Everything here is pure: no sockets, no clocks.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from testbed.emulation.messages import Gathered, SwitchDone

DEFAULT_WIDTH = 4

# a frame down the tree: the broadcast's number (0: a request to this node alone, answered by
# a Reply), whether the node is to answer for itself alone without forwarding (the MM's second
# try), the sender's clock when it sent the frame (s since the run started), and the length in
# bytes of the lost mask after it; then the mask (the nodes the MM has found lost, a bit each,
# little-endian; empty while none is), then the pickled message.  The mask rides outside the
# pickle so that a heartbeat is pickled and unpickled as it is, the dearest part of its path
HEADER = struct.Struct("<QBdH")
STAMP = struct.Struct("<d")
STAMP_AT = 9        # the send time's offset in HEADER


def parents(count: int, width: int) -> tuple[int | None, ...]:
    """Each of ``count`` nodes' parent (None: the MM) in the tree where the MM and every node
    have at most ``width`` (>= 1) children.  As Slurm splits a host list: the nodes are cut into
    at most ``width`` runs of nearly equal length, the first node of each run is a child and the
    rest of its run is its subtree, cut in the same way.  Every subtree is a run of indices."""
    if width < 1:
        raise ValueError(f"a tree width must be at least 1, got {width}")
    result: list[int | None] = [None] * count
    runs: list[tuple[int | None, int, int]] = [(None, 0, count)]
    while runs:
        parent, first, size = runs.pop()
        share, extra = divmod(size, width)
        for k in range(min(width, size)):
            length = share + (k < extra)
            result[first] = parent
            if length > 1:
                runs.append((first, first + 1, length - 1))
            first += length
    return tuple(result)


def children(tree: tuple[int | None, ...]) -> tuple[tuple[int, ...], ...]:
    """Each node's children, in index order."""
    kids: list[list[int]] = [[] for _ in tree]
    for node, parent in enumerate(tree):
        if parent is not None:
            kids[parent].append(node)
    return tuple(tuple(k) for k in kids)


def depth(tree: tuple[int | None, ...]) -> int:
    """The number of levels below the MM (0 for no nodes; 1 when the MM reaches every node)."""
    levels: list[int] = []
    for parent in tree:         # a parent comes before its children
        levels.append(1 if parent is None else levels[parent] + 1)
    return max(levels, default=0)


@dataclass
class Routes:
    """Which node managers the MM sends a broadcast to itself: its children in ``tree`` and the
    nodes it has adopted (the live children of a lost node, a node whose parent link ended),
    in index order.  ``version`` changes whenever they do."""

    tree: tuple[int | None, ...]
    lost: set[int] = field(default_factory=set)
    lost_mask: int = 0
    direct: list[int] = field(default_factory=list)
    version: int = 0

    def __post_init__(self) -> None:
        self.kids = children(self.tree)
        self.direct = [node for node, parent in enumerate(self.tree) if parent is None]

    def lose(self, node: int) -> None:
        """``node`` is lost: the MM stops sending to it and adopts its live children."""
        if node in self.lost:
            return
        self.lost.add(node)
        self.lost_mask |= 1 << node
        adopted = [k for k in self.kids[node] if k not in self.lost]
        self.direct = sorted({*self.direct, *adopted} - {node})
        self.version += 1

    def adopt(self, node: int) -> None:
        """``node``'s link to its parent ended: the MM sends to it itself."""
        if node not in self.lost and node not in self.direct:
            self.direct = sorted([*self.direct, node])
            self.version += 1


def frame(seq: int, solo: bool, stamp: float, payload: bytes, lost: int = 0) -> bytes:
    """A frame down the tree: the header, the ``lost`` mask, then ``payload`` (a pickled
    message)."""
    mask = lost.to_bytes((lost.bit_length() + 7) // 8, "little")
    return HEADER.pack(seq, solo, stamp, len(mask)) + mask + payload


def header(data: bytes | bytearray) -> tuple[int, bool, float]:
    """A frame's broadcast number, solo flag and send time."""
    seq, solo, stamp, _ = HEADER.unpack_from(data)
    return seq, bool(solo), stamp


def body(data: bytes | bytearray) -> tuple[int, memoryview]:
    """A frame's lost mask and its message's pickle (a view into ``data``)."""
    end = HEADER.size + HEADER.unpack_from(data)[3]
    return int.from_bytes(data[HEADER.size:end], "little"), memoryview(data)[end:]


def restamp(data: bytearray, stamp: float) -> None:
    """Set the send time of the frame in ``data`` to ``stamp``."""
    STAMP.pack_into(data, STAMP_AT, stamp)


def gathered(seq: int, node: int, replies: list[object], hop: float,
             send: float | None) -> Gathered:
    """One node's answers to broadcast ``seq`` as a ``Gathered``."""
    done = next((r for r in replies if isinstance(r, SwitchDone)), None)
    items = [(node, r) for r in replies if not isinstance(r, SwitchDone)]
    return Gathered(seq, 1 << node, done, items, hop, send)


def merge(a: Gathered, b: Gathered) -> Gathered:
    """The answers of both (of the same broadcast, from different nodes)."""
    return Gathered(a.seq, a.nodes | b.nodes, merge_done(a.done, b.done), a.items + b.items,
                    max(a.hop, b.hop), _larger(a.send, b.send))


def merge_done(a: SwitchDone | None, b: SwitchDone | None) -> SwitchDone | None:
    """Two heartbeat answers as one: every job stopped or continued in either, the slower's
    node and latency.  Merging an answer in twice changes nothing."""
    if a is None or b is None:
        return a or b
    slower = a if a.latency >= b.latency else b
    return SwitchDone(a.seq, slower.node, tuple(sorted({*a.stopped, *b.stopped})),
                      tuple(sorted({*a.continued, *b.continued})), slower.latency)


def _larger(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


@dataclass
class Collected:
    """What the MM has gathered for one broadcast: the nodes answered (a bit each), their
    answers, and the slowest hop and forwarding.  A node's answers count once, however often
    they come (a re-sent broadcast can bring them twice)."""

    covered: int = 0
    done: SwitchDone | None = None
    items: list[tuple[int, object]] = field(default_factory=list)
    hop: float | None = None
    send: float | None = None

    def add(self, got: Gathered) -> None:
        """Take in ``got``'s answers from nodes not answered yet."""
        new = got.nodes & ~self.covered
        if not new:
            return
        self.covered |= got.nodes
        self.done = merge_done(self.done, got.done)
        self.items += [(node, item) for node, item in got.items if new >> node & 1]
        self.hop = _larger(self.hop, got.hop)
        self.send = _larger(self.send, got.send)

    def replies(self) -> list[object]:
        """The merged heartbeat answer, then the other replies in node order."""
        head: list[object] = [self.done] if self.done is not None else []
        return head + [item for _, item in sorted(self.items, key=lambda pair: pair[0])]
