"""Authenticated connections between the machine manager and the node managers, and between
node managers in the fan-out tree: ``multiprocessing.connection``'s HMAC challenge, both
ways, with the run's random key, before anything is unpickled.  The side that connects uses
``multiprocessing.connection.Client(address, authkey=key)`` and then sends its greeting; the
side that accepts calls ``accept``."""

from __future__ import annotations

import os
import pickle
import socket
import struct
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge

AUTH_TIMEOUT = 5.0


def accept(sock: socket.socket, key: bytes) -> tuple[object | None, Connection]:
    """Challenge a new peer with ``key`` (both ways, as ``Listener`` does) and read its
    greeting; a peer that fails, or stalls for ``AUTH_TIMEOUT`` s, gets None.  The connection
    is returned either way (the caller closes a refused one)."""
    sock.settimeout(None)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(AUTH_TIMEOUT))
    conn = Connection(sock.detach())
    try:
        deliver_challenge(conn, key)
        answer_challenge(conn, key)
        greeting = conn.recv()
    except (AuthenticationError, EOFError, OSError, pickle.UnpicklingError):
        return None, conn
    set_timeout(conn, socket.SO_RCVTIMEO, 0.0)
    return greeting, conn


def set_timeout(conn: Connection, option: int, seconds: float) -> None:
    """Set ``SO_RCVTIMEO`` or ``SO_SNDTIMEO`` of ``conn``'s socket (0: none)."""
    with socket.socket(fileno=os.dup(conn.fileno())) as raw:
        raw.setsockopt(socket.SOL_SOCKET, option, _timeval(seconds))


def local_address(conn: Connection) -> str:
    """The address of this end of ``conn`` (the interface that reaches its peer)."""
    with socket.socket(fileno=os.dup(conn.fileno())) as raw:
        return str(raw.getsockname()[0])


def peer_address(conn: Connection) -> str:
    """The address of the other end of ``conn``."""
    with socket.socket(fileno=os.dup(conn.fileno())) as raw:
        return str(raw.getpeername()[0])


def _timeval(seconds: float) -> bytes:
    return struct.pack("ll", int(seconds), int(seconds % 1 * 1e6))
