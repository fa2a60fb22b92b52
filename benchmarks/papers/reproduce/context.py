"""What every paper's module is given: the size of the run, where runs and plots go, and
where progress is told."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.papers.reproduce.claims import Finding, unavailable
from testbed.experiments import engine

T = TypeVar("T")
SIZES = ("tiny", "quick", "full")
"""``tiny``: a few seconds, to show the code works (tests); ``quick``: what fits in 25
minutes on 2 cores; ``full``: the sizes the benchmarks document (under 2 hours on 2 cores)."""


def sized(size: str, tiny: T, quick: T, full: T) -> T:
    """The one of ``tiny``, ``quick`` and ``full`` that goes with ``size``."""
    return {"tiny": tiny, "quick": quick, "full": full}[size]


@dataclass
class Context:
    """One reproduction: its ``size``, the directory for run directories (``runs``), the
    report's directory (``out``, where plots are copied), how many processes a simulated
    paper may spread its runs over (``workers``) and what spreads them (``spreading``: the
    experiments engine's on this machine, or Slurm's)."""

    size: str
    runs: Path
    out: Path
    workers: int = 1
    spreading: Callable[[int], AbstractContextManager[engine.Spread]] = engine.spreading
    started: float = field(default_factory=time.monotonic)

    def spread(self, work: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """``work`` on every item, spread by ``spreading`` over ``workers``; the results as
        they finish, in any order (``work`` and the items must pickle)."""
        with self.spreading(self.workers) as spread:
            yield from spread(work, items)

    def pick(self, tiny: T, quick: T, full: T) -> T:
        """The value for this run's size."""
        return sized(self.size, tiny, quick, full)

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

    def attempt(self, part: Callable[[Context], dict[str, Finding]], keys: Iterable[str]
                ) -> dict[str, Finding]:
        """``part``'s findings; when it fails, every claim of ``keys`` says so ("cannot
        tell"), so that one experiment's failure loses no other's rows.  A worker process
        that died or was stopped (``BrokenProcessPool``) ends the whole run instead, so that
        an interrupted paper is not kept as failed rows."""
        try:
            return part(self)
        except BrokenProcessPool:
            raise
        except Exception as err:  # noqa: BLE001 - any failure becomes the rows' reason
            self.log(f"failed: {err!r}")
            return {key: Finding("-", unavailable(f"the run failed: {failure(err)}"))
                    for key in keys}


def failure(err: Exception) -> str:
    """A failure in a few words: a failed ``testbed`` command by its subcommand and exit
    status (its run directory holds the rest), anything else by its message."""
    if isinstance(err, subprocess.CalledProcessError) and isinstance(err.cmd, list):
        words = [str(w) for w in err.cmd]
        command = words[words.index("testbed.cli") + 1] if "testbed.cli" in words else words[0]
        where = words[words.index("--out") + 1] if "--out" in words else ""
        return f"testbed {command} exited {err.returncode}" + (f" ({where})" if where else "")
    return str(err)[:200] or type(err).__name__
