"""The testbed command: bad input, exec, report, workload mix."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import PROGRAMS, jobs_csv, run_testbed


@pytest.mark.realtime
@pytest.mark.parametrize(("text", "field"), [
    ("0 1 bsp --work 0.1\nabc 1 bsp\n", "arrival"),
    ("0 1 bsp --work 0.1\n-2 1 bsp\n", "arrival"),
    ("0 1 bsp --work 0.1\n0 1\n", "command"),
    ("0 1 bsp --work 0.1\n0 64 bsp\n", "pes"),
])
def test_malformed_workload_exits_2_and_makes_no_run(tmp_path, workload, text, field):
    path = workload(text)
    done = run_testbed("run", str(path), "--pes", "2", "--out", "out", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{path}:2: field '{field}'" in lines[0]
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()


@pytest.mark.realtime
def test_unknown_scheduler_exits_2(tmp_path, workload):
    done = run_testbed("run", str(workload("0 1 bsp\n")), "--scheduler", "lottery", cwd=tmp_path)
    assert done.returncode == 2 and "unknown scheduler 'lottery'" in done.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.realtime
def test_existing_run_dir_is_never_overwritten(tmp_path, workload):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("x")
    done = run_testbed("run", str(workload("0 1 bsp --work 0\n")), "--out", "out", cwd=tmp_path)
    assert done.returncode == 2 and "not empty" in done.stderr
    assert os.listdir(tmp_path / "out") == ["keep"]


@pytest.mark.realtime
def test_mix_writes_the_same_file_for_the_same_seed(tmp_path):
    args = ("workload", "mix", "--jobs", "20", "--pes", "4", "--load", "0.8", "--seed", "3")
    first = run_testbed(*args, "--compress", "50", cwd=tmp_path)
    second = run_testbed(*args, "--compress", "50", "-o", "mix.txt", cwd=tmp_path)
    assert first.returncode == second.returncode == 0
    assert (tmp_path / "mix.txt").read_text() == first.stdout
    assert "compress=50" in first.stdout.splitlines()[0]


@pytest.mark.realtime
def test_exec_runs_one_mpi_command_and_passes_its_output(tmp_path):
    done = run_testbed("exec", "-n", "2", "--pes", "2", "--out", "x", "--",
                   sys.executable, "-c",
                   "import sys; from mpi4py import MPI; "
                   "sys.stdout.write(f'rank {MPI.COMM_WORLD.Get_rank()}\\n')",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(line for line in done.stdout.splitlines() if line.startswith("rank ")) == \
        ["rank 0", "rank 1"]
    assert jobs_csv(tmp_path / "x")["j1"]["status"] == "done"


@pytest.mark.realtime
def test_exec_passes_the_exit_code_on(tmp_path):
    done = run_testbed("exec", "-n", "1", "--out", "x", "--", sys.executable, "-c",
                   "import sys; sys.exit(7)", cwd=tmp_path)
    assert done.returncode == 7


@pytest.mark.realtime
def test_exec_says_why_a_job_that_could_not_start_failed(tmp_path):
    done = run_testbed("exec", "-n", "2", "--scheduler", "ics", "--out", "x", "--",
                       "/no/such/prog", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "testbed: job j1 ended failed: no such program '/no/such/prog'\n"
    assert jobs_csv(tmp_path / "x")["j1"]["status"] == "failed"


@pytest.mark.realtime
def test_report_rederives_results(tmp_path):
    run_testbed("exec", "-n", "1", "--out", "x", "--", sys.executable, str(PROGRAMS / "noop.py"),
            cwd=tmp_path)
    (tmp_path / "x" / "jobs.csv").unlink()
    done = run_testbed("report", "x", cwd=tmp_path)
    assert done.returncode == 0 and "jobs done/failed" in done.stdout
    assert jobs_csv(tmp_path / "x")["j1"]["status"] == "done"
