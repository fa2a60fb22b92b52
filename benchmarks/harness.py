"""What the benchmarks share: their common options and the shape of their ``main`` (``parser``,
``Session``), run ``testbed`` commands and workload texts, read the results, and write pages.

A benchmark's ``main`` is its own options on ``parser(...)``, a ``Session`` (where its files
go, when it started, the command that ran it), its measuring, then ``session.page`` for
``--markdown`` and ``emit`` for ``--json``."""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed import cli
from testbed.events import read_events

REPO = Path(__file__).resolve().parents[1]
"""The checkout these benchmarks belong to."""
CLIENTS = Path(__file__).resolve().parent / "clients"
"""The MPI programs the benchmarks run (``benchmarks/clients``)."""


def parser(module: str, description: str | None, *, quick: str | None = None,
           json_help: str | None = "one JSON record per line",
           out_help: str | None = "the directory of the runs and files (default runs/NAME-TIME)",
           markdown_help: str | None = "also write the results as a Markdown page",
           raw: bool = False) -> argparse.ArgumentParser:
    """The argument parser of ``python -m module`` with the options every benchmark shares,
    each when its help is given: ``--quick``, ``--json``, ``--out DIR`` and ``--markdown
    PAGE`` (by default all but ``--quick``); ``raw`` keeps the description's line breaks (a
    module docstring)."""
    p = argparse.ArgumentParser(
        prog=f"python -m {module}", description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter if raw else argparse.HelpFormatter)
    if quick is not None:
        p.add_argument("--quick", action="store_true", help=quick)
    if json_help is not None:
        p.add_argument("--json", action="store_true", help=json_help)
    if out_help is not None:
        p.add_argument("--out", type=Path, default=None, help=out_help)
    if markdown_help is not None:
        p.add_argument("--markdown", type=Path, default=None, metavar="PAGE",
                       help=markdown_help)
    return p


@dataclass
class Session:
    """One run of a benchmark: ``module``, the arguments it was given (``argv``; None: this
    process's own), its directory ``out`` (None when it writes none) and when it started
    (``started``, s since the epoch)."""

    module: str
    argv: list[str] | None
    out: Path | None = None
    started: float = field(default_factory=time.time)

    @classmethod
    def start(cls, module: str, argv: list[str] | None, out: Path | None,
              name: str | None) -> Session:
        """A session starting now; with ``name`` its directory is ``out`` or a fresh
        ``runs/NAME-TIME``, made."""
        if name is not None:
            out = out or default_out(name)
            out.mkdir(parents=True, exist_ok=True)
        return cls(module, argv, out)

    @property
    def command(self) -> str:
        """The command line that ran it (``invocation``)."""
        return invocation(self.module, self.argv)

    def measured(self, unit: str = "s") -> str:
        """When it started and how long it has taken (``measured``)."""
        return measured(self.started, unit)

    def page(self, path: Path | None, text: Callable[[], str]) -> None:
        """Write the page ``text()`` when one was asked for (``write_page``)."""
        write_page(path, text)


def measured(started: float, unit: str = "s") -> str:
    """When a measurement began (``started``, s since the epoch) and how long it has taken,
    as a page says it (``unit``: s or min)."""
    took = time.time() - started
    length = f"{took / 60:.0f} min" if unit == "min" else f"{took:.0f} s"
    return f"{time.strftime('%Y-%m-%d %H:%M %Z', time.localtime(started))}, {length}"


def write_page(path: Path | None, text: Callable[[], str]) -> None:
    """Write the page ``text()`` to ``path`` (``write_whole``) when a page was asked for
    (``path`` not None: a benchmark's ``--markdown``)."""
    if path is not None:
        write_whole(path, text())


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (its directory made) whole or not at all: a temporary file
    beside it renamed into place, so a reader (or another process rebuilding the same file)
    never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text)
    os.replace(partial, path)


def emit(records: Iterable[dict[str, Any]], as_json: bool, indent: int | None = None) -> bool:
    """With ``as_json``, print each record as JSON (non-ASCII as it is): one line, or with
    ``indent`` over several (a benchmark whose record is one whole document); whether it
    did."""
    if as_json:
        for record in records:
            print(json.dumps(record, indent=indent, ensure_ascii=False))
    return as_json


def run_workload(text: str, *options: str, out: Path | None = None,
                 checkout: Path | None = None) -> Path:
    """Run ``text`` as a workload with ``testbed run OPTIONS``; return the run directory.

    Without ``out`` the directory is a fresh temporary one that the caller may delete; with it,
    the workload is written beside ``out`` and the run goes into ``out``.  ``checkout``: run
    the testbed of that checkout instead of this one (see ``testbed``).
    """
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="testbed-bench-")) / "run"
    out.parent.mkdir(parents=True, exist_ok=True)
    workload = out.with_name(f"{out.name}.workload")
    workload.write_text(text)
    testbed("run", str(workload), *options, "--out", str(out), checkout=checkout)
    return out


_TESTBED_OF: list[Path] = []


@contextlib.contextmanager
def testbed_of(checkout: Path) -> Iterator[None]:
    """Within it, every ``testbed`` command given no checkout of its own (``run_workload``'s
    too, so those of the measuring functions other benchmarks share) is ``checkout``'s: how a
    benchmark measures another checkout with this code, through that checkout's command
    line."""
    _TESTBED_OF.append(checkout)
    try:
        yield
    finally:
        _TESTBED_OF.pop()


def testbed(*args: str, checkout: Path | None = None) -> None:
    """Run one ``testbed`` command quietly, failing loudly.  A simulation runs in this process
    (the run library); an emulated run runs in a process of its own, because its coordinator
    takes real-time priority, signal handlers and the orphans of its ranks, which the process
    measuring it must not.  With ``checkout`` (or inside ``testbed_of``) the command is that
    checkout's ``python -m testbed`` (its directory first on ``PYTHONPATH``: its coordinator,
    node managers and shim), in a process of its own; its error output is passed on, and a
    ``CalledProcessError`` when it fails carries it (``stderr``: what that checkout lacks)."""
    checkout = checkout or (_TESTBED_OF[-1] if _TESTBED_OF else None)
    if checkout is not None:
        done = subprocess.run([sys.executable, "-m", "testbed", *args], cwd=checkout,
                              env={**os.environ, "PYTHONPATH": str(checkout)},
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        sys.stderr.write(done.stderr)
        done.check_returncode()
        return
    if args[0] == "simulate":
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(list(args))
        if code != 0:
            raise RuntimeError(f"testbed {' '.join(args)} exited {code}")
        return
    subprocess.run([sys.executable, "-m", "testbed.cli", *args], check=True,
                   stdout=subprocess.DEVNULL)


def default_out(name: str) -> Path:
    """A fresh run directory path under ``runs/`` for experiment ``name``."""
    return Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A plain-text table with right-aligned columns."""
    cells = [header] + [[f"{c:.3f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True))
                     for r in cells)


def jobs(run_dir: Path) -> list[dict[str, str]]:
    """The rows of ``jobs.csv``."""
    with open(run_dir / "jobs.csv") as f:
        return list(csv.DictReader(f))


def events(run_dir: Path) -> list[dict[str, Any]]:
    """The events of the run's ``events.jsonl`` (``testbed.events.read_events``: a torn last
    line is skipped)."""
    return read_events(run_dir / "events.jsonl")


def now_iso() -> str:
    """The local time now, as the pages and JSON of the benchmarks record it (ISO 8601, with
    the UTC offset)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def host() -> dict[str, Any]:
    """The host the figures were measured on."""
    return {"cpus": len(os.sched_getaffinity(0)), "python": sys.version.split()[0],
            "uname": " ".join(os.uname())}


def checkout_type(needs: str) -> Callable[[str], Path]:
    """An argparse type for ``--against CHECKOUT``: the path, when it is a checkout of the
    testbed holding the file ``needs`` (relative to it); else argparse's error naming both."""
    def checkout(text: str) -> Path:
        path = Path(text)
        if not (path / needs).is_file():
            raise argparse.ArgumentTypeError(f"{text}: not a checkout of the testbed (no "
                                             f"{needs})")
        return path
    return checkout


def lacking(err: subprocess.CalledProcessError) -> str:
    """What another checkout's command lacks, as a failed run of it (``testbed``'s
    ``CalledProcessError``) says it: the last line of its error output, or its exit."""
    said = (err.stderr or "").strip().splitlines()
    return said[-1][:300] if said else f"exit {err.returncode}"


def commit_of(checkout: Path) -> str:
    """The commit ``checkout`` has out (short), with ``+`` when its files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True,
                              text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")


def invocation(module: str, argv: list[str] | None) -> str:
    """The command line that ran ``python -m module`` with ``argv`` (this process's own
    arguments when None)."""
    return f"python -m {module} " + " ".join(sys.argv[1:] if argv is None else argv)


def page_head(title: str, module: str, command: str, machine: dict[str, Any] | str,
              measured: str) -> list[str]:
    """The first lines of a Markdown page a benchmark writes: its title, the command that
    wrote it, the host (as ``host()`` gives it, or said already: a page assembled from runs
    on several hosts) and when it was measured."""
    where = machine if isinstance(machine, str) else (
        f"{machine['uname']}, {machine['cpus']} CPUs, Python {machine['python']}")
    return [f"# {title}", "", f"Written by `{command}` (`{module}`); do not edit by hand.", "",
            f"- host: {where}", f"- measured: {measured}"]


def markdown_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A Markdown table (its lines) of ``rows`` under ``header``; floats with 3 decimals."""
    cells = [[f"{c:.3f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in cells)]


def median(values: list[float]) -> float:
    """The median of ``values``."""
    return statistics.median(values)


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    """Write ``rows`` under ``header`` as CSV."""
    import csv as _csv

    with open(path, "w", newline="") as f:
        writer = _csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def bsp_footprint_mb(mem_mb: float) -> float:
    """Peak memory of one benchmark rank walking ``mem_mb`` MiB: the array plus the Python
    interpreter, mpi4py and the walk library (measured: about 36 MiB)."""
    return mem_mb + 36.0


def line_plot(ax: Any, rows: list[list[Any]], series: tuple[str, ...], key: int, x: int, y: int,
              labels: tuple[str, str]) -> None:
    """One line per series (rows whose column ``key`` is the series' name) of column ``y``
    against column ``x``."""
    for name in series:
        points = sorted((r[x], r[y]) for r in rows if r[key] == name)
        ax.plot([p for p, _ in points], [q for _, q in points], marker="o", label=name)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.grid(alpha=0.3)


def save_figure(fig: Any, path: Path, title: str) -> None:
    """Title, lay out, write (PNG) and close a figure."""
    import matplotlib.pyplot as plt

    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
