"""The process helpers against real process trees: discovery, environments, usage, pinning,
states and the marker sweep.

Every child prints a line once it is in the state a test needs, so nothing here waits on a clock.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from testbed.emulation import procs
from testbed.emulation.launchers import Hydra

# A process that starts two children, each with a `sleep` child, and prints all four pids.
TREE = """
import subprocess, sys, time
LEAF = ("import subprocess, time; k = subprocess.Popen(['sleep', '60']); "
        "print(k.pid, flush=True); time.sleep(60)")
kids = [subprocess.Popen([sys.executable, "-c", LEAF], stdout=subprocess.PIPE, text=True)
        for _ in range(2)]
print(*[k.pid for k in kids], *[k.stdout.readline().strip() for k in kids], flush=True)
time.sleep(60)
"""

# Burns at least 0.1 CPU seconds, touches 16 MiB, prints its own CPU seconds, then sleeps.
BUSY = """
import os, time
data = b"x" * (16 << 20)
while sum(os.times()[:2]) < 0.1:
    pass
t = os.times()
print(repr(t.user + t.system), flush=True)
time.sleep(60)
"""

# Starts a second thread, then prints.
THREADS = """
import threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("ready", flush=True)
time.sleep(60)
"""

Spawn = Callable[..., tuple[subprocess.Popen[str], str]]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start ``python -c SCRIPT`` (extra environment as keywords); return it and its first line.

    Whatever is left of the started processes and their descendants is killed afterwards.
    """
    started: list[subprocess.Popen[str]] = []

    def start(script: str, **env: str) -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                text=True, env=dict(os.environ, **env))
        started.append(proc)
        assert proc.stdout is not None
        return proc, proc.stdout.readline().strip()

    yield start
    for proc in started:
        try:
            tree = [proc.pid, *(c.pid for c in psutil.Process(proc.pid).children(recursive=True))]
        except psutil.NoSuchProcess:
            tree = []
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def _exited(pid: int) -> None:
    """Block until our child ``pid`` has exited, leaving it a zombie."""
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


@pytest.mark.realtime
def test_descendants_lists_the_whole_tree_parents_first(spawn: Spawn) -> None:
    root, line = spawn(TREE)
    kids_and_leaves = [int(pid) for pid in line.split()]
    found = procs.descendants(root.pid)
    assert sorted(found) == sorted(kids_and_leaves)
    assert sorted(procs.children(root.pid)) == sorted(kids_and_leaves[:2])
    for i, pid in enumerate(found):
        parent = psutil.Process(pid).ppid()
        assert parent == root.pid or parent in found[:i]


@pytest.mark.realtime
def test_read_environ_and_its_failures(spawn: Spawn) -> None:
    marker = uuid.uuid4().hex
    proc, _ = spawn(BUSY, **{procs.MARKER: marker, "TESTBED_JOB": "j1"})
    env = procs.read_environ(proc.pid)
    assert env[procs.MARKER] == marker and env["TESTBED_JOB"] == "j1"
    assert procs.read_environ(int(Path("/proc/sys/kernel/pid_max").read_text()) + 1) == {}
    proc.kill()
    _exited(proc.pid)
    assert procs.read_environ(proc.pid) == {}


@pytest.mark.realtime
def test_usage_of_a_busy_process(spawn: Spawn) -> None:
    proc, line = spawn(BUSY)
    reported = float(line)
    cpu = procs.cpu_seconds(proc.pid)
    sample = procs.usage(proc.pid)
    assert cpu is not None and sample is not None
    assert cpu >= reported >= 0.1
    assert sample.cpu_s >= cpu
    assert sample.rss_kib >= 16 << 10
    assert sample.minor_faults > 0 and sample.major_faults >= 0
    proc.kill()
    proc.wait()
    assert procs.usage(proc.pid) is None and procs.cpu_seconds(proc.pid) is None


@pytest.mark.realtime
def test_pin_binds_every_thread(spawn: Spawn) -> None:
    proc, _ = spawn(THREADS)
    cpu = max(os.sched_getaffinity(0))
    tids = [int(tid) for tid in os.listdir(f"/proc/{proc.pid}/task")]
    assert len(tids) == 2
    procs.pin(proc.pid, cpu)
    assert {tid: os.sched_getaffinity(tid) for tid in tids} == dict.fromkeys(tids, {cpu})


@pytest.mark.realtime
def test_states(spawn: Spawn) -> None:
    proc, _ = spawn(THREADS)
    assert procs.state(proc.pid) in ("R", "S")
    proc.send_signal(signal.SIGSTOP)
    os.waitid(os.P_PID, proc.pid, os.WSTOPPED | os.WNOWAIT)
    assert procs.state(proc.pid) == "T"
    proc.kill()
    _exited(proc.pid)
    assert procs.state(proc.pid) == "Z"
    proc.wait()
    assert procs.state(proc.pid) is None


@pytest.mark.realtime
def test_reap_orphans_spares_kept_children() -> None:
    kept = subprocess.Popen(["true"])
    orphan = subprocess.Popen(["true"])
    _exited(kept.pid)
    _exited(orphan.pid)
    assert {kept.pid, orphan.pid} <= set(procs.children(os.getpid()))
    procs.reap_orphans(keep={kept.pid})
    assert procs.state(orphan.pid) is None
    assert procs.state(kept.pid) == "Z"
    assert kept.wait() == 0
    orphan.wait()


@pytest.mark.realtime
def test_kill_marked_sweeps_only_the_marked_job(spawn: Spawn) -> None:
    run = uuid.uuid4().hex
    root, line = spawn(TREE, **{procs.MARKER: run, "TESTBED_JOB": "a"})
    other, _ = spawn(THREADS, **{procs.MARKER: run, "TESTBED_JOB": "b"})
    job_a = {root.pid, *(int(pid) for pid in line.split())}
    assert set(procs.marked(run, "a")) == job_a
    assert set(procs.marked(run)) == job_a | {other.pid}
    assert procs.marked(uuid.uuid4().hex) == []

    assert procs.kill_marked(run, "a") == len(job_a)
    assert procs.state(root.pid) == "Z"
    assert procs.marked(run) == [other.pid]
    assert procs.kill_marked(run) == 1
    assert procs.marked(run) == []


@pytest.mark.realtime
def test_shm_segments_of_a_mapping_process(spawn: Spawn) -> None:
    path = f"{procs.SHM_PREFIX}testprocs-{uuid.uuid4().hex}"
    script = (f"import mmap, time; f = open({path!r}, 'w+b'); f.truncate(4096); "
              "m = mmap.mmap(f.fileno(), 4096); print('ready', flush=True); time.sleep(60)")
    try:
        proc, _ = spawn(script)
        assert path in procs.shm_segments(proc.pid)
    finally:
        procs.unlink_all({path})
    assert procs.shm_segments(proc.pid) == {path}


def test_marked_ranks_skip_only_processes_seen_without_the_marker(monkeypatch):
    envs = {1: {"PATH": "/bin"}, 2: {}, 3: {procs.MARKER: "r", "TESTBED_JOB": "j1"},
            4: {procs.MARKER: "r", "TESTBED_JOB": "j1", "PMI_RANK": "1"},
            5: {procs.MARKER: "r", "TESTBED_JOB": "j2", "PMI_RANK": "0"}}
    reads: list[int] = []

    def environ(pid: int) -> dict[str, str]:
        reads.append(pid)
        return envs[pid]

    monkeypatch.setattr(procs.psutil, "pids", lambda: sorted(envs))
    monkeypatch.setattr(procs, "read_environ", environ)
    unmarked: set[int] = set()
    assert procs.marked_ranks("r", "j1", unmarked, Hydra("mpiexec")) == ({1: 4}, [3])
    assert unmarked == {1}          # an empty environment (mid-exec, gone) is read again
    envs[3]["PMI_RANK"] = "0"       # the launcher's child has exec'd into rank 0
    reads.clear()
    assert procs.marked_ranks("r", "j1", unmarked, Hydra("mpiexec")) == ({0: 3, 1: 4}, [])
    assert 1 not in reads and 2 in reads
