"""Sizes as users write them (``512M``, ``2G``, ``300``): one reader for workload files, the
command line and mpirun's options."""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 2**20, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text: str) -> int:
    """Bytes in ``text``: a number with an optional K, M, G or T (powers of 1024); a bare
    number means MiB.  Raises ``ValueError`` naming the text."""
    match = _SIZE.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"not a size: {text!r} (use e.g. 512M or 2G)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])
