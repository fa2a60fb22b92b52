"""JSON text exactly as ``json.dumps`` writes it by default (``", "`` and ``": "`` separators,
ASCII with escapes, ``NaN`` and ``Infinity`` allowed), built with less work.

``json.dumps`` sets up a new encoder on every call, which costs more than encoding a small
event; ``encode`` keeps one.  ``value`` (and ``WRITERS``, by type) writes a scalar without any
encoder, and ``int_list`` and ``str_list`` write the lists an event log is full of (a job's
PEs, the jobs a switch ran), so that a writer can build a line by hand and still write the
bytes ``json.dumps`` would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from json.encoder import c_make_encoder, encode_basestring_ascii
from typing import Any


def _not_serializable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


if c_make_encoder is not None:
    _chunks = c_make_encoder(None, _not_serializable, encode_basestring_ascii, None, ": ", ", ",
                             False, False, True)

    def encode(value: Any) -> str:
        """``json.dumps(value)``."""
        return "".join(_chunks(value, 0))
else:                                                   # pragma: no cover (no C speedups)
    encode = json.JSONEncoder(check_circular=False).encode


_float_repr = float.__repr__


def float_text(number: float) -> str:
    """``json.dumps(number)`` for a float."""
    # x - x is 0.0 for finite x only (NaN and the infinities are spelt the JSON way)
    return _float_repr(number) if number - number == 0.0 else encode(number)


class _Writers(dict[type, Callable[[Any], str]]):
    """The function that writes a value of each type: ``WRITERS[type(x)](x)`` is
    ``json.dumps(x)``, through a function in C for str, int, None and bool (``encode`` for
    any type without one of its own)."""

    def __missing__(self, kind: type) -> Callable[[Any], str]:
        return encode


WRITERS = _Writers({str: encode_basestring_ascii, float: float_text, int: int.__repr__,
                    type(None): {None: "null"}.__getitem__,
                    bool: {True: "true", False: "false"}.__getitem__})


def value(item: Any) -> str:
    """``json.dumps(item)`` for any value (``WRITERS``, which a hot caller may use inline)."""
    return WRITERS[type(item)](item)


class _IntTexts:
    """The texts of 0, 1, 2, ... and of runs of them ("3, 4, 5"), kept for ``int_list``."""

    def __init__(self) -> None:
        self.limit = 0
        self.text_of: dict[int, str] = {}
        self.joined = ""
        self.offsets: list[int] = [0]
        self.numbers: tuple[int, ...] = ()
        self.grow(1024)

    def grow(self, limit: int) -> None:
        """Keep texts for 0 .. ``limit`` - 1 at least."""
        limit = max(limit, 2 * self.limit)
        texts = [str(n) for n in range(limit)]
        self.text_of = dict(enumerate(texts))
        self.joined = ", ".join(texts) + ", "
        self.offsets = [0]
        for text in texts:
            self.offsets.append(self.offsets[-1] + len(text) + 2)
        self.numbers = tuple(range(limit))
        self.limit = limit


_ints = _IntTexts()
_MOST_INTS = 1 << 16        # texts kept for numbers below this at most


def int_list(values: Sequence[int]) -> str:
    """``json.dumps(list(values))`` for a sequence of ints (a job's PEs): a run of consecutive
    numbers >= 0 is cut from one long text, other lists of numbers >= 0 are joined from kept
    texts."""
    size = len(values)
    if not size:
        return "[]"
    first, last = values[0], values[-1]
    ints = _ints
    if type(first) is int and type(last) is int and 0 <= first <= last < ints.limit and \
            last - first == size - 1 and ints.numbers[first:last + 1] == tuple(values):
        return f"[{ints.joined[ints.offsets[first]:ints.offsets[last + 1] - 2]}]"
    if set(map(type, values)) != {int}:            # bools are ints that json spells otherwise
        return encode(list(values))
    try:
        return f"[{', '.join(map(ints.text_of.__getitem__, values))}]"
    except KeyError:                                # < 0, or not kept yet
        highest = max(values)
        if min(values) < 0 or highest >= _MOST_INTS:
            return encode(list(values))
        ints.grow(highest + 1)
        return int_list(values)


def str_list(values: Sequence[str]) -> str:
    """``json.dumps(list(values))`` for a sequence of strings (job names)."""
    if not values:
        return "[]"
    try:
        return f"[{', '.join(map(encode_basestring_ascii, values))}]"
    except TypeError:                                   # not all strings
        return encode(list(values))
