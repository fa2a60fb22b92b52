"""The real-client benchmark: its output parsers, its run order, its comparison of given runs
(a fake runs directory read with ``--from``), the target verdicts, and a quick run (no
timings are compared with anything)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.programs.real_clients import (
    compare,
    main,
    parse_latencies,
    parse_mpi4py_bench,
    run_dir,
    run_order,
    verdict,
)

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


def test_mpi4py_bench_table_is_read_as_one_way_microseconds():
    text = ("# MPI PingPong Test\n"
            "# Size [B]  Bandwidth [MB/s] | Time Mean [s] ± StdDev [s]  Samples\n"
            "         1              0.10 | 1.0318728e-05 ± 1.5039e-04    10000\n"
            "      4096            275.02 | 1.4893359e-05 ± 1.4919e-04    10000\n")
    (table,) = parse_mpi4py_bench(text)
    assert table == {1: pytest.approx(10.318728), 4096: pytest.approx(14.893359)}
    assert parse_mpi4py_bench("no table here\n") == []


def test_runs_are_interleaved_round_by_round():
    order = run_order(["a", "b"], ["gang", "fcs", "gang#2"], 2, "interleaved", 1)
    assert order == [(1, "a", "gang"), (1, "a", "fcs"), (1, "a", "gang#2"),
                     (1, "b", "gang"), (1, "b", "fcs"), (1, "b", "gang#2"),
                     (2, "a", "gang"), (2, "a", "fcs"), (2, "a", "gang#2"),
                     (2, "b", "gang"), (2, "b", "fcs"), (2, "b", "gang#2")]


def test_random_order_shuffles_each_round_reproducibly():
    programs, names = ["a", "b"], ["gang", "fcs", "ics", "local"]
    order = run_order(programs, names, 3, "random", 7)
    assert order == run_order(programs, names, 3, "random", 7)
    assert [r for r, _, _ in order] == [1] * 8 + [2] * 8 + [3] * 8
    rounds = [[(p, lb) for r, p, lb in order if r == n] for n in (1, 2, 3)]
    every = sorted((p, lb) for p in programs for lb in names)
    assert all(sorted(pairs) == every for pairs in rounds)
    interleaved = [(p, lb) for p in programs for lb in names]
    assert any(pairs != interleaved for pairs in rounds)
    assert rounds[0] != rounds[1] or rounds[1] != rounds[2]


def test_a_scheduler_named_twice_gets_its_own_run_directories(tmp_path):
    assert run_dir(tmp_path, "osu_latency", "gang", 3) == tmp_path / "osu_latency-gang-3"
    assert run_dir(tmp_path, "osu_latency", "gang#2", 3) == tmp_path / "osu_latency-gang-2-3"


@pytest.mark.parametrize(("low", "high", "expected"), [
    (0.9, 1.05, "met"), (1.0, 1.1, "met"), (1.15, 1.3, "missed"), (1.0, 1.2, "cannot tell"),
    (1.1, 1.2, "cannot tell"), (None, None, "cannot tell"), (None, 1.0, "met"),
    (1.2, None, "missed")])
def test_target_verdict_is_read_off_the_ratio_interval(low, high, expected):
    assert verdict(low, high, 1.1) == expected


GANG_SPANS = [10.0, 10.2, 9.8, 10.1, 9.9]
FCS_SPANS = [20.0, 20.5, 19.5, 20.2, 19.8]
SMALL = [2.0, 2.1, 1.9, 2.05, 1.95]


CONFIG = {"python": "3.11.0", "kernel": "6.1-lab",
          "machine": {"hostname": "lab", "pes": 2, "host_cpus": [0, 1, 2, 3]}}


def _fake_run(path: Path, makespan: float, small: float, kib: float | None,
              disturbed: bool | None, started: float = 1.7e9) -> None:
    """A finished run of two osu_latency copies started at ``started`` (s since the epoch):
    each prints sizes 0, 8, 2048 and (unless ``kib`` is None) 1024 B, so that the
    small-message latency of both copies is ``small``."""
    (path / "jobs").mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps({"makespan": makespan}))
    (path / "config.json").write_text(json.dumps(CONFIG))
    (path / "events.jsonl").write_text(json.dumps({"t": 0.0, "event": "run_start",
                                                   "wall_time": started}) + "\n")
    (path / "jobs.csv").write_text("id,status\nj1,done\nj2,done\n")
    for job in ("j1", "j2"):
        sizes = {0: small, 8: small, 2048: 99.0}
        if kib is not None:
            sizes[1024] = kib
        lines = "".join(f"{size} {us}\n" for size, us in sorted(sizes.items()))
        (path / "jobs" / f"{job}.out").write_text("# Size Latency (us)\n" + lines)
    if disturbed is not None:
        (path / "load.json").write_text(json.dumps({"disturbed": disturbed}))


def _fake_runs(root: Path, order: str = "interleaved") -> None:
    """Five rounds of gang and fcs, run in ``order`` (seed 1): fcs takes twice gang's
    makespan, the same small-message latency, and prints no 1 KiB latency; gang's third run
    was disturbed; the first round has no load.json (an older runs directory)."""
    ran = run_order(["osu_latency"], ["gang", "fcs"], 5, order, 1)
    for repeat in range(1, 6):
        i = repeat - 1
        disturbed = None if repeat == 1 else repeat == 3
        _fake_run(run_dir(root, "osu_latency", "gang", repeat), GANG_SPANS[i], SMALL[i],
                  4.0 + i / 10, disturbed, 1.7e9 + ran.index((repeat, "osu_latency", "gang")))
        _fake_run(run_dir(root, "osu_latency", "fcs", repeat), FCS_SPANS[i], SMALL[i], None,
                  None if repeat == 1 else False,
                  1.7e9 + ran.index((repeat, "osu_latency", "fcs")))


def _read_back(root: Path, out: Path, *extra: str) -> dict:
    assert main(["--from", str(root), "--schedulers", "gang,fcs", "--programs", "osu_latency",
                 "--repeats", "5", "--out", str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_runs_directory_gives_medians_intervals_ratios_and_verdicts(tmp_path, capsys):
    _fake_runs(tmp_path / "runs")
    doc = _read_back(tmp_path / "runs", tmp_path / "out.json")
    assert doc["reference"] == "gang" and doc["labels"] == {"gang": "gang", "fcs": "fcs"}
    (result,) = doc["results"]
    assert (result["program"], result["test"], result["smallest_size"]) == \
        ("osu_latency", "latency", 0)
    records = {(r["label"], r["metric"]): r for r in result["records"]}
    gang, fcs = records[("gang", "makespan")], records[("fcs", "makespan")]
    assert (gang["n"], gang["median"], gang["disturbed"]) == (5, 10.0, 1)
    assert gang["ci_low"] <= 10.0 <= gang["ci_high"] and gang["ratio"] == 1.0
    assert fcs["median"] == 20.0 and fcs["disturbed"] == 0
    assert fcs["ratio"] == 2.0 and 1.1 < fcs["ratio_low"] <= 2.0 <= fcs["ratio_high"]
    assert fcs["significant"]
    small = records[("fcs", "small_latency_us")]
    assert small["median"] == 2.0 and small["ratio"] == 1.0 and not small["significant"]
    assert small["ratio_low"] <= 1.0 <= small["ratio_high"] <= 1.5
    assert records[("gang", "kib_latency_us")]["median"] == pytest.approx(4.2)
    assert records[("fcs", "kib_latency_us")]["n"] == 0
    assert records[("fcs", "kib_latency_us")]["ratio"] is None
    verdicts = {c["figure"]: c["verdict"] for c in result["targets"]}
    assert verdicts == {"makespan": "missed", "small_latency_us": "met"}
    assert [r["makespan"] for r in result["runs"] if r["label"] == "gang"] == GANG_SPANS
    assert [r["repeat"] for r in result["runs"]] == [1, 2, 3, 4, 5] * 2
    printed = capsys.readouterr().out
    assert "== osu_latency latency: sizes from 0 B; copies done: gang 10/10, fcs 10/10 ==" \
        in printed
    assert "disturbed runs" in printed
    assert "target fcs/gang makespan <= 1.1x: 2 [" in printed and "-> missed" in printed


def test_read_back_runs_record_the_order_they_ran_in_not_the_readers_flags(tmp_path):
    _fake_runs(tmp_path / "shuffled", "random")
    doc = _read_back(tmp_path / "shuffled", tmp_path / "out.json")
    assert (doc["order"], doc["order_seed"]) == ("random", 1)
    _fake_runs(tmp_path / "turns")
    doc = _read_back(tmp_path / "turns", tmp_path / "out.json", "--order", "random")
    assert (doc["order"], doc["order_seed"]) == ("interleaved", None)
    page = tmp_path / "page.md"
    _read_back(tmp_path / "shuffled", tmp_path / "out.json", "--order-seed", "7",
               "--markdown", str(page))
    assert "5 repeats in as run order" in page.read_text()


def test_json_runs_give_the_records_again(tmp_path):
    _fake_runs(tmp_path / "runs")
    doc = _read_back(tmp_path / "runs", tmp_path / "out.json")
    (result,) = doc["results"]
    again = compare(result["program"], result["test"], result["runs"], doc["reference"])
    assert again.as_dict() == result


def test_targets_are_on_fcs_over_gang_whatever_the_reference(tmp_path):
    _fake_runs(tmp_path / "runs")
    by_gang = _read_back(tmp_path / "runs", tmp_path / "gang.json")["results"][0]
    by_fcs = _read_back(tmp_path / "runs", tmp_path / "fcs.json", "--reference", "fcs")
    (result,) = by_fcs["results"]
    assert by_fcs["reference"] == "fcs"
    assert {(r["label"], r["metric"]): r["ratio"] for r in result["records"]}[
        ("gang", "makespan")] == 0.5
    assert result["targets"] == by_gang["targets"]


def test_a_missing_run_or_an_unknown_reference_is_an_error(tmp_path, capsys):
    _fake_runs(tmp_path / "runs")
    with pytest.raises(SystemExit) as exit_:
        main(["--from", str(tmp_path / "runs"), "--schedulers", "gang,fcs", "--programs",
              "osu_latency", "--repeats", "6"])
    assert exit_.value.code == 2 and "-6: no finished run there" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--from", str(tmp_path / "runs"), "--schedulers", "gang,fcs", "--programs",
              "osu_latency", "--reference", "ics"])
    assert "--reference ics: not one of gang, fcs" in capsys.readouterr().err


@pytest.mark.realtime
def test_quick_run_reports_every_program_and_label_with_intervals(tmp_path):
    out = tmp_path / "real_clients.json"
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "benchmarks.programs.real_clients", "--quick",
                           "--repeats", "2", "--schedulers", "gang,fcs", "--order", "random",
                           "--runs", str(runs), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("== osu_alltoall alltoall: sizes from 1 B")
    assert len(re.findall(r"^\[\d+/20\] ", done.stderr, re.MULTILINE)) == 20
    doc = json.loads(out.read_text())
    assert doc["quick"] and doc["repeats"] == 2 and doc["pes"] == doc["host"]["cpus"] >= 1
    assert doc["order"] == "random" and doc["reference"] == "gang"
    assert set(doc["programs"]) == {"osu_alltoall", "osu_barrier", "osu_latency",
                                    "pingpong_allreduce", "mpi4py_bench"}
    assert Path(doc["programs"]["pingpong_allreduce"]["argv"][0]).is_file()
    smallest = {"alltoall": 1, "barrier": 0, "latency": 0, "pingpong": 0, "allreduce": 4,
                "bench_pingpong": 1}
    assert [r["test"] for r in doc["results"]] == list(smallest)
    for result in doc["results"]:
        assert result["smallest_size"] == smallest[result["test"]]
        assert len(result["runs"]) == 4
        for run in result["runs"]:
            assert run["statuses"] == ["done", "done"]
            load = json.loads((Path(run["run"]) / "load.json").read_text())
            assert load["disturbed"] == run["disturbed"] and load["wall_s"] > 0
        assert len(result["records"]) == 2 * 4
        for r in result["records"]:
            if result["test"] == "barrier" and r["metric"] == "kib_latency_us":
                assert r["n"] == 0      # a barrier has no 1 KiB message
                continue
            if r["metric"] == "mib_latency_us":
                assert r["n"] == 0      # quick sweeps stop at 4 KiB
                continue
            assert r["n"] == 2 and 0 < r["ci_low"] <= r["median"] <= r["ci_high"]
            assert 0 < r["ratio_low"] <= r["ratio"] <= r["ratio_high"]
        assert [c["figure"] for c in result["targets"]] == ["makespan", "small_latency_us"]
        assert all(c["verdict"] in ("met", "missed", "cannot tell") for c in result["targets"])
    again = subprocess.run([sys.executable, "-m", "benchmarks.programs.real_clients", "--quick",
                            "--repeats", "2", "--schedulers", "gang,fcs", "--from", str(runs),
                            "--out", "-"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["results"] == doc["results"]
    more = subprocess.run([sys.executable, "-m", "benchmarks.programs.real_clients", "--quick",
                           "--repeats", "3", "--schedulers", "gang,fcs", "--from", str(runs),
                           "--out", "-"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert more.returncode == 2 and "-3: no finished run there" in more.stderr
    assert "Traceback" not in more.stderr


def test_a_scheduler_named_twice_is_an_a_a_comparison(tmp_path):
    root = tmp_path / "runs"
    for repeat, (span, small) in enumerate(zip(GANG_SPANS, SMALL, strict=True), start=1):
        _fake_run(run_dir(root, "osu_latency", "gang", repeat), span, small, 4.0, False)
        _fake_run(run_dir(root, "osu_latency", "gang#2", repeat), span, small, 4.0, False)
    assert main(["--from", str(root), "--schedulers", "gang,gang", "--programs", "osu_latency",
                 "--repeats", "5", "--out", str(tmp_path / "aa.json")]) == 0
    doc = json.loads((tmp_path / "aa.json").read_text())
    assert doc["labels"] == {"gang": "gang", "gang#2": "gang"}
    (result,) = doc["results"]
    second = [r for r in result["records"] if r["label"] == "gang#2"]
    assert [r["metric"] for r in second] == ["makespan", "small_latency_us", "kib_latency_us",
                                             "mib_latency_us"]
    # The fake runs stop short of 1 MiB: that figure has no value on either side.
    assert [r["n"] for r in second][-1] == 0
    assert all(r["ratio"] == 1.0 and not r["significant"] for r in second[:-1])
    assert result["targets"] == []


def test_markdown_page_has_the_host_the_date_and_the_tables(tmp_path, capsys):
    _fake_runs(tmp_path / "runs")
    page = tmp_path / "docs" / "real-clients.md"
    doc = _read_back(tmp_path / "runs", tmp_path / "out.json", "--markdown", str(page))
    text = page.read_text()
    printed = capsys.readouterr().out
    assert doc["date"] in text and doc["host"]["uname"] in text
    assert doc["host"] == {"cpus": 4, "python": "3.11.0", "uname": "Linux lab 6.1-lab"}
    assert doc["pes"] == 2 and doc["date"].startswith("2023-11-14")
    assert "python -m benchmarks.programs.real_clients --from" in text
    assert "== osu_latency latency" in text and printed.split("JSON:")[0].strip() in text
