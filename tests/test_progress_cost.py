"""benchmarks.programs.progress_cost: IMB's tables read, the figures of a run, the plan of the
rounds
(pure), and a quick run of the stand-in pair under gang and ics (realtime)."""

from __future__ import annotations

import json

import pytest

from benchmarks.programs import progress_cost

IMB_OUTPUT = """
#---------------------------------------------------
# Benchmarking PingPong
# #processes = 2
#---------------------------------------------------
       #bytes #repetitions      t[usec]   Mbytes/sec
            0        50000         0.30         0.00
         1024        50000         0.70      1462.86

#----------------------------------------------------------------
# Benchmarking Allreduce
# #processes = 2
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0        50000         0.03         0.04         0.04
            4        50000         1.00         3.00         2.00

#---------------------------------------------------
# Benchmarking Barrier
# #processes = 2
#---------------------------------------------------
 #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
        50000         0.41         0.43         0.42

# Benchmarking Alltoall
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            1        50000         5.00         7.00         6.00
# All processes entering MPI_Finalize
"""


def test_imb_tables_are_read_by_their_mean_time_column():
    tables = progress_cost.parse_imb(IMB_OUTPUT)
    assert tables == {"PingPong": [0.30, 0.70], "Allreduce": [0.04, 2.00], "Barrier": [0.42],
                      "Alltoall": [6.00]}


def test_a_runs_figures_are_the_copies_median_of_the_means_over_sizes():
    other = IMB_OUTPUT.replace("0.42", "0.62").replace("6.00\n", "8.00\n")
    figures = progress_cost.figures_of([IMB_OUTPUT, other, "no tables"], 12.5)
    assert figures["makespan"] == 12.5
    assert figures["barrier_us"] == pytest.approx(0.52)
    assert figures["alltoall_us"] == pytest.approx(7.0)
    assert figures["allreduce_us"] == pytest.approx(1.02)
    assert figures["pingpong_us"] == pytest.approx(0.5)
    assert progress_cost.figures_of(["nothing"], 1.0)["barrier_us"] is None


def test_every_round_runs_every_side_and_scheduler_once_in_a_seeded_order():
    order = progress_cost.plan(["this", "baseline"], ["gang", "ics"], 3)
    assert len(order) == 12
    for number in (1, 2, 3):
        cases = sorted((side, s) for r, side, s in order if r == number)
        assert cases == sorted((a, b) for a in ("this", "baseline") for b in ("gang", "ics"))
    assert order == progress_cost.plan(["this", "baseline"], ["gang", "ics"], 3)
    firsts = {tuple((side, s) for r, side, s in order if r == n) for n in (1, 2, 3)}
    assert len(firsts) > 1                       # not the same order every round


@pytest.mark.realtime
def test_quick_run_of_the_stand_in_pair_reports_every_figure(tmp_path):
    out = tmp_path / "o"
    code = progress_cost.main(["--quick", "--schedulers", "gang,ics", "--imb",
                               str(tmp_path / "none"), "--out", str(out)])
    assert code == 0
    doc = json.loads((out / "progress-cost.json").read_text())
    assert doc["program"] == "imb_style" and len(doc["runs"]) == 4
    for run in doc["runs"]:
        assert run["statuses"] == ["done", "done"]
        assert all(run["figures"][m] is not None and run["figures"][m] > 0
                   for m in progress_cost.METRICS)
