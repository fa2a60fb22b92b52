"""Clients of ``testbed serve``: ``testbed mpirun``/``mpiexec`` and the batch controls.

``mpirun`` submits one job and follows it: the program's stdout and stderr come back live and
byte for byte, and the client exits with the program's exit code.  On SIGINT or SIGTERM it asks
the service to cancel the job and exits when the job has ended (130 or 143, as a shell reports
a command killed by that signal); if the client dies instead, the service cancels the job
when the connection drops.  If the service dies, the client says so and exits 1.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any, BinaryIO

from testbed.service import protocol
from testbed.service.mpirun_args import MpirunRequest, job_environment

LOST = 1


class NoService(Exception):
    """Nothing answers at the socket."""


def socket_path(given: str | None = None) -> Path:
    """The service's socket: ``given``, else ``TESTBED_SOCKET``, else the per-user default
    (``$XDG_RUNTIME_DIR/testbed/coordinator.sock``, else ``/tmp/testbed-UID/coordinator.sock``)."""
    if given or os.environ.get("TESTBED_SOCKET"):
        return Path(given or os.environ["TESTBED_SOCKET"])
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "testbed" if runtime else Path(f"/tmp/testbed-{os.getuid()}")
    return base / "coordinator.sock"


def connect(path: Path) -> socket.socket:
    """A connection to the service at ``path``; ``NoService`` if none answers there."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError) as err:
        conn.close()
        raise NoService(f"no testbed service at {path}") from err
    return conn


def request(path: Path, message: protocol.Request) -> dict[str, Any]:
    """Send one request and return the one reply (``NoService``, or ``ConnectionError`` when
    the service hangs up without answering)."""
    with connect(path) as conn:
        protocol.send(conn, message.to_message())
        reply = protocol.recv(conn)
    if reply is None:
        raise ConnectionError(f"the testbed service at {path} closed the connection")
    return protocol.check_reply(reply)


def follow(path: Path, request: MpirunRequest, out: BinaryIO, err: BinaryIO) -> int:
    """Submit ``request`` to the service at ``path``, copy the job's output to ``out`` and
    ``err`` as it comes, and return the exit code to exit with."""
    submit = dataclasses.replace(request.to_submit(follow=True),
                                 env=job_environment(request, dict(os.environ)))
    conn = connect(path)
    job: str | None = None
    caught: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        caught.append(signum)
        if job is not None and len(caught) == 1:
            protocol.send(conn, protocol.Cancel(job).to_message())

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        protocol.send(conn, submit.to_message())
        while True:
            try:
                reply = protocol.recv(conn)
            except InterruptedError:
                continue
            except (OSError, protocol.ProtocolError) as exc:
                print(f"testbed mpirun: lost the service: {exc}", file=sys.stderr)
                return LOST
            if reply is None:
                print(f"testbed mpirun: the testbed service at {path} went away"
                      f"{f' while job {job} ran' if job else ''}", file=sys.stderr)
                return LOST
            kind = reply.get("type")
            if kind == "accepted":
                job = reply["job"]
                if caught:
                    protocol.send(conn, protocol.Cancel(job).to_message())
            elif kind == "output":
                stream = out if reply["stream"] == "out" else err
                stream.write(protocol.decode_output(reply))
                stream.flush()
            elif kind == "exited":
                if caught:
                    return 128 + caught[0]
                code = protocol.exit_code_of(reply)
                if code != reply["exit_code"] or reply["status"] in ("killed", "timeout"):
                    # not the program's own exit: the testbed's doing, or the launch's; say so
                    reason = reply.get("reason") or reply["status"]
                    print(f"testbed mpirun: job {job} ended {reply['status']}: {reason}",
                          file=sys.stderr)
                return code
            elif kind == "error":
                print(f"testbed mpirun: {reply['message']}", file=sys.stderr)
                if job is None:
                    return 2
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        conn.close()
