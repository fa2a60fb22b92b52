"""A job's every process keeps to its slot: the processes a job spawns (MPI_Comm_spawn) and
those its ranks start are stopped and continued with its ranks."""

from __future__ import annotations

import sys

import pytest
from conftest import PROGRAMS, jobs_csv, run_id, run_processes, run_testbed

from testbed.emulation import procs
from testbed.emulation.launchers import Hydra


def test_a_jobs_other_processes_are_those_named_by_an_mpi_rank():
    envs = {10: {"PATH": "/bin"},                              # hydra's proxy
            11: {"PMI_RANK": "0"}, 12: {"PMI_RANK": "1"},     # the ranks
            13: {"PMI_RANK": "0", "PMI_SPAWNED": "1"},         # a spawned process
            14: {"PMI_RANK": "1"},                             # a child of rank 1
            15: {}}                                            # read mid-exec: nothing
    assert procs.extras(envs, ranks={11, 12}, launcher=Hydra("mpiexec"), local={0, 1}) == [13, 14]


def test_another_nodes_ranks_are_not_this_nodes_extras():
    """Nodes emulated on one host: the node that launched the job sees every rank among its
    launcher's descendants, but rank 1 and its child are node 1's to stop and continue (the
    launching node took them for its own, and stopped and continued them with its own rank)."""
    envs = {11: {"PMI_RANK": "0"}, 12: {"PMI_RANK": "1"},     # rank 0 here, rank 1 on node 1
            13: {"PMI_RANK": "0", "PMI_SPAWNED": "1"},         # a spawned process
            14: {"PMI_RANK": "1"}, 16: {"PMI_RANK": "0"}}      # children of ranks 1 and 0
    assert procs.extras(envs, ranks={11}, launcher=Hydra("mpiexec"), local={0}) == [13, 16]
    assert procs.extras(envs, ranks={12}, launcher=Hydra("mpiexec"), local={1}) == [13, 14]


@pytest.mark.realtime
def test_a_spawned_process_is_stopped_with_its_job_under_gang(tmp_path, workload):
    """Two jobs share one PE under gang (MPL 2, 0.3 s slices); the first spawns a child that
    ticks every 5 ms.  Kept to its job's slots, the child's ticks stop for about half its
    life, in gaps of about a slice; left running, it would tick throughout."""
    ticks = tmp_path / "ticks"
    path = workload(f"0 1 {sys.executable} {PROGRAMS / 'spawn_ticks.py'} {ticks}\n"
                    "0 1 bsp --work 3\n")
    out = tmp_path / "run"
    done = run_testbed("run", str(path), "--pes", "1", "--scheduler", "gang", "--timeslice",
                       "0.3", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert {row["status"] for row in jobs_csv(out).values()} == {"done"}
    times = [float(line) for line in ticks.read_text().split()]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    long_gaps = [g for g in gaps if g > 0.15]
    assert len(long_gaps) >= 2 and sum(long_gaps) > 0.25 * (times[-1] - times[0]), gaps
    assert run_processes(run_id(out)) == []
