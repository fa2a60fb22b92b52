"""Comparisons with intervals and experiment files: the statistics and the decision rule with
given numbers, experiment files (errors, cells, order, resuming), and real comparisons (the
simulator, and emulated A/A runs that must come out "no difference")."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import TESTBED, run_testbed
from scipy import stats as scipy_stats

from testbed import cli
from testbed.experiments import comparison, plots, runner, stats
from testbed.experiments.plan import Cell, Plan, PlanError, load_plan, parse_generator

SHIFTED = [1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0]


def test_median_interval_is_between_order_statistics_and_states_its_confidence():
    assert stats.median_interval([3.0]) == stats.Interval(3.0, None, None)
    assert stats.median_interval([2.0, 2.0, 2.0]) == stats.Interval(2.0, 2.0, 2.0, 0.75)
    three = stats.median_interval([5, 1, 3])
    assert (three.low, three.high, three.confidence) == (1, 5, 0.75) and three.short
    assert stats.median_interval(range(1, 6)).confidence == pytest.approx(1 - 2 / 32)
    six = stats.median_interval(range(1, 7))
    assert (six.low, six.high, six.confidence, six.short) == (1, 6, 0.95, False)
    twelve = stats.median_interval(range(1, 13))  # the 3rd smallest to the 3rd largest
    assert (twelve.low, twelve.high, twelve.value) == (3, 10, 6.5)
    assert stats.median_interval([4, 1, None, float("nan"), 2]).value == 2
    with pytest.raises(ValueError):
        stats.median_interval([None])


def test_the_rank_tests_are_exact_with_ties_and_never_below_the_smallest_reachable_p():
    both_constant = stats.rank_test([5, 5, 5], [0, 0, 0])
    assert both_constant.p == pytest.approx(0.1) and both_constant.min_p == pytest.approx(0.1)
    assert stats.rank_test([10, 10, 10], [12, 13, 14]).p == pytest.approx(0.1)
    assert stats.rank_test([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).p == pytest.approx(2 / 252)
    assert stats.rank_test([3, 3], [3, 3, 3]).p == 1.0
    assert stats.rank_test([1], [2, 3]) is None
    assert stats.rank_test([5, 6, 7], [1, 2, 3], "greater").p == pytest.approx(1 / 20)
    five = stats.signed_rank_test([2, 3, 4, 5, 6], [1, 1, 1, 1, 1])
    assert five.p == pytest.approx(1 / 16) and five.min_p == pytest.approx(1 / 16)
    assert stats.signed_rank_test([1, 2], [1, 2]).p == 1.0


def _rank_sum(x: np.ndarray, y: np.ndarray) -> float:
    return float(scipy_stats.rankdata(np.concatenate([x, y]))[:len(x)].sum())


def _signed_ranks(x: np.ndarray, y: np.ndarray) -> float:
    d = np.log(x) - np.log(y)
    d = d[d != 0]
    return float(scipy_stats.rankdata(np.abs(d))[d > 0].sum())


def test_the_rank_tests_give_scipys_exact_permutation_p_values():
    rng = np.random.default_rng(7)
    for _ in range(20):
        a, b = (rng.integers(1, 5, n).astype(float) for n in rng.integers(2, 7, 2))
        if len(set(np.concatenate([a, b]))) > 1:
            exact = scipy_stats.permutation_test((a, b), _rank_sum, n_resamples=np.inf)
            assert stats.rank_test(a, b).p == pytest.approx(exact.pvalue)
        pairs = rng.integers(1, 5, (2, int(rng.integers(2, 8)))).astype(float)
        if np.any(pairs[0] != pairs[1]):
            exact = scipy_stats.permutation_test(tuple(pairs), _signed_ranks,
                                                 permutation_type="samples", n_resamples=np.inf)
            assert stats.signed_rank_test(*pairs).p == pytest.approx(exact.pvalue)


def test_ratio_interval_is_hodges_lehmann_on_logs_and_states_its_confidence():
    base = [1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0]
    ratio = stats.ratio_interval([v * 1.2 for v in base], base)
    assert ratio.value == pytest.approx(1.2) and ratio.low < 1.2 < ratio.high
    assert ratio.confidence == 0.95 and ratio.low > 1
    few = stats.ratio_interval([1.2, 1.3, 1.4], [1.0, 1.1, 1.2])
    assert few.confidence == pytest.approx(0.9) and few.low == pytest.approx(1.0)
    assert few.high == pytest.approx(1.4)
    assert stats.ratio_interval([1.0, 2.0], [0.0, 0.0]) is None
    zero = stats.ratio_interval([0.0, 2.0], [1.0, 1.0])
    assert zero.low is None and zero.value == 1.0
    assert stats.difference_interval([0.0, 2.0], [1.0, 1.0]).value == 0.0


def test_paired_intervals_drop_a_pair_whole_when_a_value_is_missing():
    a = [1.1, math.nan, 2.2, 3.3, None, 4.4, 5.5, 6.6, 7.7]
    b = [1.0, 9.0, 2.0, 3.0, 4.0, math.inf, 5.0, 6.0, 7.0]
    kept = ([1.1, 2.2, 3.3, 5.5, 6.6, 7.7], [1.0, 2.0, 3.0, 5.0, 6.0, 7.0])
    assert stats.ratio_interval(a, b, paired=True) == stats.ratio_interval(*kept, paired=True)
    assert stats.ratio_interval(a, b, paired=True).value == pytest.approx(1.1)
    assert stats.signed_rank_test(a, b) == stats.signed_rank_test(*kept)
    with pytest.raises(ValueError):
        stats.ratio_interval([1.0, 2.0], [1.0], paired=True)


def test_holm_adjusts_in_order_and_skips_missing():
    assert stats.holm([0.01, 0.04, None, 0.03]) == [0.03, 0.06, None, 0.06]
    assert stats.holm([0.5]) == [0.5]
    assert stats.callable_in([2 / 252] * 6) == [True] * 6
    assert stats.callable_in([2 / 252] * 7 + [None]) == [False] * 8


def test_the_smallest_p_a_rank_test_can_give_and_the_runs_a_family_needs():
    assert stats.smallest_p(3, 3) == pytest.approx(0.1)
    assert stats.smallest_p(5, 5) == pytest.approx(2 / 252)
    assert stats.smallest_p(6, 6, paired=True) == pytest.approx(2 / 64)
    assert stats.least_runs(1) == 4 and stats.least_runs(9) == 6 and stats.least_runs(27) == 7
    assert stats.least_runs(1, paired=True) == 6


def test_a_difference_is_called_only_with_test_and_interval_agreeing():
    wide = stats.Interval(1.2, 0.9, 1.5)
    narrow = stats.Interval(1.2, 1.1, 1.3)
    assert stats.called(0.01, narrow)
    assert not stats.called(0.01, wide)
    assert not stats.called(0.2, narrow)
    assert not stats.called(None, narrow)
    assert stats.called(0.01, stats.Interval(0.3, 0.1, 0.5), null=0.0)


def test_bimodal_finds_two_clusters_and_not_one_spread():
    clusters = stats.bimodal([6.5, 6.6, 6.7, 6.6, 11.0, 11.2, 10.9, 11.3])
    assert clusters is not None and clusters.low_count == 4 and clusters.high_count == 4
    assert clusters.describe() == "4 near 6.6, 4 near 11.1"
    assert stats.bimodal([1, 2, 3, 4, 5, 6, 7, 8]) is None
    assert stats.bimodal([1, 1, 1, 1, 1, 1, 1, 9]) is None  # one outlier is not a cluster
    assert stats.bimodal([1, 1, 9]) is None  # too few to tell


def _groups(a: list[float], b: list[float], metric: str = "makespan"
            ) -> list[comparison.Group]:
    groups = [comparison.Group("gang", "gang"), comparison.Group("fcs", "fcs")]
    for group, values in zip(groups, (a, b), strict=True):
        for seed, value in enumerate(values):
            group.add({metric: value}, disturbed=False, key=seed)
    return groups


def test_an_aa_comparison_calls_nothing_and_a_shift_is_called():
    same = comparison.summarize(_groups(SHIFTED, list(reversed(SHIFTED))), ["makespan"], "gang")
    assert not any(r.significant for r in same)
    moved = comparison.summarize(_groups(SHIFTED, [v * 1.2 for v in SHIFTED]), ["makespan"],
                                 "gang")
    fcs = next(r for r in moved if r.label == "fcs")
    assert fcs.significant and fcs.ratio == pytest.approx(1.2) and fcs.ratio_low > 1
    assert fcs.p_holm < 0.05 and fcs.n == 8 and fcs.callable
    assert fcs.min_p == pytest.approx(2 / 12870) and fcs.test == "Mann-Whitney U (exact)"
    assert set(fcs.as_dict()) >= {"callable", "min_p", "p", "ci_confidence", "family"}


def test_constant_runs_three_a_side_are_not_called():
    for a, b in (([0.0] * 3, [5.0] * 3), ([10.0] * 3, [12.0, 13.0, 14.0])):
        fcs = next(r for r in comparison.summarize(_groups(a, b, "major_faults"),
                                                   ["major_faults"], "gang")
                   if r.label == "fcs")
        assert not fcs.significant and fcs.callable is False
        assert fcs.p == pytest.approx(0.1) and fcs.min_p == pytest.approx(0.1)


def test_paired_runs_see_a_small_shift_that_unpaired_runs_cannot():
    spread = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0]
    groups = _groups(spread, [v * 1.03 for v in spread])
    unpaired = next(r for r in comparison.summarize(groups, ["makespan"], "gang")
                    if r.label == "fcs")
    paired = next(r for r in comparison.summarize(groups, ["makespan"], "gang", paired=True)
                  if r.label == "fcs")
    assert not unpaired.significant
    assert paired.significant and paired.ratio_low == pytest.approx(1.03)
    assert paired.ratio_high - paired.ratio_low < unpaired.ratio_high - unpaired.ratio_low


def _table_groups(runs: int, metrics: list[str]) -> list[comparison.Group]:
    groups = [comparison.Group("gang", "gang"), comparison.Group("fcfs", "fcfs")]
    for i in range(runs):
        groups[0].add({m: 1.0 + i / 100 for m in metrics} | {"switch_latency_p99_us": 100.0 + i},
                      disturbed=False)
        groups[1].add({m: 2.0 + i / 100 for m in metrics} | {"switch_latency_p99_us": None},
                      disturbed=False)
    return groups


def test_the_family_is_the_whole_table_by_default_or_each_figure():
    metrics = [f"m{i}" for i in range(9)]
    table = comparison.summarize(_table_groups(5, metrics), metrics, "gang")
    assert not any(r.significant or r.callable for r in table if r.label == "fcfs")
    assert all(r.family == "all" for r in table)
    text = comparison.format_table(table, "gang")
    assert text.splitlines()[0].startswith("family: all 9 comparisons with gang")
    assert "no difference can be called" in text and "6 runs a side would do" in text
    per = comparison.summarize(_table_groups(5, metrics), metrics, "gang", family="metric")
    assert all(r.significant and r.callable for r in per if r.label == "fcfs")
    assert "per figure" in comparison.format_table(per, "gang").splitlines()[0]
    with pytest.raises(ValueError):
        comparison.summarize(_table_groups(5, metrics), metrics, "gang", family="run")


def test_the_table_marks_calls_and_says_when_nothing_can_be_called():
    records = comparison.summarize(_groups(SHIFTED, [v * 1.5 for v in SHIFTED]), ["makespan"],
                                   "gang")
    table = comparison.format_table(records, "gang")
    assert "*" in table.splitlines()[4] and "Mann-Whitney" in table
    assert "cannot" not in table and "†" not in table
    # three runs a side, and fcfs has no switch latency: the note stays
    few = comparison.summarize(_table_groups(3, ["makespan"]),
                               ["makespan", "switch_latency_p99_us"], "gang")
    assert not any(r.significant for r in few)
    text = comparison.format_table(few, "gang")
    assert "no difference can be called" in text and "4 runs a side would do" in text
    assert "† = too few runs for a 95 % interval" in text and "3 runs give" in text
    assert "75 %" in text and "a ratio's interval of 90 %" in text


def test_unconverged_names_wide_intervals():
    records = comparison.summarize(_groups(SHIFTED, [1, 5, 9, 2, 7]), ["makespan"], "gang")
    assert comparison.unconverged(records, 0.05) == ["fcs makespan"]


def _experiment(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(body)
    return path


GOOD = """
executor = "simulation"
repeats = 2
[[workload]]
name = "m"
generator = "mix"
jobs = 12
pes = 8
load = 0.9
seeds = [1, 5]
[factors]
scheduler = ["fcfs", "gang", "fcfs"]
mpl = [2, 3]
[options]
timeslice = 0.1
"""


def test_an_experiment_file_is_a_factorial_with_labels(tmp_path):
    plan = load_plan(_experiment(tmp_path, GOOD))
    assert len(plan.cells) == 2 * 2 * 3
    assert [c.label for c in plan.cells[:3]] == ["fcfs", "gang", "fcfs#2"]
    assert plan.cells[0].flags() == ["--mpl", "2", "--timeslice", "0.1"]
    assert plan.varies_seed and plan.cells[0].run_seed(3, True) == 3
    assert plan.reference == "fcfs"
    key = plan.cells[0].key("simulation", "a")
    assert key != plan.cells[0].key("simulation", "b") != plan.cells[1].key("simulation", "b")
    random = Plan(plan.cells, order="random", seed=4)
    assert sorted(random.round(1), key=plan.cells.index) == plan.cells
    assert random.round(1) == random.round(1) != random.round(2)


@pytest.mark.parametrize(("edit", "message"), [
    (("repeats = 2", "repeats = 0"), "field 'repeats'"),
    (("repeats = 2", "repeats = 2\ncolour = 1"), "field 'colour'"),
    (("jobs = 12", "jobz = 12"), "field 'jobz'"),
    (('scheduler = ["fcfs", "gang", "fcfs"]', "scheduler = []"), "factors.scheduler"),
    (('executor = "simulation"', 'executor = "real"'), "field 'executor'"),
    (("mpl = [2, 3]", "mpl = []"), "factors.mpl"),
    (("[options]", "[options]\nmpl = 4"), "also a factor"),
    (('generator = "mix"', 'file = "nowhere.txt"'), "field 'jobs': a workload file"),
    (('generator = "mix"\njobs = 12\npes = 8\nload = 0.9\nseeds = [1, 5]',
      'file = "nowhere.txt"'), "field 'file'"),
    (("repeats = 2", "repeats = 2\nmetrics = ['speed']"), "unknown metric 'speed'"),
    (("repeats = 2", "repeats = [2"), "not TOML"),
])
def test_a_bad_experiment_file_names_the_file_and_field(tmp_path, edit, message):
    path = _experiment(tmp_path, GOOD.replace(*edit))
    with pytest.raises(PlanError, match=message) as info:
        load_plan(path)
    assert str(path) in str(info.value)


def test_generator_specs_parse_and_refuse_nonsense():
    spec, seed = parse_generator("mix:jobs=8,load=1.5,seed=2")
    assert seed == 2 and dict(spec.params) == {"jobs": 8, "load": 1.5}
    assert spec.text(2, 2) == spec.text(2, 2) != spec.text(3, 2)
    for bad in ("mix:jobs=8,colour=red", "mix:load=1", "swf:jobs=3", "mix:jobs"):
        with pytest.raises(PlanError):
            parse_generator(bad)


def test_a_simulated_file_workload_cannot_be_repeated(tmp_path):
    plan = load_plan(_experiment(tmp_path, GOOD))
    cells = [Cell(c.workload.__class__("f", file=tmp_path / "exp.toml"), None, c.scheduler,
                  (), c.label) for c in plan.cells[:2]]
    with pytest.raises(PlanError, match="deterministic"):
        Plan(cells, executor="simulation", repeats=3).check("here")


@pytest.mark.realtime
def test_simulated_comparison_calls_gang_against_fcfs_and_not_fcfs_against_itself(tmp_path):
    done = run_testbed("compare", "mix:jobs=30,pes=16,load=0.9,compress=100", "--pes", "16",
                       "--executor", "simulation", "--schedulers", "fcfs,gang,fcfs",
                       "--repeats", "8", "--family", "metric", "--json", "--out", "c",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert set(records[0]) >= {"scheduler", "label", "metric", "n", "median", "ci_low",
                               "ci_high", "ratio", "ratio_low", "ratio_high", "significant",
                               "callable", "min_p", "family"}
    by = {(r["label"], r["metric"]): r for r in records}
    assert by[("gang", "wait_mean_all")]["significant"]
    assert by[("gang", "wait_mean_all")]["ratio_high"] < 1
    assert not any(r["significant"] for r in records if r["label"] == "fcfs#2")
    assert by[("fcfs#2", "makespan")]["ratio"] == 1.0
    seeds = {json.loads(p.read_text())["seed"] for p in (tmp_path / "c").glob("*/*/run.json")}
    assert seeds == set(range(1, 9))
    # the tables again (testbed report would also redraw every run's figures: a minute here)
    table = run_testbed("experiment", "report", "c", cwd=tmp_path)
    assert table.returncode == 0 and "signed-rank" in table.stdout
    assert "family: per figure" in table.stdout
    assert (tmp_path / "c" / "results.csv").read_text().count("\n") == 1 + 24 * 9


@pytest.mark.realtime
def test_a_simulated_comparison_of_a_file_with_repeats_is_refused(tmp_path, workload):
    path = workload("0 1 bsp --work 1\n")
    done = run_testbed("compare", str(path), "--executor", "simulation", "--repeats", "3",
                       "--schedulers", "fcfs,gang", "--out", "c", cwd=tmp_path)
    assert done.returncode == 2 and "deterministic" in done.stderr
    assert not (tmp_path / "c").exists()


@pytest.mark.realtime
def test_until_ci_adds_rounds_until_the_budget(tmp_path):
    done = run_testbed("compare", "mix:jobs=20,pes=8,load=0.9", "--pes", "8", "--executor",
                       "simulation", "--schedulers", "fcfs,gang", "--repeats", "2",
                       "--until-ci", "0.0001", "--budget", "3", "--metrics", "wait_mean_all",
                       "--out", "c", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "did not converge within" in done.stderr and "fcfs wait_mean_all" in done.stderr
    assert len(list((tmp_path / "c").glob("*/*/run.json"))) > 4


@pytest.mark.realtime
def test_an_experiment_resumes_and_keeps_what_it_completed(tmp_path):
    path = _experiment(tmp_path, GOOD)
    first = subprocess.run([*TESTBED, "experiment", "run", str(path), "--out", "e"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    infos = sorted((tmp_path / "e").glob("*/*/run.json"))
    assert len(infos) == 2 * 12
    stamps = {p: p.stat().st_mtime_ns for p in infos}
    again = subprocess.run([*TESTBED, "experiment", "run", str(path), "--out", "e"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "run 1" not in again.stderr
    path.write_text(GOOD.replace("repeats = 2", "repeats = 3"))
    more = subprocess.run([*TESTBED, "experiment", "run", str(path), "--out", "e"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert more.returncode == 0, more.stderr
    assert more.stderr.count(" run 3 ") == 12 and " run 2 " not in more.stderr
    assert all(p.stat().st_mtime_ns == stamps[p] for p in infos)
    summary = (tmp_path / "e" / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("workload,seed,mpl,timeslice,executor,code,paired,reference")
    assert len(summary) == 1 + 4 * 3 * 9
    assert sorted(p.name for p in (tmp_path / "e" / "plots").iterdir())[0].endswith(".png")


@pytest.mark.realtime
def test_an_emulated_aa_comparison_comes_out_no_difference(tmp_path, workload):
    path = workload("0 1 bsp --work 0.3\n0 1 bsp --work 0.3\n0 2 bsp --work 0.2\n")
    done = run_testbed("compare", str(path), "--schedulers", "gang,gang", "--repeats", "3",
                       "--pes", "2", "--json", "--out", "c", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)             # nothing but the records on stdout
    assert {r["label"] for r in records} == {"gang", "gang#2"}
    assert not any(r["significant"] for r in records)
    assert all(r["callable"] is False for r in records if r["label"] == "gang#2")
    assert all(r["n"] == 3 for r in records if r["metric"] == "makespan")
    runs = sorted((tmp_path / "c").glob("*/*/events.jsonl"))
    assert len(runs) == 6 and len({json.loads(p.read_text().splitlines()[0])["run_id"]
                                   for p in runs}) == 6
    for run in runs:
        assert "foreign_cpu_s" in json.loads((run.parent / "load.json").read_text())
    report = run_testbed("report", "c", cwd=tmp_path)
    assert report.returncode == 0 and "gang#2" in report.stdout
    assert (tmp_path / "c" / "gantt.png").exists()


@pytest.mark.realtime
def test_an_interrupted_experiment_resumes_without_redoing_runs(tmp_path):
    (tmp_path / "w.txt").write_text("0 2 bsp --work 1.5\n")
    path = _experiment(tmp_path, """
repeats = 2
[[workload]]
name = "w"
file = "w.txt"
[factors]
scheduler = ["fcfs", "gang"]
""")
    proc = subprocess.Popen([*TESTBED, "experiment", "run", str(path), "--out", "e"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while len(list((tmp_path / "e").glob("*/*/events.jsonl"))) < 2:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert "interrupted" in proc.stderr.read()
    done = sorted((tmp_path / "e").glob("*/*/run.json"))
    assert len(done) == 1
    stamp = done[0].stat().st_mtime_ns
    again = subprocess.run([*TESTBED, "experiment", "run", str(path), "--out", "e"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert len(list((tmp_path / "e").glob("*/*/run.json"))) == 4
    assert done[0].stat().st_mtime_ns == stamp
    assert again.stderr.count("complete in") == 3
    assert not [p for p in os.listdir(tmp_path / "e") if p.startswith(".")]


def _compare(tmp_path: Path, *extra: str) -> int:
    """``testbed compare`` of a small simulated mix, in this process (the simulator starts no
    process), into ``tmp_path/c``."""
    return cli.main(["compare", "mix:jobs=6,pes=4,load=0.9,compress=100", "--pes", "4",
                     "--executor", "simulation", "--schedulers", "fcfs,gang",
                     "--metrics", "wait_mean_all", "--out", str(tmp_path / "c"), *extra])


def test_until_ci_stops_at_the_cap_and_the_budget_counts_every_run_across_a_resume(
        tmp_path, capsys):
    plan = GOOD.replace("repeats = 2", "repeats = 2\nuntil_ci = 1e-9\nmax_repeats = 3")
    plan = plan.replace('seeds = [1, 5]', 'seeds = [1]').replace("mpl = [2, 3]", "mpl = [2]")
    path = _experiment(tmp_path, plan.replace('"fcfs", "gang", "fcfs"', '"fcfs", "gang"'))
    assert cli.main(["experiment", "run", str(path), "--out", str(tmp_path / "e")]) == 0
    runs = sorted((tmp_path / "e").glob("*/*/run.json"))
    assert len(runs) == 6
    assert "did not converge within 3 repeats (--max-repeats): fcfs makespan" in \
        capsys.readouterr().err
    spent = sum(json.loads(p.read_text())["wall_s"] for p in runs)
    path.write_text(path.read_text().replace("max_repeats = 3", f"max_repeats = 9\n"
                                             f"budget = {spent}"))
    assert cli.main(["experiment", "run", str(path), "--out", str(tmp_path / "e")]) == 0
    assert "within the budget" in capsys.readouterr().err    # the earlier runs counted
    assert sorted((tmp_path / "e").glob("*/*/run.json")) == runs


def test_compare_json_prints_only_the_records_on_standard_output(tmp_path, capsys):
    assert _compare(tmp_path, "--repeats", "3", "--json") == 0
    out, err = capsys.readouterr()
    records = json.loads(out)
    assert {r["label"] for r in records} == {"fcfs", "gang"} and "run directory" in err
    gang = next(r for r in records if r["label"] == "gang")
    assert gang["callable"] is False and gang["min_p"] == 0.25 and not gang["significant"]


def test_a_paired_simulated_comparison_is_narrower_than_the_same_runs_unpaired(tmp_path):
    assert _compare(tmp_path, "--repeats", "8", "--metrics", "response_mean_all,makespan") == 0
    (found,) = runner.groups_of(runner.collect(tmp_path / "c"))
    assert found.paired
    widths = {}
    for paired in (True, False):
        records = comparison.summarize(found.groups, ["response_mean_all", "makespan"], "fcfs",
                                       paired)
        widths[paired] = {r.metric: r.ratio_high - r.ratio_low for r in records
                          if r.label == "gang"}
    assert all(widths[True][m] < widths[False][m] for m in widths[True])


def test_a_comparison_without_a_numeric_setting_plots_one_tick_per_scheduler(tmp_path):
    records = [comparison.Record(label, label, "makespan", 3, median, median - 1, median + 1,
                                 75.0, None, None, None, None, None, None, None, None, None,
                                 False, "all", None, 0)
               for label, median in (("fcfs", 10.0), ("gang", 8.0), ("local", 7.0))]
    [path] = plots.write_plots([({"workload": "mix"}, "", records)], tmp_path)
    assert path.name == "makespan.png" and path.stat().st_size > 0
    _, ax = plots.plt.subplots()
    plots._categories(ax, [({"workload": "mix"}, "", records)], [], "makespan")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fcfs", "gang", "local"]
    assert ax.get_ylim()[0] == 0
