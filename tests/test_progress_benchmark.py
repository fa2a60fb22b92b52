"""benchmarks.programs.progress on given numbers (pure: no process is started)."""

from __future__ import annotations

from benchmarks.programs import progress


def _run(mode: str, status: str = "ok", issue: float = 0.001, rest: float = 0.1,
         wall: float = 1.0) -> dict:
    return {"mode": mode, "status": status, "wall_s": wall,
            "patterns": {"rma_lock_all": issue, "probes": rest} if status == "ok" else None}


def test_output_is_read_only_after_ok_and_its_json_line():
    assert progress.parse_output('ok\n{"rma_lock_all": 0.5, "probes": 1}\n') == {
        "rma_lock_all": 0.5, "probes": 1.0}
    assert progress.parse_output('{"rma_lock_all": 0.5}\n') is None
    assert progress.parse_output("ok\nnot json\n") is None
    assert progress.parse_output("ok\n[1, 2]\n") is None


def test_a_hung_mode_misses_the_target_and_a_fast_one_meets_it():
    runs = [_run("plain", issue=0.001 * (1 + i / 10), wall=0.5 + i / 100) for i in range(6)]
    runs += [_run("ics", issue=0.0012 * (1 + i / 10), wall=0.6 + i / 100) for i in range(6)]
    runs += [_run("gang", issue=0.001) for _ in range(5)] + [_run("gang", status="hung")]
    records, counts = progress.summarize(runs, ["plain", "ics", "gang"])
    assert counts["ics"]["issue_program_verdict"] == "met"
    assert counts["ics"]["wall_verdict"] == "met"
    assert counts["gang"]["hung"] == 1 and counts["gang"]["issue_program_verdict"] == "missed"
    by = {(r.label, r.metric): r for r in records}
    assert by[("gang", "patterns")].n == 5


def test_a_mode_far_over_three_times_plain_misses_it():
    runs = [_run("plain", issue=0.001 * (1 + i / 10)) for i in range(6)]
    runs += [_run("ics", issue=0.01 * (1 + i / 10)) for i in range(6)]
    _, counts = progress.summarize(runs, ["plain", "ics"])
    assert counts["ics"]["issue_program_verdict"] == "missed"


def test_every_mode_runs_once_a_round_in_a_seeded_order():
    order = progress.run_order(["plain", "gang", "ics"], 3, seed=4)
    assert order == progress.run_order(["plain", "gang", "ics"], 3, seed=4)
    for number in (1, 2, 3):
        assert sorted(m for r, m in order if r == number) == ["gang", "ics", "plain"]
