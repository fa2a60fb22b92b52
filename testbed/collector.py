"""The cyclic garbage collector held off while a large input is read."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector for the body, then let it run again if it ran
    before: for reading a workload or a log, which makes objects a job that all live on and
    none in cycles (reference counting frees the rest), where each pass of the collector
    would walk every one made so far."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
