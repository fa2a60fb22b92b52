"""Each launch's temporary directory, and the files hydra's launcher leaves in /tmp."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from testbed.emulation import launch_tmp
from testbed.emulation.launch_tmp import hydra_files
from testbed.emulation.mpi_info import detect_mpi


@pytest.mark.realtime
def test_a_launch_has_its_own_tmpdir_and_its_launchers_files_go_with_it():
    dirs = launch_tmp.LaunchDirs("testbed-unit-nm0")
    before = hydra_files()
    env = dirs.env("j1", {**os.environ, "LD_PRELOAD": ""})
    directory = Path(env["TMPDIR"])
    assert directory.parent == dirs.root and directory.is_dir()
    assert env["LD_PRELOAD"] == dirs.preload and dirs.preload
    # Bound to a CPU, hydra writes its topology to /tmp/hydra_hwloc_xmlfile_*.
    done = subprocess.run([detect_mpi().mpiexec, "-n", "1", "-bind-to", "user:0",
                           sys.executable, "-c", "import os; print(os.environ['TMPDIR'])"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(directory)
    noted = (directory / launch_tmp.RECORD_NAME).read_text().split()
    assert noted and all(p.startswith("/tmp/hydra_hwloc_xmlfile_") for p in noted)
    removed = dirs.remove("j1")
    assert set(removed) <= set(noted) and not any(os.path.exists(p) for p in noted)
    assert not directory.exists() and hydra_files() <= before
    dirs.close()
    assert not dirs.root.exists()


@pytest.mark.realtime          # LaunchDirs builds the preload library when it is missing
def test_only_regular_files_of_ours_directly_in_a_temporary_directory_are_removed(tmp_path):
    fd, own = tempfile.mkstemp(prefix="testbed-unit-", dir="/tmp")
    os.close(fd)
    link = Path("/tmp") / f"testbed-unit-link-{os.getpid()}"
    target = tmp_path / "keep.txt"
    target.write_text("keep")
    link.symlink_to(target)
    nested = tmp_path / "nested.txt"
    nested.write_text("keep")
    try:
        record = tmp_path / "record"
        record.write_text(f"{own}\n{link}\n{nested}\n/etc/hostname\nrelative.txt\n")
        dirs = launch_tmp.LaunchDirs("testbed-unit-nm0")
        dirs.dirs["j1"] = tmp_path / "launch"
        dirs.dirs["j1"].mkdir()
        (tmp_path / "launch" / launch_tmp.RECORD_NAME).write_text(record.read_text())
        assert dirs.remove("j1") == [own]
        assert not os.path.exists(own) and link.is_symlink() and target.read_text() == "keep"
        assert Path("/etc/hostname").exists()
        dirs.close()
    finally:
        link.unlink(missing_ok=True)
        Path(own).unlink(missing_ok=True)


@pytest.mark.realtime          # LaunchDirs builds the preload library when it is missing
def test_the_watchdogs_sweep_removes_a_runs_launch_directories():
    dirs = launch_tmp.LaunchDirs("testbed-sweepunit-nm3")
    directory = Path(dirs.env("j7", {})["TMPDIR"])
    fd, own = tempfile.mkstemp(prefix="testbed-unit-", dir="/tmp")
    os.close(fd)
    (directory / launch_tmp.RECORD_NAME).write_text(own + "\n")
    launch_tmp.remove_run("sweepunit")
    assert not dirs.root.exists() and not os.path.exists(own)
