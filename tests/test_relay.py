"""A node manager's part in the fan-out tree (``relay.Relay``) over real socket pairs, in this
process: its MM, parent and children are the test's ends of them."""

from __future__ import annotations

import pickle
import selectors
import socket
from collections.abc import Iterator
from multiprocessing.connection import Connection

import pytest

from testbed.emulation import tree
from testbed.emulation.messages import (
    Gathered,
    Heartbeat,
    Orphaned,
    Push,
    SwitchDone,
)
from testbed.emulation.relay import Relay, TreeLink


def _pair() -> tuple[Connection, Connection]:
    ours, theirs = socket.socketpair()
    return Connection(ours.detach()), Connection(theirs.detach())


class _Place:
    """Node 1's relay with the MM, a parent (node 0) unless ``root``, and children 2 and 3;
    ``mm``, ``parent`` and ``kids`` are the far ends.  Its node manager answers a heartbeat
    with a ``SwitchDone`` and notes, when it acts, whether each child had the frame already."""

    def __init__(self, root: bool = False) -> None:
        self.selector = selectors.DefaultSelector()
        mm_near, self.mm = _pair()
        parent_near, self.parent = (None, None) if root else _pair()
        pairs = {child: _pair() for child in (2, 3)}
        self.kids = {child: far for child, (_, far) in pairs.items()}
        self.relay = Relay(1, mm_near, parent_near, {c: near for c, (near, _) in pairs.items()},
                           self.selector, lambda: 10.0)
        self.links = [mm_near, *([parent_near] if parent_near else []),
                      *(near for near, _ in pairs.values()), self.mm,
                      *([self.parent] if self.parent else []), *self.kids.values()]
        self.acted: list[tuple[object, list[bool]]] = []

    def act(self, msg: object) -> list[object]:
        self.acted.append((msg, [far.poll(0) for far in self.kids.values()]))
        return [SwitchDone(1, 1, ("j1",), (), 0.001)]

    def send(self, seq: int, solo: bool = False, lost: int = 0, from_mm: bool = False) -> None:
        data = tree.frame(seq, solo, 9.5, pickle.dumps(Heartbeat(seq, 0, frozenset(), 9.0)), lost)
        self.relay.take(data, self.relay.mm if from_mm else self.relay.parent, self.act)

    def answer(self, child: int, seq: int) -> None:
        self.kids[child].send(Gathered(seq, 1 << child,
                                       SwitchDone(seq, child, (), ("j2",), 0.004), [], 0.002,
                                       None))
        self.relay.ready(TreeLink(child), self.act)

    def close(self) -> None:
        self.selector.close()
        for link in self.links:
            link.close()


@pytest.fixture
def place() -> Iterator[type[_Place]]:
    made: list[_Place] = []

    def make(root: bool = False) -> _Place:
        made.append(_Place(root))
        return made[-1]
    yield make      # type: ignore[misc]
    for p in made:
        p.close()


def test_a_broadcast_is_forwarded_before_it_is_acted_on_and_answered_for_the_subtree(place):
    p = place()
    p.send(1)
    assert len(p.acted) == 1 and p.acted[0][1] == [True, True]    # both children had it
    for far in p.kids.values():
        assert tree.header(far.recv_bytes()) == (1, False, 10.0)  # stamped by this node
    assert not p.parent.poll(0)                     # waits for the children's answers
    p.answer(2, 1)
    assert not p.parent.poll(0)
    p.answer(3, 1)
    got = p.parent.recv()
    assert got == Gathered(1, 0b1110, SwitchDone(1, 2, ("j1",), ("j2",), 0.004), [], 0.5, 0.0)
    assert not p.mm.poll(0)


def test_a_repeat_from_the_mm_takes_the_node_from_its_parent_and_gets_the_answer(place):
    p = place()
    p.send(1)
    p.answer(2, 1)
    p.answer(3, 1)
    through_parent = p.parent.recv()
    p.send(1, from_mm=True)                 # the parent was lost: the MM sends it again
    assert p.mm.recv() == through_parent and len(p.acted) == 1
    with pytest.raises(EOFError):           # the parent link is dropped
        p.parent.recv()
    p.send(2, from_mm=True)                 # from now on the broadcasts come from the MM
    p.answer(2, 2)
    p.answer(3, 2)
    assert p.mm.recv().seq == 2


def test_a_solo_resend_is_answered_with_this_nodes_own_answers_at_once(place):
    p = place()
    p.send(1)                               # the children never answer
    p.send(1, solo=True, from_mm=True)
    assert p.mm.recv() == Gathered(1, 0b10, SwitchDone(1, 1, ("j1",), (), 0.001), [], 0.5, 0.0)
    for far in p.kids.values():
        far.recv_bytes()
    p.send(2, solo=True, from_mm=True)      # never came through the tree: acted on, alone
    assert len(p.acted) == 2 and not any(far.poll(0) for far in p.kids.values())
    assert p.mm.recv().nodes == 0b10
    assert p.relay.parent is not None       # a solo re-send does not take it from its parent


def test_an_ended_parent_link_is_told_to_the_mm_and_the_answer_goes_there(place):
    p = place()
    p.send(1)
    p.parent.close()
    p.relay.ready(TreeLink(None), p.act)
    assert p.mm.recv() == Push([Orphaned()])
    p.answer(2, 1)
    p.answer(3, 1)
    assert p.mm.recv().nodes == 0b1110


def test_children_lost_or_gone_are_not_waited_for(place):
    p = place(root=True)
    p.send(1, lost=1 << 3, from_mm=True)    # the MM found node 3 lost: not forwarded to
    with pytest.raises(EOFError):
        p.kids[3].recv_bytes()
    assert tree.header(p.kids[2].recv_bytes())[0] == 1
    p.kids[2].close()                       # node 2 dies before answering
    p.relay.ready(TreeLink(2), p.act)
    assert p.mm.recv().nodes == 0b10
    assert p.relay.children == {}


def test_an_old_or_repeated_broadcast_from_the_parent_is_not_acted_on_again(place):
    p = place()
    p.send(2)
    p.send(1)
    p.send(2)
    assert len(p.acted) == 1
