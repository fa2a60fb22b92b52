"""The machine manager's side of node managers that run as processes of their own, one per host.

``start_nodes`` listens on a TCP port, starts the node managers as one control job through the
MPI's launcher (``testbed.emulation.launchers``: hydra's ``mpiexec -ppn 1 -hosts ...``, PRRTE's
``--map-by ppr:1:node``; inside Slurm, ``srun --ntasks-per-node=1``),
waits for each to connect, and sets them up as a fan-out tree of the given width
(``testbed.emulation.tree``), whose links they make themselves.  Every connection, between the
MM and an NM or between two NMs, is ``multiprocessing.connection``'s: each peer must answer an
HMAC challenge with the run's random key (passed to the NMs in their environment) before
anything is unpickled (``testbed.emulation.auth``).  MPI itself is not used for these
messages: a blocked MPI call busy-polls a CPU that the ranks need, MPI gives no descriptor to
wait on beside the launchers and the shim's sockets, and one dead process aborts an MPI job,
while a node manager that dies here must only fail its own jobs.

A ``RemoteNode`` answers the calls the emulation executor makes of a local ``NodeManager``
(requests to that node alone go straight to it); a ``Fanout`` sends a broadcast down the tree
and gathers every node's answers.  A node is *lost* when its connection ends, when it does not
answer a request within ``ANSWER_TIMEOUT``, or when it answers a broadcast neither through the
tree within ``ANSWER_TIMEOUT`` nor when the MM sends it again straight to the node (*solo*)
within another ``ANSWER_TIMEOUT``.  A lost node answers nothing from then on, the executor
fails the jobs that had ranks there, and the MM sends to its live children itself: the rest of
its subtree goes on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from testbed.emulation import auth, procs, tree
from testbed.emulation.launchers import Launcher, Srun
from testbed.emulation.link import Pushed
from testbed.emulation.messages import (
    Close,
    Gathered,
    Hello,
    LaunchFailure,
    LaunchJob,
    NodeSample,
    NodeSetup,
    Orphaned,
    PidInfo,
    Push,
    Reply,
    Termination,
)
from testbed.emulation.nm_daemon import KEY_ENV
from testbed.machine import Machine, Node

ANSWER_TIMEOUT = 30.0
CONNECT_TIMEOUT = 60.0
TERM_GRACE = 3.0


class NodesError(RuntimeError):
    """The node managers could not be started or did not all connect."""


class RemoteNode(Pushed):
    """A node manager process, seen from the machine manager (a ``NodeLink``); ``fanout`` is
    the tree it is part of, told when the node is lost or orphaned and when it pushes."""

    def __init__(self, node: Node, name: str, conn: Connection, hello: Hello, fanout: Fanout,
                 setting: str = "auto") -> None:
        super().__init__()
        self.node = node
        self.name = name
        self.conn = conn
        self.fd = conn.fileno()
        self.fanout = fanout
        self.hostname = hello.hostname
        self.pid = hello.pid
        self.port = hello.port
        self.priority = hello.priority
        self.rank_priority = procs.rank_priority(setting, hello.priority).describe()
        self.lost: str | None = None
        self.pids: list[PidInfo] = []
        self.sampled: NodeSample | None = None

    def fileno(self) -> int:
        """The connection's descriptor (readable when the NM has sent something)."""
        return self.fd

    def send(self, msg: object) -> None:
        """Send ``msg`` to this node alone (nothing once the node is lost)."""
        self.send_frame(tree.frame(0, False, 0.0, pickle.dumps(msg)))

    def send_frame(self, data: bytes) -> None:
        """Send a frame (``tree.frame``; nothing once the node is lost)."""
        if self.lost is None:
            try:
                self.conn.send_bytes(data)
            except OSError as err:
                self.lose(f"connection failed: {err.strerror or err}")

    def reply(self, deadline: float | None = None) -> list[object]:
        """Wait for the reply to the request sent last, keeping what is pushed meanwhile;
        the NM is lost if none came by ``deadline`` (``time.monotonic()`` s; by default
        ``ANSWER_TIMEOUT`` from now)."""
        start = time.monotonic()
        if deadline is None:
            deadline = start + ANSWER_TIMEOUT
        while self.lost is None:
            if not self.conn.poll(max(0.0, deadline - time.monotonic())):
                self.lose(f"no answer for {deadline - start:.3g} s")
                break
            msg = self.receive()
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
            self.receive()

    def receive(self) -> object:
        """Read one message: what is pushed is kept (the fanout is told), a reply or a
        ``Gathered`` is returned; None if the connection ended (the node is lost)."""
        try:
            msg = self.conn.recv()
        except (EOFError, OSError):
            self.lose("connection closed (the node manager died)")
            return None
        if isinstance(msg, Push):
            self.fanout.noticed.add(self.node.index)
            for item in msg.items:
                if isinstance(item, PidInfo):
                    self.pids.append(item)
                elif isinstance(item, NodeSample):
                    self.sampled = item if self.sampled is None else NodeSample(
                        {**self.sampled.memory, **item.memory},
                        {**self.sampled.activity, **item.activity})
                elif isinstance(item, Termination):
                    self.launched.discard(item.job)
                    self.ended[item.job] = item
                elif isinstance(item, Orphaned):
                    self.fanout.routes.adopt(self.node.index)
                else:
                    self.changes.append(item)
        return msg

    def lose(self, why: str) -> None:
        """The node is lost, for ``why``: it is sent nothing more and its children become
        the MM's."""
        if self.lost is None:
            self.lost = f"node manager of {self.name} lost: {why}"
            self.launched.clear()
            self.fanout.routes.lose(self.node.index)
            self.fanout.noticed.add(self.node.index)

    def disconnect(self) -> None:
        """Close the connection (after the executor stopped watching it)."""
        self.conn.close()

    def discover(self) -> list[PidInfo]:
        """The pids the NM has reported since the last call."""
        found, self.pids = self.pids, []
        return found

    def sample(self) -> NodeSample | None:
        """What the NM has sampled and pushed since the last call (each job's latest), or
        None."""
        sample, self.sampled = self.sampled, None
        return sample

    def awaiting_pids(self) -> bool:
        """Always False: the NM looks for its ranks itself and pushes them."""
        return False

    def await_end(self, job: str, deadline: float) -> Termination | None:
        """Wait until ``deadline`` (monotonic s) for ``job``'s launcher here to end; its
        termination, or None (the node is lost, or it did not end in time)."""
        while job not in self.ended and self.lost is None and job in self.launched:
            if not self.conn.poll(max(0.0, deadline - time.monotonic())):
                break
            self.receive()
        return self.ended.pop(job, None)

    def close(self) -> None:
        """Tell the NM the run is over and wait for it to sweep."""
        if self.lost is None:
            self.send(Close())
            self.reply()
        self.conn.close()


@dataclass(frozen=True)
class Timing:
    """One broadcast as the MM saw it: the nodes it sent to itself, the messages it read
    meanwhile (answers, and pushes that came then), its send loop's wall time per node sent
    to, its CPU time for the whole broadcast (pickling, sending, gathering), the wall time
    until every answer was in, and (from the answers) the slowest hop and the largest
    forwarding cost per child of an NM (None: no NM forwarded).  Seconds."""

    direct: int
    read: int
    send_s: float
    cpu_s: float
    gather_s: float
    hop_s: float | None
    forward_s: float | None


class Fanout:
    """The MM's end of the tree ``shape`` (``tree.parents``): sends a broadcast
    to the nodes ``routes`` names and gathers every live node's answers, routing around lost
    nodes.  ``clock()`` is the run's clock (s), which frames are stamped with; ``noticed`` the
    nodes that pushed something or were lost since ``take_noticed``."""

    def __init__(self, shape: tuple[int | None, ...], clock: Callable[[], float]) -> None:
        self.shape = shape
        self.clock = clock
        self.routes = tree.Routes(shape)
        self.nodes: list[RemoteNode] = []
        self.noticed: set[int] = set()
        self.selector = selectors.DefaultSelector()
        self.watched: set[int] = set()
        self.everyone = (1 << len(shape)) - 1
        self.seq = 0
        self.timing: Timing | None = None

    def attach(self, nodes: list[RemoteNode]) -> None:
        """The tree's nodes, in node order; their connections are watched while gathering."""
        self.nodes = nodes
        for node in nodes:
            self.selector.register(node, selectors.EVENT_READ, node)
            self.watched.add(node.node.index)

    def live(self) -> int:
        """How many nodes are not lost."""
        return len(self.nodes) - len(self.routes.lost)

    def broadcast(self, msg: object) -> list[object]:
        """Send ``msg`` to every live node through the tree and return their replies (one
        merged ``SwitchDone`` for a heartbeat, then the others in node order); ``timing`` says
        how it went.  A node lost meanwhile is routed around: its children get ``msg`` from
        the MM; nodes that have not answered by ``ANSWER_TIMEOUT`` get it again, solo, and are
        lost if they do not answer that by another ``ANSWER_TIMEOUT``."""
        cpu, began = time.thread_time(), time.perf_counter()
        self.seq += 1
        payload, lost = pickle.dumps(msg), self.routes.lost_mask
        version, sent, start = self.routes.version, set(self.routes.direct), time.perf_counter()
        for index in self.routes.direct:        # first, before anything else is done
            self.nodes[index].send_frame(tree.frame(self.seq, False, self.clock(), payload, lost))
        first = len(sent), (time.perf_counter() - start) / max(1, len(sent))
        for index in self.routes.lost & self.watched:
            self.forget(self.nodes[index])
        got = tree.Collected()
        solo = False
        read = 0
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while (got.covered | self.routes.lost_mask) != self.everyone:
            if version != self.routes.version:
                version = self.routes.version
                for index in self.routes.direct:
                    if index not in sent and not got.covered >> index & 1:
                        sent.add(index)
                        self.nodes[index].send_frame(tree.frame(self.seq, False, self.clock(),
                                                                payload, lost))
                continue
            for key, _ in self.selector.select(max(0.0, deadline - time.monotonic())):
                node = key.data
                answer = node.receive()
                read += 1
                if isinstance(answer, Gathered) and answer.seq == self.seq:
                    got.add(answer)
                if node.lost is not None:
                    self.forget(node)
            if time.monotonic() >= deadline:
                missing = [i for i in range(len(self.nodes))
                           if not (got.covered | self.routes.lost_mask) >> i & 1]
                for index in missing:
                    if solo:
                        self.nodes[index].lose(f"no answer for {ANSWER_TIMEOUT:g} s, nor to "
                                               f"the broadcast sent again to it alone")
                    else:
                        self.nodes[index].send_frame(tree.frame(self.seq, True, self.clock(),
                                                                payload, lost))
                solo, deadline = True, time.monotonic() + ANSWER_TIMEOUT
        direct, send_s = first
        self.timing = Timing(direct, read, send_s, time.thread_time() - cpu,
                             time.perf_counter() - began, got.hop, got.send)
        return got.replies()

    def forget(self, node: RemoteNode) -> None:
        """Stop watching a lost node's connection (before it is closed)."""
        if node.node.index in self.watched:
            self.watched.discard(node.node.index)
            self.selector.unregister(node)

    def take_noticed(self) -> list[int]:
        """The nodes that pushed something or were lost since the last call, in order."""
        noticed, self.noticed = sorted(self.noticed), set()
        return noticed

    def close(self) -> None:
        """Stop watching the nodes (the run is over)."""
        self.selector.close()


def launcher_argv(launcher: Launcher, machine: Machine, address: str) -> list[str]:
    """The control job: one node manager per host, by srun inside Slurm (``--overlap``: it
    holds none of the allocation's CPUs), else by the MPI's launcher."""
    daemon = [sys.executable, "-m", "testbed.emulation.nm_daemon", "--connect", address]
    hosts = [h.name for h in machine.hosts]
    if machine.launcher == "slurm" and shutil.which("srun"):
        return Srun("srun").control(daemon, hosts)
    return launcher.control(daemon, hosts)


def _check_stand_in(launcher: Launcher, env: dict[str, str]) -> None:
    """Run a command on an emulated host through the launcher's stand-in for ssh, as the
    launcher will; ``NodesError`` saying why when it cannot (no UTS namespace allowed)."""
    try:
        done = subprocess.run([launcher.ssh_stand_in, "testbed-probe", "true"], env=env,
                              capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as err:
        raise NodesError(f"emulated hosts with launcher {launcher.kind}: cannot run "
                         f"{launcher.ssh_stand_in}: {err}") from None
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "nothing"
        raise NodesError(f"emulated hosts with launcher {launcher.kind} need a host name "
                         f"each (a UTS namespace, through unshare), which this machine "
                         f"refused: {said}")


def start_nodes(machine: Machine, launcher: Launcher, env: dict[str, str], run_id: str,
                policies: list[Any], shim: Any, clock: Callable[[], float],
                rank_priority: str = "auto", width: int = tree.DEFAULT_WIDTH
                ) -> tuple[Fanout, subprocess.Popen[bytes]]:
    """Start a node manager on every host of ``machine``, set each up and have them link up
    in a tree of ``width``; returns the tree (its nodes in node order) and the control job.
    Raises ``NodesError`` if they do not all connect and link up, or, before anything starts,
    if the launcher needs what this machine does not allow to emulate hosts."""
    extra = launcher.emulation_env() if machine.emulated_hosts else {}
    if extra:
        _check_stand_in(launcher, {**env, **extra})
    key = secrets.token_bytes(32)
    bind = "127.0.0.1" if machine.emulated_hosts else ""
    server = socket.create_server((bind, 0))
    host = "127.0.0.1" if machine.emulated_hosts else machine.hostname
    control_env = {k: v for k, v in env.items() if k != "TESTBED_RUN"}
    control_env.update(extra)
    control_env[KEY_ENV] = key.hex()
    control = subprocess.Popen(
        launcher_argv(launcher, machine, f"{host}:{server.getsockname()[1]}"), env=control_env,
        stdin=subprocess.DEVNULL, start_new_session=True)
    fanout = Fanout(tree.parents(len(machine.hosts), width), clock)
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
            hello, conn = auth.accept(sock, key)
            index = node_of(hello, machine) if isinstance(hello, Hello) else None
            if index is None or index in nodes:
                conn.close()
                continue
            assert isinstance(hello, Hello)
            nodes[index] = RemoteNode(machine.nodes[index], machine.hosts[index].name, conn,
                                      hello, fanout, rank_priority)
        _link_up(fanout, nodes, NodeSetup(0, machine, launcher, env, run_id, None, shim, 0.0,
                                           time.monotonic() - clock(), rank_priority),
                 policies, clock)
    except BaseException:
        for node in nodes.values():
            node.disconnect()
        stop_control(control, grace=0.0)
        raise
    finally:
        server.close()
    fanout.attach([nodes[i] for i in range(len(machine.hosts))])
    return fanout, control


def _link_up(fanout: Fanout, nodes: dict[int, RemoteNode], common: NodeSetup,
             policies: list[Any], clock: Callable[[], float]) -> None:
    """Send every NM its set-up (``common`` with its index, policy, the MM's clock, and its
    place in the tree: each child's address is the one its NM reached the MM from) and wait
    until each says its tree links are made."""
    kids = tree.children(fanout.shape)
    addresses = {index: auth.peer_address(node.conn) for index, node in nodes.items()}
    for index, node in nodes.items():
        node.send(dataclasses.replace(
            common, index=index, policy=policies[index], now=clock(),
            parent=fanout.shape[index],
            children=tuple((k, addresses[k], nodes[k].port) for k in kids[index])))
    deadline = time.monotonic() + CONNECT_TIMEOUT
    for node in nodes.values():
        node.reply(deadline)
        if node.lost is not None:
            raise NodesError(f"the node managers did not link up in a tree: {node.lost}")


def node_of(hello: Hello, machine: Machine) -> int | None:
    """Which of ``machine``'s nodes the NM that said ``hello`` runs on, None if none.

    srun numbers its tasks in Slurm's node order, not in the order of ``--nodelist``, so the
    name of a Slurm node decides where the machine's hosts are Slurm's; elsewhere the
    launcher's numbering does (hydra's follows ``-hosts``; emulated hosts share one name)."""
    names = [h.name for h in machine.hosts]
    if machine.launcher == "slurm" and hello.hostname in names:
        return names.index(hello.hostname)
    return hello.index if 0 <= hello.index < len(names) else None


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
