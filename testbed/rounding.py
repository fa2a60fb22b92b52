"""Rounding floats to decimal places as ``round`` does, bit for bit, but cheaper.

``round(x, n)`` converts ``x`` to a decimal string and back (about half a microsecond); the
simulator rounds a few figures of every job it logs.  ``rounded`` scales by ``10 ** n`` and
rounds to an integer instead, and falls back to ``round`` when the scaled value lies so near a
half that the product's own rounding error could decide which way it goes.
"""

from __future__ import annotations

_SCALE = tuple(10.0 ** digits for digits in range(16))
# Below this a scaled value's rounding error (half an ulp) is under 1/32: a value more than
# 0.4 from a half-integer rounds as the exact product x * 10 ** n does.
_EXACT_BELOW = 4e14


def rounded(value: float, digits: int) -> float:
    """``round(value, digits)`` for a float ``value`` and 0 <= ``digits`` <= 15: the same
    float."""
    scale = _SCALE[digits]
    scaled = value * scale
    if 0.0 < scaled < _EXACT_BELOW:
        whole = round(scaled)
        if -0.4 < scaled - whole < 0.4:
            # whole and scale are exact doubles: the quotient is the double nearest the
            # decimal whole / 10 ** digits, which is what round returns
            return whole / scale
    return round(value, digits)
