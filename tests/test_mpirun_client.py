"""The compiled mpirun client (``native/mpirun.c``) against the Python one, the ``mpirun``
request the service reads for it, and the ``testbed`` shell command that picks between them."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_service import _SLEEP, Serving, _python, _ranks_of, _wait_for

from testbed.emulation import build
from testbed.service import native_client, protocol
from testbed.service.mpirun_args import parse_mpirun
from testbed.service.server import Client, Service

PYTHON_CLIENT = [sys.executable, "-m", "testbed"]


def _console_script(path: Path) -> Path:
    """A ``testbed-py`` like the one pip writes (its argv[0] is its own path)."""
    path.write_text(f"#!{sys.executable}\nimport sys\nfrom testbed.__main__ import main\n"
                    "sys.exit(main())\n")
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def native(tmp_path_factory) -> list[str]:
    """The compiled client and its fallback: the command line before ``mpirun``."""
    fallback = _console_script(tmp_path_factory.mktemp("bin") / "testbed-py")
    return [str(native_client.client_path()), str(fallback)]


@pytest.fixture
def service(tmp_path):
    serving = Serving(tmp_path)
    yield serving
    serving.stop()


def _run(command: list[str], *args: str | bytes, env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*command, *args], capture_output=True, env=env, timeout=120, **kw)


def _same_ids(text: bytes) -> bytes:
    """``text`` with job ids and process ids (hydra's banner for a killed rank) made alike."""
    return re.sub(rb"\bPID \d+", b"PID N", re.sub(rb"\bj\d+\b", b"jN", text))


# --- the service reads the command line ------------------------------------------------------


def test_the_service_refuses_a_bad_command_line_as_mpirun_would(tmp_path):
    service = Service(socket.socket(socket.AF_UNIX), tmp_path / "s.sock", tmp_path, None, 0.2)
    service.control = object()                   # a refusal comes before the control is used
    ours, theirs = socket.socketpair()
    with ours, theirs:
        client = Client(ours, uid=os.getuid())
        for argv in ((), ("-bogus",), ("-n", "0", "prog"), ("-n", "1", "a", ":", "b")):
            with pytest.raises(ValueError) as expected:
                parse_mpirun(argv, {}, "/")
            service._handle(client, protocol.Mpirun("mpiexec", argv, {}, "/"))
            assert protocol.recv(theirs) == protocol.usage(str(expected.value))
        service._handle(client, protocol.Mpirun("mpirun", ("prog",), {"TESTBED_LIMIT": "-1"},
                                                "/"))
        assert protocol.recv(theirs) == protocol.usage(
            "TESTBED_LIMIT: the limit must be a finite number of seconds > 0, got '-1'")
    service.server.close()


# --- the two clients alike -------------------------------------------------------------------

_SAY = (b"import sys\nfrom mpi4py import MPI\n"
        b"if MPI.COMM_WORLD.rank == 0:\n"
        b"    sys.stdout.buffer.write(bytes(range(256)) * 3 + bytes(range(7, 251)) * 3000)\n"
        b"    sys.stderr.buffer.write(b'\\xff\\xfeerr\\n')\n"
        b"sys.exit(7)\n")


@pytest.mark.realtime
def test_both_clients_give_the_same_bytes_exit_codes_and_messages(service, native, tmp_path):
    program = tmp_path / "say.py"
    program.write_bytes(_SAY)
    (tmp_path / "work").mkdir()
    env = dict(service.env, C="3", V=os.fsdecode(b"caf\xe9"), TESTBED_USER="ann")
    cases = [
        ("mpirun", "-np", "2", *_python(str(program))),
        ("mpiexec", "-n", "1", "sh", "-c", "kill -9 $$"),
        ("mpirun", "-n", "1", "/nonexistent/program"),
        ("mpiexec", "-hosts", "a,b", "-ppn", "2", "-n", "1", "true"),
        ("mpiexec", "-bogus"),
        ("mpirun",),
        ("mpirun", "-n", "5", "true"),
        ("mpirun", "--testbed-limit", "0.5", "sleep", "5"),
        ("mpirun", "-genv", "A", "1", "-x", "B=2", "-x", "UNSET_HERE", "-wdir", "work",
         "sh", "-c", "echo $A $B $C ${TESTBED_USER-none}; pwd"),
        ("mpirun", "-n", "1", "--", "sh", "-c", 'printf %s "$1$V"', "sh", b"\xff\xfe:"),
    ]
    compiled = []
    for case in cases:
        python = _run(PYTHON_CLIENT, *case, env=env, cwd=tmp_path)
        compiled.append(_run(native, *case, env=env, cwd=tmp_path))
        assert compiled[-1].returncode == python.returncode, (case, compiled[-1].stderr)
        assert _same_ids(compiled[-1].stdout) == _same_ids(python.stdout), case
        assert _same_ids(compiled[-1].stderr) == _same_ids(python.stderr), case
    assert compiled[0].stdout == bytes(range(256)) * 3 + bytes(range(7, 251)) * 3000
    assert compiled[0].stderr.endswith(b"\xff\xfeerr\n") and compiled[0].returncode == 7
    assert compiled[3].stderr.startswith(b"testbed mpiexec: testbed mpirun: ignored: -hosts")
    assert compiled[4].returncode == 2 and compiled[7].returncode == 1
    assert compiled[-2].stdout == f"1 2 3 none\n{tmp_path / 'work'}\n".encode()
    assert compiled[-1].stdout == b"\xff\xfe:caf\xe9"
    users = {ev["user"] for ev in service.events() if ev["event"] == "arrival"}
    assert users == {"ann"}


@pytest.mark.realtime
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_the_compiled_client_cancels_its_job(service, native, signum, code):
    client = subprocess.Popen([*native, "mpirun", "-n", "2", *_python("-c", _SLEEP)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=service.env)
    _wait_for(lambda: any(ev["event"] == "pids" for ev in service.events()))
    assert client.stdout.read(2) == b"up"
    client.send_signal(signum)
    _, err = client.communicate(timeout=60)
    assert client.returncode == code, err
    finish = next(ev for ev in service.events() if ev["event"] == "finish")
    assert (finish["status"], finish["reason"]) == ("killed", "killed: cancelled")


@pytest.mark.realtime
def test_a_compiled_client_that_dies_takes_its_job_with_it(service, native):
    client = subprocess.Popen([*native, "mpirun", "-n", "1", *_python("-c", _SLEEP)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=service.env)
    _wait_for(lambda: any(ev["event"] == "pids" for ev in service.events()))
    client.kill()
    client.wait()
    _wait_for(lambda: any(ev["event"] == "finish" for ev in service.events()))
    finish = next(ev for ev in service.events() if ev["event"] == "finish")
    assert finish["status"] == "killed"


@pytest.mark.realtime
def test_the_compiled_client_says_when_the_service_went_away(service, native):
    client = subprocess.Popen([*native, "mpirun", "-n", "2", *_python("-c", _SLEEP)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=service.env)
    _wait_for(lambda: any(ev["event"] == "pids" for ev in service.events()))
    service.process.kill()
    service.process.wait()
    _, err = client.communicate(timeout=60)
    assert client.returncode == 1
    assert err.decode().endswith(f"testbed mpirun: the testbed service at {service.socket} "
                                 "went away while job j1 ran\n")
    _wait_for(lambda: not _ranks_of(service.run_dir))


@pytest.mark.realtime
def test_200_jobs_from_20_concurrent_compiled_clients_all_complete(service, native):
    def worker(first: int) -> list[int]:
        return [_run(native, "mpirun", "-np", "1", "sh", "-c", f"exit {i % 4}",
                     env=service.env).returncode for i in range(first, first + 10)]

    with ThreadPoolExecutor(20) as pool:
        codes = [code for codes in pool.map(worker, range(0, 200, 10)) for code in codes]
    assert codes == [i % 4 for i in range(200)]
    finishes = [ev for ev in service.events() if ev["event"] == "finish"]
    assert len(finishes) == 200


# --- handing over to Python ------------------------------------------------------------------


def _recording_fallback(path: Path, record: Path) -> Path:
    """A fallback that notes its arguments in ``record``, then runs the Python client."""
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{record}'\n"
                    f"exec '{sys.executable}' -m testbed \"$@\"\n")
    path.chmod(0o755)
    return path


@pytest.mark.realtime
def test_the_compiled_client_hands_over_to_python_when_it_must(service, native, tmp_path):
    record = tmp_path / "handed"
    client = [native[0], str(_recording_fallback(tmp_path / "fallback", record))]
    nowhere = dict(service.env, TESTBED_SOCKET=str(tmp_path / "none.sock"))
    alone = _run(client, "mpirun", "-np", "1", "true", env=nowhere, cwd=tmp_path)
    assert alone.returncode == 0, alone.stderr
    assert b"no testbed service" in alone.stderr
    elsewhere = _run(client, "mpiexec", "--testbed-socket", str(service.socket), "-n", "1",
                     "sh", "-c", "exit 5", env=nowhere)
    assert elsewhere.returncode == 5, elsewhere.stderr
    served = _run(client, "mpirun", "-n", "1", "sh", "-c", "exit 6", env=service.env)
    assert served.returncode == 6
    stale = tmp_path / "stale-client"
    compiled = subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", str(stale),
                               f'-DTESTBED_SOURCE="{native_client.SOURCE}"',
                               "-DTESTBED_SOURCE_MTIME=1", str(native_client.SOURCE)],
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    old = _run([str(stale), client[1]], "mpirun", "-n", "1", "true", env=service.env)
    assert old.returncode == 0, old.stderr
    assert record.read_text().splitlines() == [
        "mpirun -np 1 true",
        f"mpiexec --testbed-socket {service.socket} -n 1 sh -c exit 5",
        "mpirun -n 1 true"]


@pytest.mark.realtime
def test_the_testbed_command_builds_the_client_on_first_use_then_runs_it(service, native,
                                                                        tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(build.NATIVE / "testbed", bin_dir / "testbed")
    _console_script(bin_dir / "testbed-py")
    command = [str(bin_dir / "testbed")]
    assert _run(command, "--version", env=service.env).stdout.startswith(b"testbed ")
    assert not (bin_dir / native_client.LINK).exists()
    first = _run(command, "mpirun", "-n", "1", "sh", "-c", "exit 3", env=service.env)
    assert first.returncode == 3, first.stderr
    assert os.readlink(bin_dir / native_client.LINK) == native[0]
    client = subprocess.Popen([*command, "mpiexec", "-n", "1", *_python("-c", _SLEEP)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=service.env)
    assert client.stdout.read(2) == b"up"
    assert os.readlink(f"/proc/{client.pid}/exe") == native[0]
    client.send_signal(signal.SIGINT)
    client.communicate(timeout=60)
    assert client.returncode == 130
    _wait_for(lambda: not _ranks_of(service.run_dir))
