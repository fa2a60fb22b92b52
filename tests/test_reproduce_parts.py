"""benchmarks.papers.reproduce in parts: each paper's file, the report rebuilt from every part, a
rerun
of one paper, --resume and one size per directory (pure: the papers' runs are given)."""

from __future__ import annotations

import json
import shlex

import pytest

from benchmarks.papers import t3d_fig6
from benchmarks.papers.reproduce import __main__ as cli
from benchmarks.papers.reproduce import cluster, parts, report
from benchmarks.papers.reproduce.claims import AGREES, CANNOT_TELL, Decision, Finding, Row, Spec
from benchmarks.papers.reproduce.context import Context
from benchmarks.papers.reproduce.parts import Part
from testbed.experiments.slurm import Settings


def _part(name: str = "COW", host: str = "vm", began: str = "2026-11-27 10:00:00 +0000",
          verdict: str = AGREES, size: str = "tiny") -> Part:
    spec = Spec(f"{name.lower()}-k", name, "Fig 1", "LGFS | AFCFS below 1", "< 1", "band")
    finding = Finding("0.9 [0.8, 0.95]", Decision(verdict, "interval all < 1"), "5 seeds",
                      (f"{name.lower()}.png",))
    header = {"command": "python -m benchmarks.papers.reproduce", "host": host, "cores": 2,
              "date": began, "commit": "abc123", "size": size, "seconds": 60.0,
              "began": began, "load": {"disturbed": True, "why": "other processes used 40% "
                                                                 "of a CPU"}}
    return Part(name, header, (Row(spec, finding),))


def test_a_paper_file_round_trips(tmp_path):
    part = _part()
    file = parts.save(tmp_path, part)
    assert file == tmp_path / "papers" / "COW.json"
    assert parts.load(file) == part
    assert [f.name for f in file.parent.iterdir()] == ["COW.json"]    # no partial file left


def test_a_broken_paper_file_is_named_with_its_field(tmp_path):
    file = parts.save(tmp_path, _part())
    doc = json.loads(file.read_text())
    del doc["claims"][0]["verdict"]
    file.write_text(json.dumps(doc))
    with pytest.raises(parts.PartError, match=r"COW.json: field 'claims', entry 1: 'verdict'"):
        parts.load(file)
    file.write_text("{")
    with pytest.raises(parts.PartError, match="COW.json: not a paper file"):
        parts.load(file)


def test_one_directory_holds_one_size():
    kept = {"COW": _part(size="quick")}
    assert parts.mixed(kept, "quick") is None
    assert parts.mixed(kept, "full") == (
        "papers/COW.json was run at size quick, this run is at size full: one report holds "
        "one size (use another --out, or remove that file)")


def test_the_header_names_each_paper_and_says_when_parts_came_from_different_runs():
    one = [_part("T3D"), _part("COW")]
    rows, header = report.assemble(one, "python -m benchmarks.papers.reproduce --only COW")
    assert [r.spec.paper for r in rows] == ["T3D", "COW"]
    assert header["host"] == "vm" and header["seconds"] == 120.0 and not header["assembled"]
    page = report.markdown(rows, header)
    assert "- each paper:\n  - T3D: started 2026-11-27 10:00:00 +0000 on vm, commit abc123" \
        in page
    assert "disturbed: other processes used 40% of a CPU" in page
    later = [_part("T3D"), _part("COW", host="node7", began="2026-11-28 09:00:00 +0000")]
    _, header = report.assemble(later, "x")
    assert header["assembled"] and header["host"] == "several hosts (see each paper)"
    assert header["date"] == "2026-11-27 10:00:00 +0000"
    assert "assembled from parts run at different times" in report.markdown(rows, header)


@pytest.fixture
def given_runs(monkeypatch):
    """``measure`` gives every claim of a paper the verdict in ``verdicts`` (agrees unless
    set), and records which papers ran; the commit is given."""
    ran: list[str] = []
    verdicts: dict[str, str] = {}

    def measure(name: str, ctx: Context) -> dict[str, Finding]:
        ran.append(name)
        paper = next(p for p in cli.PAPERS if p.name == name)
        return {s.key: Finding("1", Decision(verdicts.get(name, AGREES), "given"))
                for s in paper.module.SPECS}

    monkeypatch.setattr(cli, "measure", measure)
    monkeypatch.setattr(report, "_commit", lambda out: "abc123")      # git is a process
    return ran, verdicts


def _verdicts(out) -> dict[str, set[str]]:
    doc = json.loads((out / "claims.json").read_text())
    found: dict[str, set[str]] = {}
    for c in doc["claims"]:
        found.setdefault(c["paper"], set()).add(c["verdict"])
    return found


def test_a_rerun_of_one_paper_keeps_the_others_rows(tmp_path, given_runs):
    ran, verdicts = given_runs
    assert cli.main(["--only", "T3E,COW", "--size", "tiny", "--out", str(tmp_path)]) == 0
    assert ran == ["T3E", "COW"] and _verdicts(tmp_path) == {"T3E": {AGREES}, "COW": {AGREES}}
    verdicts["COW"] = CANNOT_TELL
    assert cli.main(["--only", "COW", "--size", "tiny", "--out", str(tmp_path)]) == 0
    assert ran[2:] == ["COW"]
    assert _verdicts(tmp_path) == {"T3E": {AGREES}, "COW": {CANNOT_TELL}}
    page = (tmp_path / "report.md").read_text()
    assert "| T3E |" in page and "assembled from parts run at different times" in page


def test_resume_skips_the_papers_already_there(tmp_path, given_runs):
    ran, _ = given_runs
    assert cli.main(["--only", "COW", "--size", "tiny", "--out", str(tmp_path)]) == 0
    assert cli.main(["--only", "T3E,COW", "--size", "tiny", "--out", str(tmp_path),
                     "--resume"]) == 0
    assert ran == ["COW", "T3E"]
    assert set(_verdicts(tmp_path)) == {"T3E", "COW"}


def test_a_run_at_another_size_is_refused_in_one_line(tmp_path, given_runs, capsys):
    ran, _ = given_runs
    assert cli.main(["--only", "COW", "--size", "tiny", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert cli.main(["--only", "T3E", "--size", "quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "COW.json was run at size tiny" in err
    assert ran == ["COW"]


@pytest.mark.realtime
@pytest.mark.parametrize("name", ["T3E", "COW"])
def test_a_simulated_papers_findings_are_the_same_whatever_the_workers(tmp_path, name):
    one, two = (cli.measure(name, Context("tiny", tmp_path / str(w), tmp_path / str(w), w))
                for w in (1, 2))
    assert one == two and all("failed" not in f.decision.why for f in one.values())


@pytest.mark.realtime
def test_the_context_spreads_t3d_fig6_points_as_one_process_does(tmp_path):
    def records(workers: int) -> list[dict]:
        ctx = Context("tiny", tmp_path, tmp_path, workers)
        return [{k: v for k, v in r.items() if k != "wall_s"}
                for r in t3d_fig6.run_points((0.5, 0.8), 3, 40, ("fcfs", "gang 10 s ∞"),
                                             spread=ctx.spread)]

    assert records(1) == records(2)


def test_under_slurm_an_emulated_paper_is_one_job_on_one_exclusive_node(tmp_path):
    settings = Settings("batch", "proj", "2:00:00", ("--constraint=ib",))
    args = cluster.job_args(settings, "THESIS", "quick", tmp_path / "out", tmp_path / "runs")
    assert args[:2] == ["sbatch", "--parsable"]
    for option in ("--nodes=1", "--exclusive", "--partition=batch", "--account=proj",
                   "--time=2:00:00", "--constraint=ib"):
        assert option in args
    assert args[-2] == "--wrap"
    wrapped = shlex.split(args[-1])
    assert wrapped[1:] == ["-m", "benchmarks.papers.reproduce", "--only", "THESIS", "--size",
                           "quick",
                           "--out", str(tmp_path / "out"), "--runs", str(tmp_path / "runs")]
    assert args[args.index("--output") + 1] == str(tmp_path / "out" / "slurm" / "THESIS.out")


def test_slurm_options_need_slurm(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--partition", "batch", "--size", "tiny"])
    assert "go with --slurm" in capsys.readouterr().err
