"""The chaos benchmark: its MPI program leaves its loop of barriers on every rank together, and
its check of hydra's files counts only files nobody holds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

import pytest

from benchmarks.reliability import chaos
from testbed.emulation import launch_tmp, procs
from testbed.emulation.launch_tmp import HYDRA_PREFIX
from testbed.emulation.mpi_info import detect_mpi

SKEW_S = 0.3
LIMIT_S = 60


@pytest.mark.realtime
def test_the_chaos_program_ends_on_every_rank_when_the_ranks_start_apart(tmp_path):
    program = tmp_path / "barriers.py"
    program.write_text(chaos.PROGRAM)
    # Rank 1 starts the program SKEW_S after rank 0 (both past MPI_Init), so a rank reading its
    # own clock would want barriers after rank 0 has left the loop.
    skewed = tmp_path / "skewed.py"
    skewed.write_text("import runpy, sys, time\n"
                      "from mpi4py import MPI\n"
                      f"time.sleep({SKEW_S} * MPI.COMM_WORLD.Get_rank())\n"
                      f"sys.argv = [{str(program)!r}, '0.5']\n"
                      f"runpy.run_path({str(program)!r}, run_name='__main__')\n")
    marker = f"test-chaos-{os.getpid()}"
    # the launch's own TMPDIR and a note of hydra's files in /tmp, removed below even when
    # the ranks had to be killed
    dirs = launch_tmp.LaunchDirs("testbed-unit-nm0")
    launcher = subprocess.Popen([detect_mpi().mpiexec, "-n", "2", sys.executable, str(skewed)],
                                env=dirs.env("j1", {**os.environ, procs.MARKER: marker}),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = launcher.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        out, err = "", f"the ranks did not end within {LIMIT_S} s"
    finally:
        procs.kill_marked(marker)
        launcher.wait()
        dirs.close()
    assert launcher.returncode == 0, err
    # the two ranks' unbuffered prints reach the launcher's stdout piece by piece, interleaved
    assert out.count("done") == 2 and sorted(re.findall(r"\d", out)) == ["0", "1"]


def test_a_new_hydra_file_counts_as_left_only_once_no_process_holds_it():
    before = chaos.hydra_files()
    fd, path = tempfile.mkstemp(prefix=HYDRA_PREFIX, dir="/tmp")
    name = os.path.basename(path)
    try:
        assert name not in chaos.left_hydra_files(before)     # as a running launch's file
        os.close(fd)
        fd = -1
        assert name in chaos.left_hydra_files(before)
    finally:
        if fd >= 0:
            os.close(fd)
        os.unlink(path)
