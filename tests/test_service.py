"""``testbed serve`` with real clients: mpirun/mpiexec, submit, queue, cancel, suspend, stop."""

from __future__ import annotations

import os
import pwd
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from testbed.events import read_events
from testbed.service import protocol
from testbed.service.client import request as client_request

TESTBED = [sys.executable, "-m", "testbed"]


class Serving:
    """A running service: its socket, run directory and process."""

    def __init__(self, tmp_path: Path, *options: str) -> None:
        self.socket = tmp_path / "sock" / "s.sock"
        self.run_dir = tmp_path / "service"
        self.env = dict(os.environ, TESTBED_SOCKET=str(self.socket))
        self.process = subprocess.Popen([*TESTBED, "serve", "--pes", "2", "--out",
                                         str(self.run_dir), *options],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=self.env)
        deadline = time.monotonic() + 30
        while not self.socket.exists() or not (self.run_dir / "events.jsonl").exists():
            assert self.process.poll() is None, self.process.communicate()
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.05)

    def testbed(self, *args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([*TESTBED, *args], capture_output=True, env=self.env,
                              timeout=timeout, **kw)

    def client(self, *args: str, **kw) -> subprocess.Popen:
        return subprocess.Popen([*TESTBED, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env, **kw)

    def events(self) -> list[dict]:
        return read_events(self.run_dir / "events.jsonl")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.testbed("stop", timeout=30)
            self.process.wait(timeout=30)


@pytest.fixture
def service(tmp_path) -> Iterator[Serving]:
    serving = Serving(tmp_path)
    yield serving
    serving.stop()


def _python(*args: str) -> list[str]:
    return [sys.executable, *args]


@pytest.mark.realtime
def test_output_and_exit_code_come_back_byte_for_byte(service, tmp_path):
    program = tmp_path / "say.py"
    program.write_bytes(b"import sys\nfrom mpi4py import MPI\n"
                        b"if MPI.COMM_WORLD.rank == 0:\n"
                        b"    sys.stdout.buffer.write(bytes(range(256)) * 3)\n"
                        b"    sys.stderr.buffer.write(b'\\xff\\xfeerr\\n')\n"
                        b"sys.exit(7)\n")
    for form in (["mpirun", "-np", "2"], ["mpiexec", "-n", "2"]):
        done = service.testbed(*form, *_python(str(program)))
        assert done.returncode == 7, done.stderr
        assert done.stdout == bytes(range(256)) * 3
        assert done.stderr.endswith(b"\xff\xfeerr\n")
    finishes = [ev for ev in service.events() if ev["event"] == "finish"]
    assert [ev["exit_code"] for ev in finishes] == [7, 7]
    assert (service.run_dir / "jobs" / "j1.out").read_bytes() == bytes(range(256)) * 3


@pytest.mark.realtime
def test_two_clients_are_gang_scheduled_against_each_other(service):
    clients = [service.client("mpirun", "-np", "2", *_python("-c", _BUSY)) for _ in range(2)]
    for client in clients:
        out, err = client.communicate(timeout=120)
        assert client.returncode == 0, err
        assert out.count(b"rounds") == 2
    switches = [ev for ev in service.events() if ev["event"] == "switch"]
    slots = [ev["slot"] for ev in switches]
    assert {0, 1} <= set(slots)
    assert sum(a != b for a, b in zip(slots, slots[1:], strict=False)) >= 3   # rows alternate


_BUSY = ("import time\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\nend = time.process_time() + 1\n"
         "n = 0\nwhile c.allreduce(time.process_time() < end, op=MPI.LAND):\n    n += 1\n"
         "print(f'{c.rank}: {n} rounds', flush=True)\n")


@pytest.mark.realtime
def test_ctrl_c_on_the_client_cancels_its_job(service):
    client = service.client("mpirun", "-n", "2", *_python("-c", _SLEEP))
    _wait_for(lambda: any(ev["event"] == "start" for ev in service.events()))
    time.sleep(0.5)
    client.send_signal(signal.SIGINT)
    client.communicate(timeout=60)
    assert client.returncode == 130
    finish = next(ev for ev in service.events() if ev["event"] == "finish")
    assert (finish["status"], finish["reason"]) == ("killed", "killed: cancelled")


_SLEEP = "import time\nfrom mpi4py import MPI\nprint('up', flush=True)\ntime.sleep(60)\n"


@pytest.mark.realtime
def test_a_client_that_dies_takes_its_job_with_it(service):
    client = service.client("mpirun", "-n", "1", *_python("-c", _SLEEP))
    _wait_for(lambda: any(ev["event"] == "pids" for ev in service.events()))
    client.kill()
    client.wait()
    _wait_for(lambda: any(ev["event"] == "finish" for ev in service.events()))
    assert service.testbed("queue").stdout.decode().count("\n") == 1   # the header alone


@pytest.mark.realtime
def test_submit_queue_suspend_resume_and_cancel(service, tmp_path):
    workload = tmp_path / "w.txt"
    workload.write_text("0 1 bsp --work 30\n0 1 bsp --work 30\n")
    done = service.testbed("submit", str(workload))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split()[0] == "j1"
    _wait_for(lambda: sum(ev["event"] == "start" for ev in service.events()) == 2)
    assert service.testbed("suspend", "j1").returncode == 0
    _wait_for(lambda: "held" in service.testbed("queue").stdout.decode())
    assert any(ev["event"] == "suspend" and ev["job"] == "j1" for ev in service.events())
    assert service.testbed("resume", "j1").returncode == 0
    _wait_for(lambda: any(ev["event"] == "resume" and ev["job"] == "j1"
                          for ev in service.events()))
    for job in ("j1", "j2"):
        assert service.testbed("cancel", job).returncode == 0
    _wait_for(lambda: sum(ev["event"] == "finish" for ev in service.events()) == 2)
    refused = service.testbed("cancel", "j9")
    assert refused.returncode == 2 and b"no job j9" in refused.stderr


@pytest.mark.realtime
def test_a_malformed_request_gets_an_error_and_the_service_goes_on(service):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(service.socket))
        conn.sendall(b"\x00\x00\x00\x05nope!")
        reply = protocol.recv(conn)
    assert reply is not None and reply["type"] == "error"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(service.socket))
        conn.sendall(b"\xff\xff\xff\xff")
        assert protocol.recv(conn)["type"] == "error"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(service.socket))
        protocol.send(conn, {"type": "submit", "argv": [], "ranks": 0})
        assert protocol.recv(conn)["type"] == "error"
    assert service.testbed("mpirun", "-n", "1", "true").returncode == 0


@pytest.mark.realtime
def test_a_submitted_workload_naming_a_missing_program_is_refused_whole(service, tmp_path):
    workload = tmp_path / "w.txt"
    workload.write_text("0 1 true\n0 1 ./no-such-prog\n")
    done = service.testbed("submit", str(workload))
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"testbed: {workload.resolve()}:2: field 'command': no such program './no-such-prog' "
        f"(relative to {os.getcwd()})\n")            # the service's directory, where it launches
    assert not any(ev["event"] in ("workload", "arrival") for ev in service.events()[2:])
    assert service.testbed("mpirun", "-n", "1", "true").returncode == 0


@pytest.mark.realtime
def test_a_second_service_on_the_socket_is_refused(service, tmp_path):
    done = subprocess.run([*TESTBED, "serve", "--pes", "2", "--socket", str(service.socket),
                           "--out", str(tmp_path / "second")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "already running" in done.stderr
    assert not (tmp_path / "second").exists()


@pytest.mark.realtime
def test_the_socket_is_private(service):
    assert (service.socket.parent.stat().st_mode & 0o777) == 0o700
    assert (service.socket.stat().st_mode & 0o777) == 0o600


@pytest.mark.realtime
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_cancel(service):
    client = service.client("mpirun", "-n", "1", *_python("-c", _SLEEP))
    _wait_for(lambda: any(ev["event"] == "start" for ev in service.events()))
    assert _as_nobody(lambda: client_request(service.socket, protocol.Cancel("j1"))) == \
        "PermissionError"                        # the socket's directory is its user's alone
    assert not any(ev["event"] == "finish" for ev in service.events())
    assert service.testbed("cancel", "j1").returncode == 0
    client.communicate(timeout=60)


def _as_nobody(action) -> str:
    """Run ``action`` in a child process as user nobody; the name of what it raised (or its
    reply's type)."""
    nobody = pwd.getpwnam("nobody")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            result = action()["type"]
        except BaseException as exc:  # noqa: BLE001 (reported to the parent)
            result = type(exc).__name__
        os.write(write, result.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        result = f.read()
    os.waitpid(pid, 0)
    return result


@pytest.mark.realtime
def test_killing_the_service_fails_its_clients_and_leaves_no_rank(service):
    client = service.client("mpirun", "-n", "2", *_python("-c", _SLEEP))
    _wait_for(lambda: any(ev["event"] == "pids" for ev in service.events()))
    service.process.kill()
    service.process.wait()
    _, err = client.communicate(timeout=60)
    assert client.returncode == 1
    assert b"went away" in err
    _wait_for(lambda: not _ranks_of(service.run_dir))


def _ranks_of(run_dir: Path) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"time.sleep(60)" in cmdline:
                found.append(int(pid))
    return found


@pytest.mark.realtime
def test_mpirun_without_a_service_runs_alone_and_says_so(tmp_path):
    env = dict(os.environ, TESTBED_SOCKET=str(tmp_path / "none.sock"))
    done = subprocess.run([*TESTBED, "mpirun", "-np", "1", "true"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "no testbed service" in done.stderr


@pytest.mark.realtime
def test_200_jobs_from_20_concurrent_clients_all_complete(service):
    def worker(first: int) -> list[int]:
        return [service.testbed("mpirun", "-np", "1", "sh", "-c", f"exit {i % 4}",
                                timeout=240).returncode for i in range(first, first + 10)]

    began = time.monotonic()
    with ThreadPoolExecutor(20) as pool:
        codes = [code for codes in pool.map(worker, range(0, 200, 10)) for code in codes]
    assert codes == [i % 4 for i in range(200)]
    assert time.monotonic() - began < 300
    finishes = [ev for ev in service.events() if ev["event"] == "finish"]
    assert len(finishes) == 200 and all(ev["status"] in ("done", "failed") for ev in finishes)


def _wait_for(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_only_the_submitter_or_root_may_change_a_job(tmp_path):
    from testbed.service.server import Client, Service
    service = Service(socket.socket(socket.AF_UNIX), tmp_path / "s.sock", tmp_path, None, 0.2)
    service.control = object()                   # the refusal comes before the control is used
    service.submitter["j1"] = 0
    ours, theirs = socket.socketpair()
    with ours, theirs:
        stranger = Client(ours, uid=1000)
        for request in (protocol.Cancel("j1"), protocol.Suspend("j1"), protocol.Resume("j1")):
            service._handle(stranger, request)
            reply = protocol.recv(theirs)
            assert reply["type"] == "error" and "may not change it" in reply["message"]
        service._handle(stranger, protocol.Shutdown())
        assert "only the service's user" in protocol.recv(theirs)["message"]
    service.server.close()


@pytest.mark.realtime
def test_gangster_class_changes_under_t3d(tmp_path):
    from conftest import fast_classes

    from testbed.results.top import render
    service = Serving(tmp_path, "--scheduler", "t3d", "--classes", str(fast_classes(tmp_path)))
    try:
        workload = tmp_path / "w.txt"
        workload.write_text("0 2 bsp --work 20\n0 1 class=standby bsp --work 20\n")
        assert service.testbed("submit", str(workload)).returncode == 0
        _wait_for(lambda: any(ev["event"] == "start" for ev in service.events()))
        refused = service.testbed("class", "j2", "nosuch")
        assert refused.returncode == 2 and b"unknown job class 'nosuch'" in refused.stderr
        assert service.testbed("class", "j2", "interactive").returncode == 0
        _wait_for(lambda: any(ev["event"] == "states" and ev["changed"].get("j2") == "R"
                              for ev in service.events()))
        events = service.events()
        assert any(ev["event"] == "job_class" and ev["new"] == "interactive" for ev in events)
        assert "interactive" in service.testbed("queue").stdout.decode()
        frame = render(events)
        rows = {line.split()[1]: line.split() for line in frame.splitlines()
                if line.split()[1:2] in (["j1"], ["j2"])}
        assert rows["j2"][0] == "interactive" and rows["j2"][3] == "R"   # CLAS JOB #PE ST
        assert rows["j1"][3] == "O"                                     # preempted
        for job in ("j1", "j2"):
            assert service.testbed("cancel", job).returncode == 0
    finally:
        service.stop()


@pytest.mark.realtime
def test_an_operator_migrates_a_job_and_the_balancer_leaves_it(tmp_path):
    service = Serving(tmp_path, "--balance", "0.3", "--migration-delay", "60")
    try:
        workload = tmp_path / "w.txt"
        workload.write_text("0 1 bsp --work 20\n0 1 bsp --work 20\n")
        assert service.testbed("submit", str(workload)).returncode == 0
        _wait_for(lambda: sum(ev["event"] == "pids" for ev in service.events()) == 2)
        refused = service.testbed("migrate", "j2", "0", "1")
        assert refused.returncode == 2 and b"give as many distinct PEs" in refused.stderr
        assert service.testbed("migrate", "j2", "0").returncode == 0   # onto j1's PE, row 1
        time.sleep(1.5)                                                 # several balance passes
        moves = [ev for ev in service.events() if ev["event"] == "migrate"]
        assert [(m["job"], m["pes"], m["error"]) for m in moves] == [("j2", [0], None)]
        for job in ("j1", "j2"):
            assert service.testbed("cancel", job).returncode == 0
    finally:
        service.stop()
