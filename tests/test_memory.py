"""Node memory, paging, estimates from history, and their clean-up."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TESTBED, events, jobs_csv, run_id, run_processes, run_testbed

from testbed import cli, run
from testbed.emulation import memory, paging
from testbed.emulation.memory import cgroup_parent
from testbed.memory_history import MemoryHistory, program_of
from testbed.sizes import parse_size


def _can_page() -> str | None:
    if os.geteuid() != 0:
        return "needs root for memory cgroups and swapon"
    try:
        cgroup_parent()
    except Exception as err:  # noqa: BLE001 - any reason is a reason to skip
        return str(err)
    return None


needs_root = pytest.mark.skipif(_can_page() is not None, reason=_can_page() or "")


def test_sizes():
    assert parse_size("512M") == 512 * 2**20
    assert parse_size("1.5G") == 3 * 2**29
    assert parse_size("64") == 64 * 2**20
    with pytest.raises(ValueError):
        parse_size("-3M")


def test_history_estimate_is_min_of_max_and_mean_plus_3_sigma(tmp_path):
    history = MemoryHistory(tmp_path / "h.json", month="2026-05")
    for peak in (100, 100, 100, 100, 100, 100, 100, 100, 100, 400):
        history.record("/bin/app", 4, "ann", peak)
    values = [100] * 9 + [400]
    mean, sd = sum(values) / 10, (sum((v - 130) ** 2 for v in values) / 10) ** 0.5
    assert history.estimate("/bin/app", 4, "ann") == (min(400, mean + 3 * sd), "/bin/app|4|ann")
    history.record("/bin/app", 4, "bob", 50)
    assert history.estimate("/bin/app", 4, "bob")[0] == 50
    assert history.estimate("/bin/app", 8, "cy")[1] == "/bin/app"
    assert history.estimate("/bin/other", 4, "ann") is None


def test_history_ages_by_month(tmp_path):
    path = tmp_path / "h.json"
    history = MemoryHistory(path, month="2026-05")
    history.record("/bin/app", 2, "", 80)
    history.save()
    next_month = MemoryHistory(path, month="2026-06")
    assert next_month.entries["/bin/app"] == {"current": [], "previous": [80]}
    assert next_month.estimate("/bin/app", 2, "")[0] == 80
    next_month.save()
    assert MemoryHistory(path, month="2026-07").entries == {}
    assert MemoryHistory(path, month="2026-08").estimate("/bin/app", 2, "") is None


@pytest.mark.realtime
def test_a_bad_history_file_is_reported(tmp_path, workload):
    (tmp_path / "h.json").write_text("{not json")
    done = run_testbed("run", str(workload("0 1 bsp --work 0\n")), "--memory-history", "h.json",
                       cwd=tmp_path)
    assert done.returncode == 2 and "h.json: not a testbed memory history" in done.stderr


def test_python_programs_are_told_apart():
    assert program_of(["python3", "-m", "testbed.jobs.bsp"]).endswith(" -m testbed.jobs.bsp")
    assert program_of(["true"]) == os.path.realpath(shutil.which("true"))


V1_MOUNT = "35 31 0:32 / {root}/memory rw,relatime - cgroup cgroup rw,memory\n"
V2_MOUNT = "41 31 0:38 / {root}/unified rw,relatime - cgroup2 cgroup2 rw\n"


def _machine(tmp_path, monkeypatch, mounts: str, own: str, writable=lambda path: True,
             pid: int = 4242) -> Path:
    """A cgroup file system laid out in ``tmp_path`` as ``mounts`` (mountinfo lines) and
    ``own`` (/proc/self/cgroup) describe, seen by an unprivileged process ``pid``."""
    (tmp_path / "mountinfo").write_text(mounts.format(root=tmp_path))
    (tmp_path / "cgroup").write_text(own)
    monkeypatch.setattr(memory, "MOUNTINFO", tmp_path / "mountinfo")
    monkeypatch.setattr(memory, "OWN_CGROUPS", tmp_path / "cgroup")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(os, "getpid", lambda: pid)
    monkeypatch.setattr(os, "access", lambda path, mode: writable(Path(path)))
    return tmp_path


def test_unprivileged_node_memory_goes_in_the_delegated_cgroup(tmp_path, monkeypatch):
    root = _machine(tmp_path, monkeypatch, V1_MOUNT + V2_MOUNT,
                    "4:memory:/user/ann\n0::/user.slice\n")
    mine = root / "memory" / "user" / "ann"
    mine.mkdir(parents=True)
    (mine / "cgroup.procs").write_text("4242\n")
    assert memory.cgroup_parent() == memory.CgroupParent(1, mine, delegated=True)


def test_v2_delegation_needs_the_memory_controller_and_a_cgroup_of_our_own(
        tmp_path, monkeypatch):
    root = _machine(tmp_path, monkeypatch, V2_MOUNT, "0::/user.slice/run-1.scope\n")
    scope = root / "unified" / "user.slice" / "run-1.scope"
    scope.mkdir(parents=True)
    (scope / "cgroup.controllers").write_text("cpu pids\n")
    (scope / "cgroup.procs").write_text("4242\n")
    with pytest.raises(memory.MemorySetupError, match="has cpu, pids; start the testbed in a "
                       "cgroup delegated to you"):
        memory.cgroup_parent()
    (scope / "cgroup.controllers").write_text("cpu memory pids\n")
    assert memory.cgroup_parent() == memory.CgroupParent(2, scope, delegated=True)
    (scope / "cgroup.procs").write_text("4242\n77\n")
    with pytest.raises(memory.MemorySetupError, match="also holds processes 77"):
        memory.cgroup_parent()


def test_without_a_delegated_cgroup_node_memory_says_what_is_missing(
        tmp_path, monkeypatch, workload, capsys):
    root = _machine(tmp_path, monkeypatch, V1_MOUNT, "4:memory:/system/sshd\n",
                    writable=lambda path: "sshd" not in str(path))
    (root / "memory" / "system" / "sshd").mkdir(parents=True)
    code = cli.main(["run", str(workload("0 1 bsp --work 0\n")), "--node-mem", "100M",
                     "--out", str(tmp_path / "r")])
    assert code == run.EXIT_UNAVAILABLE
    err = capsys.readouterr().err
    assert "--node-mem without root needs a memory cgroup delegated to you" in err
    assert "systemd-run --user --scope -p Delegate=yes" in err
    assert not (tmp_path / "r").exists()
    code = cli.main(["run", str(workload("0 1 bsp --work 0\n")), "--swap", "100M",
                     "--out", str(tmp_path / "r")])
    assert code == run.EXIT_UNAVAILABLE and "--swap needs root" in capsys.readouterr().err


def test_no_memory_hierarchy_is_reported(tmp_path, monkeypatch):
    _machine(tmp_path, monkeypatch, "", "0::/\n")
    with pytest.raises(memory.MemorySetupError, match="no memory cgroup hierarchy is mounted"):
        memory.cgroup_parent()


@pytest.mark.realtime
def test_history_learns_from_finished_jobs(tmp_path, workload):
    path = workload("0 1 bsp --work 0.2 --mem-mb 40\n")
    for out in ("a", "b"):
        done = run_testbed("run", str(path), "--memory-history", "h.json", "--out", out,
                           cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    first, second = ([e for e in events(tmp_path / out) if e["event"] == "arrival"][0]
                     for out in ("a", "b"))
    assert first["mem_source"] == "none" and second["mem_source"].endswith("|1|")
    peak = int(jobs_csv(tmp_path / "a")["j1"]["peak_rss_kib"]) / 1024
    assert second["mem_mb"] == pytest.approx(peak, rel=1e-3) and peak > 40


PAGING_JOB = "0 2 bsp --work 1.5 --pattern nn --mem-mb 160 --theta 1 --accesses 30000\n"


@pytest.mark.realtime
@needs_root
def test_a_node_limit_below_the_footprint_makes_real_paging(tmp_path, workload):
    path = workload(PAGING_JOB)
    rows = {}
    for limit in ("120M", "512M"):
        done = run_testbed("run", str(path), "--scheduler", "gang", "--pes", "2", "--nodes",
                           "2", "--node-mem", limit, "--swap", "600M", "--out", limit,
                           cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        rows[limit] = jobs_csv(tmp_path / limit)["j1"]
    tight, roomy = rows["120M"], rows["512M"]
    assert int(tight["major_faults"]) > 1000 and int(tight["swap_in"]) > 0
    assert int(roomy["major_faults"]) < 100
    # Paging shows up as time, never calibrated away: the whole work is still computed, and
    # walking the paged array takes far longer than the walk calibrated on a resident one.
    (stats,) = [e["ranks"] for e in events(tmp_path / "120M") if e["event"] == "stats"]
    for rank in stats:
        assert rank["compute_target_s"] == pytest.approx(1.5, rel=1e-6)
        assert rank["walk_s"] > 10 * rank["iterations"] * rank["calib_walk_s"], rank
    used = [e for e in events(tmp_path / "120M") if e["event"] == "node_memory"]
    assert used and max(max(e["used_kib"]) for e in used) <= 120 * 1024
    for limit in rows:
        assert _leftovers(run_id(tmp_path / limit)) == [], "a normal end must clean up too"


def _leftovers(rid: str) -> list[str]:
    found = [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/testbed-{rid}")]
    swaps = Path("/proc/swaps").read_text()
    return found + [p for p in (f"/var/tmp/testbed-{rid}.swap",) if os.path.exists(p)
                    or p in swaps]


@pytest.mark.realtime
@needs_root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_cgroups_and_swap_are_removed_on_every_exit_path(tmp_path, workload, sig):
    path = workload("0 2 bsp --work 60 --pattern nn --mem-mb 20\n")
    proc = subprocess.Popen([*TESTBED, "run", str(path), "--pes", "2", "--nodes", "2",
                             "--node-mem", "200M", "--swap", "64M", "--out", "r"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not any(e["event"] == "pids" for e in (events(tmp_path / "r") if
                  (tmp_path / "r" / "events.jsonl").exists() else [])):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    rid = run_id(tmp_path / "r")
    assert _leftovers(rid), "the run should have made its cgroups and swap file"
    proc.send_signal(sig)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while (_leftovers(rid) or run_processes(rid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _leftovers(rid) == [] and run_processes(rid) == []
    if sig == signal.SIGINT:
        config = json.loads((tmp_path / "r" / "config.json").read_text())
        assert config["node_memory"]["limit_bytes"] == 200 * 2**20


def _experiment(module: str, out: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", module, *args, "--out", str(out)],
                          capture_output=True, text=True, timeout=600, check=True)
    return done.stdout


@pytest.mark.realtime
@needs_root
def test_fig5_experiment_writes_csv_plot_and_table(tmp_path):
    out = _experiment("benchmarks.papers.memory_fig5", tmp_path / "f5", "--counts", "2",
                      "--thetas", "1", "--mem-mb", "8", "--work", "0.3", "--accesses", "2000")
    rows = (tmp_path / "f5" / "fig5.csv").read_text().splitlines()
    assert rows[0] == "theta,jobs,config,total_s,major_faults,swap_in_pages,repeat"
    assert [r.split(",")[2] for r in rows[1:]] == ["unlimited", "C=1", "C=1.5"]
    assert all(float(r.split(",")[3]) > 0 for r in rows[1:])
    assert (tmp_path / "f5" / "fig5.png").stat().st_size > 1000
    assert "node memory" in out


def test_fig5_page_gives_medians_and_ratios_to_no_admission():
    from benchmarks.papers import memory_fig5

    rows = [[1.0, 8, name, total, 100, 50, repeat]
            for repeat, (slow, fast) in enumerate(((20.0, 10.0), (18.0, 11.0), (22.0, 9.0)))
            for name, total in (("unlimited", slow), ("C=1", fast), ("C=1.5", fast + 1))]
    walk = memory_fig5.Walk(64.0, 4, 1.0, 30000, 8)
    page = memory_fig5.markdown(rows, walk, "python -m benchmarks.papers.memory_fig5 --repeats 3",
                                "2026-11-25 12:00 UTC, 4 min")
    assert "`python -m benchmarks.papers.memory_fig5 --repeats 3`" in page
    assert "- measured: 2026-11-25 12:00 UTC, 4 min" in page and "400 MiB" in page
    table = [line for line in page.splitlines() if line.startswith("| 1 | 8 |")]
    assert [line.split(" | ")[2] for line in table] == ["unlimited", "C=1", "C=1.5"]
    assert table[0].startswith("| 1 | 8 | unlimited | 3 | 20 s [")
    assert "| 18-22 s | 100 |  |" in table[0]
    assert table[1].split(" | ")[4].startswith("10 s [")
    assert table[1].split(" | ")[7].startswith("0.5 [")


@pytest.mark.realtime
@needs_root
def test_fig7_experiment_writes_csv_plot_and_table(tmp_path):
    _experiment("benchmarks.papers.memory_fig7", tmp_path / "f7", "--loads", "0.8", "--jobs", "3",
                "--mem-mb", "8", "--work-max", "40", "--accesses", "2000")
    rows = (tmp_path / "f7" / "fig7.csv").read_text().splitlines()
    assert [r.split(",")[1] for r in rows[1:]] == ["unlimited", "C=1"]
    assert all(float(r.split(",")[2]) > 0 and float(r.split(",")[3]) >= 1 for r in rows[1:])
    assert (tmp_path / "f7" / "fig7.png").stat().st_size > 1000


def test_t3d_paging_without_cap_sys_nice_is_refused(tmp_path, monkeypatch, workload, capsys):
    assert paging.may_page_out("Name:\tx\nCapEff:\t0000000000800000\n")
    assert not paging.may_page_out("Name:\tx\nCapEff:\t0000000000000000\n")
    root = _machine(tmp_path, monkeypatch, V1_MOUNT, "4:memory:/ann\n")
    (root / "memory" / "ann").mkdir(parents=True)
    monkeypatch.setattr(run, "may_page_out", lambda: False)
    code = cli.main(["run", str(workload("0 1 bsp --work 0\n")), "--scheduler", "t3d",
                     "--node-mem", "100M", "--out", str(tmp_path / "r")])
    assert code == run.EXIT_UNAVAILABLE
    assert "--node-mem under t3d moves each preempted job to swap" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


class _Swaps:
    """/proc/swaps as given, and a swapoff that fails ``failures`` times (no process runs)."""

    def __init__(self, path: Path, failures: int) -> None:
        self.path, self.failures, self.enabled, self.calls = path, failures, True, 0

    def read(self, _file: Path) -> str:
        return f"Filename Type\n{self.path} file\n" if self.enabled else "Filename Type\n"

    def swapoff(self, argv, **_kw) -> subprocess.CompletedProcess:
        assert argv == ["swapoff", str(self.path)]
        self.calls += 1
        if self.calls > self.failures:
            self.enabled = False
            return subprocess.CompletedProcess(argv, 0, "", "")
        return subprocess.CompletedProcess(argv, 255, "", "swapoff: Cannot allocate memory")


@pytest.mark.parametrize("failures", [0, 2])
def test_a_swap_file_is_removed_once_swapoff_succeeds(tmp_path, monkeypatch, failures):
    swap = tmp_path / "swap"
    swap.write_bytes(b"x")
    swaps = _Swaps(swap, failures)
    monkeypatch.setattr(memory, "_read", swaps.read)
    monkeypatch.setattr(memory.subprocess, "run", swaps.swapoff)
    monkeypatch.setattr(memory.time, "sleep", lambda _s: None)
    memory.remove_swap(str(swap))
    assert swaps.calls == failures + 1 and not swap.exists()


def test_a_swap_file_that_stays_enabled_is_named_and_kept(tmp_path, monkeypatch):
    swap = tmp_path / "swap"
    swap.write_bytes(b"x")
    swaps = _Swaps(swap, failures=99)
    monkeypatch.setattr(memory, "_read", swaps.read)
    monkeypatch.setattr(memory.subprocess, "run", swaps.swapoff)
    monkeypatch.setattr(memory.time, "sleep", lambda _s: None)
    with pytest.raises(OSError, match=f"{swap} is still enabled .*Cannot allocate memory"):
        memory.remove_swap(str(swap))
    assert swaps.calls == memory.SWAPOFF_TRIES and swap.exists()


def test_history_estimate_of_plain_values():
    from testbed.memory_history import aged, estimate_of

    assert estimate_of([2.0]) == 2.0
    # mean 4, population sd 1: mean + 3 sd = 7 is above the largest value, which wins
    assert estimate_of([3.0, 5.0, 3.0, 5.0]) == 5.0
    # 9 x 100 and one 400: mean 130, sd 90, mean + 3 sd = 400 = the largest
    assert estimate_of([100.0] * 9 + [400.0]) == 400.0
    # 99 x 100 and one 1000: mean 109, variance (99 x 81 + 891^2) / 100 = 8019, so
    # mean + 3 sd = 377.6, below the largest
    assert estimate_of([100.0] * 99 + [1000.0]) == pytest.approx(109 + 3 * 8019 ** 0.5,
                                                                 rel=1e-12)
    with pytest.raises(ValueError):
        estimate_of([])
    entries = {"a": {"current": [1.0], "previous": [2.0]}, "b": {"current": [], "previous": [3.0]}}
    assert aged(entries, 0) is entries
    assert aged(entries, 1) == {"a": {"current": [], "previous": [1.0]}}
    assert aged(entries, 2) == {}
    assert entries["a"] == {"current": [1.0], "previous": [2.0]}
