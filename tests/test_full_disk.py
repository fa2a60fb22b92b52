"""A run whose directory's file system fills up: one line naming the path and the error, exit
code 5, every rank killed, the log readable up to the failure, nothing left behind."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest
from conftest import TESTBED, launch_dirs, run_processes

from testbed.emulation.launch_tmp import hydra_files
from testbed.events import EventLog, WriteFailed, read_events
from testbed.results.report import _write_atomic

pytestmark = [pytest.mark.realtime, pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a small file system needs root")]


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs mounted under ``tmp_path``, unmounted after the test."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mount)],
                   check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(mount: Path, leave: int) -> None:
    """Fill ``mount`` up to ``leave`` bytes of free space."""
    info = os.statvfs(mount)
    free = info.f_bavail * info.f_frsize
    with open(mount / "filler", "wb") as f:
        f.write(b"\0" * max(0, free - leave))


def test_a_full_disk_stops_the_run_with_one_line_and_leaves_nothing(tmp_path, small_fs, workload):
    path = workload("0 2 bsp --work 60 --pattern nn\n0 2 bsp --work 60 --pattern aa\n")
    _fill(small_fs, 24 * 1024)
    before = hydra_files()
    done = subprocess.run([*TESTBED, "run", str(path), "--pes", "2", "--timeslice", "0.02",
                           "--out", str(small_fs / "r")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 5, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"testbed: cannot write {small_fs / 'r'}") and \
        lines[0].endswith("No space left on device"), lines[0]
    evs = read_events(small_fs / "r" / "events.jsonl")
    assert evs[0]["event"] == "run_start" and len(evs) > 1
    rid = evs[0]["run_id"]
    assert run_processes(rid) == [] and rid not in launch_dirs().values()
    assert hydra_files() <= before
    assert not (small_fs / "r" / "summary.json").exists()
    assert not list((small_fs / "r").glob(".*.tmp"))


def test_the_event_log_raises_once_and_then_writes_nothing(small_fs):
    _fill(small_fs, 0)
    log = EventLog(small_fs / "events.jsonl")
    with pytest.raises(WriteFailed) as failed:
        for i in range(10_000):
            log.emit("interrupted", float(i), signal="SIGINT")
    assert failed.value.errno == errno.ENOSPC and str(small_fs) in str(failed.value)
    log.emit("interrupted", 1.0, signal="SIGINT")   # nothing more, and no second error
    log.close()


def test_results_are_written_whole_or_not_at_all(small_fs):
    (small_fs / "summary.json").write_text("old\n")
    _fill(small_fs, 0)
    with pytest.raises(WriteFailed, match="No space left on device"):
        _write_atomic(small_fs / "summary.json", "x" * 100_000)
    assert (small_fs / "summary.json").read_text() == "old\n"
    assert not list(small_fs.glob(".*.tmp"))
