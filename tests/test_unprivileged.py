"""Without root: the ranks' priority beside the coordinator, and node memory in a delegated
cgroup (issue: the common user is not root)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import events, jobs_csv

from benchmarks.overheads import unprivileged
from testbed.emulation import memory
from testbed.emulation.procs import RankPriority, rank_priority
from testbed.jobs import walk

USER = "testbed-user"


def test_rank_priority_settings():
    assert RankPriority.parse("normal") == RankPriority()
    assert RankPriority.parse("batch") == RankPriority("batch", 0)
    assert RankPriority.parse("other:10") == RankPriority("other", 10)
    assert RankPriority.parse("idle").describe() == "idle, nice 0"
    for bad in ("fifo", "batch:20", "other:-1", "nice"):
        with pytest.raises(ValueError):
            RankPriority.parse(bad)
    assert rank_priority("auto", "SCHED_FIFO 1, reset on fork") == RankPriority()
    assert rank_priority("auto", "SCHED_OTHER (real-time priority not permitted)") == (
        RankPriority("idle", 0))
    assert rank_priority("other:5", "SCHED_FIFO 1, reset on fork") == RankPriority("other", 5)


@pytest.mark.realtime
def test_a_bad_rank_priority_is_refused(tmp_path, workload):
    done = subprocess.run([sys.executable, "-m", "testbed.cli", "run",
                           str(workload("0 1 bsp --work 0.1\n")), "--rank-priority", "fifo"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "not a rank policy: 'fifo'" in done.stderr


def as_user(argv: list[str], cwd: Path, cgroup: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as the test's unprivileged user (see ``benchmarks.overheads.unprivileged``)."""
    return unprivileged.as_user(USER, argv, cwd, cgroup, timeout)


def _unprivileged_user() -> str | None:
    """A user without privileges who can run this checkout's Python, made when we are root;
    None (with the reason in ``_WHY``) when there is none."""
    global _WHY
    if os.geteuid() != 0:
        _WHY = "already unprivileged: the other tests run this path"
        return None
    missing = unprivileged.missing_tools() + (["useradd"] if shutil.which("useradd") is None
                                              else [])
    if missing:
        _WHY = f"no {', '.join(missing)} to run as an unprivileged user made for the test"
        return None
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", USER], check=True)
    probe = as_user([sys.executable, "-c", "import testbed"], Path("/"))
    if probe.returncode != 0:
        _WHY = (f"{USER} cannot run {sys.executable} with this checkout: "
                f"{probe.stderr.strip()[-200:]}")
        return None
    return USER


_WHY = ""
_USER = _unprivileged_user()


@pytest.fixture(scope="module", autouse=True)
def _walk_library_built() -> None:
    """The benchmark's walk library, built as root first: the unprivileged user cannot write
    the build directory (the shim is built at set-up, the walk library on first use)."""
    walk.lib()


@pytest.fixture
def user_dir() -> Iterator[Path]:
    """A directory of the unprivileged user's (pytest's own are closed to other users)."""
    path = Path(tempfile.mkdtemp(prefix="testbed-unprivileged-"))
    shutil.chown(path, user=USER)
    yield path
    shutil.rmtree(path)


@pytest.mark.realtime
@pytest.mark.skipif(_USER is None, reason=_WHY)
def test_an_unprivileged_run_makes_its_ranks_idle(user_dir: Path):
    program = user_dir / "policy.py"
    program.write_text("import os\nprint(os.sched_getscheduler(0), os.getpriority("
                       "os.PRIO_PROCESS, 0))\n")
    (user_dir / "w.txt").write_text(f"0 1 {sys.executable} {program}\n0 1 bsp --work 0.2\n")
    done = as_user([sys.executable, "-m", "testbed.cli", "run", "w.txt", "--pes", "2",
                    "--out", "run"], cwd=user_dir)
    assert done.returncode == 0, done.stderr
    config = json.loads((user_dir / "run" / "config.json").read_text())
    assert config["coordinator_priority"].startswith("SCHED_OTHER")
    assert config["rank_priority"] == {"setting": "auto", "applied": "idle, nice 0"}
    assert {r["status"] for r in jobs_csv(user_dir / "run").values()} == {"done"}
    policy, nice = (user_dir / "run" / "jobs" / "j1.out").read_text().split()
    assert (int(policy), int(nice)) == (os.SCHED_IDLE, 0)


def _delegated_cgroup() -> Path | None:
    """A memory cgroup made and handed to the unprivileged user as a site delegates one (the
    directory and its interface files chowned); None if this machine has no writable one."""
    try:
        parent = memory.cgroup_parent()
    except memory.MemorySetupError:
        return None
    cgroup = parent.path / f"testbed-delegated-{os.getpid()}"
    cgroup.mkdir()
    if parent.version == 2:
        (parent.path / "cgroup.subtree_control").write_text("+memory")
    for path in (cgroup, *cgroup.iterdir()):
        shutil.chown(path, user=USER)
    return cgroup


@pytest.mark.realtime
@pytest.mark.skipif(_USER is None, reason=_WHY)
def test_node_memory_without_root_in_a_delegated_cgroup(user_dir: Path):
    cgroup = _delegated_cgroup()
    if cgroup is None:
        pytest.skip("no writable memory cgroup hierarchy to delegate from")
    try:
        (user_dir / "w.txt").write_text("0 1 bsp --work 1.5 --mem-mb 16\n"
                                        "0 1 bsp --work 3 --mem-mb 400 --pattern none\n")
        done = as_user([sys.executable, "-m", "testbed.cli", "run", "w.txt", "--pes", "2",
                        "--nodes", "2", "--node-mem", "120M", "--out", "run"], cwd=user_dir,
                       cgroup=cgroup)
        assert done.returncode in (0, 1), done.stderr
        config = json.loads((user_dir / "run" / "config.json").read_text())
        node_memory = config["node_memory"]
        assert node_memory["delegated"] is True, node_memory
        assert Path(node_memory["path"]).parent == cgroup
        status = {k: r["status"] for k, r in jobs_csv(user_dir / "run").items()}
        # No swap without root: the job that overfills its node is killed by the kernel.
        assert status == {"j1": "done", "j2": "failed"}, status
        used = [e["used_kib"] for e in events(user_dir / "run") if e["event"] == "node_memory"]
        assert used and max(max(u) for u in used) <= 120 * 1024
        assert [p.name for p in cgroup.iterdir() if p.is_dir()] == []
        assert (cgroup / "cgroup.procs").read_text() == ""
    finally:
        memory.remove_cgroup(str(cgroup))


@pytest.mark.realtime
@pytest.mark.skipif(_USER is None, reason=_WHY)
def test_node_memory_without_a_delegated_cgroup_says_so(user_dir: Path):
    (user_dir / "w.txt").write_text("0 1 bsp --work 0.1\n")
    done = as_user([sys.executable, "-m", "testbed.cli", "run", "w.txt", "--node-mem", "100M",
                    "--out", "run"], cwd=user_dir)
    assert done.returncode == 4, done.stderr
    assert "--node-mem without root needs a memory cgroup delegated to you" in done.stderr
    assert not (user_dir / "run").exists()


@pytest.mark.realtime
@pytest.mark.skipif(_USER is None, reason=_WHY)
def test_the_overhead_suite_reports_root_and_unprivileged_side_by_side(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.overheads.regression", "--quick",
                           "--parts",
                           "switch", "--as-user", USER, "--out", str(tmp_path / "o.json")],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    root, user = result["root"], result["unprivileged"]
    assert root["coordinator_priority"].startswith("SCHED_FIFO")
    assert user["coordinator_priority"].startswith("SCHED_OTHER")
    assert user["rank_priority"] == "idle, nice 0"
    assert user["user"] == USER and root["quick"] and user["quick"]
    assert set(root["samples"]) == set(user["samples"])
    lines = done.stderr.splitlines()
    header = next(n for n, line in enumerate(lines) if line.split()[:1] == ["figure"])
    assert lines[header].split() == ["figure", "root", "unprivileged", f"({USER})"]
    assert any(row.lstrip().startswith("switch_p99_us[mpl=2]") for row in lines[header + 1:])
