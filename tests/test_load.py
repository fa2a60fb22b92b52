"""testbed.experiments.load: what counts as other load, with given snapshots and process tables
(pure).  Inside a Slurm job, the processes of the run's own job that ``srun`` started under
``slurmstepd`` (node managers, their ranks) are the run's, not other load."""

from __future__ import annotations

import os
import threading

import pytest

from testbed.experiments import load
from testbed.experiments.load import Proc, Snapshot


def _tables() -> list[list[Proc]]:
    coordinator = Proc(100, 1.0, "42", 1.0, ours=True)
    earlier = Proc(300, 0.5, "42", 5.0, ours=False)      # of the job, running before the run
    other_job = Proc(400, 2.0, "77", 0.0, ours=False)
    no_job = Proc(500, 2.0, None, 0.0, ours=False)
    node_manager = Proc(200, 2.0, "42", 0.5, ours=False)
    return [
        [coordinator, earlier, other_job, no_job],
        [Proc(100, 1.0, "42", 2.0, True), Proc(300, 0.5, "42", 6.0, False), node_manager,
         Proc(210, 2.5, "42", 3.0, False), Proc(400, 2.0, "77", 9.0, False),
         Proc(500, 2.0, None, 9.0, False)],
        [Proc(100, 1.0, "42", 3.0, True), Proc(300, 0.5, "42", 6.5, False),
         Proc(200, 2.0, "42", 1.5, False)],     # the rank (pid 210) ended since the last table
    ]


def test_the_jobs_processes_outside_this_tree_count_from_the_first_table_to_the_last():
    # the node manager 1.5, the ended rank 3.0 (its last sample), the earlier one 6.5 - 5.0
    assert load.job_seconds(_tables(), "42") == pytest.approx(1.5 + 3.0 + 1.5)
    assert load.job_seconds(_tables(), "77") == pytest.approx(9.0)
    assert load.job_seconds([], "42") == 0.0


def test_a_process_that_reuses_a_pid_is_another_process():
    tables = [[Proc(200, 1.0, "42", 4.0, False)], [Proc(200, 9.0, "42", 1.0, False)]]
    assert load.job_seconds(tables, "42") == pytest.approx(4.0 - 4.0 + 1.0)


def _snap(wall: float, busy: float, own: float) -> Snapshot:
    return Snapshot(wall, busy, 0.0, own, (0.0, 0.0, 0.0))


def test_the_runs_own_slurm_processes_are_not_other_load():
    before, after = _snap(0.0, 0.0, 0.0), _snap(10.0, 20.0, 12.0)  # 8 s not ours by rusage
    alone = load.disturbance(before, after, cpus=2)
    assert alone["disturbed"] and alone["foreign_cpu_s"] == 8.0
    ours = load.disturbance(before, after, cpus=2, job_cpu=7.5)
    assert not ours["disturbed"] and ours["foreign_cpu_s"] == 0.5 and ours["job_cpu_s"] == 7.5


def test_outside_a_slurm_job_the_watch_samples_nothing():
    watch = load.JobWatch(job="").start()
    assert "job-watch" not in {t.name for t in threading.enumerate()}
    assert watch.stop() == 0.0


def test_the_process_table_marks_this_process_as_ours_and_caches_its_job():
    jobs: dict = {}
    me = [p for p in load.process_table(jobs) if p.pid == os.getpid()]
    assert len(me) == 1 and me[0].ours and me[0].cpu > 0
    assert jobs[(me[0].pid, me[0].started)] == me[0].job


def test_a_step_daemon_works_for_the_job_in_its_title():
    assert load.step_daemon_job("slurmstepd: [41.0]") == "41"
    assert load.step_daemon_job("slurmstepd: [41.batch]") == "41"
    assert load.step_daemon_job("slurmstepd: [41]") == "41"
    assert load.step_daemon_job("slurmstepd: [41.extern]") == "41"
    assert load.step_daemon_job("slurmd -D") is None
    assert load.step_daemon_job("python slurmstepd: [41.0]") is None
