"""The real-client benchmark: its output parser, its summary, and a quick run (no timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.real_clients import parse_latencies, parse_mpi4py_bench, summarize, targets

ROOT = Path(__file__).resolve().parent.parent

OUTPUT = """\
# MPI Latency Test (osu_latency style, C)
# Size            Latency (us)
0                         1.50
1                         1.75
1024                      2.25

# MPI Allreduce Latency Test (osu_allreduce style, C)
# Datatype: MPI_FLOAT.
# Size         Avg Latency(us)   Min Latency(us)
4                         3.00              2.00
8                         3.50              2.50
[1] warning: something from the MPI library
"""


def test_parser_reads_each_table_in_order_and_skips_other_lines():
    assert parse_latencies(OUTPUT) == [{0: 1.5, 1: 1.75, 1024: 2.25}, {4: 3.0, 8: 3.5}]
    assert parse_latencies("# header only\n") == []
    assert parse_latencies("") == []


def _case(makespan: float, small: float, kib: float | None) -> dict:
    return {"run": "r", "makespan_s": makespan, "statuses": ["done", "done"],
            "tests": {"latency": {"smallest_size": 0, "small_us": small, "kib_us": kib}}}


def test_mpi4py_bench_table_is_read_as_one_way_microseconds():
    text = ("# MPI PingPong Test\n"
            "# Size [B]  Bandwidth [MB/s] | Time Mean [s] ± StdDev [s]  Samples\n"
            "         1              0.10 | 1.0318728e-05 ± 1.5039e-04    10000\n"
            "      4096            275.02 | 1.4893359e-05 ± 1.4919e-04    10000\n")
    (table,) = parse_mpi4py_bench(text)
    assert table == {1: pytest.approx(10.318728), 4096: pytest.approx(14.893359)}
    assert parse_mpi4py_bench("no table here\n") == []


def test_summary_takes_medians_over_repeats_and_ratios_to_gang():
    results = summarize({
        ("osu_latency", "gang"): [_case(2.0, 4.0, 8.0), _case(3.0, 2.0, 9.0), _case(4.0, 3.0, 7.0)],
        ("osu_latency", "fcs"): [_case(2.2, 6.0, None), _case(2.0, 9.0, None)],
    })
    gang, fcs = results
    assert gang["makespan_s"] == {"median": 3.0, "min": 2.0, "max": 4.0}
    assert gang["tests"]["latency"]["small_us"] == {"median": 3.0, "min": 2.0, "max": 4.0}
    assert gang["vs_gang"] == {"makespan": 1.0, "latency.small_us": 1.0, "latency.kib_us": 1.0}
    assert fcs["tests"]["latency"]["kib_us"] == {"median": None, "min": None, "max": None}
    assert fcs["vs_gang"] == {"makespan": 0.7, "latency.small_us": 2.5, "latency.kib_us": None}
    assert [(t["test"], t["figure"], t["met"]) for t in targets(results)] == [
        ("all", "makespan", True), ("latency", "small", False)]


def test_quick_run_reports_every_program_and_scheduler(tmp_path):
    out = tmp_path / "real_clients.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.real_clients", "--quick",
                           "--repeats", "1", "--schedulers", "gang,fcs", "--runs",
                           str(tmp_path / "runs"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:3] == ["program", "test", "scheduler"]
    doc = json.loads(out.read_text())
    assert doc["quick"] and doc["repeats"] == 1 and doc["pes"] == doc["host"]["cpus"] >= 1
    assert set(doc["programs"]) == {"osu_alltoall", "osu_latency", "pingpong_allreduce",
                                    "mpi4py_bench"}
    assert Path(doc["programs"]["pingpong_allreduce"]["argv"][0]).is_file()
    smallest = {"alltoall": 1, "latency": 0, "pingpong": 0, "allreduce": 4, "bench_pingpong": 1}
    seen = set()
    for r in doc["results"]:
        seen.add((r["program"], r["scheduler"]))
        assert r["statuses"] == ["done", "done"]
        assert all((Path(run) / "summary.json").is_file() for run in r["runs"])
        span = r["makespan_s"]
        assert 0 < span["min"] <= span["median"] <= span["max"]
        for test, fig in r["tests"].items():
            assert fig["smallest_size"] == smallest[test]
            for key in ("small_us", "kib_us"):
                assert 0 < fig[key]["min"] <= fig[key]["median"] <= fig[key]["max"]
        assert all(ratio > 0 for ratio in r["vs_gang"].values())
    assert seen == {(p, s) for p in doc["programs"] for s in ("gang", "fcs")}
    checks = doc["targets"]
    assert len(checks) == 4 + 5  # a makespan per program, a small latency per test
    assert all(c["ratio"] > 0 and isinstance(c["met"], bool) for c in checks)
    again = subprocess.run([sys.executable, "-m", "benchmarks.real_clients", "--quick",
                            "--repeats", "2", "--schedulers", "gang,fcs", "--from",
                            str(tmp_path / "runs"), "--out", "-"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "-2: no finished run there" in again.stderr
    assert "Traceback" not in again.stderr
