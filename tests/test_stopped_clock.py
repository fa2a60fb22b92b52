"""The rank's stopped clock reads its record where the C header puts the fields."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from testbed import stopped_clock
from testbed.policies.spin import Spin
from testbed.shim_record import RECORD_SIZE, Record, ffi, lib
from testbed.stopped_clock import StoppedClock


def test_layout_matches_the_header() -> None:
    assert stopped_clock.RECORD_SIZE == RECORD_SIZE
    assert ffi.offsetof("struct tb_record", "stopped_s") == stopped_clock.STOPPED_OFFSET
    assert stopped_clock.STOPPED_OFFSET % 8 == 0
    assert ffi.offsetof("struct tb_record", "magic") == 0
    assert ffi.offsetof("struct tb_record", "version") == 4
    assert (stopped_clock.TB_MAGIC, stopped_clock.TB_VERSION) == (lib.TB_MAGIC, lib.TB_VERSION)


@pytest.fixture
def record(monkeypatch: pytest.MonkeyPatch) -> Iterator[Record]:
    run, job = f"clocktest{os.getpid()}", "j1"
    monkeypatch.setenv("TESTBED_RUN", run)
    monkeypatch.setenv("TESTBED_JOB", job)
    made = Record.create(stopped_clock.record_path(run, job, 3), 0, job, 3, "", Spin("forever"))
    yield made
    made.remove()


def test_the_clock_leaves_out_the_time_stopped(record: Record) -> None:
    clock = StoppedClock(3)
    assert clock.stopped() == 0.0
    record.add_stopped(2.5)
    assert clock.stopped() == 2.5
    assert clock.now() <= time.monotonic() - 2.5
    clock.close()
    assert clock.stopped() == 0.0


def test_no_record_means_no_time_stopped(record: Record) -> None:
    other_rank = StoppedClock(4)
    assert other_rank.stopped() == 0.0
    record.c.magic = 0
    wrong_magic = StoppedClock(3)
    assert wrong_magic.stopped() == 0.0
