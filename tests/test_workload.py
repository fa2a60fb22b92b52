"""Workload files and the THESIS §4.6 mix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testbed.workloads.files import WorkloadError, load_workload
from testbed.workloads.mix import MixParams, generate_mix


def test_parses_jobs_options_and_bsp_shorthand(workload):
    path = workload("# testbed: compress=100\n"
                    "1.5 2 limit=3 user=ann bsp --work 2 --pattern aa\n"
                    "0 1 'my prog' \"a b\"  # trailing comment\n\n")
    wl = load_workload(path, timeslice=0.05)
    assert [j.id for j in wl.jobs] == ["j2", "j1"]
    second, first = wl.jobs
    assert second.argv == ("my prog", "a b") and not second.is_bsp
    assert first.is_bsp and first.work == 2.0 and first.limit == 3.0 and first.user == "ann"
    assert first.argv[:3] == (sys.executable, "-m", "testbed.jobs.bsp")
    assert first.argv[-2:] == ("--timeslice", "0.05")
    assert wl.compress == 100.0


def test_mem_option_is_mib_per_process(workload):
    wl = load_workload(workload("0 1 mem=300M bsp\n0 1 mem=1.5G bsp\n0 1 mem=64 bsp\n0 1 bsp\n"))
    assert [j.mem_mb for j in wl.jobs] == [300.0, 1536.0, 64.0, None]


def test_bsp_line_keeps_its_own_timeslice(workload):
    wl = load_workload(workload("0 1 bsp --timeslice 0.1\n"), timeslice=0.05)
    assert wl.jobs[0].argv.count("--timeslice") == 1


@pytest.mark.parametrize(("line", "field", "words"), [
    ("x 2 bsp", "arrival", "not a number"),
    ("-1 2 bsp", "arrival", ">= 0"),
    ("nan 2 bsp", "arrival", "finite"),
    ("0 2.5 bsp", "pes", "integer"),
    ("0 0 bsp", "pes", ">= 1"),
    ("0 2", "command", "missing"),
    ("0", "pes", "missing"),
    ("0 2 limit=-1 bsp", "limit", "> 0"),
    ("0 2 cpu=1 bsp", "cpu", "unknown option"),
    ("0 2 mem=lots bsp", "mem", "not a size"),
    ("0 2 mem=0 bsp", "mem", "not a size"),
    ("0 2 bsp --pattern ring", "bsp arguments", "invalid choice"),
    ("0 2 bsp --work -3", "bsp arguments", ">= 0"),
    ("0 2 bsp --stats f", "bsp arguments", "set by the testbed"),
    ("0 2 'unclosed", "command", "quotation"),
])
def test_bad_lines_name_file_line_and_field(workload, line, field, words):
    path = workload(f"# header\n0 1 bsp\n{line}\n")
    with pytest.raises(WorkloadError) as err:
        load_workload(path)
    message = str(err.value)
    assert message.startswith(f"{path}:3: field '{field}'")
    assert words in message


def test_job_wider_than_machine_is_reported(workload):
    wl = load_workload(workload("0 1 bsp\n0 8 bsp\n"))
    with pytest.raises(WorkloadError, match=r":2: field 'pes': 8 PEs requested"):
        wl.check_fits(4)


def test_missing_file_is_reported(tmp_path: Path):
    with pytest.raises(WorkloadError, match="field 'file'"):
        load_workload(tmp_path / "nope")


def test_mix_is_deterministic_and_seed_dependent():
    a = generate_mix(MixParams(jobs=50, pes=8, load=0.75, seed=7))
    assert a == generate_mix(MixParams(jobs=50, pes=8, load=0.75, seed=7))
    assert a != generate_mix(MixParams(jobs=50, pes=8, load=0.75, seed=8))


def test_mix_follows_the_thesis_distributions(tmp_path: Path):
    params = MixParams(jobs=3000, pes=16, load=0.5, seed=3, compress=100)
    path = tmp_path / "mix.txt"
    path.write_text(generate_mix(params))
    wl = load_workload(path)
    assert len(wl.jobs) == 3000 and wl.compress == 100
    patterns = [j.argv[j.argv.index("--pattern") + 1] for j in wl.jobs]
    for name, share in (("none", 0.10), ("nn", 0.45), ("aa", 0.45)):
        assert abs(patterns.count(name) / 3000 - share) < 0.03
    grains = {j.argv[j.argv.index("--granularity") + 1] for j in wl.jobs}
    assert grains == {"0.1", "0.5", "2.5"}
    variances = {j.argv[j.argv.index("--variance") + 1] for j in wl.jobs}
    assert variances == {"0", "0.1", "0.75"}
    assert {j.pes for j in wl.jobs} == {1, 2, 4, 8, 16}
    assert all(0.1 <= j.work <= 144.0 for j in wl.jobs)
    span = wl.jobs[-1].arrival
    demand = sum(j.pes * j.work for j in wl.jobs)
    assert demand / (16 * span) == pytest.approx(0.5, rel=0.1)
