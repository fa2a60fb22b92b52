"""Node managers on every host: emulated hosts on this machine through hydra's fork launcher."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from pathlib import Path

import psutil
import pytest
from conftest import TESTBED, events, jobs_csv, live_events, run_id, run_processes

from testbed.emulation import remote
from testbed.emulation.messages import Hello
from testbed.emulation.remote import NodesError, node_of, start_nodes
from testbed.hosts import Host
from testbed.machine import build_cluster, build_machine


def _hostfile(tmp_path: Path) -> Path:
    path = tmp_path / "hosts"
    path.write_text("hostA:1\nhostB:1\n")
    return path


def _daemons(out: Path) -> list[int]:
    """The run's node manager processes (config.json names them) still alive; other runs'
    NMs on this machine do not count."""
    alive = []
    for nm in json.loads((out / "config.json").read_text()).get("node_managers", []):
        try:
            proc = psutil.Process(nm["pid"])
            if ("testbed.emulation.nm_daemon" in proc.cmdline()
                    and proc.status() != psutil.STATUS_ZOMBIE):
                alive.append(nm["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return alive


def _gone(out: Path, seconds: float = 20.0) -> bool:
    """Whether the run's ranks and node managers are all gone within ``seconds``."""
    rid = run_id(out)
    deadline = time.monotonic() + seconds
    while (run_processes(rid) or _daemons(out)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not run_processes(rid) and not _daemons(out)


def test_a_job_spans_two_hosts_each_nm_pins_its_own_rank(tmp_path, workload):
    cpus = build_machine(2).cpus
    program = tmp_path / "affinity.py"          # each rank writes its own file: their output
    program.write_text(                         # lines may interleave on the way to mpiexec
        "import os, pathlib, time\n"
        "end = time.process_time() + 0.3\n"
        "while time.process_time() < end:\n    pass\n"
        "status = pathlib.Path('/proc/self/status').read_text().splitlines()\n"
        "cpus = next(ln for ln in status if ln.startswith('Cpus_allowed_list:')).split()[1]\n"
        f"pathlib.Path('{tmp_path}', 'cpu.' + os.environ['PMI_RANK']).write_text(cpus)\n")
    path = workload(f"0 2 {sys.executable} {program}\n0 1 bsp --work 0.3\n")
    out = tmp_path / "run"
    done = subprocess.run([*TESTBED, "run", str(path), "--hosts", str(_hostfile(tmp_path)),
                           "--launcher", "fork", "--out", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = jobs_csv(out)
    assert {r["status"] for r in rows.values()} == {"done"}
    config = json.loads((out / "config.json").read_text())
    assert [h["name"] for h in config["machine"]["hosts"]] == ["hostA", "hostB"]
    managers = config["node_managers"]
    assert len(managers) == 2 and managers[0]["pid"] != managers[1]["pid"]
    pids = next(e for e in events(out) if e["event"] == "pids" and e["job"] == "j1")["pids"]
    assert sorted(pids) == ["0", "1"]
    assert [(tmp_path / f"cpu.{rank}").read_text() for rank in (0, 1)] == list(map(str, cpus))
    assert _gone(out)


def test_a_lost_node_manager_fails_only_its_jobs(tmp_path, workload):
    path = workload("0 1 bsp --work 3\n0 1 bsp --work 60\n")
    out = tmp_path / "run"
    proc = subprocess.Popen([*TESTBED, "run", str(path), "--hosts", str(_hostfile(tmp_path)),
                             "--launcher", "fork", "--out", str(out)], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while sum(e["event"] == "pids" for e in live_events(out)) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, "the jobs never started"
        time.sleep(0.05)
    host_b = json.loads((out / "config.json").read_text())["node_managers"][1]["pid"]
    os.kill(host_b, signal.SIGKILL)                       # j2 runs on hostB
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    rows = jobs_csv(out)
    assert rows["j1"]["status"] == "done"
    assert rows["j2"]["status"] == "failed"
    assert rows["j2"]["reason"].startswith("node manager of hostB lost: connection closed")
    assert [e["node"] for e in events(out) if e["event"] == "node_lost"] == [1]
    assert float(rows["j2"]["end"]) < 30                  # failed at once, not at its end
    assert _gone(out)


def test_a_lost_machine_manager_makes_every_nm_kill_its_ranks(tmp_path, workload):
    path = workload("0 2 bsp --work 60\n")
    out = tmp_path / "run"
    proc = subprocess.Popen([*TESTBED, "run", str(path), "--hosts", str(_hostfile(tmp_path)),
                             "--launcher", "fork", "--out", str(out)], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not any(e["event"] == "pids" for e in live_events(out)):
        assert time.monotonic() < deadline and proc.poll() is None, "the job never started"
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert _gone(out)


def test_hosts_refuse_a_machine_size(tmp_path, workload):
    path = workload("0 1 bsp --work 1\n")
    done = subprocess.run([*TESTBED, "run", str(path), "--hosts", str(_hostfile(tmp_path)),
                           "--pes", "2"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "--pes cannot be combined with --hosts" in done.stderr
    bad = tmp_path / "bad"
    bad.write_text("hostA:two\n")
    done = subprocess.run([*TESTBED, "run", str(path), "--hosts", str(bad)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 2 and f"{bad}:1: field 'slots'" in done.stderr


def _slurm_ready() -> str | None:
    """Why the Slurm test cannot run here (None when it can)."""
    if not shutil.which("salloc") or not shutil.which("sinfo"):
        return "no Slurm here (scripts/slurm-local installs a one-host Slurm, as root)"
    try:
        state = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                               timeout=3)
    except subprocess.TimeoutExpired:
        return "Slurm is installed but its controller does not answer"
    if state.returncode != 0 or "idle" not in state.stdout:
        return f"Slurm is installed but no node is idle: {state.stderr.strip() or state.stdout}"
    return None


_SLURM_MISSING = _slurm_ready()


@pytest.mark.skipif(_SLURM_MISSING is not None, reason=str(_SLURM_MISSING))
def test_inside_a_slurm_allocation_the_nms_start_by_srun(tmp_path, workload):
    path = workload("0 1 bsp --work 0.5\n0 2 bsp --work 0.5\n")
    out = tmp_path / "run"
    done = subprocess.run(["salloc", "-N1", "--exclusive", *TESTBED, "run", str(path), "--out",
                           str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {r["status"] for r in jobs_csv(out).values()} == {"done"}
    machine = json.loads((out / "config.json").read_text())["machine"]
    assert machine["launcher"] == "slurm" and len(machine["hosts"]) == 1
    assert _gone(out)


def test_under_slurm_the_node_name_decides_which_node_an_nm_is():
    """srun --nodelist=c3,a1 numbers its tasks a1 = 0, c3 = 1 (Slurm's order)."""
    hosts = (Host("c3", 1), Host("a1", 1))
    slurm = build_cluster(hosts, "slurm")
    assert node_of(Hello(0, "a1", 1, (0,), ""), slurm) == 1
    assert node_of(Hello(1, "c3", 1, (0,), ""), slurm) == 0
    assert node_of(Hello(1, "elsewhere", 1, (0,), ""), slurm) == 1
    assert node_of(Hello(2, "elsewhere", 1, (0,), ""), slurm) is None
    emulated = build_cluster(hosts, "fork")
    assert node_of(Hello(0, "a1", 1, (0,), ""), emulated) == 0
    assert node_of(Hello(-1, "a1", 1, (0,), ""), emulated) is None


def _launcher(tmp_path: Path, body: str) -> tuple[Path, Path]:
    """A stand-in for mpiexec that ignores its arguments and runs ``body`` (a shell line);
    it writes its pid first."""
    pidfile = tmp_path / "launcher.pid"
    script = tmp_path / "fake-mpiexec"
    script.write_text(f"#!/bin/sh\necho $$ > {pidfile}\n{body}\n")
    script.chmod(0o755)
    return script, pidfile


def _start(script: Path) -> None:
    machine = build_cluster((Host("hostA", 1), Host("hostB", 1)), "fork")
    start_nodes(machine, str(script), dict(os.environ), "test", [None, None], None,
                time.monotonic)


def _reaped(pidfile: Path) -> bool:
    pid = int(pidfile.read_text())
    return not psutil.pid_exists(pid) or psutil.Process(pid).ppid() != os.getpid()


def test_nms_that_never_connect_end_the_start_with_the_hosts_named(tmp_path, monkeypatch):
    monkeypatch.setattr(remote, "CONNECT_TIMEOUT", 1.0)
    script, pidfile = _launcher(tmp_path, "exec sleep 600")
    with pytest.raises(NodesError, match="no node manager connected from hostA, hostB"):
        _start(script)
    assert _reaped(pidfile)


def test_a_launcher_that_exits_ends_the_start(tmp_path):
    script, _ = _launcher(tmp_path, "exit 3")
    with pytest.raises(NodesError, match=r"launcher exited \(3\)"):
        _start(script)


def test_an_interrupt_during_start_up_stops_the_launcher(tmp_path):
    script, pidfile = _launcher(tmp_path, "exec sleep 600")

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            _start(script)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert _reaped(pidfile)


def test_a_peer_without_the_runs_key_is_refused():
    key = secrets.token_bytes(32)
    hello = Hello(0, "hostA", 1, (0,), "")
    for peer_key, accepted in ((secrets.token_bytes(32), False), (key, True)):
        ours, theirs = socket.socketpair()

        def peer(sock: socket.socket = theirs, peer_key: bytes = peer_key) -> None:
            conn = Connection(sock.detach())
            with contextlib.suppress(AuthenticationError, EOFError, OSError):
                answer_challenge(conn, peer_key)
                deliver_challenge(conn, peer_key)
                conn.send(hello)
            conn.close()
        thread = threading.Thread(target=peer)
        thread.start()
        got, conn = remote._authenticate(ours, key)
        thread.join(timeout=30)
        conn.close()
        assert (got == hello) is accepted and (got is None) is not accepted
