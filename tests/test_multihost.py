"""Node managers on every host: emulated hosts on this machine through hydra's fork launcher."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing import AuthenticationError, Pipe
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from conftest import TESTBED, events, jobs_csv, live_events, run_id, run_processes

from testbed import cli, run
from testbed.emulation import auth, nm_daemon, remote, tree
from testbed.emulation.executor import EmulationExecutor
from testbed.emulation.launchers import Hydra
from testbed.emulation.messages import (
    Close,
    Gathered,
    Heartbeat,
    Hello,
    KillJob,
    LaunchJob,
    NodeSample,
    PidInfo,
    Push,
    Release,
    Reply,
    Shutdown,
    Termination,
)
from testbed.emulation.mpi_info import MpiInfo
from testbed.emulation.remote import Fanout, NodesError, RemoteNode, node_of, start_nodes
from testbed.events import EventLog
from testbed.hosts import Host
from testbed.machine import Node, build_cluster, build_machine
from testbed.policies import Launch, PolicyConfig, make_policy
from testbed.ports import Ended
from testbed.workloads.files import JobSpec


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


@pytest.mark.realtime
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


@pytest.mark.realtime
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


@pytest.mark.realtime
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


def _four_hosts(tmp_path: Path) -> Path:
    path = tmp_path / "hosts4"
    path.write_text("".join(f"host{i}:1\n" for i in range(4)))
    return path


def _tree_run(tmp_path: Path, workload_path: Path, out: Path) -> list[str]:
    """``testbed run`` of the workload on four emulated hosts in a tree of width 2 (node 0
    forwards to node 1, node 2 to node 3), gang scheduled at MPL 2 with 0.1 s slices."""
    return [*TESTBED, "run", str(workload_path), "--hosts", str(_four_hosts(tmp_path)),
            "--launcher", "fork", "--tree-width", "2", "--scheduler", "gang", "--mpl", "2",
            "--timeslice", "0.1", "--out", str(out)]


@pytest.mark.realtime
def test_a_heartbeat_reaches_every_nm_through_a_tree_of_width_2(tmp_path, workload):
    out = tmp_path / "run"
    done = subprocess.run(_tree_run(tmp_path, workload("0 4 bsp --work 0.3\n" * 2), out),
                          cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["tree_width"] == 2
    assert [nm["parent"] for nm in config["node_managers"]] == [None, 0, None, 2]
    assert {r["status"] for r in jobs_csv(out).values()} == {"done"}
    log = events(out)
    beats = [e for e in log if e["event"] == "broadcast" and e["message"] == "Heartbeat"]
    # each sent to two NMs and answered by all four, two of which it reached through the tree
    assert beats and {(e["nodes"], e["direct"]) for e in beats} == {(4, 2)}
    assert all(e["forward_us"] is not None for e in beats)
    assert any(e["event"] == "switch" and e["stopped"] and e["continued"] for e in log)
    assert not [e for e in log if e["event"] == "node_lost"]
    stopped = [r["stopped_s"] for e in log if e["event"] == "stats" for r in e["ranks"]]
    assert len(stopped) == 8 and min(stopped) > 0      # every NM stopped its ranks
    assert _gone(out)


@pytest.mark.realtime
def test_a_lost_inner_node_fails_only_its_jobs_and_the_mm_takes_over_its_child(tmp_path,
                                                                               workload):
    """Node 0 forwards the heartbeats to node 1; once it is killed node 1 gets them from the
    MM: its two jobs, which take turns, still end done; node 0's fail at once."""
    out = tmp_path / "run"
    proc = subprocess.Popen(_tree_run(tmp_path, workload("0 1 bsp --work 1.5\n" * 8), out),
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while sum(e["event"] == "pids" for e in live_events(out)) < 8:
        assert time.monotonic() < deadline and proc.poll() is None, "the jobs never started"
        time.sleep(0.05)
    node_0 = json.loads((out / "config.json").read_text())["node_managers"][0]["pid"]
    os.kill(node_0, signal.SIGKILL)
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    log = events(out)
    rows = jobs_csv(out)
    hosts = {e["job"]: set(e["pes"]) for e in log if e["event"] == "start"}   # PE i: host i
    assert sorted(len([j for j, pes in hosts.items() if i in pes]) for i in range(4)) == [2] * 4
    for job, pes in hosts.items():
        if 0 in pes:
            assert rows[job]["status"] == "failed"
            assert rows[job]["reason"].startswith("node manager of host0 lost: connection closed")
            assert float(rows[job]["end"]) < 30
        else:
            assert rows[job]["status"] == "done", rows[job]
    lost = next(i for i, e in enumerate(log) if e["event"] == "node_lost")
    assert [e["node"] for e in log if e["event"] == "node_lost"] == [0]
    after = [e for e in log[lost:] if e["event"] == "broadcast" and e["message"] == "Heartbeat"]
    assert after and {(e["nodes"], e["direct"]) for e in after} == {(3, 2)}     # nodes 1, 2
    assert _gone(out)


@pytest.mark.realtime
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
        said = (state.stderr.strip() or state.stdout.strip() or "no output").splitlines()[-1]
        return f"Slurm is installed but no node is idle ({said}; scripts/slurm-local start)"
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
    start_nodes(machine, Hydra(str(script), "fork"), dict(os.environ), "test", [None, None],
                None,
                time.monotonic)


def _reaped(pidfile: Path) -> bool:
    pid = int(pidfile.read_text())
    return not psutil.pid_exists(pid) or psutil.Process(pid).ppid() != os.getpid()


@pytest.mark.realtime
def test_nms_that_never_connect_end_the_start_with_the_hosts_named(tmp_path, monkeypatch):
    monkeypatch.setattr(remote, "CONNECT_TIMEOUT", 1.0)
    script, pidfile = _launcher(tmp_path, "exec sleep 600")
    with pytest.raises(NodesError, match="no node manager connected from hostA, hostB"):
        _start(script)
    assert _reaped(pidfile)


@pytest.mark.realtime
def test_a_launcher_that_exits_ends_the_start(tmp_path):
    script, _ = _launcher(tmp_path, "exit 3")
    with pytest.raises(NodesError, match=r"launcher exited \(3\)"):
        _start(script)


@pytest.mark.realtime
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
        got, conn = auth.accept(ours, key)
        thread.join(timeout=30)
        conn.close()
        assert (got == hello) is accepted and (got is None) is not accepted


@pytest.mark.realtime
def test_peers_failing_to_authenticate_do_not_hold_the_start_open(tmp_path, monkeypatch):
    """Four threads knock with a wrong key without pause, so that accept never times out:
    the start still ends at its deadline (the alarm, 60 times later, only guards the test)."""
    monkeypatch.setattr(remote, "CONNECT_TIMEOUT", 1.0)
    knocker = tmp_path / "knock.py"
    knocker.write_text(
        "import sys, threading\n"
        "from multiprocessing.connection import Client\n"
        "host, _, port = sys.argv[-1].rpartition(':')\n"
        "def knock():\n"
        "    while True:\n"
        "        try:\n"
        "            Client((host, int(port)), authkey=b'not the key').close()\n"
        "        except Exception:\n"
        "            pass\n"
        "for _ in range(4):\n"
        "    threading.Thread(target=knock).start()\n")
    script, pidfile = _launcher(tmp_path, f'exec {sys.executable} {knocker} "$@"')

    def too_late(signum: int, frame: object) -> None:
        raise TimeoutError("the start did not end at its deadline")
    old = signal.signal(signal.SIGALRM, too_late)
    signal.setitimer(signal.ITIMER_REAL, 60.0)
    try:
        with pytest.raises(NodesError, match="no node manager connected"):
            _start(script)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert _reaped(pidfile)


class _Node(RemoteNode):
    """A node manager process stood in for, at the other end of a socket pair: it answers
    every request and broadcast at once with nothing (for its whole subtree), is lost when
    sent a message of a type in ``lose_on``, answers nothing of a type in ``hang_on`` and
    closes its end on one in ``die_on``, and a launcher of its that ``KillJob`` or
    ``Shutdown`` kills ends at once, its termination coming in with the answer.  ``frames``
    are the broadcasts it was sent: (number, solo)."""

    def __init__(self, node: Node, name: str, fanout: Fanout, lose_on: tuple[type, ...] = (),
                 hang_on: tuple[type, ...] = (), die_on: tuple[type, ...] = ()) -> None:
        ours, theirs = socket.socketpair()
        self.peer = Connection(theirs.detach())
        super().__init__(node, name, Connection(ours.detach()),
                         Hello(node.index, name, 0, (0,), "SCHED_OTHER"), fanout)
        self.lose_on = lose_on
        self.hang_on = hang_on
        self.die_on = die_on
        self.sent: list[object] = []
        self.frames: list[tuple[int, bool]] = []

    def send_frame(self, data: bytes) -> None:
        if self.lost is not None or self.peer.closed:      # a dead node hears nothing
            return
        seq, solo, _ = tree.header(data)
        msg = pickle.loads(tree.body(data)[1])
        if seq:
            self.frames.append((seq, solo))
        self.sent.append(msg)
        if isinstance(msg, self.lose_on):
            self.lose("stopped answering")
            return
        if isinstance(msg, KillJob) and msg.job in self.launched:
            self.push(Termination(msg.job, "killed", -9, f"killed: {msg.reason}"))
        elif isinstance(msg, Shutdown):
            for job in sorted(self.launched):
                self.push(Termination(job, "killed", -9, f"killed: {msg.reason}"))
        if isinstance(msg, self.die_on):
            self.peer.close()
        if isinstance(msg, self.hang_on + self.die_on):
            return
        index = self.node.index
        subtree = [index] if solo else [index, *_descendants(self.fanout.shape, index)]
        self.peer.send(Gathered(seq, sum(1 << i for i in subtree), None, [], 0.0, None)
                       if seq else Reply([]))

    def push(self, term: Termination) -> None:
        """What receiving ``term`` in a ``Push`` does."""
        self.launched.discard(term.job)
        self.ended[term.job] = term
        self.fanout.noticed.add(self.node.index)


def _descendants(shape: tuple[int | None, ...], node: int) -> list[int]:
    kids = tree.children(shape)
    found, todo = [], list(kids[node])
    while todo:
        found.append(todo.pop())
        todo += kids[found[-1]]
    return found


@pytest.fixture
def executor(tmp_path):
    """``make(*lose_on, width=None, hang_on=None, die_on=None)``: an executor of one node
    manager per ``lose_on`` (hostA, hostB..., one PE each, stood in for by ``_Node``s, in a
    tree of ``width``, flat by default) with its event log open, begun without starting
    anything (no watchdog, no node manager processes, the signal handlers kept)."""
    made: list[EmulationExecutor] = []

    def make(*lose_on: tuple[type, ...], width: int | None = None,
             hang_on: tuple[tuple[type, ...], ...] | None = None,
             die_on: tuple[tuple[type, ...], ...] | None = None
             ) -> tuple[EmulationExecutor, list[_Node]]:
        hosts = tuple(Host(f"host{chr(ord('A') + i)}", 1) for i in range(len(lose_on)))
        machine = build_cluster(hosts, None)
        mpi = MpiInfo("MPICH", "", "", "", "", "mpiexec", "hydra")
        ex = EmulationExecutor(make_policy("gang", PolicyConfig(len(hosts))), machine, mpi,
                               tmp_path, f"test-{secrets.token_hex(4)}")
        (tmp_path / "jobs").mkdir(exist_ok=True)
        ex.log = EventLog(tmp_path / f"events-{len(made)}.jsonl")
        fanout = Fanout(tree.parents(len(hosts), width or len(hosts)), ex.now)
        none: tuple[tuple[type, ...], ...] = ((),) * len(hosts)
        nodes = [_Node(node, host.name, fanout, *kinds) for node, host, *kinds in
                 zip(machine.nodes, hosts, lose_on, hang_on or none, die_on or none,
                     strict=True)]
        fanout.attach(nodes)
        ex.fanout = fanout
        ex.nms = list(nodes)
        for nm in nodes:
            ex.selector.register(nm, selectors.EVENT_READ, lambda nm=nm: ex._node_events(nm))
        made.append(ex)
        return ex, nodes

    yield make
    for ex in made:
        assert ex.log is not None and ex.fanout is not None
        ex.log.close()
        ex.selector.close()
        ex.fanout.close()
        for nm in ex.nms:
            assert isinstance(nm, _Node)
            nm.conn.close()
            nm.peer.close()


def _launch(ex: EmulationExecutor, job: str, *pes: int) -> Ended | None:
    return ex.launch(JobSpec(job, 1, 0.0, len(pes), ("true",)), Launch(job, 0, pes))


def test_a_node_lost_while_another_nodes_jobs_are_failed_ends_each_job_once(executor):
    ex, (_, node_b, node_c) = executor((), (Heartbeat,), (KillJob,))
    assert _launch(ex, "j1", 0, 1, 2) is None and _launch(ex, "j2", 1, 2) is None
    ex.switch(frozenset({"j1", "j2"}), 0)   # hostB is lost; killing j1 loses hostC
    ended = ex.advance(0.0)
    assert sorted(e.job for e in ended) == ["j1", "j2"]
    assert {e.status for e in ended} == {"failed"}
    assert node_b.lost and node_c.lost and ex.lost_nodes == {1, 2}


def test_a_job_placed_on_a_node_already_lost_fails_at_launch(executor):
    ex, (node_a, node_b) = executor((), (Heartbeat,))
    ex.switch(frozenset(), None)
    assert ex.lost_nodes == {1}
    end = _launch(ex, "j1", 0, 1)
    assert end is not None and end.status == "failed"
    assert end.reason == "node manager of hostB lost: stopped answering"
    assert not any(isinstance(msg, LaunchJob) for msg in node_a.sent)
    assert _launch(ex, "j2", 0) is None                     # hostA alone still runs jobs
    assert node_a.launched == {"j2"}


def test_jobs_whose_ends_came_in_before_the_run_ended_keep_them(executor):
    ex, (node_a, _) = executor((), ())
    for job in ("j1", "j2", "j3"):
        assert _launch(ex, job, 0, 1) is None
    node_a.push(Termination("j1", "done", 0, ""))            # before the run ends
    node_a.push(Termination("j3", "failed", 1, "exit code 1"))
    ended, _ = ex.end("interrupted")
    assert {e.job: (e.status, e.reason) for e in ended} == {
        "j1": ("done", ""), "j2": ("killed", "killed: run interrupted"),
        "j3": ("failed", "exit code 1")}


def test_jobs_failed_by_a_node_lost_as_the_run_ends_are_returned(executor):
    ex, _ = executor((), (Release,))
    assert _launch(ex, "j1", 0) is None and _launch(ex, "j2", 0, 1) is None
    ended, _ = ex.end("complete")           # releasing j1 loses hostB, which fails j2
    assert {e.job: (e.status, e.reason) for e in ended} == {
        "j1": ("killed", "killed: run complete"),
        "j2": ("failed", "node manager of hostB lost: stopped answering")}


def test_a_job_that_fails_on_one_node_after_another_of_its_nodes_died_fails_for_the_loss(
        executor):
    """A node manager that dies closes its connection before its ranks can go, so when a
    job's launcher then fails on another node (its peer gone), the loss is already there to
    read: the job fails for the loss, not for its exit code, whichever socket is read first."""
    ex, (node_a, node_b) = executor((), ())
    assert _launch(ex, "j1", 0, 1) is None and _launch(ex, "j2", 0) is None
    node_b.peer.close()
    node_a.peer.send(Push([Termination("j1", "failed", 1, "exit code 1"),
                           Termination("j2", "done", 0, "")]))
    ex._node_events(node_a)
    assert {e.job: (e.status, e.reason) for e in ex.ended} == {
        "j1": ("failed", "node manager of hostB lost: connection closed (the node manager "
               "died)"), "j2": ("done", "")}
    assert ex.lost_nodes == {1}


class _Launchers:
    """A node manager stood in for in ``nm_daemon.serve``: a job's launcher is a pipe that
    is readable (it has exited) from the start; ``Release`` forgets it, as ``NodeManager``
    reaps a launcher on release."""

    events = None
    machine = SimpleNamespace(emulated_hosts=True)
    node = SimpleNamespace(index=0)

    def __init__(self) -> None:
        self.pipes: dict[str, tuple[int, int]] = {}
        self.reaped: list[str] = []

    def handle(self, msg: object) -> list[object]:
        if isinstance(msg, LaunchJob):
            self.pipes[msg.job] = os.pipe()
            os.write(self.pipes[msg.job][1], b"x")
        elif isinstance(msg, Release):
            for fd in self.pipes.pop(msg.job):
                os.close(fd)
        return []

    def launcher_fd(self, job: str) -> int | None:
        return self.pipes[job][0] if job in self.pipes else None

    def launcher_fds(self) -> dict[int, str]:
        return {r: job for job, (r, _) in self.pipes.items()}

    def reap(self, job: str) -> Termination:
        r, w = self.pipes.pop(job)
        os.close(r)
        os.close(w)
        self.reaped.append(job)
        return Termination(job, "done", 0, "")

    def discover(self) -> list[object]:
        return []

    def clock(self) -> float:
        return 0.0

    def sample(self) -> None:
        return None

    def awaiting_pids(self) -> bool:
        return False

    def close(self) -> None:
        for fds in self.pipes.values():
            for fd in fds:
                os.close(fd)


class _RequestsFirst(selectors.DefaultSelector):
    """Hands the MM's connection first in a batch (as epoll does when both were ready)."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        return sorted(super().select(timeout), key=lambda ready: ready[0].data != "mm")


def test_a_release_and_its_launchers_exit_in_one_batch(monkeypatch):
    monkeypatch.setattr(nm_daemon.selectors, "DefaultSelector", _RequestsFirst)
    mm, nm_side = Pipe()
    launch = LaunchJob("j1", 0, (0,), ("true",), True, "/dev/null", "/dev/null")
    mm.send_bytes(tree.frame(0, False, 0.0, pickle.dumps(launch)))
    mm.send_bytes(tree.frame(1, False, 0.0, pickle.dumps(Release("j1"))))
    mm.send_bytes(tree.frame(0, False, 0.0, pickle.dumps(Close())))
    nm = _Launchers()
    try:
        assert nm_daemon.serve(nm_side, nm) == 0
        assert [mm.recv() for _ in range(3)] == [Reply([]), Gathered(1, 1, None, [], 0.0, None),
                                                  Reply([])]
        assert not mm.poll(0) and nm.reaped == []
    finally:
        nm.close()
        nm_side.close()
        mm.close()


@pytest.fixture
def control_job(tmp_path):
    """``start(setup, rest)``: a control job stood in for, in a process group of its own: a
    shell that runs ``setup`` then ``rest``, returned once ``setup`` is done.  One still there
    after the test is killed."""
    started: list[subprocess.Popen[bytes]] = []

    def start(setup: str, rest: str) -> subprocess.Popen[bytes]:
        ready = tmp_path / "ready"
        script, _ = _launcher(tmp_path, f"{setup}\necho > {ready}\n{rest}")
        control = subprocess.Popen([str(script)], start_new_session=True)
        started.append(control)
        while not ready.exists():
            assert control.poll() is None, "the control job ended before it was ready"
            time.sleep(0.01)
        return control

    yield start
    for control in started:
        if control.poll() is None:
            os.killpg(control.pid, signal.SIGKILL)
            control.wait()


@pytest.mark.realtime
def test_the_control_job_is_asked_to_stop_before_it_is_killed(tmp_path, monkeypatch,
                                                              control_job):
    monkeypatch.setattr(remote, "TERM_GRACE", 600.0)
    stopped = tmp_path / "stopped"
    control = control_job(f"trap 'echo > {stopped}; exit 0' TERM", "sleep 600 & wait")
    remote.stop_control(control, grace=0.0)
    assert control.returncode == 0 and stopped.exists()


@pytest.mark.realtime
def test_a_control_job_deaf_to_sigterm_is_killed(monkeypatch, control_job):
    monkeypatch.setattr(remote, "TERM_GRACE", 0.5)
    control = control_job("trap '' TERM", "exec sleep 600")
    remote.stop_control(control, grace=0.0)
    assert control.returncode == -signal.SIGKILL


def test_node_managers_that_cannot_start_are_one_line_not_a_traceback(tmp_path, workload,
                                                                       monkeypatch, capsys):
    def cannot(*args: object) -> None:
        raise NodesError("the node managers' launcher exited (3)")
    monkeypatch.setattr(run, "emulate", cannot)
    code = cli.main(["run", str(workload("0 1 bsp --work 1\n")), "--hosts",
                     str(_hostfile(tmp_path)), "--launcher", "fork", "--out",
                     str(tmp_path / "run")])
    assert code == run.EXIT_UNAVAILABLE
    assert capsys.readouterr().err == ("testbed: cannot start the node managers: the node "
                                       "managers' launcher exited (3)\n")


def test_nodes_that_answer_nothing_get_the_broadcast_again_alone_then_are_lost(executor,
                                                                               monkeypatch):
    """Several hung NMs cost two ANSWER_TIMEOUTs together (one for the broadcast, one for it
    sent again to each alone), not two each."""
    monkeypatch.setattr(remote, "ANSWER_TIMEOUT", 0.05)
    ex, nodes = executor((), (), (), hang_on=((Heartbeat,),) * 3)
    ex.switch(frozenset(), None)
    assert [nm.frames for nm in nodes] == [[(1, False), (1, True)]] * 3
    assert [nm.lost for nm in nodes] == [
        f"node manager of {nm.name} lost: no answer for 0.05 s, nor to the broadcast sent "
        "again to it alone" for nm in nodes]
    assert ex.lost_nodes == {0, 1, 2}


def test_a_hung_inner_node_is_lost_and_its_child_answers_alone_then_hears_from_the_mm(
        executor, monkeypatch):
    monkeypatch.setattr(remote, "ANSWER_TIMEOUT", 0.05)
    ex, nodes = executor((), (), (), (), width=2, hang_on=((Heartbeat,), (), (), ()))
    assert ex.fanout is not None and ex.fanout.shape == (None, 0, None, 2)
    ex.switch(frozenset(), None)        # node 0 never passes it on to node 1
    assert [nm.frames for nm in nodes] == [[(1, False), (1, True)], [(1, True)], [(1, False)], []]
    assert ex.lost_nodes == {0} and nodes[1].lost is None
    ex.switch(frozenset(), None)
    assert [nm.frames[-1:] for nm in nodes] == [[(1, True)], [(2, False)], [(2, False)], []]
    assert ex.lost_nodes == {0}


def test_an_inner_node_that_dies_has_its_child_sent_the_broadcast_at_once(executor,
                                                                        monkeypatch):
    """No deadline passes: the child gets the heartbeat from the MM as soon as its parent's
    connection ends, and answers it through the tree as usual (not alone)."""
    monkeypatch.setattr(remote, "ANSWER_TIMEOUT", 600.0)
    ex, nodes = executor((), (), (), (), width=2, die_on=((Heartbeat,), (), (), ()))
    assert _launch(ex, "j1", 0) is None and _launch(ex, "j2", 1, 2, 3) is None
    ex.switch(frozenset({"j1", "j2"}), 0)     # then j1 is killed and released: 2 and 3
    assert [nm.frames for nm in nodes] == [[(1, False)], [(1, False), (2, False), (3, False)],
                                           [(1, False), (2, False), (3, False)], []]
    assert ex.lost_nodes == {0}
    ended = ex.advance(0.0)
    assert [(e.job, e.status, e.reason) for e in ended] == [
        ("j1", "failed", "node manager of hostA lost: connection closed (the node manager "
                         "died)")]
    assert "j2" in ex.job_nodes


def test_pids_and_memory_pushed_before_a_jobs_end_are_not_logged_after_it(executor, tmp_path):
    ex, (node_a, node_b) = executor((), ())
    assert _launch(ex, "j1", 0, 1) is None
    node_a.peer.send(Push([Termination("j1", "done", 0, "")]))
    node_b.peer.send(Push([PidInfo("j1", {1: 4242}, 0.1), NodeSample({"j1": {"rss_kib": 1}}, {})]))
    assert [e.job for e in ex.advance(0.0)] == ["j1"]
    assert ex.advance(0.0) == []
    assert ex.log is not None
    logged = [json.loads(line) for line in ex.log.path.read_text().splitlines()]
    assert [e["event"] for e in logged if e.get("job") == "j1"] == []    # the driver logs its end
    assert "j1" not in ex.found


def test_a_tree_width_below_1_is_refused(workload, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["run", str(workload("0 1 bsp --work 1\n")), "--tree-width", "0"])
    assert stopped.value.code == 2
    assert "--tree-width: must be at least 1, got 0" in capsys.readouterr().err
