"""Spreads independent runs over a Slurm cluster: what ``engine.spreading`` does with local
processes, done with Slurm jobs, for runs that do not measure the machine (simulations).

``spreading(settings, root, workers)`` gives a function like ``map`` (``spread(work, items)``)
whose every call pickles ``work`` and each item under ``root`` (a directory the compute nodes
share), submits one job array of one CPU a task (``sbatch --array``), and yields each result as
its task writes it, in any order.  A task runs ``python -m testbed.experiments.slurm_spread
DIR`` in this code's tree, which runs its item and writes its result whole or not at all.  A
task that ends without a result (it failed, hit its time limit, or was cancelled) fails the
call with a ``SlurmError`` naming its log.  Leaving the ``with`` (or Ctrl-C) cancels, by job
id, the arrays it submitted that are still queued or running.  ``workers`` is ignored: Slurm
decides how many tasks run at once.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from testbed.experiments.engine import Spread
from testbed.experiments.slurm import Settings, SlurmError, slurm_command

CODE = Path(__file__).resolve().parents[2]
POLL_S = 2.0


def sbatch_args(settings: Settings, name: str, count: int, folder: Path) -> list[str]:
    """The ``sbatch`` command line of a job array of ``count`` one-CPU tasks named ``name``
    that run the items pickled in ``folder`` (its logs in ``folder/log``)."""
    args = ["sbatch", "--parsable", "--job-name", name, "--array", f"0-{count - 1}",
            "--ntasks=1", "--cpus-per-task=1", f"--chdir={CODE}",
            "--output", str(folder / "log" / "%a.out")]
    args += [f"--partition={settings.partition}"] if settings.partition else []
    args += [f"--account={settings.account}"] if settings.account else []
    args += [f"--time={settings.time}"] if settings.time else []
    return [*args, *settings.options, str(folder / "task.sh")]


def result_path(folder: Path, index: int) -> Path:
    """Where task ``index`` of ``folder`` writes its result."""
    return folder / f"result-{index}.pickle"


def run_task(folder: Path, index: int) -> None:
    """Run item ``index`` pickled in ``folder`` with the work pickled there, and write its
    result (a temporary file renamed into place, so a result is whole or absent)."""
    work = pickle.loads((folder / "work.pickle").read_bytes())
    item = pickle.loads((folder / f"item-{index}.pickle").read_bytes())
    target = result_path(folder, index)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_bytes(pickle.dumps(work(item)))
    os.replace(partial, target)


def _prepare(folder: Path, work: Callable[[Any], Any], items: list[Any]) -> None:
    (folder / "log").mkdir()
    (folder / "work.pickle").write_bytes(pickle.dumps(work))
    for index, item in enumerate(items):
        (folder / f"item-{index}.pickle").write_bytes(pickle.dumps(item))
    (folder / "task.sh").write_text(
        "#!/bin/sh\n# written by testbed.experiments.slurm_spread\nexec "
        + shlex.join([sys.executable, "-m", "testbed.experiments.slurm_spread", str(folder)])
        + "\n")


def queued(job: str) -> bool:
    """Whether Slurm job ``job`` (any of its array tasks) is still queued or running."""
    listed = slurm_command(["squeue", "-h", "-j", job, "-o", "%i"], check=False)
    return listed.returncode == 0 and bool(listed.stdout.strip())


@contextlib.contextmanager
def spreading(settings: Settings, root: Path, workers: int = 1,
              log: Callable[[str], None] | None = None) -> Iterator[Spread]:
    """A ``map`` over Slurm tasks (see the module), each call's files in a directory of its
    own under ``root``, removed once every result is in (kept, with the tasks' logs, when one
    is missing); ``log``, if given, is told of each job array submitted.  ``workers`` is
    ignored."""
    del workers
    submitted: list[str] = []

    def spread(work: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        todo = list(items)
        if not todo:
            return
        root.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="spread-", dir=root.resolve()))
        _prepare(folder, work, todo)
        job = slurm_command(sbatch_args(settings, folder.name, len(todo), folder)
                            ).stdout.strip().split(";")[0]
        submitted.append(job)
        if log is not None:
            log(f"Slurm job {job}: {len(todo)} one-CPU tasks ({folder})")
        left = set(range(len(todo)))
        while left:
            gone = not queued(job)
            for index in sorted(left):
                if result_path(folder, index).is_file():
                    left.discard(index)
                    yield pickle.loads(result_path(folder, index).read_bytes())
            if gone and left:
                first = min(left)
                raise SlurmError(f"Slurm job {job}: {len(left)} of {len(todo)} tasks ended "
                                 f"without a result (see {folder / 'log' / f'{first}.out'})")
            if left:
                time.sleep(POLL_S)
        shutil.rmtree(folder)

    try:
        yield spread
    finally:
        running = [job for job in submitted if queued(job)]
        if running:
            slurm_command(["scancel", *running], check=False)


def main(argv: list[str] | None = None) -> int:
    """What each array task runs: ``python -m testbed.experiments.slurm_spread DIR`` runs
    the item of ``SLURM_ARRAY_TASK_ID``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or "SLURM_ARRAY_TASK_ID" not in os.environ:
        print("usage: python -m testbed.experiments.slurm_spread DIR (as a Slurm array task)",
              file=sys.stderr)
        return 2
    run_task(Path(args[0]), int(os.environ["SLURM_ARRAY_TASK_ID"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
