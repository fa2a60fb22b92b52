"""Experiments that outgrow one machine: the local engine (``--workers``), the Slurm side's
decisions with given numbers (blocks, ``squeue`` lines, ``sbatch`` options, reasons), and, where
the one-host Slurm runs (root, Slurm installed), experiments through ``--slurm`` and
``scripts/slurm-local`` itself."""

from __future__ import annotations

import csv
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from conftest import TESTBED

from testbed import cli
from testbed.experiments import engine, slurm, slurm_spread
from testbed.experiments.plan import Cell, Plan, PlanError, WorkloadSpec
from testbed.experiments.runner import Interrupted, Runner, completed

ROOT = Path(__file__).resolve().parent.parent
SLURM_LOCAL = ROOT / "scripts" / "slurm-local"
EMULATED = """
repeats = 3
[[workload]]
name = "w"
file = "w.txt"
[factors]
scheduler = ["fcfs", "gang"]
"""
SIMULATED = """
executor = "simulation"
repeats = 3
[[workload]]
name = "mix"
generator = "mix"
jobs = 12
pes = 8
load = 1.2
[factors]
scheduler = ["fcfs", "gang"]
"""


def _plan(executor: str, cells: int = 2) -> Plan:
    spec = WorkloadSpec("w", generator="mix", params=(("jobs", 4),))
    return Plan([Cell(spec, 1, f"s{i}", (), f"s{i}") for i in range(cells)], executor=executor,
                repeats=3)


def test_a_block_is_a_round_when_emulated_and_a_run_when_simulated():
    emulated = slurm.blocks(_plan("emulation"), 3)
    assert [(b.index, b.number, b.cell) for b in emulated] == [(1, 1, None), (2, 2, None),
                                                                (3, 3, None)]
    simulated = slurm.blocks(_plan("simulation", 3), 2)
    assert [(b.number, b.cell) for b in simulated] == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1),
                                                       (2, 2)]
    for plan, found in ((_plan("emulation"), emulated), (_plan("simulation", 3), simulated)):
        assert all(slurm.block_of(plan, b.index) == b for b in found)


def test_squeue_lines_give_each_block_its_task_and_state():
    text = ("41_3|RUNNING|None|9:58|vm\n"
            "41_[4-5,7%2]|PENDING|Resources|10:00|\n"
            "garbage\n"
            "42|PENDING|None|1:00|\n")
    queue = slurm.parse_queue(text)
    assert sorted(queue) == [3, 4, 5, 7]
    assert queue[3] == ("41_3", slurm.Queued("RUNNING", "None", "9:58", "vm"))
    assert queue[7][0] == "41_7" and queue[7][1].reason == "Resources"


def test_an_array_lists_runs_of_blocks_as_ranges():
    assert slurm.array_spec([5, 1, 2, 3, 7, 8]) == "1-3,5,7-8"
    assert slurm.array_spec([4]) == "4"


def test_why_a_job_ended_comes_from_scontrol():
    line = ("JobId=51 ArrayJobId=50 ArrayTaskId=2 JobName=testbed-e JobState=TIMEOUT "
            "Reason=TimeLimit Dependency=(null) ExitCode=0:15")
    assert slurm.slurm_reason(line) == "TIMEOUT (TimeLimit, exit 0:15)"
    assert slurm.slurm_reason("slurm_load_jobs error: Invalid job id specified") is None


def test_the_slurm_table_is_checked_and_the_command_line_wins(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text('[slurm]\npartition = "p"\ntime = "10"\noptions = ["--qos=x"]\n')
    settings = slurm.settings_of(path).merged("q", None, None, ["--constraint=ib"])
    assert settings == slurm.Settings("q", None, "10", ("--qos=x", "--constraint=ib"), 1)
    for bad, field in (('partiton = "p"', "slurm.partiton"), ("hosts = 0", "slurm.hosts"),
                       ("options = [1]", "slurm.options")):
        path.write_text(f"[slurm]\n{bad}\n")
        with pytest.raises(PlanError, match=f"{path}: field '{field}'"):
            slurm.settings_of(path)


def test_emulated_blocks_ask_for_exclusive_nodes_and_simulated_runs_for_one_cpu(tmp_path):
    def args(executor: str, settings: slurm.Settings, after: str | None = None) -> list[str]:
        runner = Runner(_plan(executor), tmp_path, print, "c", 2)
        return slurm.Experiment(tmp_path, runner, settings).sbatch_args([1, 2, 3], after)

    emulated = args("emulation", slurm.Settings("batch", "acct", "30", ("--qos=x",), 2), "77")
    assert {"--exclusive", "--nodes=2", "--partition=batch", "--account=acct", "--time=30",
            "--dependency=afterok:77", "--qos=x"} <= set(emulated)
    assert emulated[emulated.index("--array") + 1] == "1-3"
    assert emulated[-1] == str(tmp_path / "slurm" / "block.sh")
    simulated = args("simulation", slurm.Settings())
    assert {"--ntasks=1", "--cpus-per-task=1"} <= set(simulated)
    assert "--exclusive" not in simulated and not any(a.startswith("--dependency")
                                                      for a in simulated)


def test_until_ci_cannot_go_to_slurm(tmp_path):
    plan = _plan("simulation")
    plan.until_ci = 0.1
    experiment = slurm.Experiment(tmp_path, Runner(plan, tmp_path, print, "c", 2))
    with pytest.raises(slurm.SlurmError, match="fixed number of repeats"):
        experiment.submit(print)


def _square(x: int) -> int:
    return x * x


@pytest.mark.realtime
def test_the_engine_gives_every_result_once_in_workers():
    with engine.spreading(2) as spread:
        assert sorted(spread(_square, range(20))) == [x * x for x in range(20)]
    with engine.spreading(1) as spread:
        assert list(spread(_square, [3, 1])) == [9, 1]


def _hold(root: Path) -> None:
    """Sit in a temporary directory of ``root`` holding this worker's pid, for a minute."""
    with tempfile.TemporaryDirectory(dir=root) as held:
        (Path(held) / "pid").write_text(str(os.getpid()))
        time.sleep(60)


def _held(root: Path, count: int) -> list[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pids = [p.read_text() for p in root.glob("*/pid")]
        if len(pids) == count and all(pids):
            return [int(pid) for pid in pids]
        time.sleep(0.05)
    raise AssertionError(f"the workers did not start: {list(root.iterdir())}")


@pytest.mark.realtime
@pytest.mark.parametrize("stop", ["caller", "worker"])
def test_stopping_the_engine_stops_its_items_and_removes_their_temporary_files(tmp_path, stop):
    # "caller": the caller leaves on an exception (a Ctrl-C's KeyboardInterrupt) while two
    # minute-long items run: it must not wait for them, and their temporary directories go.
    # "worker": a worker alone is sent SIGTERM: the caller hears of it as a broken pool.
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt if stop == "caller" else BrokenProcessPool), \
            engine.spreading(2) as spread:
        results = spread(_hold, [tmp_path, tmp_path])
        pids = _held(tmp_path, 2)
        if stop == "caller":
            raise KeyboardInterrupt
        os.kill(pids[0], signal.SIGTERM)
        list(results)
    assert time.monotonic() - began < 45
    assert list(tmp_path.iterdir()) == []
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def test_a_block_stops_before_its_next_run_once_its_job_is_no_longer_running(tmp_path):
    ran: list[Path] = []

    def run_one(cell: Cell, workload: Path, run_dir: Path) -> str:
        ran.append(run_dir)
        return "complete"

    runner = Runner(_plan("simulation", 3), tmp_path, run_one, "c", 2)
    tasks = runner.tasks([1])
    answers = iter([False])                    # asked before the second run: cancelled
    with pytest.raises(Interrupted):
        runner.run_tasks(tasks, len(tasks), lambda: next(answers))
    assert ran == [tasks[0].run_dir] and completed(tasks[0].run_dir)
    assert [completed(t.run_dir) for t in runner.tasks([1])] == [False, False]
    assert slurm.running_state("RUNNING\n") and slurm.running_state("")
    assert not slurm.running_state("CANCELLED\n") and not slurm.running_state("COMPLETING")


def test_a_slurm_spread_is_a_one_cpu_job_array_in_this_code_tree(tmp_path):
    settings = slurm.Settings("p", "a", "10", ("--qos=x",))
    args = slurm_spread.sbatch_args(settings, "spread-x", 5, tmp_path)
    for option in ("--array", "0-4", "--ntasks=1", "--cpus-per-task=1", "--partition=p",
                   "--account=a", "--time=10", "--qos=x", f"--chdir={slurm_spread.CODE}"):
        assert option in args
    assert args[-1] == str(tmp_path / "task.sh") and "--exclusive" not in args


def test_a_slurm_task_runs_its_item_and_writes_its_result_whole(tmp_path):
    slurm_spread._prepare(tmp_path, _square, [3, 4])
    slurm_spread.run_task(tmp_path, 1)
    assert pickle.loads(slurm_spread.result_path(tmp_path, 1).read_bytes()) == 16
    assert not slurm_spread.result_path(tmp_path, 0).exists()
    assert sorted(f.name for f in tmp_path.iterdir() if f.name.startswith(".")) == []
    assert "testbed.experiments.slurm_spread" in (tmp_path / "task.sh").read_text()


@pytest.mark.realtime
def test_a_simulated_experiment_over_workers_has_the_results_of_one_worker(tmp_path):
    path = tmp_path / "sim.toml"
    path.write_text(SIMULATED)
    for out, workers in (("one", "1"), ("two", "2")):
        assert cli.main(["experiment", "run", str(path), "--out", str(tmp_path / out),
                         "--workers", workers]) == 0
    assert (tmp_path / "one" / "results.csv").read_text() == \
        (tmp_path / "two" / "results.csv").read_text()


def _local_slurm() -> tuple[dict[str, str] | None, bool, str]:
    """The environment naming the one-host Slurm's configuration, whether this started it,
    and why it cannot run here (empty when it can)."""
    if os.geteuid() != 0:
        return None, False, "the one-host Slurm needs root (scripts/slurm-local)"
    if not shutil.which("slurmctld") or not shutil.which("sbatch"):
        return None, False, "Slurm is not installed (scripts/slurm-local installs it, as root)"
    found = subprocess.run([str(SLURM_LOCAL), "env"], capture_output=True, text=True)
    started = False
    if found.returncode != 0:
        found = subprocess.run([str(SLURM_LOCAL)], capture_output=True, text=True, timeout=120)
        if found.returncode != 0:
            return None, False, (found.stderr.strip().splitlines() or ["failed"])[-1]
        started = True
    conf = found.stdout.strip().splitlines()[-1].removeprefix("export SLURM_CONF=")
    return {**os.environ, "SLURM_CONF": conf}, started, ""


@pytest.fixture(scope="module")
def slurm_env():
    """The environment of the one-host Slurm (started here if it is not running, and then
    stopped at the end); the tests skip with the reason where it cannot run."""
    env, started, why = _local_slurm()
    if env is None:
        pytest.skip(why)
    yield env
    if started:
        subprocess.run([str(SLURM_LOCAL), "stop"], check=True)


def _testbed(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TESTBED, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """``results.csv``'s header and rows without the columns a run's measurement decides."""
    with open(path) as f:
        rows = list(csv.reader(f))
    keep = [i for i, name in enumerate(rows[0]) if name not in ("disturbed", "value")]
    return rows[0], sorted([r[i] for i in keep] for r in rows[1:])


@pytest.mark.realtime
def test_an_emulated_experiment_through_slurm_has_the_rows_of_a_local_one(tmp_path, slurm_env):
    (tmp_path / "w.txt").write_text("0 1 bsp --work 0.3\n0 2 bsp --work 0.2\n")
    (tmp_path / "e.toml").write_text(EMULATED)
    local = _testbed(slurm_env, "experiment", "run", "e.toml", "--out", "local", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    sent = _testbed(slurm_env, "experiment", "run", "e.toml", "--out", "s", "--slurm",
                    cwd=tmp_path)
    assert sent.returncode == 0 and "submitted 3 of 3 blocks (rounds)" in sent.stdout, sent.stderr
    status = _testbed(slurm_env, "experiment", "status", "s", "--wait", cwd=tmp_path)
    assert "6 of 6 runs done" in status.stdout and "failed   0" in status.stdout, status.stdout
    report = _testbed(slurm_env, "experiment", "report", "s", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert _rows(tmp_path / "s" / "results.csv") == _rows(tmp_path / "local" / "results.csv")
    runs = [json.loads(p.read_text()) for p in (tmp_path / "s").glob("*/*/run.json")]
    for info in runs:                  # a block is a round: both schedulers in one allocation
        assert info["slurm_job"].endswith(f"_{info['repeat']}") and info["node"]
    assert len({r["slurm_job"] for r in runs}) == 3


@pytest.mark.realtime
def test_a_simulated_sweep_is_packed_one_cpu_a_run(tmp_path, slurm_env):
    (tmp_path / "sim.toml").write_text(SIMULATED)
    local = _testbed(slurm_env, "experiment", "run", "sim.toml", "--out", "local", "--workers",
                     "2", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    sent = _testbed(slurm_env, "experiment", "run", "sim.toml", "--out", "s", "--slurm",
                    cwd=tmp_path)
    assert "submitted 6 of 6 blocks (runs)" in sent.stdout, sent.stderr
    _testbed(slurm_env, "experiment", "status", "s", "--wait", cwd=tmp_path)
    assert _testbed(slurm_env, "experiment", "report", "s", cwd=tmp_path).returncode == 0
    assert (tmp_path / "s" / "results.csv").read_text() == \
        (tmp_path / "local" / "results.csv").read_text()
    tasks = {json.loads(p.read_text())["slurm_job"]
             for p in (tmp_path / "s").glob("*/*/run.json")}
    assert len(tasks) == 6
    for task in tasks:
        shown = subprocess.run(["scontrol", "show", "job", "-o", task], env=slurm_env,
                               capture_output=True, text=True)
        assert " NumCPUs=1 " in shown.stdout, shown.stdout


@pytest.mark.realtime
def test_a_block_cancelled_by_hand_is_the_only_one_run_again(tmp_path, slurm_env):
    (tmp_path / "w.txt").write_text("0 2 bsp --work 2\n")
    (tmp_path / "e.toml").write_text(EMULATED.replace("repeats = 3", "repeats = 2"))
    sent = _testbed(slurm_env, "experiment", "run", "e.toml", "--out", "s", "--slurm",
                    cwd=tmp_path)
    assert sent.returncode == 0, sent.stderr
    job = json.loads((tmp_path / "s" / "slurm" / "jobs.json").read_text())[0]["job"]
    deadline = time.monotonic() + 300
    while not list((tmp_path / "s").glob("*/2/events.jsonl")):
        assert time.monotonic() < deadline, "round 2 never started"
        time.sleep(0.1)
    time.sleep(0.5)
    subprocess.run(["scancel", f"{job}_2"], env=slurm_env, check=True)
    status = _testbed(slurm_env, "experiment", "status", "s", "--wait", cwd=tmp_path)
    assert "4 of 4 runs done" not in status.stdout and "CANCELLED" in status.stdout, \
        status.stdout
    kept = {p: p.stat().st_mtime_ns for p in (tmp_path / "s").glob("*/*/run.json")
            if completed(p.parent)}
    assert sum(p.parent.name == "1" for p in kept) == 2       # round 1 had ended
    again = _testbed(slurm_env, "experiment", "run", "e.toml", "--out", "s", "--slurm",
                     cwd=tmp_path)
    assert "submitted 1 of 2 blocks" in again.stdout, again.stderr
    assert f"block 2 (round 2) failed: job {job}_2 CANCELLED" in again.stderr
    status = _testbed(slurm_env, "experiment", "status", "s", "--wait", cwd=tmp_path)
    assert "4 of 4 runs done" in status.stdout, status.stdout
    assert {p: p.stat().st_mtime_ns for p in kept} == kept     # what completed is kept
    resent = json.loads((tmp_path / "s" / "slurm" / "jobs.json").read_text())[-1]
    assert resent["blocks"] == [2] and resent["job"] != job
    second = [json.loads(p.read_text()) for p in (tmp_path / "s").glob("*/2/run.json")]
    assert {r["slurm_job"] for r in second} >= {f"{resent['job']}_2"}


def _pid(path: Path) -> int:
    return int(path.read_text().strip())


@pytest.mark.realtime
def test_stop_stops_its_own_daemons_and_leaves_another_alive(tmp_path, slurm_env):
    root = Path(slurm_env["SLURM_CONF"]).parent.parent
    ours = [_pid(root / "run" / "slurmctld.pid"), _pid(root / "run" / "slurmd.pid"),
            _pid(root / "munge" / "munged.pid")]
    decoy_binary = tmp_path / "slurmd"           # another Slurm's daemon, by its name
    shutil.copy("/bin/sleep", decoy_binary)
    decoy = subprocess.Popen([str(decoy_binary), "300"])
    try:
        assert subprocess.run([str(SLURM_LOCAL), "stop"]).returncode == 0
        assert decoy.poll() is None
        assert not any(Path(f"/proc/{pid}").exists() for pid in ours)
        refused = subprocess.run([str(SLURM_LOCAL)], capture_output=True, text=True)
        assert refused.returncode == 1
        assert refused.stderr.strip() == (f"slurm-local: a Slurm is already running here "
                                          f"(slurmd, pid {decoy.pid}); not starting another")
        other = subprocess.run([str(SLURM_LOCAL)], capture_output=True, text=True,
                               env={**os.environ, "SLURM_CONF": str(tmp_path / "x.conf")})
        assert other.returncode == 1 and "already configured here (SLURM_CONF=" in other.stderr
    finally:
        decoy.send_signal(signal.SIGTERM)
        decoy.wait()
    back = subprocess.run([str(SLURM_LOCAL)], capture_output=True, text=True, timeout=120)
    assert back.returncode == 0, back.stderr


@pytest.mark.realtime
def test_a_spread_over_slurm_gives_what_one_process_gives(tmp_path, slurm_env, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm_env["SLURM_CONF"])
    with slurm_spread.spreading(slurm.Settings(), tmp_path) as spread:
        assert sorted(spread(abs, [-3, 1, -2, 0])) == [0, 1, 2, 3]   # a task imports it
        assert list(spread(abs, [])) == []


@pytest.mark.realtime
def test_reproduce_through_slurm_has_the_findings_of_a_local_run(tmp_path, slurm_env):
    def claims(out: str, *more: str) -> tuple[list[tuple[str, str, str]], str]:
        done = subprocess.run([sys.executable, "-m", "benchmarks.papers.reproduce", "--only", "COW",
                               "--size", "tiny", "--out", str(tmp_path / out), *more],
                              cwd=ROOT, env=slurm_env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        doc = json.loads((tmp_path / out / "papers" / "COW.json").read_text())
        return [(c["key"], c["ours"], c["verdict"]) for c in doc["claims"]], done.stderr

    (through, said), (local, _) = claims("slurm", "--slurm"), claims("local")
    assert through == local and "one-CPU tasks" in said
    assert not list((tmp_path / "slurm" / "slurm").glob("spread-*"))     # removed once read


@pytest.mark.realtime
def test_reproduce_through_slurm_runs_an_emulated_paper_as_one_exclusive_job(tmp_path,
                                                                             slurm_env):
    done = subprocess.run([sys.executable, "-m", "benchmarks.papers.reproduce", "--only", "THESIS",
                           "--size", "tiny", "--out", str(tmp_path), "--slurm"], cwd=ROOT,
                          env=slurm_env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "THESIS: Slurm job" in done.stderr and "one exclusive node" in done.stderr
    doc = json.loads((tmp_path / "papers" / "THESIS.json").read_text())
    assert doc["header"]["size"] == "tiny"
    failed = [c["why"] for c in doc["claims"] if "the run failed" in c["why"]]
    assert not failed, (failed, (tmp_path / "slurm" / "THESIS.out").read_text()[-3000:])
    assert "| THESIS |" in (tmp_path / "report.md").read_text()


@pytest.mark.realtime
def test_srun_launches_the_ranks_found_pinned_and_time_sliced(tmp_path, slurm_env):
    """``TESTBED_MPI_LAUNCHER=srun`` inside an allocation: job steps by srun (PMI-2 for
    MPICH), ranks found by ``SLURM_PROCID``, stopped and continued under gang, the shim
    preloaded under ics by each task's ``env``, never into srun itself."""
    env = {**slurm_env, "TESTBED_MPI_LAUNCHER": "srun", "SLURM_MPI_TYPE": "pmi2"}
    (tmp_path / "w").write_text("0 2 bsp --work 1 --granularity 0.05 --pattern nn\n" * 2)
    salloc = ["salloc", "-N1", "-n2", sys.executable, "-m", "testbed.cli"]
    done = subprocess.run([*salloc, "run", "w", "--scheduler", "gang", "--mpl", "2", "--out",
                           "g"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    log = [json.loads(line) for line in
           (tmp_path / "g" / "events.jsonl").read_text().splitlines()]
    assert log[0]["config"]["mpi_launcher"]["kind"] == "srun"
    assert sorted(e["job"] for e in log if e["event"] == "pids") == ["j1", "j2"]
    assert {e["job"] for e in log if e["event"] == "suspend"} == {"j1", "j2"}
    # The ranks must know they share a host (one shared-memory communicator of both): told
    # otherwise, MPICH sends its network addresses through Slurm's PMI in lines that
    # Slurm's PMI-1 reader cuts at 1,024 bytes, and MPI_Init fails at random.
    probe = ("import os; from mpi4py import MPI; c = MPI.COMM_WORLD; c.Barrier(); "
             "found = 'shim' if 'libtestbed_shim' in open('/proc/self/maps').read() else 'none';"
             " node = c.Split_type(MPI.COMM_TYPE_SHARED).size;"
             " os.write(1, f'<{found} {c.allreduce(c.rank)} {node}>'.encode())")
    done = subprocess.run([*salloc, "exec", "-n", "2", "--scheduler", "ics", "--out", "i", "--",
                           sys.executable, "-c", probe], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = (tmp_path / "i" / "jobs" / "j1.out").read_text()
    assert re.findall(r"<\w+ \d \d>", out) == ["<shim 1 2>", "<shim 1 2>"], out
