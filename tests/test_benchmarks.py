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
