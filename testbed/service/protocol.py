"""The wire protocol between ``testbed serve`` and its clients over a local AF_UNIX socket.

Framing
    Every message is a 4-byte big-endian unsigned length N followed by N bytes of UTF-8 JSON
    holding exactly one object.  N is at most ``MAX_MESSAGE`` (1 MiB); a larger length is
    refused as soon as its 4 header bytes arrive, before any of the body is read.  Messages
    are written with ``ensure_ascii`` JSON, so the body is plain ASCII and strings holding
    lone surrogates (``os.fsdecode`` of argv or environment bytes that are not UTF-8) survive
    the trip and ``os.fsencode`` gives the original bytes back.  ``NaN``/``Infinity``,
    duplicate keys, invalid UTF-8 and anything but an object are refused.

    ``encode``/``Decoder`` are for event loops (the server): feed the decoder whatever bytes
    arrived and take the complete messages.  ``send``/``recv`` are blocking helpers for
    clients.  Any ``ProtocolError`` from framing means the stream can no longer be trusted:
    reply ``error(...)`` if possible and close the connection.

Requests (client -> server)
    Each is a frozen dataclass; ``req.to_message()`` gives the dict to send and
    ``parse_request(obj)`` checks a received dict field by field and gives the dataclass back
    (``ProtocolError`` naming the field otherwise).  Wire ``"type"`` of each:

    ``submit``           ``Submit(argv, ranks, env, cwd, limit, user_label, job_class, mem_mb,
                         follow)``
    ``submit_workload``  ``SubmitWorkload(lines, path)``
    ``queue``            ``Queue()``
    ``cancel``           ``Cancel(job)``
    ``suspend``          ``Suspend(job)``
    ``resume``           ``Resume(job)``
    ``set_class``        ``SetClass(job, job_class)``
    ``migrate``          ``MigrateJob(job, pes)``
    ``shutdown``         ``Shutdown()``
    ``mpirun``           ``Mpirun(name, argv, environ, cwd)``: a whole mpirun command line,
                         read by the server (the compiled client's request; followed like
                         a ``submit`` with ``follow``)

    Every field is required and unknown fields are refused, so a client and a server from
    different versions fail loudly instead of silently dropping an option.

Replies (server -> client)
    Plain dicts, each with a ``"type"``, built by:

    ``accepted(job)``                 ``{"type": "accepted", "job": str}``
    ``output(job, stream, data)``     ``{"type": "output", "job": str, "stream": "out"|"err",
                                      "data": str}`` (``data``: base64 of the raw bytes;
                                      ``decode_output(reply)`` gives them back)
    ``exited(job, status, exit_code)``  ``{"type": "exited", "job": str, "status": str,
                                      "exit_code": int | None}``
    ``error(message)``                ``{"type": "error", "message": str}``
    ``queue_reply(rows)``             ``{"type": "queue", "jobs": [object, ...]}``
    ``ok()``                          ``{"type": "ok"}``
    ``note(text)``                    ``{"type": "note", "text": str}`` (to an ``mpirun``
                                      request: the line about ignored options)
    ``usage(message)``                ``{"type": "usage", "message": str}`` (to an
                                      ``mpirun`` request: its command line is refused)

    ``check_reply(obj)`` validates a received reply's shape for the client.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import socket
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from testbed.exit_codes import job_exit_code

MAX_MESSAGE = 1 << 20
"""Largest message body in bytes (1 MiB); longer ones are refused by both sides."""

HEADER = struct.Struct(">I")
"""The length prefix: 4 bytes, big-endian unsigned."""

MAX_ARGV = 4096
"""Most argv entries a job may have."""
MAX_ARG = 131072
"""Longest single argv entry or environment value, in characters (Linux MAX_ARG_STRLEN)."""
MAX_ENV = 4096
"""Most environment entries a job may set."""
MAX_ENV_NAME = 1024
"""Longest environment variable name, in characters."""
MAX_PATH = 4096
"""Longest path (cwd, workload path), in characters (Linux PATH_MAX)."""
MAX_NAME = 64
"""Longest job id, user label or job class, in characters."""
MAX_RANKS = 1 << 20
"""Most ranks a job may ask for (the server checks it against its PEs as well)."""
MAX_LINES = 100_000
"""Most lines in a submitted workload."""
MAX_LINE = 65536
"""Longest workload line, in characters."""
OUTPUT_CHUNK = 256 * 1024
"""Most raw bytes one ``output`` reply may carry (base64 makes 349,528 characters of it)."""
STREAMS = ("out", "err")
"""The output streams: the job's stdout and stderr."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JOB_CLASS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class ProtocolError(ValueError):
    """A message that breaks the protocol.  ``field`` names the offending request field
    (``"argv"``, ``"argv[3]"``, ``"env['X']"``, ``"type"``...) or is None for framing."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# --- framing ---------------------------------------------------------------------------------


def encode(message: Mapping[str, Any]) -> bytes:
    """The frame for ``message`` (a JSON-serialisable mapping): 4-byte length + JSON body.

    Raises ``ProtocolError`` if it cannot be serialised (including NaN or infinite numbers) or
    its body would exceed ``MAX_MESSAGE`` bytes."""
    if not isinstance(message, Mapping):
        raise ProtocolError(f"a message must be a mapping, not {type(message).__name__}")
    try:
        body = json.dumps(dict(message), separators=(",", ":"), allow_nan=False).encode("ascii")
    except (TypeError, ValueError) as err:
        raise ProtocolError(f"cannot encode message: {err}") from None
    if len(body) > MAX_MESSAGE:
        raise ProtocolError(f"message of {len(body)} bytes exceeds the {MAX_MESSAGE}-byte limit")
    return HEADER.pack(len(body)) + body


def _refuse_length(length: int) -> None:
    if length > MAX_MESSAGE:
        raise ProtocolError(f"message length {length} exceeds the {MAX_MESSAGE}-byte limit")


def _reject_constant(name: str) -> Any:
    raise ProtocolError(f"invalid JSON: {name} is not allowed")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ProtocolError(f"invalid JSON: duplicate key {key!r}")
        result[key] = value
    return result


def decode_body(body: bytes) -> dict[str, Any]:
    """The object in one message body (the bytes after the length prefix).

    Raises ``ProtocolError`` for a body over ``MAX_MESSAGE`` bytes, invalid UTF-8, invalid JSON
    (NaN/Infinity and duplicate keys included) or a JSON value that is not an object."""
    _refuse_length(len(body))
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ProtocolError(f"message is not valid UTF-8: {err}") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except ProtocolError:
        raise
    except (ValueError, RecursionError) as err:
        raise ProtocolError(f"message is not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise ProtocolError(f"message is a JSON {type(value).__name__}, not an object")
    return value


class Decoder:
    """Incremental frame decoder for one connection: ``feed`` it bytes as they arrive.

    After it has raised ``ProtocolError`` once it refuses everything that follows (and drops
    what it had buffered): the connection should be answered with ``error`` and closed."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._failure: str | None = None

    @property
    def buffered(self) -> int:
        """Bytes held of a message not yet complete (nonzero at EOF: the peer quit
        mid-message)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Append ``data`` and return every message now complete, oldest first.

        Raises ``ProtocolError`` on an oversized length (as soon as its 4 bytes are in, before
        any body), invalid UTF-8 or JSON, or a non-object; messages completed earlier in the
        same call are then discarded along with the stream."""
        if self._failure is not None:
            raise ProtocolError(f"stream already failed: {self._failure}")
        self._buffer += data
        messages: list[dict[str, Any]] = []
        try:
            while len(self._buffer) >= HEADER.size:
                (length,) = HEADER.unpack_from(self._buffer)
                _refuse_length(length)
                end = HEADER.size + length
                if len(self._buffer) < end:
                    break
                body = bytes(self._buffer[HEADER.size:end])
                del self._buffer[:end]
                messages.append(decode_body(body))
        except ProtocolError as err:
            self._failure = str(err)
            self._buffer.clear()
            raise
        return messages


def send(sock: socket.socket, message: Mapping[str, Any]) -> None:
    """Write one message to a connected blocking socket (all of it, or raise ``OSError``)."""
    sock.sendall(encode(message))


def _recv_exactly(sock: socket.socket, size: int, eof_ok: bool) -> bytes | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            if got == 0 and eof_ok:
                return None
            raise ProtocolError(f"connection closed in the middle of a message "
                                f"({got} of {size} bytes)")
        got += n
    return bytes(buffer)


def recv(sock: socket.socket) -> dict[str, Any] | None:
    """Read one message from a connected blocking socket; None on a clean EOF (the peer
    closed between messages).

    Raises ``ProtocolError`` on EOF inside a message, an oversized length (before reading the
    body) or a bad body, and ``OSError`` (``TimeoutError`` with a socket timeout) from the
    socket itself."""
    header = _recv_exactly(sock, HEADER.size, eof_ok=True)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    _refuse_length(length)
    body = _recv_exactly(sock, length, eof_ok=False)
    assert body is not None
    return decode_body(body)


# --- requests --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Message:
    """Common part of the requests: the wire type and the conversion to a message."""

    TYPE: ClassVar[str] = ""

    def to_message(self) -> dict[str, Any]:
        """This request as the dict to ``send``/``encode`` (tuples become lists)."""
        message: dict[str, Any] = {"type": self.TYPE}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = dict(value)
            message[spec.name] = value
        return message


@dataclass(frozen=True)
class Submit(_Message):
    """Run one MPI command as a job.

    ``argv``: the command, never through a shell (1..``MAX_ARGV`` entries, no NUL);
    ``ranks``: ranks (PEs) wanted, >= 1; ``env``: variables set for the ranks on top of the
    server's policy for the rest (names ``[A-Za-z_][A-Za-z0-9_]*``); ``cwd``: absolute working
    directory; ``limit``: seconds of runtime before the job is killed, > 0, or None;
    ``user_label``: who the job is for (no spaces or control characters, may be empty);
    ``job_class``: the job's class name (``[A-Za-z0-9][A-Za-z0-9_.-]*`` or empty for the
    default); ``mem_mb``: memory each rank needs in MiB, > 0, or None; ``follow``: True when the
    client stays connected for the output and exit code (mpirun), False for a batch
    ``submit``.  Not hashable (``env`` is a dict)."""

    TYPE: ClassVar[str] = "submit"
    argv: tuple[str, ...]
    ranks: int
    env: dict[str, str]
    cwd: str
    limit: float | None
    user_label: str
    job_class: str
    mem_mb: float | None
    follow: bool


@dataclass(frozen=True)
class SubmitWorkload(_Message):
    """Submit a workload file's jobs: ``lines`` are the file's lines (without newlines) in the
    workload format, arrivals counted in seconds from the submission; ``path`` names the file
    in messages (``path:line: field ...``)."""

    TYPE: ClassVar[str] = "submit_workload"
    lines: tuple[str, ...]
    path: str


@dataclass(frozen=True)
class Queue(_Message):
    """List the jobs the server knows (answered by ``queue_reply``)."""

    TYPE: ClassVar[str] = "queue"


@dataclass(frozen=True)
class Cancel(_Message):
    """Kill or withdraw job ``job``."""

    TYPE: ClassVar[str] = "cancel"
    job: str


@dataclass(frozen=True)
class Suspend(_Message):
    """Stop job ``job`` until it is resumed."""

    TYPE: ClassVar[str] = "suspend"
    job: str


@dataclass(frozen=True)
class Resume(_Message):
    """Let a suspended job ``job`` run again."""

    TYPE: ClassVar[str] = "resume"
    job: str


@dataclass(frozen=True)
class SetClass(_Message):
    """Move job ``job`` to class ``job_class`` (the t3d scheduler's classes; gangster)."""

    TYPE: ClassVar[str] = "set_class"
    job: str
    job_class: str


@dataclass(frozen=True)
class MigrateJob(_Message):
    """Move job ``job``'s rank i to PE ``pes[i]`` (T3E's ``migrate``)."""

    TYPE: ClassVar[str] = "migrate"
    job: str
    pes: tuple[int, ...]


@dataclass(frozen=True)
class Shutdown(_Message):
    """Stop the server."""

    TYPE: ClassVar[str] = "shutdown"


@dataclass(frozen=True)
class Mpirun(_Message):
    """Run an mpirun/mpiexec command line as a followed job, the server reading it
    (``testbed.service.mpirun_args``) so that a client need not: the compiled client's request.

    ``name``: "mpirun" or "mpiexec", the command the user typed (for messages); ``argv``: the
    words after it (may be empty: the server then refuses it as mpirun would); ``environ``:
    the client's environment (valid names only), which ``-x NAME``, ``-genvlist`` and the
    ``TESTBED_*`` defaults read and the ranks inherit as from ``testbed mpirun``; ``cwd``: the
    client's absolute working directory.  Answered by ``note`` (if options were ignored) or
    ``usage`` (refused), then as a followed ``submit``.  Not hashable (``environ`` is a
    dict)."""

    TYPE: ClassVar[str] = "mpirun"
    name: str
    argv: tuple[str, ...]
    environ: dict[str, str]
    cwd: str


MPIRUN_NAMES = ("mpirun", "mpiexec")
"""The names an ``Mpirun`` request may give."""

Request = (Submit | SubmitWorkload | Queue | Cancel | Suspend | Resume | SetClass | MigrateJob
           | Shutdown | Mpirun)
"""Any request, as ``parse_request`` returns it."""

REQUEST_TYPES: dict[str, type[_Message]] = {
    cls.TYPE: cls for cls in (Submit, SubmitWorkload, Queue, Cancel, Suspend, Resume, SetClass,
                              MigrateJob, Shutdown, Mpirun)
}
"""Request classes by their wire ``"type"``."""


def valid_env_name(name: str) -> bool:
    """True if ``name`` may be an environment variable name here:
    ``[A-Za-z_][A-Za-z0-9_]*``, at most ``MAX_ENV_NAME`` characters."""
    return len(name) <= MAX_ENV_NAME and _ENV_NAME.fullmatch(name) is not None


def valid_job_class(name: str) -> bool:
    """True if ``name`` may be a job class: empty (the default) or
    ``[A-Za-z0-9][A-Za-z0-9_.-]*``, at most ``MAX_NAME`` characters."""
    return name == "" or (len(name) <= MAX_NAME and _JOB_CLASS.fullmatch(name) is not None)


def valid_user_label(name: str) -> bool:
    """True if ``name`` may be a user label: at most ``MAX_NAME`` printable characters, no
    whitespace (empty allowed)."""
    return len(name) <= MAX_NAME and all(c.isprintable() and not c.isspace() for c in name)


def valid_job_id(name: str) -> bool:
    """True if ``name`` may be a job id: ``[A-Za-z0-9][A-Za-z0-9_.-]*``, at most
    ``MAX_NAME`` characters."""
    return len(name) <= MAX_NAME and _JOB_ID.fullmatch(name) is not None


class _Fields:
    """Checks the fields of one request object, raising ``ProtocolError`` naming the field."""

    def __init__(self, kind: str, obj: Mapping[str, Any]) -> None:
        self.kind = kind
        self.obj = obj

    def fail(self, field: str, problem: str) -> ProtocolError:
        return ProtocolError(f"{self.kind}: field {field!r}: {problem}", field)

    def text(self, field: str, value: Any, max_len: int, *, empty: bool = True,
             newline: bool = True) -> str:
        if not isinstance(value, str):
            raise self.fail(field, f"must be a string, not {_json_type(value)}")
        if len(value) > max_len:
            raise self.fail(field, f"longer than {max_len} characters ({len(value)})")
        if not empty and not value:
            raise self.fail(field, "must not be empty")
        if "\0" in value:
            raise self.fail(field, "must not contain NUL characters")
        if not newline and ("\n" in value or "\r" in value):
            raise self.fail(field, "must not contain line breaks")
        return value

    def string(self, field: str, max_len: int, *, empty: bool = True) -> str:
        return self.text(field, self.obj[field], max_len, empty=empty)

    def strings(self, field: str, max_items: int, max_len: int, *,
                newline: bool = True, empty: bool = False) -> tuple[str, ...]:
        value = self.obj[field]
        if not isinstance(value, list):
            raise self.fail(field, f"must be a list of strings, not {_json_type(value)}")
        if not value and not empty:
            raise self.fail(field, "must not be empty")
        if len(value) > max_items:
            raise self.fail(field, f"more than {max_items} entries ({len(value)})")
        return tuple(self.text(f"{field}[{i}]", item, max_len, newline=newline)
                     for i, item in enumerate(value))

    def integer(self, field: str, minimum: int, maximum: int) -> int:
        value = self.obj[field]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, f"must be an integer, not {_json_type(value)}")
        if not minimum <= value <= maximum:
            raise self.fail(field, f"must be between {minimum} and {maximum}, got {value}")
        return value

    def positive_or_none(self, field: str) -> float | None:
        value = self.obj[field]
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(field, f"must be a number or null, not {_json_type(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise self.fail(field, "too large") from None
        if not math.isfinite(number):
            raise self.fail(field, "must be finite")
        if number <= 0:
            raise self.fail(field, f"must be > 0, got {value}")
        return number

    def boolean(self, field: str) -> bool:
        value = self.obj[field]
        if not isinstance(value, bool):
            raise self.fail(field, f"must be true or false, not {_json_type(value)}")
        return value

    def environment(self, field: str) -> dict[str, str]:
        value = self.obj[field]
        if not isinstance(value, dict):
            raise self.fail(field, f"must be an object of strings, not {_json_type(value)}")
        if len(value) > MAX_ENV:
            raise self.fail(field, f"more than {MAX_ENV} entries ({len(value)})")
        env: dict[str, str] = {}
        for name, item in value.items():
            if not isinstance(name, str) or not valid_env_name(name):
                raise self.fail(field, f"{str(name)[:80]!r} is not a valid variable name")
            env[name] = self.text(f"{field}[{name!r}]", item, MAX_ARG)
        return env

    def job(self) -> str:
        value = self.string("job", MAX_NAME, empty=False)
        if not valid_job_id(value):
            raise self.fail("job", f"not a job id: {value!r}")
        return value


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "list",
             dict: "object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _submit(check: _Fields) -> Submit:
    argv = check.strings("argv", MAX_ARGV, MAX_ARG)
    ranks = check.integer("ranks", 1, MAX_RANKS)
    env = check.environment("env")
    cwd = check.string("cwd", MAX_PATH, empty=False)
    if not cwd.startswith("/"):
        raise check.fail("cwd", f"must be an absolute path, got {cwd[:200]!r}")
    limit = check.positive_or_none("limit")
    user_label = check.string("user_label", MAX_NAME)
    if not valid_user_label(user_label):
        raise check.fail("user_label", f"must not contain whitespace or control characters: "
                                       f"{user_label!r}")
    job_class = check.string("job_class", MAX_NAME)
    if not valid_job_class(job_class):
        raise check.fail("job_class", f"not a class name: {job_class!r} "
                                      "(letters, digits, '_', '.', '-')")
    mem_mb = check.positive_or_none("mem_mb")
    follow = check.boolean("follow")
    return Submit(argv, ranks, env, cwd, limit, user_label, job_class, mem_mb, follow)


def _mpirun(check: _Fields) -> Mpirun:
    name = check.string("name", MAX_NAME)
    if name not in MPIRUN_NAMES:
        raise check.fail("name", f"must be mpirun or mpiexec, not {name[:80]!r}")
    argv = check.strings("argv", MAX_ARGV, MAX_ARG, empty=True)
    environ = check.environment("environ")
    cwd = check.string("cwd", MAX_PATH, empty=False)
    if not cwd.startswith("/"):
        raise check.fail("cwd", f"must be an absolute path, got {cwd[:200]!r}")
    return Mpirun(name, argv, environ, cwd)


def _submit_workload(check: _Fields) -> SubmitWorkload:
    lines = check.strings("lines", MAX_LINES, MAX_LINE, newline=False)
    path = check.string("path", MAX_PATH, empty=False)
    return SubmitWorkload(lines, path)


def _pes(check: _Fields) -> tuple[int, ...]:
    value = check.obj["pes"]
    if not isinstance(value, list) or not value or len(value) > MAX_RANKS:
        raise check.fail("pes", f"must be a list of 1 to {MAX_RANKS} PE numbers")
    pes = []
    for i, pe in enumerate(value):
        if isinstance(pe, bool) or not isinstance(pe, int) or not 0 <= pe < MAX_RANKS:
            raise check.fail(f"pes[{i}]", f"must be a PE number, got {pe!r}")
        pes.append(pe)
    return tuple(pes)


def _class_name(check: _Fields) -> str:
    name = check.string("job_class", MAX_NAME, empty=False)
    if not valid_job_class(name):
        raise check.fail("job_class", f"not a class name: {name!r}")
    return name


_PARSERS: dict[str, Any] = {
    "submit": _submit,
    "submit_workload": _submit_workload,
    "queue": lambda check: Queue(),
    "cancel": lambda check: Cancel(check.job()),
    "suspend": lambda check: Suspend(check.job()),
    "resume": lambda check: Resume(check.job()),
    "set_class": lambda check: SetClass(check.job(), _class_name(check)),
    "migrate": lambda check: MigrateJob(check.job(), _pes(check)),
    "shutdown": lambda check: Shutdown(),
    "mpirun": _mpirun,
}


def parse_request(obj: Mapping[str, Any]) -> Request:
    """The request in a received message, every field checked.

    Raises ``ProtocolError`` (whose ``field`` names the field, ``"type"`` included) for an
    unknown or missing type, a missing or unknown field, a wrong JSON type, a number out of
    range (ranks >= 1; limit and mem_mb > 0 or null), a string too long or empty where it
    must not be, a NUL character, too many argv/env/lines entries, an env key that is not a
    variable name, a relative cwd, or a job id, class or user label of the wrong form."""
    if not isinstance(obj, Mapping):
        raise ProtocolError(f"a request must be an object, not {_json_type(obj)}")
    if "type" not in obj:
        raise ProtocolError("request: field 'type': missing", "type")
    kind = obj["type"]
    if not isinstance(kind, str) or kind not in REQUEST_TYPES:
        known = ", ".join(REQUEST_TYPES)
        raise ProtocolError(f"request: field 'type': unknown request type {kind!r} "
                            f"(known: {known})", "type")
    check = _Fields(kind, obj)
    names = [spec.name for spec in fields(REQUEST_TYPES[kind])]
    for name in obj:
        if name != "type" and name not in names:
            raise check.fail(str(name), "unknown field")
    for name in names:
        if name not in obj:
            raise check.fail(name, "missing")
    request: Request = _PARSERS[kind](check)
    return request


# --- replies ---------------------------------------------------------------------------------


def accepted(job: str) -> dict[str, Any]:
    """The server took the submission as job ``job``: ``{"type": "accepted", "job": job}``."""
    return {"type": "accepted", "job": job}


def output(job: str, stream: str, data: bytes) -> dict[str, Any]:
    """Output of ``job`` on ``stream`` ("out" or "err"): ``{"type": "output", "job", "stream",
    "data"}`` with ``data`` the base64 of the raw bytes (at most ``OUTPUT_CHUNK`` bytes; use
    ``output_chunks`` for more).  Raises ``ValueError`` for another stream or too much data."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be 'out' or 'err', not {stream!r}")
    if len(data) > OUTPUT_CHUNK:
        raise ValueError(f"{len(data)} bytes of output in one reply; the limit is "
                         f"{OUTPUT_CHUNK} (use output_chunks)")
    return {"type": "output", "job": job, "stream": stream,
            "data": base64.b64encode(bytes(data)).decode("ascii")}


def output_chunks(job: str, stream: str, data: bytes) -> Iterator[dict[str, Any]]:
    """``output`` replies carrying ``data`` in order, ``OUTPUT_CHUNK`` bytes at most each
    (none for empty data)."""
    for start in range(0, len(data), OUTPUT_CHUNK):
        yield output(job, stream, data[start:start + OUTPUT_CHUNK])


def decode_output(reply: Mapping[str, Any]) -> bytes:
    """The raw bytes of an ``output`` reply.  Raises ``ProtocolError`` if it is not an
    ``output`` reply or its data is not valid base64."""
    if reply.get("type") != "output":
        raise ProtocolError(f"not an output reply: type {reply.get('type')!r}", "type")
    data = reply.get("data")
    if not isinstance(data, str):
        raise ProtocolError("output: field 'data': must be a string", "data")
    try:
        return base64.b64decode(data.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as err:
        raise ProtocolError(f"output: field 'data': not base64: {err}", "data") from None


def exited(job: str, status: str, exit_code: int | None, reason: str = "") -> dict[str, Any]:
    """``job`` ended: ``{"type": "exited", "job", "status", "exit_code", "reason"}``;
    ``status`` as in the event log (done, failed, timeout, killed...), ``exit_code`` the
    launcher's exit code or None when there is none (never started, killed by a signal),
    ``reason`` the event log's (why it was killed or failed; empty when done)."""
    return {"type": "exited", "job": job, "status": status, "exit_code": exit_code,
            "reason": reason}


def error(message: str) -> dict[str, Any]:
    """The request was refused or failed: ``{"type": "error", "message": message}`` (a
    sentence for the user)."""
    return {"type": "error", "message": message}


def queue_reply(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Answer to ``Queue``: ``{"type": "queue", "jobs": [row, ...]}``, one JSON object per
    job in the order given (the server chooses the columns, e.g. job, state, ranks, user,
    class, submitted, argv)."""
    return {"type": "queue", "jobs": [dict(row) for row in rows]}


def ok() -> dict[str, Any]:
    """The request was carried out and there is nothing more to say: ``{"type": "ok"}``."""
    return {"type": "ok"}


def note(text: str) -> dict[str, Any]:
    """To an ``mpirun`` request, before anything else: ``{"type": "note", "text": text}``, the
    line about ignored options that the client prints after ``testbed NAME: `` on its
    stderr."""
    return {"type": "note", "text": text}


def usage(message: str) -> dict[str, Any]:
    """To an ``mpirun`` request: its command line is refused (no job was made):
    ``{"type": "usage", "message": message}``, which the client prints after
    ``testbed NAME: `` and exits 2, as ``testbed mpirun`` does for a bad command line."""
    return {"type": "usage", "message": message}


_REPLY_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "accepted": {"job": (str,)},
    "output": {"job": (str,), "stream": (str,), "data": (str,)},
    "exited": {"job": (str,), "status": (str,), "exit_code": (int, type(None))},
    "error": {"message": (str,)},
    "queue": {"jobs": (list,)},
    "ok": {},
    "note": {"text": (str,)},
    "usage": {"message": (str,)},
}
REPLY_TYPES = tuple(_REPLY_FIELDS)
"""Every reply ``"type"``."""


def check_reply(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` as a dict once it is a well-formed reply: a known type and each of its fields
    present with the right JSON type (``output`` also a valid stream, ``queue`` rows objects).
    Raises ``ProtocolError`` naming the field otherwise; extra fields are allowed."""
    if not isinstance(obj, Mapping):
        raise ProtocolError(f"a reply must be an object, not {_json_type(obj)}")
    kind = obj.get("type")
    if kind not in _REPLY_FIELDS:
        raise ProtocolError(f"reply: field 'type': unknown reply type {kind!r}", "type")
    for name, types in _REPLY_FIELDS[kind].items():
        if name not in obj:
            raise ProtocolError(f"{kind}: field {name!r}: missing", name)
        value = obj[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise ProtocolError(f"{kind}: field {name!r}: wrong type {_json_type(value)}", name)
    if kind == "output" and obj["stream"] not in STREAMS:
        raise ProtocolError(f"output: field 'stream': {obj['stream']!r} is not out or err",
                            "stream")
    if kind == "queue" and not all(isinstance(row, dict) for row in obj["jobs"]):
        raise ProtocolError("queue: field 'jobs': every row must be an object", "jobs")
    return dict(obj)


def exit_code_of(reply: Mapping[str, Any]) -> int:
    """The exit code for a following client (mpirun) to exit with, from an ``exited`` reply
    (``job_exit_code``)."""
    code = reply.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    return job_exit_code(str(reply.get("status")), code)
