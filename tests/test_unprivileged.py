"""Precision without root: the ranks' priority beside the coordinator (issue: the common user
is not root)."""

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
from conftest import jobs_csv

from testbed.emulation.procs import RankPriority, rank_priority

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


def test_a_bad_rank_priority_is_refused(tmp_path, workload):
    done = subprocess.run([sys.executable, "-m", "testbed.cli", "run",
                           str(workload("0 1 bsp --work 0.1\n")), "--rank-priority", "fifo"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "not a rank policy: 'fifo'" in done.stderr


def _unprivileged_user() -> str | None:
    """A user without privileges who can run this checkout's Python, made when we are root;
    None (with the reason in ``_WHY``) when there is none."""
    global _WHY
    if os.geteuid() != 0:
        _WHY = "already unprivileged: the other tests run this path"
        return None
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        _WHY = "no useradd or runuser to make an unprivileged user"
        return None
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", USER], check=True)
    probe = subprocess.run(["runuser", "-u", USER, "--", sys.executable, "-c", "import testbed"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        _WHY = (f"{USER} cannot run {sys.executable} with this checkout "
                f"(make it readable to other users): {probe.stderr.strip()[-200:]}")
        return None
    return USER


_WHY = ""
_USER = _unprivileged_user()


@pytest.fixture
def user_dir() -> Iterator[Path]:
    """A directory of the unprivileged user's (pytest's own are closed to other users)."""
    path = Path(tempfile.mkdtemp(prefix="testbed-unprivileged-"))
    shutil.chown(path, user=USER)
    yield path
    shutil.rmtree(path)


@pytest.mark.skipif(_USER is None, reason=_WHY)
def test_an_unprivileged_run_makes_its_ranks_idle(user_dir: Path):
    program = user_dir / "policy.py"
    program.write_text("import os\nprint(os.sched_getscheduler(0), os.getpriority("
                       "os.PRIO_PROCESS, 0))\n")
    (user_dir / "w.txt").write_text(f"0 1 {sys.executable} {program}\n0 1 bsp --work 0.2\n")
    done = subprocess.run(["runuser", "-u", USER, "--", sys.executable, "-m", "testbed.cli",
                           "run", "w.txt", "--pes", "2", "--out", "run"], cwd=user_dir,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    config = json.loads((user_dir / "run" / "config.json").read_text())
    assert config["coordinator_priority"].startswith("SCHED_OTHER")
    assert config["rank_priority"] == {"setting": "auto", "applied": "idle, nice 0"}
    assert {r["status"] for r in jobs_csv(user_dir / "run").values()} == {"done"}
    policy, nice = (user_dir / "run" / "jobs" / "j1.out").read_text().split()
    assert (int(policy), int(nice)) == (os.SCHED_IDLE, 0)
