"""JSON text built by hand (testbed.json_text): the bytes json.dumps writes, for every value."""

from __future__ import annotations

import json
import math
import random

import pytest

from testbed.json_text import encode, float_text, int_list, str_list, value


class _Float(float):
    pass


class _Int(int):
    pass


SCALARS = [0.0, -0.0, 1.5, -2.25, 1e300, 5e-324, 1e16, 1e-5, 16.336840603858516, math.inf,
           -math.inf, math.nan, 0, -7, 2**80, True, False, None, "", "j1", 'a "quoted"\n',
           "é☃\x00\x1f", _Float(2.5), _Int(3)]


@pytest.mark.parametrize("item", SCALARS + [[], [1, "a", None], {"a": [1.5]}, (1, 2)],
                         ids=repr)
def test_a_value_is_written_as_json_dumps_writes_it(item):
    assert value(item) == json.dumps(item)
    assert encode(item) == json.dumps(item)


@pytest.mark.parametrize("number", [x for x in SCALARS if isinstance(x, float)], ids=repr)
def test_a_float_is_written_as_json_dumps_writes_it(number):
    assert float_text(number) == json.dumps(number)


def test_lists_of_pes_are_written_as_json_dumps_writes_them():
    rng = random.Random(3)
    cases: list[tuple[int, ...] | list[int] | range] = [
        (), (0,), (5,), (1, 2, 3), (3, 2, 1), (0, 2), (-1, 0, 1), (-3,), (True, False),
        (1, True), [7, 8, 9], range(3, 9), (2**70, 1), (70000, 70001), (1, 70000, 2)]
    for _ in range(300):
        start, size = rng.randrange(5000), rng.randrange(1, 300)
        cases.append(tuple(range(start, start + size)))
        cases.append(tuple(sorted(rng.sample(range(5000), size))))
        cases.append(tuple(rng.sample(range(5000), size)))
    for pes in cases:
        assert int_list(pes) == json.dumps(list(pes)), pes


def test_lists_of_names_are_written_as_json_dumps_writes_them():
    for names in [(), ("a",), ["j1", "j22"], ("é", 'q"x', "\n"), ("a", 1), ["x", None]]:
        assert str_list(names) == json.dumps(list(names)), names
