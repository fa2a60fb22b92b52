"""The machine manager's side of node managers that run as processes of their own, one per host.

``start_nodes`` listens on a TCP port, starts the node managers as one control job through the
MPI launcher (hydra's ``mpiexec -ppn 1 -hosts ...``; inside Slurm, ``srun --ntasks-per-node=1``),
and waits for each to connect.  Connections are ``multiprocessing.connection``'s: every peer
must answer an HMAC challenge with the run's random key (passed to the NMs in their
environment) before anything is unpickled.  MPI itself is not used for these messages: a
blocked MPI call busy-polls a CPU that the ranks need, MPI gives no descriptor to wait on beside
the launchers and the shim's sockets, and one dead process aborts an MPI job, while a node
manager that dies here must only fail its own jobs.

A ``RemoteNode`` answers the calls the emulation executor makes of a local ``NodeManager``.  A
node that stops answering within ``ANSWER_TIMEOUT`` or whose connection ends is *lost*: it
answers nothing from then on and the executor fails the jobs that had ranks there.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

from testbed.emulation import procs
from testbed.emulation.link import Pushed
from testbed.emulation.messages import (
    Close,
    Hello,
    LaunchFailure,
    LaunchJob,
    MemorySample,
    NodeSetup,
    PidInfo,
    Push,
    Reply,
    Termination,
)
from testbed.emulation.nm_daemon import KEY_ENV
from testbed.machine import Machine, Node

ANSWER_TIMEOUT = 30.0
CONNECT_TIMEOUT = 60.0
AUTH_TIMEOUT = 5.0
TERM_GRACE = 3.0


class NodesError(RuntimeError):
    """The node managers could not be started or did not all connect."""


class RemoteNode(Pushed):
    """A node manager process, seen from the machine manager (a ``NodeLink``)."""

    def __init__(self, node: Node, name: str, conn: Connection, hello: Hello,
                 setting: str = "auto") -> None:
        super().__init__()
        self.node = node
        self.name = name
        self.conn = conn
        self.fd = conn.fileno()
        self.hostname = hello.hostname
        self.pid = hello.pid
        self.priority = hello.priority
        self.rank_priority = procs.rank_priority(setting, hello.priority).describe()
        self.lost: str | None = None
        self.pids: list[PidInfo] = []
        self.memory: dict[str, dict[str, int]] = {}

    def fileno(self) -> int:
        """The connection's descriptor (readable when the NM has pushed something)."""
        return self.fd

    def send(self, msg: object) -> None:
        """Send ``msg`` (nothing once the node is lost)."""
        self.send_pickled(pickle.dumps(msg))

    def post(self, msg: object, payload: bytes | None) -> None:
        """Send ``msg``, pickled once for every NM as ``payload``; ``reply`` answers it."""
        self.send_pickled(payload if payload is not None else pickle.dumps(msg))

    def send_pickled(self, payload: bytes) -> None:
        """Send a message pickled once for every NM (nothing once the node is lost)."""
        if self.lost is None:
            try:
                self.conn.send_bytes(payload)
            except OSError as err:
                self._lose(f"connection failed: {err.strerror or err}")

    def reply(self, deadline: float | None = None) -> list[object]:
        """Wait for the reply to the request sent last, keeping what is pushed meanwhile;
        the NM is lost if none came by ``deadline`` (``time.monotonic()`` s; by default
        ``ANSWER_TIMEOUT`` from now)."""
        if deadline is None:
            deadline = time.monotonic() + ANSWER_TIMEOUT
        while self.lost is None:
            if not self.conn.poll(max(0.0, deadline - time.monotonic())):
                self._lose(f"no answer for {ANSWER_TIMEOUT:g} s")
                break
            msg = self._recv()
            if isinstance(msg, Reply):
                return msg.items
        return []

    def handle(self, msg: object) -> list[object]:
        """Send ``msg`` and return the NM's replies."""
        self.send(msg)
        replies = self.reply()
        if (isinstance(msg, LaunchJob) and msg.pes[0] in self.node.pes and self.lost is None
                and not any(isinstance(r, LaunchFailure) for r in replies)):
            self.launched.add(msg.job)
        return replies

    def pump(self) -> None:
        """Take in everything the NM has pushed, without waiting."""
        while self.lost is None and self.conn.poll(0):
            self._recv()

    def _recv(self) -> object:
        try:
            msg = self.conn.recv()
        except (EOFError, OSError):
            self._lose("connection closed (the node manager died)")
            return None
        if isinstance(msg, Push):
            for item in msg.items:
                if isinstance(item, PidInfo):
                    self.pids.append(item)
                elif isinstance(item, MemorySample):
                    for job, values in item.memory.items():
                        self.memory[job] = values
                elif isinstance(item, Termination):
                    self.launched.discard(item.job)
                    self.ended[item.job] = item
                else:
                    self.changes.append(item)
        return msg

    def _lose(self, why: str) -> None:
        self.lost = f"node manager of {self.name} lost: {why}"
        self.launched.clear()

    def disconnect(self) -> None:
        """Close the connection (after the executor stopped watching it)."""
        self.conn.close()

    def discover(self) -> list[PidInfo]:
        """The pids the NM has reported since the last call."""
        found, self.pids = self.pids, []
        return found

    def sample(self) -> dict[str, dict[str, int]]:
        """The memory samples the NM has pushed since the last call."""
        memory, self.memory = self.memory, {}
        return memory

    def awaiting_pids(self) -> bool:
        """Always False: the NM looks for its ranks itself and pushes them."""
        return False

    def await_end(self, job: str, deadline: float) -> Termination | None:
        """Wait until ``deadline`` (monotonic s) for ``job``'s launcher here to end; its
        termination, or None (the node is lost, or it did not end in time)."""
        while job not in self.ended and self.lost is None and job in self.launched:
            if not self.conn.poll(max(0.0, deadline - time.monotonic())):
                break
            self._recv()
        return self.ended.pop(job, None)

    def close(self) -> None:
        """Tell the NM the run is over and wait for it to sweep."""
        if self.lost is None:
            self.send(Close())
            self.reply()
        self.conn.close()


def launcher_argv(mpiexec: str, machine: Machine, address: str) -> list[str]:
    """The control job: one node manager per host, by srun inside Slurm (``--overlap``: it
    holds none of the allocation's CPUs), else by hydra."""
    daemon = [sys.executable, "-m", "testbed.emulation.nm_daemon", "--connect", address]
    hosts = ",".join(h.name for h in machine.hosts)
    if machine.launcher == "slurm" and shutil.which("srun"):
        return ["srun", "--overlap", "--ntasks-per-node=1", f"--nodes={len(machine.hosts)}",
                f"--ntasks={len(machine.hosts)}", f"--nodelist={hosts}", "--kill-on-bad-exit=0",
                *daemon]
    launcher = ["-launcher", machine.launcher] if machine.launcher else []
    return [mpiexec, *launcher, "-disable-auto-cleanup", "-hosts", hosts, "-ppn", "1",
            "-n", str(len(machine.hosts)), *daemon]


def start_nodes(machine: Machine, mpiexec: str, env: dict[str, str], run_id: str,
                policies: list[Any], shim: Any, clock: Callable[[], float],
                rank_priority: str = "auto"
                ) -> tuple[list[RemoteNode], subprocess.Popen[bytes]]:
    """Start a node manager on every host of ``machine`` and set each up; returns them in
    node order and the control job.  Raises ``NodesError`` if they do not all connect."""
    key = secrets.token_bytes(32)
    bind = "127.0.0.1" if machine.emulated_hosts else ""
    server = socket.create_server((bind, 0))
    host = "127.0.0.1" if machine.emulated_hosts else machine.hostname
    control_env = {k: v for k, v in env.items() if k != "TESTBED_RUN"}
    control_env[KEY_ENV] = key.hex()
    control = subprocess.Popen(
        launcher_argv(mpiexec, machine, f"{host}:{server.getsockname()[1]}"), env=control_env,
        stdin=subprocess.DEVNULL, start_new_session=True)
    nodes: dict[int, RemoteNode] = {}
    try:
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while len(nodes) < len(machine.hosts):
            if control.poll() is not None:
                raise NodesError(f"the node managers' launcher exited ({control.returncode})")
            left = deadline - time.monotonic()
            if left <= 0:       # checked on every pass: peers failing to authenticate count
                missing = [h.name for i, h in enumerate(machine.hosts) if i not in nodes]
                raise NodesError(f"no node manager connected from {', '.join(missing)} "
                                 f"within {CONNECT_TIMEOUT:g} s")
            server.settimeout(min(1.0, max(0.01, left)))
            try:
                sock, _ = server.accept()
            except TimeoutError:
                continue
            hello, conn = _authenticate(sock, key)
            index = None if hello is None else node_of(hello, machine)
            if index is None or index in nodes:
                conn.close()
                continue
            nodes[index] = RemoteNode(machine.nodes[index], machine.hosts[index].name, conn,
                                      hello, rank_priority)
        for index, node in nodes.items():
            node.send(NodeSetup(index, machine, mpiexec, env, run_id, policies[index], shim,
                                clock(), time.monotonic() - clock(), rank_priority))
    except BaseException:
        for node in nodes.values():
            node.disconnect()
        stop_control(control, grace=0.0)
        raise
    finally:
        server.close()
    return [nodes[i] for i in range(len(machine.hosts))], control


def node_of(hello: Hello, machine: Machine) -> int | None:
    """Which of ``machine``'s nodes the NM that said ``hello`` runs on, None if none.

    srun numbers its tasks in Slurm's node order, not in the order of ``--nodelist``, so the
    name of a Slurm node decides where the machine's hosts are Slurm's; elsewhere the
    launcher's numbering does (hydra's follows ``-hosts``; emulated hosts share one name)."""
    names = [h.name for h in machine.hosts]
    if machine.launcher == "slurm" and hello.hostname in names:
        return names.index(hello.hostname)
    return hello.index if 0 <= hello.index < len(names) else None


def _authenticate(sock: socket.socket, key: bytes) -> tuple[Hello | None, Connection]:
    """Challenge a new peer with the run's key (both ways, as ``Listener`` does) and read its
    ``Hello``; a peer that fails, stalls for ``AUTH_TIMEOUT`` or says something else gets
    None."""
    sock.settimeout(None)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(AUTH_TIMEOUT))
    conn = Connection(sock.detach())
    try:
        deliver_challenge(conn, key)
        answer_challenge(conn, key)
        hello = conn.recv()
    except (AuthenticationError, EOFError, OSError, pickle.UnpicklingError):
        return None, conn
    with socket.socket(fileno=os.dup(conn.fileno())) as raw:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(0.0))
    return (hello if isinstance(hello, Hello) else None), conn


def _timeval(seconds: float) -> bytes:
    return struct.pack("ll", int(seconds), int(seconds % 1 * 1e6))


def stop_control(control: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Wait up to ``grace`` s for the control job to end once its NMs have closed; then
    SIGTERM its process group (hydra and srun pass it on to what they started on the other
    hosts) and SIGKILL the group if the launcher has not ended ``TERM_GRACE`` s later.  The
    launcher is reaped."""
    try:
        control.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(control.pid, signal.SIGTERM)
        try:
            control.wait(TERM_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(control.pid, signal.SIGKILL)
            control.wait()
