"""What every paper's module is given: the size of the run, where runs and plots go, and
where progress is told."""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SIZES = ("tiny", "quick", "full")
"""``tiny``: a few seconds, to show the code works (tests); ``quick``: what fits in 15
minutes on 2 cores; ``full``: the sizes the benchmarks document."""


@dataclass
class Context:
    """One reproduction: its ``size``, the directory for run directories (``runs``) and the
    report's directory (``out``, where plots are copied)."""

    size: str
    runs: Path
    out: Path
    started: float = field(default_factory=time.monotonic)

    def pick(self, tiny: object, quick: object, full: object) -> object:
        """The value for this run's size."""
        return {"tiny": tiny, "quick": quick, "full": full}[self.size]

    def log(self, message: str) -> None:
        """Tell of progress on stderr, with the seconds since the start."""
        print(f"[{time.monotonic() - self.started:6.0f} s] {message}", file=sys.stderr,
              flush=True)

    def plot(self, source: Path, name: str) -> str:
        """Copy the figure ``source`` beside the report as ``name``; the name (for the
        report), or "" when the benchmark wrote no such figure."""
        if not source.is_file():
            return ""
        self.out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, self.out / name)
        return name
