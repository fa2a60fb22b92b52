"""Spreads independent runs over worker processes on this machine: the engine behind
``testbed experiment run --workers N``, for anything whose runs do not measure the machine
(simulated runs; emulated runs stay one at a time).

``spreading(workers)`` gives a function like ``map`` (``spread(work, items)``) that yields the
results as they finish, in any order: one after another in this process when ``workers`` is 1,
else over a pool of ``workers`` processes.  ``work`` and the items must pickle (a module-level
function, ``functools.partial`` of one, a dataclass).  Leaving the ``with`` cancels the items
not started; a worker dies at once on SIGTERM or SIGINT and the caller handles them, so a
Ctrl-C stops the parent, which stops the pool.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

Spread = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]


def _worker_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cores() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


@contextlib.contextmanager
def spreading(workers: int) -> Iterator[Spread]:
    """A ``map`` over ``workers`` processes (this process alone when 1) whose results come
    as they finish; items not started are cancelled on leaving."""
    if workers <= 1:
        yield map
        return
    pool = ProcessPoolExecutor(workers, initializer=_worker_signals)
    try:
        yield lambda work, items: (f.result() for f in
                                   as_completed([pool.submit(work, item) for item in items]))
    finally:
        pool.shutdown(cancel_futures=True)
