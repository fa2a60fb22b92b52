"""Spreads independent runs over worker processes on this machine: the engine behind
``testbed experiment run --workers N``, for anything whose runs do not measure the machine
(simulated runs; emulated runs stay one at a time).

``spreading(workers)`` gives a function like ``map`` (``spread(work, items)``) that yields the
results as they finish, in any order: one after another in this process when ``workers`` is 1,
else over a pool of ``workers`` processes.  ``work`` and the items must pickle (a module-level
function, ``functools.partial`` of one, a dataclass).  Leaving the ``with`` cancels the items
not started.  Leaving it on an exception (a Ctrl-C, the caller's SIGTERM, a failure) also
stops the items running: the pool's workers ignore SIGINT (a Ctrl-C reaches the whole process
group; the caller decides) and take SIGTERM as ``SystemExit``, which unwinds the item so its
``with`` blocks and ``finally`` clauses run (temporary directories go), and the caller sends
each of its workers SIGTERM.  An item stopped so, by anyone, surfaces in the caller as
``BrokenProcessPool``, as a worker killed outright does.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from testbed.exit_codes import exit_on_sigterm

Spread = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]


def _worker_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_on_sigterm()


def _results(futures: list[Future[Any]]) -> Iterator[Any]:
    """The futures' results as they finish; an item a signal stopped in its worker (its
    ``SystemExit``) as ``BrokenProcessPool``."""
    for future in as_completed(futures):
        error = future.exception()
        if isinstance(error, SystemExit):
            raise BrokenProcessPool(f"a worker process was stopped (exit {error.code})")
        yield future.result()


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
    others = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(workers, initializer=_worker_signals)
    try:
        yield lambda work, items: _results([pool.submit(work, item) for item in items])
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        workers_left = set(multiprocessing.active_children()) - others
        for worker in workers_left:
            worker.terminate()
        for worker in workers_left:
            worker.join()
        raise
    finally:
        pool.shutdown(cancel_futures=True)
