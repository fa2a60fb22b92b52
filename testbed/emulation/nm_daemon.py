"""A node manager as a process of its own: one per host, started as a control job by the MPI
launcher (``testbed.emulation.launchers``; ``srun --ntasks-per-node=1`` inside Slurm).

It connects to the machine manager (``--connect HOST:PORT``) with the run's key (from
``TESTBED_NM_KEY``, which it removes from its environment), says which node it is (``--index``,
else its rank as the launcher numbers it) and on which port its parent in the
fan-out tree is to reach it, receives its ``NodeSetup``, links up with its parent and children
(``testbed.emulation.relay``), tells the MM it is ready and then serves: a request to this
node alone is handled by a ``NodeManager`` and answered with one ``Reply``; a broadcast is
forwarded down the tree, handled, and answered up it; what it notices by itself (its ranks'
pids, samples of memory and of the ranks, a launcher's exit, shim events) is pushed straight
to the MM.

If the machine manager goes away (the connection ends without ``Close``) it kills every rank
of the run it manages and exits 1.  On real hosts it also starts the run's watchdog on its host,
which sweeps the run's processes there if this process is killed.

Usage: ``python -m testbed.emulation.nm_daemon --connect HOST:PORT [--index N]``
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import selectors
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Client, Connection

from testbed.emulation import auth, launchers, procs, tree
from testbed.emulation.messages import (
    Close,
    Hello,
    LaunchJob,
    NodeSetup,
    Push,
    Release,
    Reply,
    Shutdown,
)
from testbed.emulation.node_manager import NodeManager
from testbed.emulation.relay import ManagerLost, Relay, TreeLink, link_up, to_manager

KEY_ENV = "TESTBED_NM_KEY"
# Finding ranks means listing the host's processes; at real-time priority, polling faster
# than this starves the launchers the NMs wait for (several NMs on few CPUs most of all).
DISCOVERY_POLL = 0.01
IDLE_POLL = 0.5
GRACE = 5.0


def node_index(explicit: int | None, env: dict[str, str]) -> int:
    """This NM's node: ``--index``, else its rank in the control job, as its launcher set it
    (hydra's, PRRTE's or Slurm's)."""
    if explicit is not None:
        return explicit
    index = launchers.control_index(env)
    if index is None:
        raise SystemExit("nm_daemon: no --index and no launcher's rank (PMI_RANK, "
                         "OMPI_COMM_WORLD_RANK, PMIX_RANK or SLURM_PROCID) is set")
    return index


def build(setup: NodeSetup, index: int) -> NodeManager:
    """The node manager for node ``index`` of ``setup``'s machine; on real hosts its PEs take
    this host's CPUs in order."""
    machine = setup.machine
    node = machine.nodes[index]
    if not machine.emulated_hosts:
        mine = sorted(os.sched_getaffinity(0))
        cpus = list(machine.cpus)
        for local, pe in enumerate(node.pes):
            cpus[pe] = mine[local % len(mine)]
        machine = dataclasses.replace(machine, cpus=tuple(cpus))
    # one machine shares CLOCK_MONOTONIC; across hosts the MM's clock is taken as it was
    # when the set-up was sent (late by the one-way latency)
    t0 = setup.t0 if machine.emulated_hosts else time.monotonic() - setup.now
    return NodeManager(node, machine, setup.launcher, setup.env, setup.run_id,
                       lambda: time.monotonic() - t0, setup.policy, setup.shim, scan=True)


def serve(conn: Connection, nm: NodeManager, parent: Connection | None = None,
          children: dict[int, Connection] | None = None) -> int:
    """Answer requests, pass broadcasts on and push what happens until ``Close`` (0) or the MM
    is lost (1)."""
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_READ, "mm")
    if nm.events is not None:
        selector.register(nm.events, selectors.EVENT_READ, "shim")
    relay = Relay(nm.node.index, conn, parent, children or {}, selector, nm.clock)

    def act(msg: object) -> list[object]:
        replies = nm.handle(msg)    # type: ignore[arg-type]
        if isinstance(msg, LaunchJob):
            fd = nm.launcher_fd(msg.job)
            if fd is not None:
                selector.register(fd, selectors.EVENT_READ, msg.job)
        elif isinstance(msg, Release):
            _forget_released(selector, nm)
        return replies

    try:
        while True:
            pushes: list[object] = list(nm.discover())
            sample = nm.sample()
            if sample is not None:
                pushes.append(sample)
            for key, _ in selector.select(DISCOVERY_POLL if nm.awaiting_pids() else IDLE_POLL):
                if key.data == "mm":
                    try:
                        data = conn.recv_bytes()
                    except (EOFError, OSError):
                        raise ManagerLost from None
                    if tree.header(data)[0]:
                        relay.take(data, conn, act)
                        continue
                    msg = pickle.loads(tree.body(data)[1])
                    if isinstance(msg, Close):
                        _sweep(nm, "run over")
                        to_manager(conn, Reply([]))
                        return 0
                    to_manager(conn, Reply(act(msg)))
                elif isinstance(key.data, TreeLink):
                    relay.ready(key.data, act)
                elif key.data == "shim":
                    pushes += nm.shim_events()
                elif nm.launcher_fd(key.data) == key.fd:    # not released earlier in this batch
                    selector.unregister(key.fd)
                    pushes.append(nm.reap(key.data))
            if pushes:
                to_manager(conn, Push(pushes))
    except ManagerLost:
        _sweep(nm, "machine manager lost")
        return 1
    finally:
        relay.close()


def _forget_released(selector: selectors.BaseSelector, nm: NodeManager) -> None:
    """Stop watching the launchers of jobs released before their end was seen here (the MM
    gave up waiting; ``NodeManager`` reaped them on release)."""
    for key in list(selector.get_map().values()):
        if (isinstance(key.data, str) and key.data not in ("mm", "shim")
                and nm.launcher_fd(key.data) != key.fd):
            selector.unregister(key.fileobj)


def _sweep(nm: NodeManager, reason: str) -> None:
    """Kill every job's ranks here, reap the launchers, and sweep the run's processes on this
    host (on emulated hosts the MM sweeps the machine)."""
    nm.handle(Shutdown(reason))
    deadline = time.monotonic() + GRACE
    for fd, job in nm.launcher_fds().items():
        with selectors.DefaultSelector() as ready:
            ready.register(fd, selectors.EVENT_READ)
            ready.select(max(0.0, deadline - time.monotonic()))
        nm.reap(job)
    if not nm.machine.emulated_hosts:
        procs.kill_marked(nm.run_id)
    nm.close()


def main(argv: list[str] | None = None) -> int:
    """Connect, set up, serve."""
    p = argparse.ArgumentParser(prog="python -m testbed.emulation.nm_daemon")
    p.add_argument("--connect", required=True, metavar="HOST:PORT")
    p.add_argument("--index", type=int, default=None)
    args = p.parse_args(argv)
    key = os.environ.pop(KEY_ENV, "")
    if not key:
        raise SystemExit(f"nm_daemon: {KEY_ENV} is not set")
    index = node_index(args.index, dict(os.environ))
    procs.become_subreaper()
    priority = procs.raise_priority()
    host, _, port = args.connect.rpartition(":")
    secret = bytes.fromhex(key)
    conn = Client((host, int(port)), authkey=secret)
    # listen where this NM reaches the MM from: the MM gives the parent that address
    with socket.create_server((auth.local_address(conn), 0)) as listener:
        conn.send(Hello(index, os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
                        os.getpid(), tuple(sorted(os.sched_getaffinity(0))), priority,
                        listener.getsockname()[1]))
        setup: NodeSetup = pickle.loads(tree.body(conn.recv_bytes())[1])
        nm = build(setup, setup.index)      # its clock starts from the MM's as received
        parent, children = link_up(setup, listener, secret)
    conn.send(Reply([]))
    nm.rank_priority = procs.rank_priority(setup.rank_priority, priority)
    watchdog = None
    if not setup.machine.emulated_hosts:
        watchdog = subprocess.Popen([sys.executable, "-m", "testbed.emulation.watchdog",
                                     setup.run_id], stdin=subprocess.PIPE,
                                    start_new_session=True)
    try:
        return serve(conn, nm, parent, children)
    finally:
        conn.close()
        if watchdog is not None:
            assert watchdog.stdin is not None
            watchdog.stdin.close()
            watchdog.wait()


if __name__ == "__main__":
    sys.exit(main())
