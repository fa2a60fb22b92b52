"""benchmarks.overheads.noise: the order of its runs, its pairs and its rates (given numbers), and
one
tiny real run (its figures mean nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import psutil
import pytest

from benchmarks.overheads import noise, regression


def test_sequence_alternates_a_and_b_and_ends_each_block_with_an_a():
    steps = noise.sequence(3, 1)
    assert [(s["side"], s["index"], s["hog"]) for s in steps] == [
        ("A", 0, False), ("B", 0, False), ("A", 1, False), ("B", 1, False), ("A", 2, False),
        ("A", 0, True), ("B", 0, True), ("A", 1, True)]
    assert len(noise.sequence(20, 5)) == 2 * 20 + 2
    assert all(not s["hog"] for s in noise.sequence(2, 0))


def test_pairs_never_cross_from_quiet_to_hogged_runs():
    steps = noise.sequence(3, 1)
    pairs = noise.pair_up(steps)
    assert [(p["kind"], p["baseline"], p["subject"], p["hog"]) for p in pairs] == [
        ("A/B", 0, 1, False), ("A/A", 0, 2, False), ("A/B", 2, 3, False), ("A/A", 2, 4, False),
        ("A/B", 5, 6, True), ("A/A", 5, 7, True)]
    assert sum(p["kind"] == "A/A" for p in pairs) == 3
    assert all(steps[p["baseline"]]["hog"] == steps[p["subject"]]["hog"] for p in pairs)


def test_groups_give_each_index_sides_a_a2_and_b_and_hog_the_last():
    steps = noise.groups(3, 1)
    assert [(s["side"], s["index"], s["hog"]) for s in steps] == [
        ("A", 0, False), ("A2", 0, False), ("B", 0, False), ("A", 1, False), ("A2", 1, False),
        ("B", 1, False), ("A", 2, True), ("A2", 2, True), ("B", 2, True)]


def test_interleaved_pairs_stay_within_their_group():
    pairs = noise.pair_up(noise.groups(2, 1))
    assert [(p["kind"], p["baseline"], p["subject"], p["hog"]) for p in pairs] == [
        ("A/A", 0, 1, False), ("A/B", 0, 2, False), ("A/A", 3, 4, True), ("A/B", 3, 5, True)]


def _suite(switch: float, shim: float, seed: int) -> dict[str, Any]:
    spread = [1 + 0.003 * ((i * 7 + seed) % 8) for i in range(8)]
    return {"samples": {noise.SWITCH_FIGURE: [switch * s for s in spread],
                        noise.SHIM_FIGURE: [shim * s for s in spread],
                        "launch_overhead_s[n=2]": [0.3 * s for s in spread]}}


def test_judge_counts_false_alarms_and_detections():
    steps = noise.sequence(4, 1)
    documents = [_suite(100 * (1.3 if s["side"] == "B" else 1), 1.0, n)
                 for n, s in enumerate(steps)]
    summary = noise.judge(documents, steps, 0.10)
    assert summary["all"]["false_alarms"]["k"] == 0 and summary["all"]["false_alarms"]["n"] == 4
    assert summary["all"]["detected"][noise.SWITCH_FIGURE]["k"] == 4
    assert summary["all"]["detected"][noise.SHIM_FIGURE]["k"] == 0
    assert summary["quiet"]["detected"][noise.SWITCH_FIGURE]["n"] == 3
    assert summary["hog"]["detected"][noise.SWITCH_FIGURE]["n"] == 1
    assert summary["all"]["slowdown"][noise.SWITCH_FIGURE] == pytest.approx(1.3, rel=0.02)
    assert summary["false_alarms_by_figure"] == {}


def test_judge_counts_a_call_on_an_untouched_figure_as_a_false_alarm():
    steps = noise.sequence(1, 0)
    documents = [_suite(100, 1.0, 0), _suite(100, 1.0, 1), _suite(100, 1.5, 2)]
    documents[1]["samples"]["launch_overhead_s[n=2]"] = [0.6] * 8
    summary = noise.judge(documents, steps, 0.10)
    assert summary["all"]["false_alarms"]["k"] == 1            # A1 against A0: shim
    assert summary["all"]["false_alarms_untouched_in_ab"]["k"] == 1
    assert summary["false_alarms_by_figure"] == {noise.SHIM_FIGURE: 1}


def test_margins_fitted_on_the_other_pairs_show_the_false_alarm_the_fit_hides():
    steps = noise.sequence(4, 0)                  # A0 B0 A1 B1 A2 B2 A3 B3 A4: 4 A/A pairs
    documents = [_suite(100, 1.0, n) for n in range(len(steps))]
    documents[6]["samples"]["launch_overhead_s[n=2]"] = [0.6] * 8   # A3: launch drifts 2x
    fitted = {"launch_overhead_s[n=2]": 1.05}                       # ... and the fit covers it
    summary = noise.judge(documents, steps, None, fitted)
    assert summary["all"]["false_alarms"]["k"] == 0
    assert summary["all"]["false_alarms_held_out"] == noise.proportion(1, 4)  # A3 against A2
    assert "margins fitted on the other pairs" in noise.rates_table(summary)


def test_drift_says_how_far_a_a_pairs_strayed_and_the_margin_that_covers_it():
    pairs = [{"kind": "A/A", "ratios": {"a": 1.12, "b": 0.9}},
             {"kind": "A/A", "ratios": {"a": 1.31, "b": 1.02}},
             {"kind": "A/B", "ratios": {"a": 9.0, "b": 9.0}}]
    assert noise.drift(pairs) == {
        "a": {"largest_ratio": 1.31, "pairs": 2, "margin": 0.35},
        "b": {"largest_ratio": 1.02, "pairs": 2, "margin": 0.10}}
    assert noise.drift([{"kind": "A/A", "ratios": {"a": 1.15}}])["a"]["margin"] == 0.15


def test_combine_merges_consecutive_runs_of_each_side_within_a_block():
    steps = noise.sequence(4, 0)                  # A0 B0 A1 B1 A2 B2 A3 B3 A4
    documents = [{"samples": {"x": [float(n)]}} for n in range(len(steps))]
    merged, merged_steps = noise.combine(documents, steps, 2)
    assert [(s["side"], s["index"]) for s in merged_steps] == [("A", 0), ("B", 0), ("A", 1),
                                                               ("B", 1)]
    assert [d["samples"]["x"] for d in merged] == [[0.0, 2.0], [1.0, 3.0], [4.0, 6.0],
                                                   [5.0, 7.0]]
    kinds = [p["kind"] for p in noise.pair_up(merged_steps)]
    assert sorted(kinds) == ["A/A", "A/B", "A/B"]


def test_proportion_has_an_exact_interval():
    p = noise.proportion(0, 20)
    assert p["rate"] == 0 and p["ci_low"] == 0 and p["ci_high"] == pytest.approx(0.168, abs=1e-3)
    assert noise.proportion(0, 0)["rate"] is None


@pytest.mark.realtime
def test_a_tiny_real_run_reports_and_rereads(tmp_path):
    out = tmp_path / "runs"
    report = tmp_path / "noise.md"
    done = subprocess.run([sys.executable, "-m", "benchmarks.overheads.noise", "--quick", "--pairs",
                           "1",
                           "--hog-pairs", "1", "--out", str(out), "--markdown", str(report)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["benchmark"] == "noise" and summary["all"]["false_alarms"]["n"] == 1
    documents = [json.loads(p.read_text()) for p in sorted(out.glob("suite-*.json"))]
    assert [d["noise_step"]["side"] for d in documents] == ["A", "A2", "B"]
    assert [("injected_delays" in d) for d in documents] == [False, False, True]
    assert documents[2]["injected_delays"]["switch_us"] > 0
    assert all(d["plan"]["rounds"] == 1 for d in documents)
    assert all(d["load"]["wall_s"] > 0 for d in documents)
    margins = json.loads((out / "margins.json").read_text())
    assert set(margins) == set(documents[0]["samples"]) and min(margins.values()) >= 0.1
    assert "false alarms (A/A)" in report.read_text() and documents[0]["date"] in \
        report.read_text()
    hogs = [p for p in psutil.process_iter(["cmdline"])
            if (p.info["cmdline"] or [])[:3] == [sys.executable, "-c", noise.HOG]]
    assert hogs == []
    again = subprocess.run([sys.executable, "-m", "benchmarks.overheads.noise", "--from", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["all"] == summary["all"]
    assert regression.sample_sets(documents[0])


@pytest.mark.realtime
def test_from_a_directory_without_runs_is_one_clear_message(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.overheads.noise", "--from",
                           str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == \
        f"noise: {tmp_path}: no suite-*.json of a noise run"


@pytest.mark.realtime
def test_the_hog_ends_when_the_process_that_started_it_is_killed():
    code = ("import time\nfrom benchmarks.overheads.noise import cpu_hog\nwith cpu_hog(True):\n"
            "    print(flush=True)\n    time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        parent.stdout.readline()
        hogs = psutil.Process(parent.pid).children()
    finally:
        parent.kill()
        parent.wait()
    assert len(hogs) == 1
    _, alive = psutil.wait_procs(hogs, timeout=20)
    for hog in alive:
        hog.kill()
    assert not alive
