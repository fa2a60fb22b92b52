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
import os
import shutil
import statistics
import time
from pathlib import Path

DEFAULT_PATH = Path.home() / ".local" / "share" / "testbed" / "memory-history.json"


def program_of(argv: tuple[str, ...] | list[str]) -> str:
    """The identity of the program a command runs (absolute executable path, plus the module or
    script for a Python interpreter)."""
    exe = os.path.realpath(shutil.which(argv[0]) or argv[0])
    if os.path.basename(exe).startswith("python") and len(argv) > 1:
        if argv[1] == "-m" and len(argv) > 2:
            return f"{exe} -m {argv[2]}"
        return f"{exe} {os.path.realpath(argv[1])}"
    return exe


def _months_between(earlier: str, later: str) -> int:
    y1, m1 = map(int, earlier.split("-"))
    y2, m2 = map(int, later.split("-"))
    return (y2 - y1) * 12 + (m2 - m1)


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
            self._age(_months_between(stored, self.month))

    def _age(self, months: int) -> None:
        if months <= 0:
            return
        for entry in self.entries.values():
            entry["previous"] = entry["current"] if months == 1 else []
            entry["current"] = []
        self.entries = {k: v for k, v in self.entries.items() if v["previous"]}

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
                spread = statistics.pstdev(values) if len(values) > 1 else 0.0
                return min(max(values), statistics.fmean(values) + 3 * spread), key
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
