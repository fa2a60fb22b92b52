"""The overhead benchmarks run and report sane fields (never a timing threshold)."""

from __future__ import annotations

import json
import subprocess
import sys


def _bench(module: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout)


def test_launch_overhead_reports_each_job_size():
    out = _bench("benchmarks.launch_overhead", "--repeats", "2", "--gap", "0.3")
    assert out["host"]["cpus"] >= 1
    sizes = [r["ranks"] for r in out["results"]]
    assert sizes[0] == 1 and sizes[-1] == out["host"]["cpus"]
    for r in out["results"]:
        assert r["jobs"] == 2 and 0 < r["min_s"] <= r["median_s"] <= r["max_s"]
        assert r["ranks_found_median_s"] > 0


def test_switch_latency_reports_percentiles():
    out = _bench("benchmarks.switch_latency", "--work", "0.6", "--timeslice", "0.1")["results"]
    assert out["switches"] >= 3 and out["ranks_per_switch"] == 2 * out["pes"]
    lat = out["latency_us"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]


def test_shim_cost_reports_ratio_cpu_share_and_wakeups():
    out = _bench("benchmarks.shim_cost", "--rounds", "1", "--iterations", "300", "--waits", "12")
    assert out["pingpong"]["ratio"] > 0 and out["pingpong"]["without_us"] > 0
    for case in ("mpich_busy_poll", "shim_spin_block_100us", "shim_long_waits_20_50ms"):
        wake = out["wakeup"][case]
        assert 0 <= wake["cpu_share"] <= 1.5
        assert 0 < wake["wakeup_us"]["p50"] <= wake["wakeup_us"]["p99"]


def _experiment(module: str, tmp_path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", module, *args, "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, check=True)
    assert (tmp_path / "run" / "summary.json").exists()
    return done.stdout


def test_granularity_experiment_prints_five_cases(tmp_path):
    lines = _experiment("benchmarks.granularity", tmp_path, "--work", "0.3").splitlines()
    assert lines[0].split() == ["#", "G", "V", "work", "runtime", "comm", "wait"]
    assert [line.split()[0] for line in lines[1:6]] == ["1", "2", "3", "4", "5"]


def test_fcs_classification_experiment_prints_every_process(tmp_path):
    out = _experiment("benchmarks.fcs_classification", tmp_path, "--work", "0.4",
                      "--timeslice", "0.05")
    rows = [line.split() for line in out.splitlines()[1:] if line.split()[:1] != ["note:"]
            and not line.startswith("run directory")]
    assert len(rows) == 2 + 2 + 3 + 1 + 4 + 4
    assert all(row[-2] in ("INIT_CS", "INIT_DC", "CS", "F", "DC") for row in rows)


def test_overhead_suite_quick_runs_and_a_regression_fails_it(tmp_path):
    from benchmarks.overheads import ratio_figures, regressions

    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({
        "mpl_linearity": {"ratios": {"200": {"1": 1.0, "2": 0.5}}},
        "shim": {"pingpong": {"ratio": 0.01}}}))
    done = subprocess.run([sys.executable, "-m", "benchmarks.overheads", "--quick",
                           "--baseline", str(baseline), "--out", str(tmp_path / "now.json")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    assert "regression: mpl_linearity[200ms][k=2]" in done.stderr
    assert "regression: shim_pingpong_ratio" in done.stderr
    now = json.loads((tmp_path / "now.json").read_text())
    assert now["quick"] and now["host"]["cpus"] >= 1
    assert [r["ranks"] for r in now["launch_overhead"]] == list(range(1, now["host"]["cpus"] + 1))
    assert all(s["latency_us"]["p50"] > 0 for s in now["switch_latency"])
    assert set(ratio_figures(now)) >= {"mpl_linearity[200ms][k=1]", "shim_pingpong_ratio"}
    assert regressions(now, now, 0.0) == []
