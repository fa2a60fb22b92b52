"""The overhead benchmarks run and report sane fields (never a timing threshold)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.overheads import regression, shim_cost
from benchmarks.programs import progress_cost
from benchmarks.reliability import multihost
from benchmarks.simulator import speed
from testbed.experiments.regression import check
from testbed.policies.spin import Spin
from testbed.shim_record import lib


def _bench(module: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout)


@pytest.mark.realtime
def test_launch_overhead_reports_each_job_size():
    out = _bench("benchmarks.overheads.launch_overhead", "--repeats", "2", "--gap", "0.3")
    assert out["host"]["cpus"] >= 1
    sizes = [r["ranks"] for r in out["results"]]
    assert sizes[0] == 1 and sizes[-1] == out["host"]["cpus"]
    for r in out["results"]:
        assert r["jobs"] == 2 and 0 < r["min_s"] <= r["median_s"] <= r["max_s"]
        assert r["ranks_found_median_s"] > 0
        assert 0 <= r["runtime_median_s"] <= r["median_s"]     # runtime <= response
        # the part outside the benchmark's own run, and what its ranks lost while computing
        assert 0 < r["launch_median_s"] <= r["median_s"] and r["displaced_median_s"] >= 0
        assert r["steal_share"] is None or 0 <= r["steal_share"] < 1


@pytest.mark.realtime
def test_fig_5_1_copies_share_the_machine_and_each_runs_its_work():
    """Two copies at MPL 2 each run their work of CPU time while sharing the PEs, so each
    spends about twice its work in the benchmark (mean_runtime checks both, or raises)."""
    from benchmarks.overheads.regression import mean_runtime
    assert mean_runtime(2, 0.2, 0.3) > 1.3 * 0.3


def test_steal_share_is_the_hypervisors_part_of_all_cpu_time():
    from types import SimpleNamespace

    from benchmarks.overheads.launch_overhead import STATES, cpu_times, steal_share

    def times(*values: float) -> SimpleNamespace:
        return SimpleNamespace(**dict(zip(STATES, values, strict=True)), guest=5.0)

    before, after = times(100, 0, 50, 800, 0, 0, 0, 10), times(190, 0, 60, 910, 0, 0, 0, 50)
    assert steal_share(before, after) == 0.16      # guest time is in user: not counted twice
    assert steal_share(None, after) is None and steal_share(after, after) is None
    assert cpu_times() is None or cpu_times().steal >= 0


@pytest.mark.realtime
def test_switch_latency_reports_percentiles():
    out = _bench("benchmarks.overheads.switch_latency", "--work", "0.6", "--timeslice",
                 "0.1")["results"]
    assert out["switches"] >= 3 and out["ranks_per_switch"] == 2 * out["pes"]
    lat = out["latency_us"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]


def test_shim_cost_puts_its_ranks_on_records_it_removes_afterwards():
    with shim_cost.records(Spin("fixed", fixed_s=0.0001)) as (env, made):
        paths = [record.path for record in made]
        assert paths == [f"/dev/shm/testbed-{env['TESTBED_RUN']}-{env['TESTBED_JOB']}-{rank}"
                         for rank in range(shim_cost.RANKS)]
        assert [record.c.rank for record in made] == list(range(shim_cost.RANKS))
        assert all(r.c.spin_mode == lib.TB_SPIN_FIXED and r.c.spin_fixed_s == 0.0001
                   for r in made)
        assert all(Path(path).exists() for path in paths)
    assert not any(Path(path).exists() for path in paths)


def _figure(value: float, low: float | None, high: float | None, confidence: float) -> dict:
    return {"median": value, "low": low, "high": high, "confidence": confidence}


def test_shim_cost_page_shows_each_figure_it_was_given():
    wake = {"p50": _figure(41.0, 40.0, 45.0, 0.9375), "p99": _figure(150.0, 120.0, 160.0, 0.95),
            "cpu_share": 0.02}
    result = {"host": {"uname": "Linux vm", "cpus": 2, "python": "3.11"},
              "pingpong": {"without_us": 1.5, "with_us": 1.6, "ratio": 1.0667, "rounds": 3,
                           "iterations": 100},
              "collectives": {"rounds": 3, "iterations": 100,
                              "allreduce_us": {"without": 0.33, "with_spin_block": 0.91,
                                               "ratio": 2.7576},
                              "iallreduce_us": {"without": 1.2, "with_spin_block": 0.95,
                                                "ratio": 0.7917},
                              "barrier_us": {"without": 0.5, "with_spin_block": 0.2,
                                             "ratio": 0.4}},
              "wakeup": {"waits": 12, "rounds": 5, "os_pipe": wake,
                         "os_futex": {**wake, "p50": _figure(20.0, None, None, 0.95)},
                         "shim_spin_block_100us": {
                             **wake, "asleep_cpu_share": 0.007,
                             "shim": {"wakes_rung": 11, "wakes_timed": 1},
                             "p99_over_os_pipe": {"ratio": 1.1, "low": 0.9, "high": 1.3,
                                                  "confidence": 0.9375},
                             "p99_over_os_futex": None}}}
    page = shim_cost.markdown(result, "python -m benchmarks.overheads.shim_cost",
                              "2026-11-25T15:00")
    assert "Written by `python -m benchmarks.overheads.shim_cost`" in page
    assert "2026-11-25T15:00" in page
    assert "| 1.500 | 1.600 | 1.067 |" in page
    assert "| MPI_Allreduce, 8 bytes | 0.330 | 0.910 | 2.758 |" in page
    assert "| MPI_Iallreduce + MPI_Wait, 8 bytes | 1.200 | 0.950 | 0.792 |" in page
    assert "| MPI_Barrier | 0.500 | 0.200 | 0.400 |" in page
    assert ("| 41.000 [40.000, 45.000] (93.75 %) | 150.000 [120.000, 160.000] | 0.020 | 0.007 "
            "| 11 | 1 |") in page
    assert "| the OS: a process blocked on a futex (2-10 ms) | 20.000 | 150.000 [" in page
    assert "| 1.100 [0.900, 1.300] (93.75 %) | - |" in page
    assert "MPICH busy-polling" not in page and "20-50 ms" not in page


@pytest.mark.realtime
def test_shim_cost_reports_ratio_cpu_share_and_wakeups():
    out = _bench("benchmarks.overheads.shim_cost", "--rounds", "2", "--iterations", "300",
                 "--waits", "12")
    assert out["pingpong"]["ratio"] > 0 and out["pingpong"]["without_us"] > 0
    for case in ("mpich_busy_poll", "shim_spin_block_100us", "shim_long_waits_20_50ms",
                 "os_pipe", "os_futex", "os_futex_timed_2ms", "os_pipe_20_50ms",
                 "os_futex_20_50ms"):
        wake = out["wakeup"][case]
        assert len(wake["runs"]) == 2 and 0 <= wake["cpu_share"] <= 1.5
        assert 0 < wake["wakeup_us"]["p50"] <= wake["wakeup_us"]["p99"]
    for case, floor in (("shim_spin_block_100us", "os_futex"),
                        ("shim_long_waits_20_50ms", "os_pipe_20_50ms")):
        wake = out["wakeup"][case]
        assert wake["p99_over_" + floor]["ratio"] > 0
        for run in wake["runs"]:
            shim = run["shim"]
            assert shim["attached"] and shim["blocks"] >= 1 and shim["wakes_rung"] >= 1
            assert run["asleep_cpu_share"] == shim["blocked_cpu_s"] / shim["blocked_s"]
        assert wake["shim"]["wakes_rung"] == sum(r["shim"]["wakes_rung"] for r in wake["runs"])
    for call in ("allreduce_us", "iallreduce_us", "barrier_us"):
        cost = out["collectives"][call]
        assert cost["without"] > 0 and cost["with_spin_block"] > 0
        assert cost["ratio"] == cost["with_spin_block"] / cost["without"]


def _experiment(module: str, tmp_path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", module, *args, "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, check=True)
    assert (tmp_path / "run" / "summary.json").exists()
    return done.stdout


@pytest.mark.realtime
def test_granularity_experiment_prints_five_cases(tmp_path):
    lines = _experiment("benchmarks.papers.granularity", tmp_path, "--work", "0.3").splitlines()
    assert lines[0].split() == ["#", "G", "V", "work", "runtime", "comm", "wait"]
    assert [line.split()[0] for line in lines[1:6]] == ["1", "2", "3", "4", "5"]


@pytest.mark.realtime
def test_fcs_classification_experiment_prints_every_process(tmp_path):
    out = _experiment("benchmarks.papers.fcs_classification", tmp_path, "--work", "0.4",
                      "--timeslice", "0.05")
    rows = [line.split() for line in out.splitlines()[1:] if line.split()[:1] != ["note:"]
            and not line.startswith("run directory")]
    assert len(rows) == 2 + 2 + 3 + 1 + 4 + 4
    assert all(row[-2] in ("INIT_CS", "INIT_DC", "CS", "F", "DC") for row in rows)


@pytest.mark.realtime
def test_fcs_classification_fit_variant_never_oversubscribes(tmp_path):
    out = _experiment("benchmarks.papers.fcs_classification", tmp_path, "--variant", "fit",
                      "--work",
                      "0.3", "--timeslice", "0.05")
    rows = [line.split() for line in out.splitlines()[1:] if line.split()[:1] != ["note:"]
            and not line.startswith("run directory")]
    assert len(rows) == 2 + 2 + 2 + 1 + 2 + 2 + 1
    assert {int(row[2]) for row in rows} == {0, 1} and "oversubscribed" not in out
    assert sorted({int(row[4]) for row in rows}) == list(range(6))
    # Job 7 fills the PE job 4 leaves in its row: every PE holds one process of every row.
    by_job = {row[0]: row for row in rows}
    assert by_job["j7"][4] == by_job["j4"][4] and by_job["j7"][2] != by_job["j4"][2]


@pytest.mark.realtime
def test_overhead_suite_quick_runs_and_writes_every_figure(tmp_path):
    # The figures of a quick run mean nothing: only their presence and shape are checked here;
    # the regression check is tested below and in test_regression.py with given numbers.
    out = tmp_path / "now.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.overheads.regression", "--quick",
                           "--rounds", "2", "--out", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    now = json.loads(out.read_text())
    assert json.loads(done.stdout) == now
    assert now["benchmark"] == "overheads" and now["quick"] is True and now["host"]["cpus"] >= 1
    assert now["date"] and now["plan"]["rounds"] == 2 and "injected_delays" not in now
    cpus = now["host"]["cpus"]
    assert set(now["samples"]) == {
        *(f"launch_overhead_s[n={n}]" for n in range(1, cpus + 1)),
        "switch_p50_us[mpl=2]", "switch_p99_us[mpl=2]", "mpl_linearity[200ms][k=2]",
        "shim_pingpong_ratio", "wakeup_p50_us", "wakeup_p99_us", "blocked_cpu_share",
        "asleep_cpu_share", "pipe_wakeup_p50_us", "pipe_wakeup_p99_us",
        *(f"progress_{metric}[{scheduler}]" for metric in progress_cost.METRICS
          for scheduler in ("gang", "ics", "fcs"))}
    assert now["progress_program"] in ("IMB-MPI1", "imb_style")
    assert all(len(values) == 2 and all(v > 0 for v in values)
               for values in now["samples"].values())
    for figure in now["figures"].values():
        assert figure["n"] == 2 and figure["ci_low"] <= figure["median"] <= figure["ci_high"]
    assert now["mpl_linearity"]["limit"] == regression.LINEARITY_LIMIT
    assert now["mpl_linearity"]["smallest_linear_timeslice_ms"] in (None, 200.0)
    assert "median [95 % interval]" in done.stderr
    # Against this very checkout, a round a side: both sides measured, each in its process.
    here = Path(regression.__file__).resolve().parents[2]
    same = subprocess.run([sys.executable, "-m", "benchmarks.overheads.regression", "--quick",
                           "--rounds", "1", "--parts", "switch,progress", "--against",
                           str(here)], capture_output=True, text=True, timeout=600)
    assert same.returncode == 0, same.stderr
    sides = json.loads(same.stdout)["sides"]
    assert all(len(sides[s]["samples"][name]) == 1 for s in ("baseline", "this")
               for name in ("switch_p50_us[mpl=2]", "progress_barrier_us[ics]"))


def _document(samples: dict[str, list[float]]) -> dict[str, Any]:
    """A hand-made document of the overhead suite: its samples and their summary."""
    return {"samples": samples, "figures": regression.summarise(samples)}


def _rounds(centre: float, n: int = 8) -> list[float]:
    return [centre * (1 + 0.004 * i) for i in range(n)]


BASELINE = _document({"switch_p50_us[mpl=2]": _rounds(100.0), "shim_pingpong_ratio":
                      _rounds(1.0), "launch_overhead_s[n=1]": _rounds(0.2)})


@pytest.mark.parametrize(("switch", "rounds", "options", "status"), [
    (130.0, 8, (), 1),                    # 30 % worse in every round
    (106.0, 8, (), 0),                    # 6 % worse: inside the default margin
    (106.0, 8, ("--margin", "0.03"), 1),
    (130.0, 2, (), 0),                    # two rounds cannot show it
    (70.0, 8, (), 0),                     # faster is never a regression
])
def test_main_with_a_baseline_exits_1_only_on_a_regression(tmp_path, monkeypatch, capsys,
                                                           switch, rounds, options, status):
    plans = []

    def measure(plan: dict[str, Any], progress: Any = None) -> dict[str, Any]:
        plans.append(plan)
        return _document({"switch_p50_us[mpl=2]": _rounds(switch, rounds),
                          "shim_pingpong_ratio": _rounds(1.0, rounds),
                          "launch_overhead_s[n=1]": _rounds(0.2, rounds)})

    monkeypatch.setattr(regression, "measure", measure)
    (tmp_path / "baseline.json").write_text(json.dumps(BASELINE))
    out = tmp_path / "now.json"
    assert regression.main(["--quick", "--baseline", str(tmp_path / "baseline.json"),
                           "--out", str(out), *options]) == status
    assert plans == [regression.QUICK]
    err = capsys.readouterr().err
    called = [line.split(":")[1].strip() for line in err.splitlines()
              if line.startswith("regression:")]
    assert called == ["switch_p50_us[mpl=2]"] * status
    assert ("no regression can be called" in err) == (rounds == 2)
    assert json.loads(out.read_text())["samples"]["switch_p50_us[mpl=2]"] == \
        _rounds(switch, rounds)


def test_round_order_takes_the_sides_in_turn_reversing_every_other_round():
    assert regression.round_order(3, ("a", "b")) == [(0, "a"), (0, "b"), (1, "b"), (1, "a"),
                                                    (2, "a"), (2, "b")]
    assert regression.round_order(2, ("x", "y", "z")) == [(0, "x"), (0, "y"), (0, "z"),
                                                         (1, "z"), (1, "y"), (1, "x")]


def _one_round(value: float, seconds: float = 1.5) -> dict[str, Any]:
    return {"plan": {"rounds": 1, "parts": ["switch"]}, "seconds": seconds,
            "samples": {"switch_p50_us[mpl=2]": [value]}}


def test_measure_interleaved_gathers_each_sides_rounds_in_the_order_they_ran():
    calls = []

    def one_round(side: str) -> dict[str, Any]:
        calls.append(side)
        return _one_round(len(calls))

    sides = regression.measure_interleaved(2, ("old", "new"), one_round)
    assert calls == ["old", "new", "new", "old"]
    assert sides["old"]["samples"] == {"switch_p50_us[mpl=2]": [1, 4]}
    assert sides["new"]["samples"] == {"switch_p50_us[mpl=2]": [2, 3]}
    assert sides["new"]["seconds"] == 3.0 and sides["new"]["plan"]["rounds"] == 2
    assert sides["old"]["figures"]["switch_p50_us[mpl=2]"]["median"] == 2.5


@pytest.mark.parametrize(("slower", "status"), [(1.3, 1), (1.0, 0), (0.7, 0)])
def test_main_against_a_checkout_compares_this_side_with_it(tmp_path, monkeypatch, capsys,
                                                            slower, status):
    here = Path(regression.__file__).resolve().parents[2]
    asked = []

    def round_in(checkout: Path, parts: tuple[str, ...], quick: bool) -> dict[str, Any]:
        asked.append((checkout, parts, quick))
        factor = slower if checkout == here else 1.0
        return _one_round(100.0 * factor * (1 + 0.004 * len(asked)))

    monkeypatch.setattr(regression, "round_in", round_in)
    monkeypatch.setattr(regression, "commit_of", lambda path: "abc1234" if path == here
                        else "f03a98e")
    other = tmp_path / "other"
    (other / "testbed").mkdir(parents=True)
    (other / "testbed" / "__main__.py").write_text("")
    out = tmp_path / "now.json"
    assert regression.main(["--rounds", "8", "--parts", "switch", "--against", str(other),
                           "--out", str(out), "--markdown", str(tmp_path / "now.md")]) == status
    assert [a[0] for a in asked[:4]] == [other.resolve(), here, here, other.resolve()]
    assert {a[1:] for a in asked} == {(("switch",), False)} and len(asked) == 16
    result = json.loads(out.read_text())
    assert set(result["sides"]) == {"baseline", "this"}
    assert result["interleaved"]["checkouts"]["baseline"] == str(other.resolve())
    err = capsys.readouterr().err
    assert ("regression: switch_p50_us[mpl=2]" in err) == (status == 1)
    assert "rounds interleaved with those of" in (tmp_path / "now.md").read_text()
    assert "at f03a98e (the baseline); this side at abc1234" in (tmp_path / "now.md").read_text()
    assert result["interleaved"]["commits"] == {"baseline": "f03a98e", "this": "abc1234"}


def test_main_against_refuses_what_is_not_a_checkout_and_a_baseline_beside_it(tmp_path,
                                                                                capsys):
    with pytest.raises(SystemExit) as stopped:
        regression.main(["--against", str(tmp_path)])
    assert stopped.value.code == 2
    assert "not a checkout of the testbed" in capsys.readouterr().err
    here = str(Path(regression.__file__).resolve().parents[2])
    assert regression.main(["--against", here, "--baseline", str(tmp_path / "b.json")]) == 2
    assert "takes neither --baseline nor --as-user" in capsys.readouterr().err


def test_smallest_linear_timeslice_reads_the_median_ratios():
    figures = regression.summarise({"mpl_linearity[200ms][k=2]": [1.0, 1.01, 1.02],
                                   "mpl_linearity[20ms][k=2]": [1.02, 1.02, 1.03],
                                   "mpl_linearity[10ms][k=2]": [1.02, 1.05, 1.06]})
    assert regression.smallest_linear_timeslice(figures) == 20.0
    assert regression.smallest_linear_timeslice({}) is None


@pytest.mark.parametrize("text", [
    None, "{not json", "[]", json.dumps({"mpl_linearity": {"ratios": {"200": {"2": 1.0}}},
                                         "shim": {"pingpong": {"ratio": 1.0}}}),
    json.dumps({"samples": {}}), json.dumps({"samples": {"a": []}}),
    json.dumps({"samples": {"a": [1.0, "fast"]}}), json.dumps({"samples": {"a": 1.0}}),
])
def test_main_refuses_a_baseline_that_is_not_one_before_measuring(tmp_path, monkeypatch, capsys,
                                                                  text):
    def measure(plan: dict[str, Any], progress: Any = None) -> dict[str, Any]:
        raise AssertionError("measured despite a bad baseline")

    monkeypatch.setattr(regression, "measure", measure)
    path = tmp_path / "baseline.json"
    if text is not None:
        path.write_text(text)
    assert regression.main(["--quick", "--baseline", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"{path}: not a baseline of this suite" in err


@pytest.mark.realtime
def test_simulator_benchmark_reports_jobs_per_second():
    done = subprocess.run([sys.executable, "-m", "benchmarks.simulator.speed", "--jobs", "300",
                           "--pes", "64", "--json"], capture_output=True, text=True,
                          timeout=300, check=True)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["policy"] for r in records] == ["easy", "conservative", "gang"]
    for r in records:
        assert r["jobs"] == 300 and r["pes"] == 64 and r["jobs_per_s"] > 0


@pytest.mark.realtime
def test_simulator_benchmark_repeats_runs_and_writes_its_page(tmp_path):
    page = tmp_path / "speed.md"
    subprocess.run([sys.executable, "-m", "benchmarks.simulator.speed", "--jobs", "200,300",
                    "--pes",
                    "64", "--policies", "easy,gang", "--repeats", "2", "--once-from", "300",
                    "--without-log", "--end-to-end", "easy", "--markdown", str(page)],
                   capture_output=True, text=True, timeout=300, check=True)
    text = page.read_text()
    assert "Written by `python -m benchmarks.simulator.speed --jobs 200,300" in text
    assert "| 200 | easy | 2 |" in text and "| 200 | gang | 2 |" in text
    assert "| 300 | easy | 1 |" in text and "without log" in text
    assert "| easy | 2 | " in text.split("What a user waits for")[1]


def _simulator_document(rates: dict[str, list[float]]) -> dict[str, Any]:
    runs = {side: [{"policy": "easy", "jobs": 1000, "jobs_per_s": r, "report_s": 1.0,
                    "span_s": 86400.0 * 30, "span_per_wall_s": 1e6, "peak_rss_mib": 100.0}
                   for r in values] for side, values in rates.items()}
    runs["this"].append({"policy": "easy", "jobs": 10_000, "jobs_per_s": 40_000,
                         "report_s": 2.0, "span_s": 86400.0 * 300, "span_per_wall_s": 2e6,
                         "peak_rss_mib": 500.0})
    end_to_end = {"this": [{"policy": p, "jobs": 1000, "seconds": s} for s in (4.0, 5.0, 6.0)
                           for p in ("easy", "gang")],
                  "against": [*({"policy": "easy", "jobs": 1000, "seconds": s}
                                for s in (10.0, 10.0, 10.0)),
                              *({"policy": "gang", "jobs": 1000,
                                 "missing": "testbed: error: unknown scheduler"},) * 3]}
    return {"checkouts": {side: {"path": side, "commit": "abc"} for side in rates},
            "repeats": len(rates["this"]), "runs": runs, "summary": speed.summarize(runs),
            "host": {"uname": "Linux", "cpus": 2, "python": "3.11"}, "date": "today",
            "seconds": 60.0, "jobs": [1000, 10_000], "pes": 64, "once_from": 10_000,
            "end_to_end": end_to_end,
            "end_to_end_summary": speed.summarize_end_to_end(end_to_end)}


def test_simulator_page_gives_medians_ratios_and_the_log_s_share():
    document = _simulator_document({"this": [20_000, 25_000, 30_000],
                                    "no_log": [50_000, 50_000, 50_000]})
    document["checkouts"]["against"] = {"path": "old", "commit": "def"}
    entry, once = document["summary"]
    assert entry["this"]["value"] == 25_000 and entry["runs"] == 3
    assert entry["this"]["low"] <= 25_000 <= entry["this"]["high"]
    assert once["runs"] == 1 and "no_log" not in once
    header, rows = speed.rows(document)
    assert "this / against" not in header     # the other checkout is timed by its command only
    row = dict(zip(header, rows[0], strict=True))
    assert row["jobs/s"].startswith("25,000 [") and row["us a job"] == "40.0"
    assert row["jobs/s"].endswith("] (75 %)") and row["log's share"] == "50%"
    assert row["simulated span"] == "30 d" and row["simulated / wall"].startswith("1,000,000")
    single = dict(zip(header, rows[1], strict=True))
    assert single["jobs"] == "10,000" and single["runs"] == "1"
    assert single["jobs/s"] == "40,000" and single["without log jobs/s"] == "-"
    assert single["peak RSS MiB"] == "500"
    header, rows = speed.end_to_end_rows(document)
    assert rows[0][:4] == ["1,000", "easy", "3", "5.00 [4.00, 6.00] (75 %)"]
    assert rows[0][5].startswith("0.50")
    assert rows[1][4:] == ["lacking: testbed: error: unknown scheduler", "-"]
    page = speed.markdown(document, "python -m benchmarks.simulator.speed --repeats 3")
    assert page.startswith("# Simulator speed") and "| 1,000 | easy | 3 | 25,000 [" in page
    assert "except the 10,000-job rows: one run each" in page
    assert "`python -m testbed simulate lublin.swf" in page
    assert "the same files, the two taking turns" in page
    assert speed.end_to_end_jobs([10_000, 100_000, 1_000_000], 1_000_000) == 100_000


def test_the_simulator_s_null_log_writes_nothing(tmp_path):
    log = speed.NullLog(tmp_path / "events.jsonl", flush_each=False)
    log.emit("run_end", 1.0, status="complete", swept=0)
    log.emit_finish(1.0, "j1", "done", 0, "", None, None, 1.0)
    log.emit_jobs("resume", 1.0, ["j1"])
    log.close()
    assert (tmp_path / "events.jsonl").read_text() == ""


@pytest.mark.realtime
def test_t3d_fig6_points_spread_over_workers_give_the_same_records():
    from benchmarks.papers.t3d_fig6 import run_points

    def figures(workers: int) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "wall_s"}
                for r in run_points((0.5, 0.8), 3, 40, ("fcfs", "gang 10 s ∞"), workers=workers)]

    alone = figures(1)
    assert figures(2) == alone and all("growth" in r for r in alone)


@pytest.mark.realtime
def test_t3d_fig6_writes_one_record_per_policy_and_load(tmp_path):
    page = tmp_path / "docs" / "fig6.md"
    done = subprocess.run([sys.executable, "-m", "benchmarks.papers.t3d_fig6", "--batches", "3",
                           "--batch-size", "40", "--loads", "0.4,0.8", "--json", "--out",
                           str(tmp_path), "--markdown", str(page)], capture_output=True,
                          text=True, timeout=300, check=True)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["policy"], r["load"]) for r in records] == [
        (p, load) for load in (0.4, 0.8) for p in ("fcfs", "backfill", "prime", "gang 10 s",
                                                    "gang 600 s", "gang 10 s ∞",
                                                    "gang 600 s ∞")]
    for r in records:
        assert r["jobs"] == 120 and r["slowdown"] >= 1 and r["ci"] is not None
        assert r["mpl"] == {"fcfs": 1, "backfill": 1, "prime": 1}.get(
            r["policy"], 0 if r["policy"].endswith("∞") else 16)
        assert len(r["batch_means"]) == r["batches"] == 2 and r["wall_s"] > 0
    assert all(r["peak_rows"] <= 16 for r in records if r["mpl"] == 16)
    assert (tmp_path / "fig6.png").exists() and page.with_suffix(".png").exists()
    doc = json.loads((tmp_path / "fig6.json").read_text())
    assert doc["records"] == records and doc["claims"]
    text = page.read_text()
    assert "![slowdown against load](fig6.png)" in text and "--markdown" in text


def _record(policy: str, load: float, slowdown: float, ci: float | None,
            saturated: bool = False) -> dict:
    return {"policy": policy, "load": load, "slowdown": slowdown, "ci": ci,
            "saturated": saturated}


def test_t3d_fig6_claims_compare_intervals_and_saturation_loads():
    from benchmarks.papers.t3d_fig6 import claims, compare, first_saturated
    assert compare(_record("a", 0.5, 10, 2), _record("b", 0.5, 20, 5)) == "below"
    assert compare(_record("a", 0.5, 10, 6), _record("b", 0.5, 20, 5)) == "overlap"
    assert compare(_record("a", 0.5, 30, 2), _record("b", 0.5, 20, 5)) == "above"
    assert compare(_record("a", 0.5, 10, None), _record("b", 0.5, 20, 1)) == "overlap"
    records = [
        _record("fcfs", 0.2, 900, 100, True), _record("fcfs", 0.9, 9000, 900, True),
        _record("backfill", 0.2, 50, 10), _record("backfill", 0.9, 500, 400, True),
        _record("prime", 0.2, 90, 10), _record("prime", 0.9, 700, 100, True),
        _record("gang 10 s", 0.2, 2, 1), _record("gang 10 s", 0.9, 8000, 900, True),
        _record("gang 10 s ∞", 0.2, 2, 1), _record("gang 10 s ∞", 0.9, 12, 6),
    ]
    assert first_saturated(records, "backfill") == 0.9 and first_saturated(records, "gang 10 s ∞") \
        is None
    verdicts = {(c["claim"], c["scheme"]): (c["verdict"], c["detail"]) for c in claims(records)}
    near_one = "gang saturating only near load 1 (not below 0.9)"
    assert verdicts["FCFS saturates first", None][0] == "holds"
    assert verdicts["FCFS slowdown highest (before saturation too)", None] == (
        "partly", "above every other scheme at 0.2; not at 0.9; below one at none")
    assert verdicts["backfilling (conservative) below prime, sustaining a higher load", None] == (
        "partly", "backfill below prime at 0.2; intervals overlap at 0.9; above at none; backfill "
        "saturated from 0.9, prime from 0.9")
    assert verdicts["gang lowest", "gang 10 s"] == (      # wholly above easy at 0.9
        "fails", "below every batch scheme at 0.2; not at 0.9; above one at 0.9")
    assert verdicts["gang lowest", "gang 10 s ∞"][0] == "holds"
    wide = [r if r["policy"] != "gang 10 s ∞" else {**r, "ci": 1e6} for r in records]
    verdicts = {(c["claim"], c["scheme"]): (c["verdict"], c["detail"]) for c in claims(wide)}
    assert verdicts["gang lowest", "gang 10 s ∞"] == (    # shown nowhere, contradicted nowhere
        "partly", "below every batch scheme at none; not at 0.2, 0.9; above one at none")
    assert verdicts["FCFS slowdown highest (before saturation too)", None][1].startswith(
        "above every other scheme at none")
    assert verdicts[near_one, "gang 10 s"] == ("holds", "saturated from 0.9")
    assert verdicts[near_one, "gang 10 s ∞"] == ("holds", "saturated never")
    early = [*records, _record("gang 600 s ∞", 0.2, 5, 1, True),
             _record("gang 600 s ∞", 0.9, 50, 10, True)]
    verdicts = {(c["claim"], c["scheme"]): (c["verdict"], c["detail"]) for c in claims(early)}
    assert verdicts["FCFS saturates first", None][0] == "holds"    # a tie at 0.2
    assert verdicts[near_one, "gang 600 s ∞"] == ("fails", "saturated from 0.2")
    first = [*records[2:], _record("fcfs", 0.2, 900, 100), _record("fcfs", 0.9, 9000, 900)]
    assert claims(first)[0]["verdict"] == "fails"                 # fcfs never saturated


def test_batch_means_drop_the_first_batch_and_use_students_t():
    from benchmarks.papers.t3d_fig6 import batch_means, t_quantile_95
    assert [round(t_quantile_95(df), 2) for df in (2, 5, 10, 30, 60, 120)] == [
        2.92, 2.02, 1.81, 1.70, 1.67, 1.66]
    mean, half, batches = batch_means([100.0] * 3 + [1.0, 2.0, 3.0, 5.0, 6.0, 7.0], size=3)
    assert (mean, batches) == (4.0, 2)                    # the 100s were the warm-up batch
    assert half == pytest.approx(t_quantile_95(1) * 2.8284271 / 2 ** 0.5, rel=1e-3)


@pytest.mark.realtime
def test_service_benchmark_reports_overhead_and_throughput(tmp_path):
    page = tmp_path / "service.md"
    out = _bench("benchmarks.reliability.service", "--repeats", "3", "--rounds", "2", "--jobs", "4",
                 "--clients", "2", "--json", "--markdown", str(page))
    this = out["sides"]["this"]
    for job in ("true", "init_finalize"):
        assert len(this["samples"][f"mpirun_s:{job}"]) == len(out["samples"][f"mpiexec_s:{job}"])
        mpirun = this[f"mpirun_ms:{job}"]
        assert mpirun["low"] <= mpirun["value"] <= mpirun["high"]
        differences = sorted(a - b for a, b in zip(this["samples"][f"mpirun_s:{job}"],
                                                   out["samples"][f"mpiexec_s:{job}"],
                                                   strict=True))
        assert this[f"overhead_ms:{job}"]["value"] == round(differences[1] * 1e3, 2)
    assert len(this["samples"]["jobs_per_s"]) == 2 and this["jobs_per_s"]["value"] > 0
    assert this["service_latency_ms"]["value"] > 0
    assert this["client"] in ("compiled", "python") and out["plan"]["jobs"] == 4
    text = page.read_text()
    assert "python -m benchmarks.reliability.service --repeats 3" in text
    assert out["host"]["uname"] in text


@pytest.mark.realtime
def test_cow_benchmark_writes_one_record_per_policy_and_cell(tmp_path):
    page = tmp_path / "cow.md"
    done = subprocess.run([sys.executable, "-m", "benchmarks.papers.cow", "--set", "1",
                           "--replications", "2", "--jobs", "150", "--json", "--out",
                           str(tmp_path), "--markdown", str(page)], capture_output=True,
                          text=True, timeout=300, check=True)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["policy"], r["inv_lambda_owner"]) for r in records] == [
        (p, inv) for inv in (1.0, 0.8, 0.6, 0.4) for p in ("afcfs", "lgfs")]
    for r in records:
        assert r["rt"] > 0 and 0 < r["u"] <= 1 and r["restarts"] >= 0
    assert (tmp_path / "cow-set1.png").exists()
    text = page.read_text()
    assert "## Set 1" in text and "## Set 2" not in text and "--markdown" in text
    assert json.loads((tmp_path / "cow-set1.json").read_text())["records"] == records


@pytest.mark.realtime
def test_cow_emulated_benchmark_compares_both_policies(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.papers.cow_emulated", "--gangs", "2",
                           "--mean-work", "0.3", "--inv-lambda", "0.5", "--owners", "1:0.3",
                           "--json", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=True)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["policy"] for r in records] == ["afcfs", "lgfs"]
    for r in records:
        assert r["events"] >= 4 and r["rt_emulated"] > 0 and r["rt_simulated"] > 0
    assert (tmp_path / "lgfs" / "gantt.png").exists()
    assert (tmp_path / "sim-afcfs" / "gantt.png").exists()


def test_switch_latency_page_gives_each_mpl_and_side_its_runs():
    from benchmarks.overheads import switch_latency

    assert switch_latency.parse_side("ann") == ("ann", "auto")
    assert switch_latency.parse_side("ann:normal") == ("ann", "normal")

    def run(side: str, mpl: int, p99: float) -> dict:
        return {"pes": 2, "mpl": mpl, "switches": 170 + mpl, "side": side,
                "coordinator_priority": "SCHED_FIFO" if side == "root" else "",
                "rank_priority": "idle", "latency_us": {"p50": 120.0, "p99": p99},
                "lag_us": {"p99": 4000.0}}

    runs = [run(side, mpl, p99) for mpl in (2, 3) for side, p99s in
            (("root", (180.0, 150.0, 220.0)), ("ann, ranks auto", (170.0, 360.0, 170.0)))
            for p99 in p99s]
    page = switch_latency.markdown(runs, 4.0, 0.05,
                                   "python -m benchmarks.overheads.switch_latency x",
                                   "2026-11-25 12:00 UTC, 6 min")
    assert "`python -m benchmarks.overheads.switch_latency x`" in page and "6 min" in page
    table = [line for line in page.splitlines() if line.startswith("| 2 |")
             or line.startswith("| 3 |")]
    assert [line.split(" | ")[1] for line in table] == ["root", "ann, ranks auto"] * 2
    assert table[0].startswith("| 2 | root | 3 | 172 | 0.12 (0.12-0.12) | 0.18 (0.15-0.22) | [")
    assert table[1].split(" | ")[5] == "0.17 (0.17-0.36)"
    assert table[0].endswith("| 4 (4-4) | SCHED_FIFO | idle |")
    assert table[1].endswith("| - | idle |")


def test_cow_emulated_page_says_where_the_orders_part():
    import argparse

    from benchmarks.papers import cow_emulated

    args = argparse.Namespace(gangs=8, seed=1, inv_lambda=2.0, mean_work=1.5, owners="0.25:1.5",
                              owner_seed=1, launch_cost=0.27)
    records = [{"policy": "afcfs", "same_order": True, "events": 44, "first_difference": None,
                "interrupts": 6, "rt_emulated": 9.886, "rt_simulated": 9.901},
               {"policy": "lgfs", "same_order": False, "events": 44, "first_difference": 17,
                "interrupts": 5, "rt_emulated": 9.874, "rt_simulated": 9.901}]
    page = cow_emulated.markdown(records, args,
                                 "python -m benchmarks.papers.cow_emulated --markdown p",
                                 "2026-11-25 12:00 UTC, 60 s")
    assert "`python -m benchmarks.papers.cow_emulated --markdown p`" in page
    assert "- measured: 2026-11-25 12:00 UTC, 60 s" in page and "8 gangs of 1-2 tasks" in page
    assert "| afcfs | 44 | yes | 6 | 9.886 | 9.901 |" in page
    assert "| lgfs | 44 | no, from event 17 | 5 | 9.874 | 9.901 |" in page


@pytest.mark.realtime
def test_t3d_classes_benchmark_measures_each_scheduler(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.papers.t3d_classes", "--span", "12",
                           "--scale", "0.15", "--json", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, check=True)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["scheduler"] for r in records] == ["t3d", "gang", "fcfs"]
    for r in records:
        assert r["makespan"] > 0 and 0 <= r["stopped_fraction"] <= 1
        assert r["quantum_by_size"]
    assert (tmp_path / "t3d-classes.png").exists()


def test_t3d_classes_page_has_a_row_per_scheduler():
    from benchmarks.papers import t3d_classes

    records = [{"scheduler": name, "interactive": 18, "response_mean": mean,
                "response_median": 2.59, "bsld_mean": 2.34, "stopped_fraction": 0.17,
                "quantum_by_size": {"1": 2.1, "2": 1.3}, "quantum_by_size_stopped": {"2": 0.3},
                "makespan": 93.1} for name, mean in (("t3d", 3.43), ("gang", 4.17),
                                                     ("fcfs", 7.02))]
    page = t3d_classes.markdown(records, 90.0, 1, 1.0, "python -m benchmarks.papers.t3d_classes",
                                "2026-11-25 12:00 UTC, 5 min")
    assert "`python -m benchmarks.papers.t3d_classes`" in page and "5 min" in page
    assert "| t3d | 18 | 3.430 | 2.590 | 2.340 | 0.170 | 1:2.1 2:1.3 | 2:0.3 | 93.100 |" in page
    assert [line.split(" | ")[0] for line in page.splitlines()
            if line.startswith("| ") and "18" in line] == ["| t3d", "| gang", "| fcfs"]


def test_nersc_page_gives_medians_and_ranges_over_seeds():
    from benchmarks.papers import nersc

    records = [{"config": config, "seed": seed, "utilization": u, "busy": u,
                "large_mean": 10.0 * seed, "large_median": 9.0, "small_mean": 5.0,
                "small_median": 4.0, "migrations": seed - 1, "makespan": 2000.0 + seed}
               for seed in (1, 2, 3) for config, u in (("gang", 0.8), ("nersc", 0.97),
                                                       ("no-prime", 0.84))]
    page = nersc.markdown(records, 128, 2000.0, True,
                          "python -m benchmarks.papers.nersc --simulate",
                          "2026-11-25 12:00 UTC, 40 s")
    assert "`python -m benchmarks.papers.nersc --simulate`" in page and "40 s" in page
    assert "- 128 PEs, in the simulator; seeds 1, 2, 3, 2000 s of Poisson arrivals" in page
    assert "NERSC's Table 2 scaled to 128 of 644 PEs, bins 1-3 PEs (55.8 % of the jobs" in page
    assert "| nersc | 0.97 (0.97-0.97) | 0.97 (0.97-0.97) | 20 (10-30) | 9 (9-9) |" in page
    assert page.rstrip().endswith("| 1 (0-2) | 2002 (2001-2003) |")
    one = nersc.markdown(records[:3], 2, 60.0, False, "cmd", "now")
    assert "no matrix row holds more processes" in one
    assert "| gang | 0.800 | 0.800 | 10.000 |" in one
    assert "small jobs (1 PE to a quarter of the machine)" in one


def test_nersc_table2_mix_offers_the_papers_shares_and_load():
    from benchmarks.papers.nersc import TABLE_2, TABLE_2_LOAD, table2_bins, table2_mix
    assert table2_bins(644) == [(1, 16), (17, 64), (65, 128), (129, 512)]
    assert table2_bins(128) == [(1, 3), (4, 13), (14, 25), (26, 102)]
    lines = [line.split() for line in table2_mix(128, 20000, 5, prime=True).splitlines()[1:]]
    jobs = [(int(w[1]), float(w[-1]), w[2] == "prime") for w in lines]
    bins = table2_bins(128)
    which = [next(i for i, (lo, hi) in enumerate(bins) if lo <= size <= hi) for size, _, _ in jobs]
    work = sum(size * w for size, w, _ in jobs)
    for b, (_, _, apps, hours) in enumerate(TABLE_2):
        mine = [j for j, k in zip(jobs, which, strict=True) if k == b]
        assert abs(len(mine) / len(jobs) - apps / 100) < 0.03
        assert abs(sum(size * w for size, w, _ in mine) / work - hours / 100) < 0.35 * hours / 100
        assert all(prime == (b == 3) for _, _, prime in mine)
    assert abs(work / (128 * 20000) - TABLE_2_LOAD) < 0.15
    assert "prime" not in table2_mix(128, 200, 5, prime=False)


def test_nersc_mix_primes_only_the_large_jobs():
    from benchmarks.papers.nersc import mix, sizes
    assert sizes(2) == ([1], [2]) and sizes(128) == ([1, 2, 4, 8, 16, 32], [64, 102])
    lines = [line.split() for line in mix(16, 200, 3, prime=True).splitlines()[1:]]
    assert {int(w[1]) for w in lines if w[2] == "prime"} == {8, 13}
    assert {int(w[1]) for w in lines if w[2] != "prime"} == {1, 2, 4}
    assert "prime" not in mix(16, 200, 3, prime=False)


@pytest.mark.realtime
def test_nersc_benchmark_simulated_primes_shorten_large_turnaround(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.papers.nersc", "--simulate", "--pes",
                           "16",
                           "--span", "300", "--seeds", "1", "--json", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=True)
    records = {r["config"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert list(records) == ["before", "split-gang", "gang", "nersc", "no-prime"]
    assert {r["large"] for r in records.values()} == {records["gang"]["large"]} != {0}
    # the simulator is deterministic: prime status reverses job-size entropy (psched §NERSC)
    assert records["nersc"]["large_mean"] < records["no-prime"]["large_mean"]
    assert records["nersc"]["large_mean"] < records["gang"]["large_mean"]
    assert records["gang"]["migrations"] == 0
    assert all(abs(sum(r["bins"]) - 1) < 1e-3 and len(r["busy_days"]) == 14
               for r in records.values())
    assert (tmp_path / "nersc.png").exists()


def test_a_side_by_side_document_compares_each_side_with_its_own():
    slow = _document({**BASELINE["samples"], "switch_p50_us[mpl=2]": _rounds(130.0)})
    now = {"root": BASELINE, "unprivileged": slow}
    then = {"root": BASELINE, "unprivileged": BASELINE}
    assert regression.compare(now, then,
                              regression.figure_margins(regression.sample_sets(now))) == 1
    findings = check(regression.sample_sets(now), regression.sample_sets(then))
    assert [f.figure for f in findings if f.regressed] == ["unprivileged:switch_p50_us[mpl=2]"]
    # A single-sided baseline shares no figure names with a side-by-side run.
    assert check(regression.sample_sets(now), regression.sample_sets(BASELINE)) == []


def test_markdown_page_records_host_date_and_every_figure():
    result = {**BASELINE, "host": {"uname": "Linux box", "cpus": 2, "python": "3.11.7"},
              "date": "2026-11-24T20:00:00+0000", "seconds": 600.0,
              "plan": {"rounds": 8, "parts": ["switch", "shim"]},
              "mpl_linearity": {"smallest_linear_timeslice_ms": None}}
    page = regression.markdown(result, None,
                               "python -m benchmarks.overheads.regression --markdown x.md")
    assert "Linux box, 2 CPUs" in page and "2026-11-24T20:00:00+0000, 10 min" in page
    assert "8 rounds of switch, shim" in page
    assert all(f"| {name} |" in page for name in BASELINE["samples"])
    assert "Against the baseline" not in page
    findings = check(regression.sample_sets(result), regression.sample_sets(BASELINE))
    assert "Against the baseline" in regression.markdown(result, findings, "cmd")


def test_markdown_page_of_root_and_a_user_side_by_side():
    plan = {"rounds": 8, "parts": ["switch", "linearity"]}
    root = {**BASELINE, "plan": plan, "mpl_linearity": {"smallest_linear_timeslice_ms": 50.0}}
    user = {**_document({"switch_p50_us[mpl=2]": _rounds(90.0)}), "plan": plan, "user": "ann",
            "mpl_linearity": {"smallest_linear_timeslice_ms": None}}
    result = {"host": {"uname": "Linux box", "cpus": 2, "python": "3.11.7"},
              "date": "2026-11-24T20:00:00+0000", "seconds": 900.0, "root": root,
              "unprivileged": user}
    page = regression.markdown(result, None,
                               "python -m benchmarks.overheads.regression --as-user ann")
    assert "2026-11-24T20:00:00+0000, 15 min" in page
    assert "8 rounds of switch, linearity as root, then as many as `ann`" in page
    rows = [line for line in page.splitlines() if line.startswith("| switch")]
    assert len(rows) == 1 and rows[0].startswith("| switch_p50_us[mpl=2] | 101.4 [")
    assert "| 91.26 [" in rows[0] and "shim_pingpong_ratio" not in page
    assert "root / unprivileged: 50 ms / none" in page


def test_figure_margins_come_from_the_file_then_the_option_then_the_drift_table():
    names = ["switch_p50_us[mpl=2]", "root:launch_overhead_s[n=1]", "wakeup_p99_us"]
    assert regression.figure_margins(names) == {
        "switch_p50_us[mpl=2]": 0.10,
        "root:launch_overhead_s[n=1]": regression.DRIFT_MARGINS["launch_overhead_s"],
        "wakeup_p99_us": regression.DRIFT_MARGINS["wakeup_p99_us"]}
    assert set(regression.figure_margins(names, 0.05).values()) == {0.05}
    assert regression.figure_margins(names, 0.05, {"wakeup_p99_us": 0.7})["wakeup_p99_us"] == 0.7


@pytest.mark.parametrize(("text", "message"), [
    ("{", "not a JSON file of margins"), ("[0.1]", "not a JSON object"),
    ('{"a": -0.1}', "figure a: margin -0.1 is not a number >= 0"),
    ('{"a": "wide"}', "figure a: margin 'wide'"), ('{"a": true}', "figure a: margin True"),
])
def test_a_bad_margins_file_is_one_clear_message_before_measuring(tmp_path, monkeypatch, capsys,
                                                                  text, message):
    def measure(plan: dict[str, Any], progress: Any = None) -> dict[str, Any]:
        raise AssertionError("measured despite bad margins")

    monkeypatch.setattr(regression, "measure", measure)
    (tmp_path / "baseline.json").write_text(json.dumps(BASELINE))
    (tmp_path / "margins.json").write_text(text)
    assert regression.main(["--quick", "--baseline", str(tmp_path / "baseline.json"),
                           "--margins", str(tmp_path / "margins.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"overheads: {tmp_path / 'margins.json'}: ") and message in err


def test_a_margins_file_widens_one_figure(tmp_path, monkeypatch, capsys):
    slow = _document({**BASELINE["samples"], "switch_p50_us[mpl=2]": _rounds(130.0)})
    monkeypatch.setattr(regression, "measure", lambda plan, progress=None: slow)
    (tmp_path / "baseline.json").write_text(json.dumps(BASELINE))
    (tmp_path / "margins.json").write_text('{"switch_p50_us[mpl=2]": 0.4}')
    args = ["--quick", "--baseline", str(tmp_path / "baseline.json")]
    assert regression.main(args) == 1
    assert regression.main([*args, "--margins", str(tmp_path / "margins.json")]) == 0


def test_chaos_page_counts_trials_survivors_and_how_clients_ended():
    from benchmarks.reliability import chaos

    records = [{"killed": "service SIGKILL", "failed": [], "survivors": {"processes": 0},
                "clients": [{"code": 1, "last_line": "testbed: the service died"},
                            {"code": 0, "last_line": ""}]},
               {"killed": "nm0", "failed": ["survivors: {'processes': [1]}"],
                "survivors": {"processes": 1},
                "clients": [{"code": 137, "last_line": "Killed"}]}]
    result = {"host": {"uname": "Linux box", "cpus": 2, "python": "3.11.7"}, "seed": 1,
              "date": "2026-11-25T12:00:00+0000", "minutes": 0.5, "records": records,
              **chaos.summarise(records)}
    page = chaos.markdown(result, "python -m benchmarks.reliability.chaos --trials 2")
    assert "`python -m benchmarks.reliability.chaos --trials 2`" in page and "0.5 min" in page
    assert "**1 of 2 trials passed.**" in page
    assert "| service SIGKILL | 1 |" in page and "| nm0 | 1 |" in page
    assert "| processes | 1 |" in page
    assert "Clients: 3; 1 exited non-zero with a line from `testbed` saying why, 1 had " \
           "finished their job, 1 ended otherwise." in page
    assert "- trial 1: survivors: {'processes': [1]}" in page


@pytest.mark.realtime
def test_chaos_quick_kills_a_service_and_a_node_manager_and_finds_nothing_left():
    done = subprocess.run([sys.executable, "-m", "benchmarks.reliability.chaos", "--quick",
                           "--seed", "3"],
                          capture_output=True, text=True, timeout=600)
    result = json.loads(done.stdout)
    assert done.returncode == 0, result["failures"]
    assert result["trials"] == 2 and result["passed"] == 2
    assert [r["multihost"] for r in result["records"]] == [False, True]
    assert result["records"][1]["killed"].startswith("nm")
    assert all(v == 0 for v in result["survivors"].values())


@pytest.mark.realtime
def test_soak_quick_accounts_for_every_job_and_leaves_nothing(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.reliability.soak", "--quick",
                           "--clients", "3",
                           "--out", str(tmp_path / "soak.json"),
                           "--markdown", str(tmp_path / "soak.md")],
                          capture_output=True, text=True, timeout=600)
    result = json.loads(done.stdout)
    page = (tmp_path / "soak.md").read_text()
    assert f"{result['jobs']['arrived']} jobs arrived" in page and "resident memory" in page
    again = subprocess.run([sys.executable, "-m", "benchmarks.reliability.soak", "--from",
                            str(tmp_path / "soak.json"), "--markdown", str(tmp_path / "re.md")],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == done.returncode and (tmp_path / "re.md").read_text() == page
    assert result["jobs"]["arrived"] > 5 and result["jobs"]["unaccounted"] == 0, result["jobs"]
    assert result["requests"].get("mpirun", 0) > 0 and result["status"] == "stopped"
    assert all(v == 0 for v in result["survivors"].values())
    assert result["samples"] and {"rss_kib", "fds", "threads"} <= set(result["samples"][0])
    assert not result["client_errors"], result["client_errors"]


@pytest.mark.realtime
def test_same_logs_finds_a_checkout_the_same_as_itself_and_names_what_differs(tmp_path):
    from benchmarks.simulator import same_logs

    done = subprocess.run([sys.executable, "-m", "benchmarks.simulator.same_logs", "--quick",
                           "--json",
                           "--against", str(same_logs.HERE)], capture_output=True, text=True,
                          timeout=600, cwd=same_logs.HERE)
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert len(records) == 4 and all(r["same"] and len(r["this"]) == 16 for r in records)
    run = tmp_path / "run"
    run.mkdir()
    line = {"t": 0.0, "event": "run_start", "run_id": "a", "wall_time": 1.0,
            "config": {"argv": ["x"], "out": str(run)}}
    (run / "events.jsonl").write_text(json.dumps(line) + '\n{"t": 1.0}\n')
    first = same_logs.digest(run, tmp_path)
    line.update(run_id="b", wall_time=2.0, config={"argv": ["y"], "out": str(run)})
    (run / "events.jsonl").write_text(json.dumps(line) + '\n{"t": 1.0}\n')
    assert same_logs.digest(run, tmp_path) == first
    (run / "events.jsonl").write_text(json.dumps(line) + '\n{"t": 1.5}\n')
    assert same_logs.digest(run, tmp_path) != first
    refused = subprocess.run([sys.executable, "-m", "benchmarks.simulator.same_logs", "--against",
                              str(tmp_path)], capture_output=True, text=True, timeout=60,
                             cwd=same_logs.HERE)
    assert refused.returncode == 2 and "not a testbed checkout" in refused.stderr


def test_t3d_fig6_page_shows_intervals_saturation_and_the_cost_of_rows():
    from benchmarks.papers.t3d_fig6 import claims, markdown
    records = [{**_record("gang 10 s", 0.9, 8468.661, 7378.391, True), "mpl": 16,
                "bounded_slowdown": 4421.8, "bounded_ci": None, "peak_rows": 16,
                "wall_s": 53.0, "jobs": 20000, "delivered": 0.79},
               {**_record("gang 10 s ∞", 0.9, 12.626, 6.907), "mpl": 0,
                "bounded_slowdown": 9.5, "bounded_ci": 5.0, "peak_rows": 29, "wall_s": 62.0,
                "jobs": 20000, "delivered": 0.85}]
    doc = {"host": {"uname": "Linux h", "cpus": 2, "python": "3.11"}, "pes": 128,
           "batch": 3333, "batches": 6, "mpl": 16, "records": records,
           "claims": claims(records), "measured": "then", "seconds": 120.0, "row_bytes": 2048,
           "command": "python -m benchmarks.papers.t3d_fig6"}
    page = markdown(doc, "fig.png", "python -m benchmarks.papers.t3d_fig6 --markdown x.md")
    assert "| 0.9 | 8469 ± 7.38e+03 (sat.) | 12.63 ± 6.91 |" in page
    assert "| 0.9 | 4422 ± ∞ (sat.) | 9.5 ± 5 |" in page
    assert "| 0.9 | 16, 2650 | 29, 3100, 58 KiB |" in page
    assert "| 0.9 | 0.878 | 0.944 |" in page                 # delivered / offered
    assert "- gang 10 s ∞ / gang 10 s, wall time per load: 1.17 to 1.17" in page
    assert "| gang lowest |" not in page                   # no batch scheme to compare with
    assert "| gang saturating only near load 1 (not below 0.9) | gang 10 s | holds |" in page


def test_crossval_page_records_the_command_and_one_row_per_policy():
    from benchmarks.simulator import crossval

    records = [{"policy": p, "emulated_s": 2.0, "simulated_s": 1.5, "ratio": 0.75,
                "launch_cost_s": 0.27, "simulated_with_launch_s": 2.0,
                "ratio_with_launch": 1.0} for p in crossval.POLICIES]
    page = crossval.markdown(records, 20, 1, "python -m benchmarks.simulator.crossval --jobs 20")
    assert "`python -m benchmarks.simulator.crossval --jobs 20`" in page
    assert "0.270 s" in page
    table = [line for line in page.splitlines() if line.startswith("| ")]
    assert [line.split(" | ")[0] for line in table[1:]] == [f"| {p}" for p in crossval.POLICIES]
    assert "| fcfs | 2.000 | 1.500 | 0.750 | 2.000 | 1.000 |" in table


def test_the_heartbeat_model_adds_the_sends_hops_and_the_last_switch():
    costs = multihost.Costs(mm_send=10.0, hop=200.0, send=5.0, act=100.0)
    assert [multihost.depth_bound(n, 32) for n in (1, 32, 33, 1024, 1025)] == [1, 1, 2, 2, 3]
    assert multihost.depth_bound(1024, 2) == 10
    # 1,024 NMs at width 32: 32 sends, then two levels of a hop and 32 sends each
    assert multihost.projected_latency(1024, 32, costs) == 10 * 32 + 2 * (200 + 32 * 5) + 100
    assert multihost.projected_latency(4, 32, costs) == 10 * 4 + (200 + 4 * 5) + 100


def test_the_models_inputs_come_from_the_runs_that_time_them():
    def beat(send: float, hop: float, forward: float | None, cpu: float,
             latency: float | None) -> tuple[dict[str, Any], float | None]:
        return {"send_us": send, "hop_us": hop, "forward_us": forward, "cpu_us": cpu}, latency
    runs = [{"nms": 1, "width": 2, "direct": 1, "mm_cpu_us": 50.0,
             "beats": [beat(10.0, 100.0, None, 50.0, 400.0), beat(30.0, 300.0, None, 50.0, None)]},
            {"nms": 2, "width": 2, "direct": 2, "mm_cpu_us": 70.0,
             "beats": [beat(40.0, 800.0, None, 70.0, 900.0)]},
            {"nms": 4, "width": 2, "direct": 2, "mm_cpu_us": 70.0,
             "beats": [beat(20.0, 900.0, 8.0, 70.0, 2000.0)]},
            {"nms": 2, "width": 1, "direct": 1, "mm_cpu_us": 50.0,
             "beats": [beat(12.0, 150.0, 6.0, 50.0, 600.0), beat(12.0, 250.0, 9.0, 50.0, 700.0)]}]
    low = multihost.model_costs(runs, 0.5)
    # sends and hops from the single NM and the chain (not the runs where 3 or 5 processes
    # share 2 CPUs), forwarding from the chain, act = 400 - 10 - 100
    assert low == multihost.Costs(mm_send=12.0, hop=150.0, send=6.0, act=290.0)
    assert multihost.model_costs(runs, 0.99).hop == 300.0
    projected = multihost.project(runs, [1024], 32)[0]
    assert projected["depth"] == 2 and projected["projected"] is True
    assert projected["p50_us"] == 12 * 32 + 2 * (150 + 32 * 6) + 290
    assert projected["mm_cpu_us"] == 30.0 + 20.0 * 32     # the line through (1, 50), (2, 70)


def test_the_page_checks_each_target_against_the_record_it_names():
    runs = [{"nms": 1, "width": 2, "p99_us": 3000.0}, {"nms": 2, "width": 2, "p99_us": 999.0}]
    projected = [{"nms": 64, "width": 4, "p99_us": 100.0},
                 {"nms": 1024, "width": 4, "p99_us": 5001.0}]
    assert multihost.against_targets(runs, projected) == [
        "- measured switch p99 with 2 hosts (width 2): 999 µs against at most 1,000 µs: met",
        "- projected switch p99 with 1,024 hosts (width 4): 5,001 µs against at most "
        "5,000 µs: not met"]
    assert multihost.against_targets(runs[:1], []) == []


def _soak_samples(minutes: float, fds: Any) -> list[dict[str, float]]:
    return [{"t": t, "rss_kib": 100_000.0, "fds": float(fds(t, i)), "threads": 3.0}
            for i, t in enumerate(np.arange(2.0, minutes * 60 + 1, 2.0))]


def test_soak_descriptors_that_follow_the_clients_are_not_growth_but_a_leak_is():
    from benchmarks.reliability import soak

    in_flight = [9, 28, 14, 21, 11, 26, 17, 12, 24, 10, 19, 27, 13]
    wave = _soak_samples(2, lambda t, i: in_flight[i % len(in_flight)])
    busy = [dict(s, fds=max(s["fds"], 20.0) if s["t"] > 90 else s["fds"]) for s in wave]
    kept = [s["fds"] for s in busy[len(busy) // 5:]]
    quarter = len(kept) // 4
    assert np.mean(kept[-quarter:]) / np.mean(kept[:quarter]) - 1 > 0.1   # the old rule's call
    for samples in (wave, busy):
        result = {"jobs": {"unaccounted": 0}, "survivors": {}, "status": "stopped",
                  "growth": {k: soak.growth(samples, k) for k in ("rss_kib", "fds")}}
        assert soak.verdicts(result) == []
    leak = _soak_samples(20, lambda t, i: in_flight[i % len(in_flight)] + t / 60)
    found = soak.growth(leak, "fds")
    assert found["growth"] > 0.1 and found["trend_p"] < 0.05
    result = {"jobs": {"unaccounted": 0}, "survivors": {}, "status": "stopped",
              "growth": {"rss_kib": soak.growth(leak, "rss_kib"), "fds": found}}
    assert soak.verdicts(result)[0].startswith("fds grew")


def test_t3d_schemes_are_compared_job_by_job_where_the_records_pair_them():
    from benchmarks.papers import t3d_fig6

    jobs = [f"j{i}" for i in range(400)]
    heavy = {job: 10.0 * (1 + (i % 7)) for i, job in enumerate(jobs)}   # both see these jobs
    light = {job: value * 0.9 for job, value in heavy.items()}
    versus = t3d_fig6.paired(light, heavy, 100)
    assert versus["diff"] < 0 and versus["diff"] + versus["ci"] < 0
    a = {"policy": "gang", "slowdown": 36.0, "ci": 8.0, "versus": {"backfill": versus}}
    b = {"policy": "backfill", "slowdown": 40.0, "ci": 8.0}
    assert t3d_fig6.compare(a, b) == "below"                      # paired: a is lower
    assert t3d_fig6.compare({**a, "versus": {}}, b) == "overlap"  # side by side: cannot tell
    assert t3d_fig6.paired(light, heavy, 400) == {"diff": None, "ci": None, "means": []}
    close = {job: value - 0.05 * (i % 3 == 0) for i, (job, value) in enumerate(heavy.items())}
    near = {**a, "versus": {"backfill": t3d_fig6.paired(close, heavy, 100)}}
    assert t3d_fig6.compare(near, b) == "below"
    assert t3d_fig6.compare(near, b, t3d_fig6.family(10_000)) == "overlap"  # one of many


def test_nersc_pe_time_divides_the_span_up_to_the_last_arrival():
    from benchmarks.papers.nersc import busy_windows, pe_time
    evs = [{"t": 0.0, "event": "arrival", "job": "a"},
           {"t": 0.0, "event": "start", "job": "a", "pes": [0, 1]},
           {"t": 0.0, "event": "arrival", "job": "b"},
           {"t": 0.0, "event": "start", "job": "b", "pes": [0]},
           {"t": 0.0, "event": "suspend", "job": "b"},
           {"t": 2.0, "event": "suspend", "job": "a"},
           {"t": 2.0, "event": "resume", "job": "b"},
           {"t": 3.0, "event": "finish", "job": "b"},
           {"t": 3.0, "event": "migrate", "job": "a", "pes": [2, 3]},
           {"t": 3.0, "event": "resume", "job": "a"},
           {"t": 4.0, "event": "arrival", "job": "c"},
           {"t": 9.0, "event": "finish", "job": "a"}]
    # 4 PEs over 4 s = 16 PE-s: busy 2x2 (a) + 1 (b) + 2x1 (a after moving) = 7;
    # held idle: PE 1 holds the suspended a while b runs, 1; free: the rest, 8
    assert pe_time(evs, 4) == {"busy": round(7 / 16, 3), "held_idle": round(1 / 16, 3),
                               "free_idle": round(8 / 16, 3)}
    # the first 2 s: a on 2 of 4 PEs; the next 2 s: b on 1 PE for 1 s, a on 2 PEs for 1 s
    assert busy_windows(evs, 4, 2) == [0.5, 0.375]
    assert busy_windows(evs, 4, 1) == [round(7 / 16, 4)]


@pytest.mark.realtime
def test_the_futex_floor_takes_every_ring_when_rings_come_faster_than_it_wakes():
    # the child rings back to back, so rings come while the parent is still awake: each must
    # be taken with its own stamp (a merged ring once left the last receive waiting forever)
    code = ("import json; from benchmarks.overheads.shim_cost import futex_wakeup; "
            "print(json.dumps(futex_wakeup(300, 0, 0)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["wakeup_us"]["p50"] >= 0


def test_the_index_lists_every_benchmark_once_by_group():
    """``python -m benchmarks`` lists every module of benchmarks/ that has a command line, once,
    each in its package, which lists it in its docstring; no module is left beside the
    packages but the harness; only pages the docs have are named."""
    import importlib

    from benchmarks.__main__ import GROUPS, commands, lines
    root = Path(__file__).parents[1] / "benchmarks"
    found = sorted(".".join(p.relative_to(root.parent).with_suffix("").parts)
                   for p in root.rglob("*.py") if p.parent.name != "clients"
                   if p.stem != "__main__" and 'if __name__ == "__main__"' in p.read_text())
    found.append("benchmarks.papers.reproduce")
    assert sorted(commands()) == sorted(found)
    assert sorted(p.name for p in root.glob("*.py")) == ["__init__.py", "__main__.py",
                                                         "harness.py"]
    for package, (_, entries) in GROUPS.items():
        doc = importlib.import_module(f"benchmarks.{package}").__doc__
        assert all(f"``python -m benchmarks.{package}.{e.module}``" in doc for e in entries)
        assert doc.count("python -m benchmarks.") == len(entries)
    for e in (e for _, entries in GROUPS.values() for e in entries):
        assert e.page in ("-", "OUT/report.md") or (root.parent / "docs" / "results" /
                                                    e.page).is_file()
    assert any(line.startswith("  python -m benchmarks.papers.cow ") for line in lines())


@pytest.mark.realtime
def test_every_listed_benchmark_answers_help():
    """Each command of the index runs as written: ``python -m benchmarks.NAME --help`` exits 0."""
    from concurrent.futures import ThreadPoolExecutor

    from benchmarks.__main__ import commands

    def helped(module: str) -> tuple[str, int, str]:
        done = subprocess.run([sys.executable, "-m", module, "--help"],
                              capture_output=True, text=True, timeout=120)
        return module, done.returncode, done.stderr.strip()[-300:]

    modules = commands()
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(helped, modules))
    assert [a for a in answers if a[1] != 0] == []


def test_the_suite_is_found_under_its_name_in_any_checkout(tmp_path):
    assert regression.suite_module(regression.HERE) == "benchmarks.overheads.regression"
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "overheads.py").write_text("")
    assert regression.suite_module(tmp_path) == "benchmarks.overheads"      # before 2026-12-06


def test_every_benchmark_command_the_docs_name_exists():
    """Every ``python -m benchmarks...`` in README.md and docs/ (pages included) names a module
    that exists (``--help`` of each is walked by the index's realtime test)."""
    import importlib.util
    import re
    root = Path(__file__).parents[1]
    pages = [root / "README.md", *(root / "docs").rglob("*.md")]
    named = {m for page in pages
             for m in re.findall(r"python -m (benchmarks[.\w]*)", page.read_text())}
    named.discard("benchmarks.PACKAGE.NAME")
    assert named and [m for m in sorted(named) if importlib.util.find_spec(m) is None] == []
    from benchmarks.__main__ import commands
    assert named - {"benchmarks"} <= set(commands())      # each one's --help is walked


def test_nersc_busy_windows_end_at_a_window_edge_that_rounds_below_itself():
    from benchmarks.papers.nersc import busy_windows
    # 0.05 s in 7 windows: the event at 3/7 of it lies where int(t / width) says window 2
    # but window 2 ends at t itself (an earlier reading looped there forever)
    t = 3 * (0.05 / 7)
    evs = [{"t": 0.0, "event": "arrival", "job": "a"},
           {"t": 0.0, "event": "start", "job": "a", "pes": [0]},
           {"t": t, "event": "finish", "job": "a"},
           {"t": 0.05, "event": "arrival", "job": "b"}]
    assert busy_windows(evs, 1, 7) == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
