"""benchmarks.overheads.shim_trees: reading a finished run (pure: files written here)."""

import json

from benchmarks.overheads.shim_trees import read_run


def test_a_run_gives_each_tests_sizes_over_the_copies_and_the_last_counts_per_rank(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "j1.out").write_text("# a\n# Size Time\n65536 10.0\n1048576 100.0\n"
                                              "# b\n65536 20.0\n")
    (tmp_path / "jobs" / "j2.out").write_text("# a\n65536 30.0\n1048576 300.0\n# b\n65536 40.0\n")
    shim = {"blocks": 1, "wakes_rung": 2, "wakes_timed": 3}
    events = [{"event": "counters", "job": "j1", "ranks": {"1": {"shim": shim}}},
              {"event": "counters", "job": "j1",
               "ranks": {"1": {"shim": {"blocks": 5, "wakes_rung": 6, "wakes_timed": 7}}}},
              {"event": "counters", "job": "j2",
               "ranks": {"0": {"shim": None}, "1": {"shim": shim}}},
              {"event": "job_end", "job": "j2"}]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    figures, counts = read_run(tmp_path)
    assert figures == {"test1@65536": 20.0, "test1@1048576": 200.0, "test2@65536": 30.0}
    assert counts == {"1": {"blocks": 6, "wakes_rung": 8, "wakes_timed": 10},
                      "0": {"blocks": 0, "wakes_rung": 0, "wakes_timed": 0}}
