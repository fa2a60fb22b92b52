"""``testbed serve``: the coordinator as a service on a local socket (T3D §4.4: the gang
scheduler behind ``mppexec``; Slurm's ``srun`` inside an allocation).

The service is the driver in serving mode over the emulation executor, with this module as
its observer: it listens on an AF_UNIX socket, turns requests into jobs and commands, streams
each followed job's output to its client while it runs (read from the job's files under the run
directory, where it is also kept), and sends the exit status when the job ends.

A followed job comes either as a ``submit`` (the Python client read the mpirun command line)
or as an ``mpirun`` request carrying the command line, its environment and directory, which
the service reads with the same code (the compiled client, ``native/mpirun.c``).

Security: the socket's directory is made mode 0700 and the socket 0600, so only the service's
user (and root) can connect; every connection's credentials are read with SO_PEERCRED, and a
user may cancel, suspend or resume only jobs they submitted (root: any), and stop the service
only if it is theirs.  Requests are length-prefixed JSON validated field by field
(``testbed.service.protocol``); a malformed or oversized request gets an error reply and its
connection is closed, and the service goes on.  Programs never go through a shell.  A client
that disconnects while following a job cancels it, as mpirun's death kills its job.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import pwd
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.control import Control
from testbed.emulation.commands import check_commands, checks_commands_here
from testbed.emulation.executor import EmulationExecutor
from testbed.ports import Ended
from testbed.service import protocol
from testbed.service.mpirun_args import job_environment, parse_mpirun
from testbed.workloads.files import JobSpec, Workload, WorkloadError, parse_line

FOLLOW_POLL = 0.05
READ_CHUNK = 65536


class ServiceError(Exception):
    """The service cannot start (its socket is taken or unusable)."""


def listen(path: Path) -> socket.socket:
    """Bind a listening socket at ``path`` in a directory only this user can enter; refuse if
    a live service already answers there, replace a stale socket file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.parent.stat()
    if info.st_uid != os.getuid():
        raise ServiceError(f"{path.parent}: belongs to another user")
    os.chmod(path.parent, 0o700)
    if path.exists() or path.is_symlink():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError as err:
            if err.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                raise ServiceError(f"{path}: {err.strerror}") from None
            path.unlink(missing_ok=True)
        else:
            raise ServiceError(f"{path}: a testbed service is already running there")
        finally:
            probe.close()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    server.listen(64)
    server.setblocking(False)
    return server


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of ``conn`` (SO_PEERCRED)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def user_name(uid: int) -> str:
    """The login name of ``uid`` (its number when it has none)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


@dataclass
class Client:
    """One connection: who it is, what it has half-sent, the jobs it follows."""

    conn: socket.socket
    uid: int
    decoder: protocol.Decoder = field(default_factory=protocol.Decoder)
    follows: set[str] = field(default_factory=set)


@dataclass
class Followed:
    """A job whose output goes to a client: the client and how far its files were read."""

    client: Client
    sent: dict[str, int] = field(default_factory=lambda: {"out": 0, "err": 0})


class Service:
    """The observer that makes a driver a service on ``server`` (a listening socket)."""

    def __init__(self, server: socket.socket, socket_path: Path, run_dir: Path,
                 executor: EmulationExecutor, timeslice: float) -> None:
        self.server = server
        self.socket_path = socket_path
        self.run_dir = run_dir
        self.executor = executor
        self.timeslice = timeslice
        self.control: Control | None = None
        self.owner = os.getuid()
        self.clients: dict[int, Client] = {}
        self.followed: dict[str, Followed] = {}
        self.submitter: dict[str, int] = {}
        self.numbers = 0

    def attach(self, control: Control) -> None:
        """Serve through ``control``, the control of a driver built with this service as its
        observer."""
        self.control = control
        self.executor.watch(self.server, self._accept)

    def close(self) -> None:
        """Close every connection and the socket, and remove the socket file."""
        for client in list(self.clients.values()):
            self._drop(client, cancel=False)
        with contextlib.suppress(KeyError, ValueError):
            self.executor.unwatch(self.server)
        self.server.close()
        self.socket_path.unlink(missing_ok=True)

    def started(self, job: str) -> None:
        """Nothing to do: output is read as it comes."""

    def ended(self, end: Ended) -> None:
        """Send the rest of a followed job's output and its exit status; forget the job (a
        request about it is then answered as about any job the service does not know)."""
        self.submitter.pop(end.job, None)
        followed = self.followed.pop(end.job, None)
        if followed is None:
            return
        self._forward(end.job, followed)
        self._send(followed.client, protocol.exited(end.job, end.status, end.exit_code,
                                                           end.reason))
        followed.client.follows.discard(end.job)

    def poll(self, now: float) -> None:
        """Forward new output of followed jobs; poll often while any is followed."""
        for job, followed in list(self.followed.items()):
            self._forward(job, followed)
        self.executor.idle_poll = FOLLOW_POLL if self.followed else 0.5

    def _forward(self, job: str, followed: Followed) -> None:
        for stream in ("out", "err"):
            path = self.run_dir / "jobs" / f"{job}.{stream}"
            try:
                with open(path, "rb") as f:
                    f.seek(followed.sent[stream])
                    data = f.read(protocol.OUTPUT_CHUNK * 16)
            except FileNotFoundError:
                continue
            if data:
                followed.sent[stream] += len(data)
                for reply in protocol.output_chunks(job, stream, data):
                    self._send(followed.client, reply)

    def _accept(self) -> None:
        try:
            conn, _ = self.server.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        client = Client(conn, peer_uid(conn))
        self.clients[conn.fileno()] = client
        self.executor.watch(conn, lambda: self._readable(client))

    def _readable(self, client: Client) -> None:
        try:
            data = client.conn.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(client, cancel=True)
            return
        try:
            messages = client.decoder.feed(data)
            for message in messages:
                self._handle(client, protocol.parse_request(message))
        except protocol.ProtocolError as err:
            self._send(client, protocol.error(str(err)))
            self._drop(client, cancel=True)

    def _drop(self, client: Client, cancel: bool) -> None:
        """Forget a connection; with ``cancel`` its followed jobs are cancelled."""
        if self.clients.pop(client.conn.fileno(), None) is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self.executor.unwatch(client.conn)
        for job in list(client.follows):
            self.followed.pop(job, None)
            if cancel and self.control is not None:
                self.control.cancel(job, self._kill)
        client.conn.close()

    def _send(self, client: Client, reply: dict[str, Any]) -> None:
        """Send one reply; a client that cannot take it is dropped (its jobs cancelled)."""
        if client.conn.fileno() < 0:
            return
        try:
            client.conn.settimeout(5.0)
            protocol.send(client.conn, reply)
            client.conn.setblocking(False)
        except OSError:
            self._drop(client, cancel=True)

    def _kill(self, job: str) -> None:
        self.executor.kill(job, "cancelled")

    def _new_id(self) -> str:
        self.numbers += 1
        return f"j{self.numbers}"

    def _allowed(self, client: Client, job: str) -> bool:
        return client.uid == 0 or self.submitter.get(job) == client.uid

    def _handle(self, client: Client, request: protocol.Request) -> None:
        control = self.control
        assert control is not None
        match request:
            case protocol.Submit():
                self._submit(client, request)
            case protocol.Mpirun():
                self._mpirun(client, request)
            case protocol.SubmitWorkload():
                self._submit_workload(client, request)
            case protocol.Queue():
                self._send(client, protocol.queue_reply(self.queue_rows()))
            case (protocol.Cancel(job=job) | protocol.Suspend(job=job) | protocol.Resume(job=job)
                  | protocol.SetClass(job=job) | protocol.MigrateJob(job=job)):
                if job not in self.submitter:
                    self._send(client, protocol.error(f"no job {job}"))
                elif not self._allowed(client, job):
                    self._send(client, protocol.error(
                        f"{job} belongs to {user_name(self.submitter[job])}; "
                        f"{user_name(client.uid)} may not change it"))
                elif isinstance(request, protocol.MigrateJob):
                    problem = control.migrate(job, request.pes)
                    self._send(client, protocol.ok() if problem is None
                               else protocol.error(problem))
                elif isinstance(request, protocol.SetClass):
                    problem = control.set_class(job, request.job_class)
                    self._send(client, protocol.ok() if problem is None
                               else protocol.error(problem))
                elif isinstance(request, protocol.Cancel):
                    done = control.cancel(job, self._kill)
                    self._send(client, protocol.ok() if done != "unknown"
                               else protocol.error(f"no job {job}"))
                else:
                    held = isinstance(request, protocol.Suspend)
                    self._send(client, protocol.ok() if control.hold(job, held)
                               else protocol.error(f"{job} is not running"))
            case protocol.Shutdown():
                if client.uid not in (0, self.owner):
                    self._send(client, protocol.error("only the service's user may stop it"))
                else:
                    self._send(client, protocol.ok())
                    control.stop()

    def _submit(self, client: Client, request: protocol.Submit) -> None:
        assert self.control is not None
        job = self._new_id()
        user = request.user_label or user_name(client.uid)
        spec = JobSpec(job, 0, 0.0, request.ranks, request.argv, None, request.limit, user,
                       False, request.mem_mb, None, None, None,
                       tuple(sorted(request.env.items())), request.cwd, request.job_class,
                       interactive=True)
        if spec.pes > self.control.pes:
            self._send(client, protocol.error(
                f"{spec.pes} ranks asked for but the machine has {self.control.pes}"
                " PEs"))
            return
        self.submitter[job] = client.uid
        if request.follow:
            client.follows.add(job)
            self.followed[job] = Followed(client)
        self._send(client, protocol.accepted(job))
        self.control.submit(Workload("<mpirun>", [spec], {"user": user}))

    def _mpirun(self, client: Client, request: protocol.Mpirun) -> None:
        """Read an mpirun command line as ``testbed mpirun`` does and follow its job: the same
        note, refusal and job as the Python client would give (``testbed.mpirun``)."""
        try:
            wanted = parse_mpirun(request.argv, request.environ, request.cwd)
            submit = dataclasses.replace(wanted.to_submit(follow=True),
                                         env=job_environment(wanted, request.environ))
        except ValueError as err:
            self._send(client, protocol.usage(str(err)))
            return
        note = wanted.note()
        if note:
            self._send(client, protocol.note(note))
        try:
            checked = protocol.parse_request(submit.to_message())
        except protocol.ProtocolError as err:
            self._send(client, protocol.error(str(err)))
            return
        assert isinstance(checked, protocol.Submit)
        self._submit(client, checked)

    def _submit_workload(self, client: Client, request: protocol.SubmitWorkload) -> None:
        assert self.control is not None
        specs = []
        try:
            for number, text in enumerate(request.lines, start=1):
                if text.lstrip().startswith("#"):
                    continue
                spec = parse_line(request.path, number, text, "", self.timeslice)
                if spec is not None:
                    specs.append(spec)
        except WorkloadError as err:
            self._send(client, protocol.error(str(err)))
            return
        pes = self.control.pes
        wide = next((s for s in specs if s.pes > pes), None)
        if wide is not None:
            self._send(client, protocol.error(
                f"{request.path}:{wide.line}: field 'pes': {wide.pes} PEs requested but the "
                f"machine has {pes}"))
            return
        if checks_commands_here(self.executor.machine):
            try:
                check_commands(request.path, specs, self.executor.env, os.getcwd())
            except WorkloadError as err:
                self._send(client, protocol.error(str(err)))
                return
        named = []
        for spec in specs:
            job = self._new_id()
            self.submitter[job] = client.uid
            named.append(dataclasses.replace(spec, id=job))
        self._send(client, protocol.queue_reply(
            {"job": s.id, "line": s.line, "arrival": s.arrival} for s in named))
        self.control.submit(Workload(request.path, named, {"user": user_name(client.uid)}))

    def queue_rows(self) -> list[dict[str, Any]]:
        """Every job not ended, like squeue: id, user, PEs, state, wait and runtime (s),
        class, row."""
        control = self.control
        assert control is not None
        now = control.now()
        rows = []
        for live in control.jobs():
            spec, arrived, started = live.spec, live.arrived_at, live.started_at
            rows.append({
                "job": spec.id, "user": spec.user, "pes": spec.pes, "state": live.state,
                "wait": round((started if started is not None else now) - arrived, 3)
                if arrived is not None else None,
                "runtime": round(now - started, 3) if started is not None else None,
                "class": spec.job_class, "row": live.row,
                "command": " ".join(spec.argv)[:80]})
        return rows

