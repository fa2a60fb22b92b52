"""A node manager as a process of its own: one per host, started as a control job by the MPI
launcher (``mpiexec -ppn 1 -hosts ...``, or ``srun --ntasks-per-node=1`` inside Slurm).

It connects to the machine manager (``--connect HOST:PORT``) with the run's key (from
``TESTBED_NM_KEY``, which it removes from its environment), says which node it is (``--index``,
else the launcher's ``PMI_RANK`` or ``SLURM_PROCID``), receives its ``NodeSetup`` and then
serves: every request is handled by a ``NodeManager`` and answered with one ``Reply``; what it
notices by itself (its ranks' pids, memory samples, a launcher's exit, shim events) is pushed.

If the machine manager goes away (the connection ends without ``Close``) it kills every rank
of the run it manages and exits 1.  On real hosts it also starts the run's watchdog on its host,
which sweeps the run's processes there if this process is killed.

Usage: ``python -m testbed.emulation.nm_daemon --connect HOST:PORT [--index N]``
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import selectors
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Client, Connection

from testbed.emulation import procs
from testbed.emulation.messages import (
    Close,
    Hello,
    LaunchJob,
    MemorySample,
    NodeSetup,
    Push,
    Release,
    Reply,
    Shutdown,
)
from testbed.emulation.node_manager import NodeManager

KEY_ENV = "TESTBED_NM_KEY"
# Finding ranks means listing the host's processes; at real-time priority, polling faster
# than this starves the launchers the NMs wait for (several NMs on few CPUs most of all).
DISCOVERY_POLL = 0.01
IDLE_POLL = 0.5
GRACE = 5.0


def node_index(explicit: int | None, env: dict[str, str]) -> int:
    """This NM's node: ``--index``, else the launcher's rank (hydra, then Slurm)."""
    if explicit is not None:
        return explicit
    for name in ("PMI_RANK", "SLURM_PROCID"):
        if env.get(name, "").isdigit():
            return int(env[name])
    raise SystemExit("nm_daemon: no --index and neither PMI_RANK nor SLURM_PROCID is set")


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
    return NodeManager(node, machine, setup.mpiexec, setup.env, setup.run_id,
                       lambda: time.monotonic() - t0, setup.policy, setup.shim, scan=True)


def serve(conn: Connection, nm: NodeManager) -> int:
    """Answer requests and push what happens until ``Close`` (0) or the MM is lost (1)."""
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_READ, "mm")
    if nm.events is not None:
        selector.register(nm.events, selectors.EVENT_READ, "shim")
    while True:
        pushes: list[object] = list(nm.discover())
        memory = nm.sample()
        if memory:
            pushes.append(MemorySample(memory))
        for key, _ in selector.select(DISCOVERY_POLL if nm.awaiting_pids() else IDLE_POLL):
            if key.data == "mm":
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    _sweep(nm, "machine manager lost")
                    return 1
                if isinstance(msg, Close):
                    _sweep(nm, "run over")
                    conn.send(Reply([]))
                    return 0
                replies = nm.handle(msg)
                conn.send(Reply(replies))
                if isinstance(msg, LaunchJob):
                    fd = nm.launcher_fd(msg.job)
                    if fd is not None:
                        selector.register(fd, selectors.EVENT_READ, msg.job)
                elif isinstance(msg, Release):
                    _forget_released(selector, nm)
            elif key.data == "shim":
                pushes += nm.shim_events()
            elif nm.launcher_fd(key.data) == key.fd:    # not released earlier in this batch
                selector.unregister(key.fd)
                pushes.append(nm.reap(key.data))
        if pushes:
            try:
                conn.send(Push(pushes))
            except OSError:
                _sweep(nm, "machine manager lost")
                return 1


def _forget_released(selector: selectors.BaseSelector, nm: NodeManager) -> None:
    """Stop watching the launchers of jobs released before their end was seen here (the MM
    gave up waiting; ``NodeManager`` reaped them on release)."""
    for key in list(selector.get_map().values()):
        if key.data not in ("mm", "shim") and nm.launcher_fd(key.data) != key.fd:
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
    conn = Client((host, int(port)), authkey=bytes.fromhex(key))
    conn.send(Hello(index, os.environ.get("SLURMD_NODENAME") or socket.gethostname(), os.getpid(),
                    tuple(sorted(os.sched_getaffinity(0))), priority))
    setup: NodeSetup = conn.recv()
    nm = build(setup, setup.index)
    nm.rank_priority = procs.rank_priority(setup.rank_priority, priority)
    watchdog = None
    if not setup.machine.emulated_hosts:
        watchdog = subprocess.Popen([sys.executable, "-m", "testbed.emulation.watchdog",
                                     setup.run_id], stdin=subprocess.PIPE,
                                    start_new_session=True)
    try:
        return serve(conn, nm)
    finally:
        conn.close()
        if watchdog is not None:
            assert watchdog.stdin is not None
            watchdog.stdin.close()
            watchdog.wait()


if __name__ == "__main__":
    sys.exit(main())
