"""Memory estimates from earlier runs (MEMORY §2.1).

A job is identified by (program, PEs, user), falling back to (program, PEs) and then
(program).  For each identity the file keeps the peak memory per process (MiB) of the jobs that
ended in the current month and in the previous one; when the month changes the current values
become the previous ones, and an identity not seen for two months is dropped (§2.1.2).  The
estimate is min(max of the values, mean + 3 standard deviations) (§2.1.3).

The program of ``python -m MODULE`` and ``python SCRIPT`` is the interpreter with the module
or script, so that Python programs are told apart.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

DEFAULT_PATH = Path.home() / ".local" / "share" / "testbed" / "memory-history.json"

K = TypeVar("K")


def program_of(argv: tuple[str, ...] | list[str]) -> str:
    """The identity of the program a command runs (absolute executable path, plus the module or
    script for a Python interpreter)."""
    exe = os.path.realpath(shutil.which(argv[0]) or argv[0])
    if os.path.basename(exe).startswith("python") and len(argv) > 1:
        if argv[1] == "-m" and len(argv) > 2:
            return f"{exe} -m {argv[2]}"
        return f"{exe} {os.path.realpath(argv[1])}"
    return exe


def months_between(earlier: str, later: str) -> int:
    """How many months ``later`` (``YYYY-MM``) is after ``earlier`` (negative when before)."""
    y1, m1 = map(int, earlier.split("-"))
    y2, m2 = map(int, later.split("-"))
    return (y2 - y1) * 12 + (m2 - m1)


def estimate_of(values: Sequence[float]) -> float:
    """The estimate from earlier ``values`` (any one unit; the estimate is in it): the smaller
    of their largest and their mean plus 3 standard deviations (of the values themselves, the
    population's).  ``ValueError`` without values."""
    if not values:
        raise ValueError("no earlier values to estimate from")
    mean = math.fsum(values) / len(values)
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return min(max(values), mean + 3 * spread)


def aged(entries: dict[K, dict[str, list[float]]], months: int) -> dict[K, dict[str, list[float]]]:
    """``entries`` (an identity's ``current`` and ``previous`` month's values) ``months``
    months later: after one month the current values are the previous ones, after two or
    more there are none, and an identity left without values is dropped.  ``entries`` is left
    as it was."""
    if months <= 0:
        return entries
    return {key: {"current": [], "previous": list(entry["current"])}
            for key, entry in entries.items() if months == 1 and entry["current"]}


class MemoryHistory:
    """The history file at ``path`` as of ``month`` (``YYYY-MM``, default: now)."""

    def __init__(self, path: Path, month: str | None = None) -> None:
        self.path = path
        self.month = month or time.strftime("%Y-%m")
        self.entries: dict[str, dict[str, list[float]]] = {}
        if path.exists():
            try:
                data = json.loads(path.read_text())
                stored, self.entries = data["month"], data["entries"]
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{path}: not a testbed memory history ({err})") from None
            self.entries = aged(self.entries, months_between(stored, self.month))

    @staticmethod
    def keys(program: str, pes: int, user: str) -> list[str]:
        """The identities to look under, most specific first."""
        return [f"{program}|{pes}|{user}", f"{program}|{pes}", program]

    def estimate(self, program: str, pes: int, user: str) -> tuple[float, str] | None:
        """(MiB per process, the identity it came from), or None without history."""
        for key in self.keys(program, pes, user):
            entry = self.entries.get(key)
            values = (entry["current"] + entry["previous"]) if entry else []
            if values:
                return estimate_of(values), key
        return None

    def record(self, program: str, pes: int, user: str, peak_mb: float) -> None:
        """Add a finished job's measured peak memory per process (MiB)."""
        for key in self.keys(program, pes, user):
            entry = self.entries.setdefault(key, {"current": [], "previous": []})
            entry["current"].append(round(peak_mb, 3))

    def save(self) -> None:
        """Write the file (atomically)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps({"month": self.month, "entries": self.entries}, indent=1))
        os.replace(tmp, self.path)
