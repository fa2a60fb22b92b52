"""The fan-out tree of node managers: its shape, the MM's routes around lost nodes, and the
gathering of answers, with given numbers."""

from __future__ import annotations

import pytest

from testbed.emulation import tree
from testbed.emulation.messages import Gathered, SwitchDone
from testbed.policies.node import ClassChange


def test_the_tree_is_cut_as_slurm_cuts_a_host_list():
    assert tree.parents(4, 2) == (None, 0, None, 2)
    # 7 nodes in 2: runs of 4 and 3; the first's rest (3 nodes) in runs of 2 and 1
    assert tree.parents(7, 2) == (None, 0, 1, 0, None, 4, 4)
    assert tree.parents(3, 32) == (None, None, None)
    assert tree.parents(4, 1) == (None, 0, 1, 2)
    assert tree.children(tree.parents(7, 2)) == ((1, 3), (2,), (), (), (5, 6), (), ())
    assert [tree.depth(tree.parents(n, 2)) for n in (0, 1, 2, 3, 6, 7, 14, 15)] == \
        [0, 1, 1, 2, 2, 3, 3, 4]
    with pytest.raises(ValueError, match="at least 1"):
        tree.parents(4, 0)


def test_1024_hosts_are_two_levels_at_width_32_and_ten_at_width_2():
    assert tree.depth(tree.parents(1024, 32)) == 2
    assert tree.depth(tree.parents(1056, 32)) == 2        # 32 + 32 * 32
    assert tree.depth(tree.parents(1057, 32)) == 3
    assert tree.depth(tree.parents(1024, 2)) == 10


@pytest.mark.parametrize("width", [2, 3, 7, 32, 50])
def test_every_node_forwards_to_at_most_width_and_the_tree_is_as_shallow_as_that_allows(width):
    for count in range(1, 600):
        shape = tree.parents(count, width)
        kids = tree.children(shape)
        assert sum(p is None for p in shape) <= width
        assert max(len(k) for k in kids) <= width
        levels, reach, level = 0, 0, 1        # least d with width + ... + width^d >= count
        while reach < count:
            level *= width
            reach, levels = reach + level, levels + 1
        assert tree.depth(shape) == levels
        sizes = [1] * count
        for node in reversed(range(count)):
            if shape[node] is not None:
                sizes[shape[node]] += sizes[node]
        for node, parent in enumerate(shape):   # a subtree is the run of indices after its root
            assert parent is None or parent < node < parent + sizes[parent]


def test_a_lost_nodes_live_children_become_the_managers_and_keep_their_subtrees():
    routes = tree.Routes(tree.parents(7, 2))       # (None, 0, 1, 0, None, 4, 4)
    assert routes.direct == [0, 4]
    routes.lose(0)
    assert routes.direct == [1, 3, 4] and routes.lost_mask == 0b1
    routes.lose(1)
    assert routes.direct == [2, 3, 4]              # 2 was 1's child; it is now the MM's
    routes.lose(3)                                 # a leaf: nothing to adopt
    assert routes.direct == [2, 4]
    version = routes.version
    routes.adopt(5)                                # its link to 4 ended
    routes.adopt(5)
    routes.adopt(3)                                # lost: not adopted
    routes.lose(3)
    assert routes.direct == [2, 4, 5] and routes.version == version + 1
    routes.lose(4)
    assert routes.direct == [2, 5, 6] and routes.lost == {0, 1, 3, 4}
    assert routes.lost_mask == 0b11011


def test_a_lost_child_is_not_adopted_again_when_its_parent_is_lost():
    routes = tree.Routes(tree.parents(4, 1))       # a chain 0 - 1 - 2 - 3
    routes.lose(1)
    routes.lose(0)
    assert routes.direct == [2]


def test_a_frame_carries_its_number_solo_flag_and_send_time():
    data = tree.frame(7, True, 1.25, b"payload")
    assert tree.header(data) == (7, True, 1.25)
    assert tree.body(data) == (0, b"payload")
    lost = tree.frame(7, False, 1.25, b"payload", lost=1 << 1000 | 1 << 3)
    assert tree.body(lost) == (1 << 1000 | 1 << 3, b"payload")
    again = bytearray(lost)
    tree.restamp(again, 2.5)
    assert tree.header(again) == (7, False, 2.5) and tree.body(again) == tree.body(lost)


def _done(node: int, stopped: tuple[str, ...], continued: tuple[str, ...],
          latency: float) -> SwitchDone:
    return SwitchDone(3, node, stopped, continued, latency)


def test_answers_merge_into_one_heartbeat_answer_and_the_others_by_node():
    change = ClassChange("j1", 0, "CS", "F", {})
    a = tree.gathered(3, 0, [_done(0, ("j1",), ("j2",), 0.002), change], 0.0004, 0.00001)
    b = tree.gathered(3, 1, [_done(1, ("j3",), ("j2",), 0.005)], 0.0009, None)
    merged = tree.merge(a, b)
    assert merged == Gathered(3, 0b11, _done(1, ("j1", "j3"), ("j2",), 0.005), [(0, change)],
                              0.0009, 0.00001)
    assert tree.merge_done(merged.done, merged.done) == merged.done      # idempotent


def test_the_mm_counts_each_nodes_answers_once_however_often_they_come():
    change0 = ClassChange("j1", 0, "CS", "F", {})
    change2 = ClassChange("j1", 2, "CS", "F", {})
    sub = tree.merge(tree.gathered(5, 1, [_done(1, (), ("j1",), 0.003)], 0.001, None),
                     tree.gathered(5, 2, [change2], 0.002, None))
    got = tree.Collected()
    got.add(tree.gathered(5, 0, [_done(0, ("j2",), (), 0.001), change0], 0.0005, None))
    got.add(tree.gathered(5, 2, [change2], 0.002, None))     # node 2 alone, then again in sub
    got.add(sub)
    got.add(sub)
    assert got.covered == 0b111
    assert got.replies() == [_done(1, ("j2",), ("j1",), 0.003), change0, change2]
    assert (got.hop, got.send) == (0.002, None)
