"""An mpirun/mpiexec command line as a job request: ``parse_mpirun(argv, environ, cwd)``.

``testbed mpirun`` and ``testbed mpiexec`` accept the options job scripts commonly give MPICH's
Hydra and Open MPI, so that a script can run under the testbed unchanged.  Options come first;
the first word that does not start with ``-`` starts the program, or everything after ``--``
is the program.  Either way the program's own options are never read as mpirun options
(``mpirun -n 2 prog -n 5`` runs ``prog -n 5`` on 2 ranks).

Every option may be written with one or two dashes (``-np 4`` or ``--np 4``), and those that
take one value also as ``-opt=VALUE`` (Hydra splits at ``=`` the same way).  Names are
case-sensitive (Hydra ignores case, but Open MPI's ``-N`` is not ``-n``).

Ranks
    ``-n N``, ``-np N``, ``-c N`` (Open MPI): N >= 1.  Without any of them the job gets 1
    rank.  That is what Hydra does on one machine without a host list: a program without a
    process count gets the sum of the core counts of the node list (Hydra's ``mpiexec.c``),
    and with no ``-hosts``/``-f``/``HYDRA_HOST_FILE``, no ``-ppn`` and no resource manager
    allocation that list is the local host counted as 1 core.  Hydra treats ``-n 0`` like no
    ``-n``; here it is an error.  (Inside a Slurm or PBS allocation, or with ``-ppn K`` or
    ``-hosts a:K``, Hydra would start that many; Open MPI starts one rank per slot, by
    default one per core.  The testbed ignores hosts and ``-ppn``, so it is always 1.)
Environment (the ``env`` of the request; what else the ranks inherit is the caller's: both
clients pass ``job_environment``, the client's environment without the testbed's variables)
    ``-genv NAME VALUE``, ``-env NAME VALUE`` and Hydra's one-word ``-genv NAME=VALUE``;
    ``-x NAME=VALUE`` and ``-x NAME`` (Open MPI: NAME's value here is passed); ``-genvlist
    A,B`` and ``-envlist A,B`` (Hydra: those variables' values here).  A later setting of a
    name wins.  A name exported but not set here is skipped and listed in ``ignored``.
Working directory
    ``-wdir DIR``, ``-wd DIR`` (Open MPI), ``--wdir DIR``; relative to ``cwd``.  Default
    ``cwd``.
Accepted and ignored (the testbed emulates one host and its scheduler places every rank)
    ``-hosts``/``-host``/``-H``/``--host LIST``, ``-f``/``-hostfile``/``-machinefile FILE``,
    ``-ppn N``, ``-bind-to X``, ``-map-by X``, ``--oversubscribe``, ``--allow-run-as-root``.
    They are recorded in ``ignored`` as written; ``MpirunRequest.note()`` is a line the caller
    may print about them.
Testbed options (per job), each also from an environment variable; the command line wins
    ``--testbed-limit S`` / ``TESTBED_LIMIT``: kill the job after S seconds of runtime (> 0).
    ``--testbed-class NAME`` / ``TESTBED_CLASS``: the job's class.
    ``--testbed-mem SIZE`` / ``TESTBED_MEM``: memory each rank needs (``512M``, ``2G``; a
    bare number is MiB).
    ``--testbed-user NAME`` / ``TESTBED_USER``: the user label.
    ``--testbed-socket PATH`` / ``TESTBED_SOCKET``: the server's socket.
    An environment variable set to the empty string counts as unset.

Not supported, so refused with ``ValueError``: any other option (named in the message), MPMD
(``prog1 : prog2``; a lone ``:`` in the program part is refused unless it follows ``--``) and
an option given twice (``-n 2 -np 4``).  Hydra itself rejects ``--``; Open MPI accepts it.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from testbed.service.protocol import (
    MAX_RANKS,
    Submit,
    parse_request,
    valid_env_name,
    valid_job_class,
    valid_user_label,
)
from testbed.sizes import parse_size

MAX_SOCKET_PATH = 107
"""Longest AF_UNIX socket path on Linux, in bytes (``sun_path`` is 108 with its NUL)."""

ENV_VARS = {
    "limit": "TESTBED_LIMIT",
    "class": "TESTBED_CLASS",
    "mem": "TESTBED_MEM",
    "user": "TESTBED_USER",
    "socket": "TESTBED_SOCKET",
}
"""The environment variable that gives each testbed option when the command line does not."""

CLIENT_ENV_SKIPPED = ("TESTBED_RUN", "TESTBED_JOB", "TESTBED_SOCKET", "TESTBED_LIMIT",
                      "TESTBED_CLASS", "TESTBED_MEM", "TESTBED_USER")
"""The client's variables the ranks do not inherit: the testbed's own."""

# option name (without dashes) -> kind
_OPTIONS: dict[str, str] = {
    "n": "ranks", "np": "ranks", "c": "ranks",
    "genv": "env", "env": "env",
    "x": "export",
    "genvlist": "envlist", "envlist": "envlist",
    "wdir": "wdir", "wd": "wdir",
    "ppn": "ppn",
    "hosts": "hosts", "host": "hosts", "H": "hosts",
    "f": "hosts", "hostfile": "hosts", "machinefile": "hosts",
    "bind-to": "ignored", "map-by": "ignored",
    "oversubscribe": "flag", "allow-run-as-root": "flag",
    "testbed-limit": "limit", "testbed-class": "class", "testbed-mem": "mem",
    "testbed-user": "user", "testbed-socket": "socket",
}
# kinds taking exactly one value, so that -opt=VALUE is allowed
_ONE_VALUE = {"ranks", "envlist", "wdir", "ppn", "hosts", "ignored", "limit", "class", "mem",
              "user", "socket"}
# kinds that may be given once only (envs accumulate; ignored ones are just recorded)
_ONCE = {"ranks", "wdir", "ppn", "limit", "class", "mem", "user", "socket"}
_COUNT = re.compile(r"\d{1,9}")

_KNOWN = ("-n/-np/-c N, -genv/-env NAME VALUE, -x NAME[=VALUE], -genvlist/-envlist A,B, "
          "-wdir/-wd DIR, -ppn N, -hosts/-host/-H LIST, -f/-hostfile/-machinefile FILE, "
          "-bind-to X, -map-by X, --oversubscribe, --allow-run-as-root, --testbed-limit S, "
          "--testbed-class NAME, --testbed-mem SIZE, --testbed-user NAME, "
          "--testbed-socket PATH")


@dataclass(frozen=True)
class MpirunRequest:
    """What an mpirun/mpiexec command line asks for.

    ``ranks``: ranks (PEs), >= 1; ``argv``: the program and its arguments; ``env``: the
    variables the options set (only those); ``cwd``: absolute working directory;
    ``limit``: seconds of runtime before the job is killed, or None; ``job_class``: class name
    ("" for the server's default); ``mem_mb``: memory per rank in MiB, or None;
    ``user_label``: "" unless given; ``socket``: the server socket path, or None for the
    default; ``ignored``: the options accepted but ignored, as written (plus ``-x NAME (not
    set)`` entries).  Not hashable (``env`` is a dict)."""

    ranks: int
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    limit: float | None
    job_class: str
    mem_mb: float | None
    user_label: str
    socket: str | None
    ignored: tuple[str, ...]

    def note(self) -> str | None:
        """One line about the ignored options for the caller to print (to stderr), or None
        when nothing was ignored."""
        if not self.ignored:
            return None
        return (f"testbed mpirun: ignored: {'; '.join(self.ignored)}. The testbed runs every "
                "rank on this host, placed by its scheduler.")

    def to_submit(self, follow: bool = True) -> Submit:
        """The ``Submit`` request for this job, checked as the server will check it
        (``ProtocolError``, a ``ValueError``, naming the field otherwise); ``follow`` True
        for mpirun/mpiexec, which wait for the output and the exit code."""
        request = Submit(self.argv, self.ranks, dict(self.env), self.cwd, self.limit,
                         self.user_label, self.job_class, self.mem_mb, follow)
        checked = parse_request(request.to_message())
        assert isinstance(checked, Submit)
        return checked


def _count(text: str, option: str, what: str) -> int:
    if not _COUNT.fullmatch(text) or not 1 <= int(text) <= MAX_RANKS:
        raise ValueError(f"{option} needs a whole number of {what} from 1 to {MAX_RANKS}, "
                         f"got {text!r}")
    return int(text)


def _env_name(name: str, option: str) -> str:
    if not valid_env_name(name):
        raise ValueError(f"{option}: {name!r} is not a valid environment variable name")
    return name


def _limit(text: str, source: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{source}: not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{source}: the limit must be a finite number of seconds > 0, "
                         f"got {text!r}")
    return value


def _mem_mb(text: str, source: str) -> float:
    try:
        return parse_size(text) / 2**20
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None


def _job_class(text: str, source: str) -> str:
    if not valid_job_class(text):
        raise ValueError(f"{source}: not a class name: {text!r} (letters, digits, '_', '.', "
                         "'-'; at most 64)")
    return text


def _user(text: str, source: str) -> str:
    if not valid_user_label(text):
        raise ValueError(f"{source}: not a user label: {text!r} (no spaces or control "
                         "characters; at most 64)")
    return text


def _socket(text: str, source: str) -> str:
    if not text or "\0" in text:
        raise ValueError(f"{source}: not a socket path: {text!r}")
    if len(text.encode("utf-8", "surrogateescape")) > MAX_SOCKET_PATH:
        raise ValueError(f"{source}: socket path longer than {MAX_SOCKET_PATH} bytes: {text!r}")
    return text


_TESTBED_VALUES = {"limit": _limit, "class": _job_class, "mem": _mem_mb, "user": _user,
                   "socket": _socket}


def parse_mpirun(argv: Sequence[str], environ: Mapping[str, str], cwd: str) -> MpirunRequest:
    """The job an mpirun/mpiexec command line asks for (see the module docstring).

    ``argv``: the words after ``mpirun``/``mpiexec``; ``environ``: the caller's environment
    (for ``-x NAME``, ``-genvlist`` and the ``TESTBED_*`` defaults); ``cwd``: the caller's
    absolute working directory (the default working directory, and what a relative ``-wdir``
    is relative to).  Raises ``ValueError`` with a message naming the option for an unknown
    option, a missing or bad value, an option given twice, no program, or MPMD ``:``."""
    if not cwd.startswith("/"):
        raise ValueError(f"the working directory must be absolute, got {cwd!r}")
    words = list(argv)
    env: dict[str, str] = {}
    ignored: list[str] = []
    given: dict[str, str] = {}   # kind -> the option word that gave it
    values: dict[str, object] = {}
    program: list[str] = []
    after_dashes = False
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            program, after_dashes = words[i + 1:], True
            break
        if not word.startswith("-"):
            program = words[i:]
            break
        body = word[2:] if word.startswith("--") else word[1:]
        name, equals, inline = body.partition("=")
        kind = _OPTIONS.get(name)
        option = word.partition("=")[0]
        if kind is None:
            raise ValueError(f"unknown mpirun option {option!r} (testbed mpirun understands "
                             f"{_KNOWN}; a program whose name starts with '-' goes after "
                             "'--')")
        if equals and kind not in _ONE_VALUE:
            raise ValueError(f"{option} does not take '=VALUE' (write {option} "
                             f"{'NAME VALUE' if kind == 'env' else 'NAME=VALUE'})")
        if kind in _ONCE:
            if kind in given:
                raise ValueError(f"{option}: given twice (already by {given[kind]} earlier)")
            given[kind] = option
        i += 1
        value = ""
        if kind in _ONE_VALUE or kind in ("env", "export"):
            if equals:
                value = inline
            elif i < len(words):
                value, i = words[i], i + 1
            else:
                raise ValueError(f"{option} needs a value")
        if kind == "ranks":
            values["ranks"] = _count(value, option, "ranks")
        elif kind == "env":
            env_name, has_value, env_value = value.partition("=")
            if not has_value:
                if i >= len(words):
                    raise ValueError(f"{option} {value} needs a value")
                env_value = words[i]
                i += 1
            env[_env_name(env_name, option)] = env_value
        elif kind == "export":
            env_name, has_value, env_value = value.partition("=")
            _env_name(env_name, option)
            if has_value:
                env[env_name] = env_value
            elif env_name in environ:
                env[env_name] = environ[env_name]
            else:
                ignored.append(f"{option} {env_name} (not set)")
        elif kind == "envlist":
            for env_name in value.split(","):
                _env_name(env_name, option)
                if env_name in environ:
                    env[env_name] = environ[env_name]
                else:
                    ignored.append(f"{option} {env_name} (not set)")
        elif kind == "wdir":
            if not value or "\0" in value:
                raise ValueError(f"{option} needs a directory, got {value!r}")
            values["wdir"] = posixpath.join(cwd, value)
        elif kind == "ppn":
            _count(value, option, "processes per node")
            ignored.append(word if equals else f"{word} {value}")
        elif kind in ("hosts", "ignored"):
            ignored.append(word if equals else f"{word} {value}")
        elif kind == "flag":
            ignored.append(word)
        else:
            values[kind] = _TESTBED_VALUES[kind](value, option)
    if not program:
        where = "after '--'" if after_dashes else "(usage: mpirun [-n N] [options] PROGRAM " \
                                                 "[ARGS...])"
        raise ValueError(f"no program given {where}")
    if not after_dashes and ":" in program:
        raise ValueError("MPMD (several programs separated by ':') is not supported: submit "
                         "one program per job (put ':' after '--' if it is an argument)")
    for kind, variable in ENV_VARS.items():
        text = environ.get(variable, "")
        if kind not in values and text:
            values[kind] = _TESTBED_VALUES[kind](text, variable)
    ranks = values.get("ranks", 1)
    limit = values.get("limit")
    mem_mb = values.get("mem")
    socket = values.get("socket")
    assert isinstance(ranks, int)
    assert limit is None or isinstance(limit, float)
    assert mem_mb is None or isinstance(mem_mb, float)
    assert socket is None or isinstance(socket, str)
    return MpirunRequest(
        ranks=ranks,
        argv=tuple(program),
        env=env,
        cwd=str(values.get("wdir", cwd)),
        limit=limit,
        job_class=str(values.get("class", "")),
        mem_mb=mem_mb,
        user_label=str(values.get("user", "")),
        socket=socket,
        ignored=tuple(ignored),
    )


def job_environment(request: MpirunRequest, environ: Mapping[str, str]) -> dict[str, str]:
    """What the ranks get on top of the service's environment: the client's environment
    ``environ`` (as Hydra passes the whole environment on), without the testbed's own
    variables, then the variables the mpirun options set."""
    env = {k: v for k, v in environ.items()
           if valid_env_name(k) and k not in CLIENT_ENV_SKIPPED and "\0" not in v}
    env.update(request.env)
    return env
