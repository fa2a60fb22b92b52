"""MPI semantics under every scheduler: mpi4py's own test suite, compared with plain ``mpiexec``.

A scheduler must never change what a program does.  This benchmark runs a public MPI test
suite we did not write, the ``test/`` directory of mpi4py's source distribution at the version
of the installed mpi4py, on ``RANKS`` ranks in several *modes* and compares every test's
outcome with the reference mode ``plain``:

* ``plain``: ``mpiexec -n 2`` (the MPI that mpi4py loads), the reference, allowed to place
  more processes than the machine has cores (``PLAIN_ENV``: Open MPI refuses otherwise, and
  test_spawn's children then fail, where the testbed, whose matrix oversubscribes, lets them
  run; mpi4py's own CI runs Open MPI so);
* ``S`` for a scheduler ``S`` of ``testbed.policies``: ``testbed exec -n 2 --scheduler S``
  (``prime`` with ``--prime-shift 0.5``: a job without an estimate waits for non-prime time,
  which would otherwise begin after 12 h);
* ``mpirun-S``: ``testbed mpirun -np 2`` into a ``testbed serve --scheduler S`` started for the
  mode (the service a suite's ``MPIRUN`` would use);
* ``pair-S``: two copies of the suite at once, each running its modules one after another
  through ``testbed mpirun`` into one ``testbed serve --scheduler S`` (MPL 2), so that the
  copies share the machine (time-sliced under gang).

The suite runs one test module per job (``python test/main.py -v test_x``), so that a module
that crashes its job or hangs loses only itself.  Every rank runs under
``benchmarks/clients/rank_logs.py``, which sends its stdout and stderr to files of its own
(``rank-R.out``, ``rank-R.err``) and runs ``main.py`` unchanged; unittest's verbose lines
(``name (module.Class.name) ... ok``) in each rank's file give the outcome of each test on
each rank (``parse_log``): passed, failed, error, skipped, expected failure, unexpected
success, or none at all (``no outcome``; ``unfinished`` when the rank's runner never reached
its summary, as in a crash or a hang).  A subtest's failure is its own test id
(``module.Class.name (params)``).

Per mode: the outcome of every test id on every rank (``not run`` where a rank printed none)
must equal plain's, and each module's exit code plain's; every difference is listed by test
id.  Counts: ``passed`` (every rank passed or failed as expected), ``failed`` (a failure, an
error or an unexpected success on some rank), ``skipped`` (skipped on every rank), ``other``
(anything else: mixed, unfinished, not run).  Wall time: the sum of the mode's module runs
(s; a pair's from the first start to the last end), and its ratio to plain's for the same
work (a pair's to twice plain's), flagged ``slow`` above ``TIME_LIMIT``.  A module run still
going after ``--timeout`` seconds (default: ``TIMEOUT_FACTOR`` times plain's time for that
module, at least ``MIN_TIMEOUT_S``) is a hang: its process group gets SIGTERM (the testbed's
commands then stop what they started), and SIGKILL ``GRACE_S`` seconds later if it is still
there; the tests its ranks were in are reported.

``--mpi here,openmpi,impi`` runs it under several MPIs, each against its own plain
``mpiexec``: ``here`` is the MPI this Python's mpi4py loads, any other NAME the environment
``.venv-NAME`` beside this checkout (``scripts/setup-mpi NAME`` makes it), driven through its
own Python (``.venv-NAME/bin/python -m benchmarks.programs.conformance ...``, its ``bin/`` first on
``PATH``; as root with Open MPI's permission to run as root).  The JSON then holds one document
per MPI under ``mpis`` and the page a section each.

The suite is fetched once, on first use, by ``pip download mpi4py==VERSION --no-binary
mpi4py`` (the sdist; its SHA-256 checked where ``SDIST_SHA256`` knows it, its ``PKG-INFO``
version always), and its ``test/`` kept under ``$XDG_CACHE_HOME/testbed`` (``~/.cache/testbed``)
or ``--cache DIR``; ``--suite DIR`` uses a ``test/`` directory at hand instead.

Usage: ``python -m benchmarks.programs.conformance [--quick] [--modes plain,gang,...] [--modules
test_a,test_b] [--tests PATTERN] [--timeout S] [--mpi here,NAME,...] [--runs DIR] [--json
PATH|-] [--markdown PAGE] [--suite DIR] [--cache DIR]``.  ``--quick``: ``QUICK_MODULES`` under
``QUICK_MODES``.  The exit code is 0 when every mode is identical to plain, 1 otherwise.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    CLIENTS,
    REPO,
    Session,
    commit_of,
    default_out,
    emit,
    host,
    markdown_table,
    now_iso,
    page_head,
    parser,
    table,
    write_whole,
)
from testbed.emulation.mpi_info import detect_mpi
from testbed.policies import POLICIES

ROOT = REPO
RANK_LOGS = CLIENTS / "rank_logs.py"
RANKS = 2
TIME_LIMIT = 3.0
TIMEOUT_FACTOR = 10.0
MIN_TIMEOUT_S = 60.0
PLAIN_TIMEOUT_S = 900.0
GRACE_S = 30.0
SERVICE_START_S = 60.0
SDIST_SHA256 = {"4.1.2": "56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02"}
QUICK_MODULES = ("test_p2p_buf", "test_p2p_obj", "test_p2p_buf_matched", "test_request",
                 "test_cco_buf", "test_cco_nb_buf", "test_cco_pr_buf", "test_cco_obj",
                 "test_comm", "test_rma", "test_rma_nb")
QUICK_MODES = ("plain", "gang", "ics", "fcs")
PLAIN_ENV = {"PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe"}
MODE_OPTIONS = {"prime": ("--prime-shift", "0.5")}
NOT_RUN = "not run"
STATUSES = {"ok": "passed", "FAIL": "failed", "ERROR": "error",
            "expected failure": "expected failure", "unexpected success": "unexpected success"}
SEPARATOR = re.compile(r"^(=|-){70}$")
RAN = re.compile(r"^Ran (\d+) tests? in ")
START = re.compile(r"^(?P<sub>  )?(?P<name>\w+) \((?P<where>[\w.]+)\)(?P<params> \(.*?\))?"
                   r"(?: \.\.\. (?P<status>.*))?$")


class SuiteUnavailable(RuntimeError):
    """mpi4py's test suite could not be obtained; the message says why."""


def cache_dir() -> Path:
    """Where fetched suites are kept: ``$XDG_CACHE_HOME/testbed``, else ``~/.cache/testbed``."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "testbed"


def installed_mpi4py() -> str:
    """The version of the installed mpi4py (its distribution's metadata)."""
    return importlib.metadata.version("mpi4py")


def obtain_suite(cache: Path, version: str) -> tuple[Path, dict[str, str]]:
    """The ``test/`` directory of mpi4py ``version``'s source distribution, and where it came
    from (version, file, SHA-256).  Kept as ``cache/mpi4py-VERSION-test``; on first use the
    sdist is fetched with ``pip download`` into a temporary directory under ``cache``, checked
    (SHA-256 when ``SDIST_SHA256`` knows the version, ``PKG-INFO``'s version) and its
    ``test/`` extracted, one process at a time (a lock file in ``cache``); raises
    ``SuiteUnavailable`` when that fails."""
    target = cache / f"mpi4py-{version}-test"
    source_file = cache / f"mpi4py-{version}-test.json"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".mpi4py-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "main.py").is_file() and source_file.is_file():
            return target, json.loads(source_file.read_text())
        with tempfile.TemporaryDirectory(prefix=".mpi4py-sdist-", dir=cache) as tmp:
            digest = _fetch_test_dir(version, Path(tmp), target)
        source = {"version": version, "file": f"mpi4py-{version}.tar.gz", "sha256": digest,
                  "from": "pip download (PyPI)"}
        source_file.write_text(json.dumps(source, indent=2) + "\n")
    return target, source


def _fetch_test_dir(version: str, tmp: Path, target: Path) -> str:
    """Download mpi4py ``version``'s sdist into ``tmp``, check it, move its ``test/`` to
    ``target``; its SHA-256."""
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                           "mpi4py", "--dest", str(tmp), f"mpi4py=={version}"],
                          capture_output=True, text=True)
    top = f"mpi4py-{version}"
    sdist = tmp / f"{top}.tar.gz"
    if done.returncode != 0 or not sdist.is_file():
        raise SuiteUnavailable(f"pip download mpi4py=={version} failed:\n"
                               + (done.stderr.strip() or done.stdout.strip()))
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if SDIST_SHA256.get(version, digest) != digest:
        raise SuiteUnavailable(f"{sdist.name}: SHA-256 {digest}, expected "
                               f"{SDIST_SHA256[version]}")
    try:
        with tarfile.open(sdist) as tar:
            info = tar.extractfile(f"{top}/PKG-INFO")
            found = re.search(r"^Version: (\S+)$", info.read().decode() if info else "",
                              re.MULTILINE)
            if found is None or found.group(1) != version:
                raise SuiteUnavailable(f"{sdist.name}: PKG-INFO says version "
                                       f"{found.group(1) if found else '(none)'}")
            members = [m for m in tar.getmembers() if m.name.startswith(f"{top}/test/")
                       and (m.isfile() or m.isdir()) and ".." not in Path(m.name).parts]
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(tmp, members=members, **safe)
    except (KeyError, tarfile.TarError) as err:
        raise SuiteUnavailable(f"{sdist.name}: not an sdist with PKG-INFO and test/: {err}") \
            from None
    if not (tmp / top / "test" / "main.py").is_file():
        raise SuiteUnavailable(f"{sdist.name}: no test/main.py in it")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp / top / "test", target)
    return digest


def suite_modules(suite: Path) -> list[str]:
    """The suite's test modules (``test_*.py``), by name, sorted."""
    return sorted(p.stem for p in suite.glob("test_*.py"))


def _outcome(status: str) -> str | None:
    status = status.strip()
    if status.startswith("skipped"):
        return "skipped"
    return STATUSES.get(status)


def _test_id(name: str, where: str, params: str | None) -> str:
    base = where if where.endswith(f".{name}") else f"{name} ({where})"
    return base + (params or "")


@dataclass
class RankLog:
    """What one rank's runner printed: the outcome of each test id, and whether it reached its
    summary (``Ran N tests``) and with how many tests."""

    outcomes: dict[str, str] = field(default_factory=dict)
    finished: bool = False
    ran: int | None = None


def parse_log(text: str) -> RankLog:
    """The outcomes in one rank's unittest verbose output (``main.py -v``): per test id
    (``module.Class.name``, a subtest's with `` (params)``) one of ``STATUSES``' outcomes or
    ``skipped``; ``unfinished`` for the test the runner was in when its output ended before
    the summary, ``no outcome`` for a test whose status line never came.  A test whose
    subtests reported their failures and that printed no status of its own has no entry (its
    subtests have).  Lines that are not the runner's (a test's own output, banners) are
    skipped."""
    log = RankLog()
    pending: str | None = None
    with_subtests: set[str] = set()

    def settle(final: str) -> None:
        if pending is not None and pending not in with_subtests:
            log.outcomes[pending] = final

    for line in text.splitlines():
        ran = RAN.match(line)
        if ran:
            log.finished, log.ran = True, int(ran.group(1))
            break
        if SEPARATOR.match(line):
            settle("no outcome")
            pending = None
            continue
        start = START.match(line)
        if start is not None:
            test = _test_id(start["name"], start["where"], start["params"])
            status = _outcome(start["status"]) if start["status"] is not None else None
            if start["sub"]:
                with_subtests.add(_test_id(start["name"], start["where"], None))
                if status is not None:
                    log.outcomes[test] = status
                continue
            settle("no outcome")
            pending = None
            if status is not None:
                log.outcomes[test] = status
            else:
                pending = test
            continue
        if pending is not None:
            status = _outcome(line.rpartition(" ... ")[2] if " ... " in line else line)
            if status is not None:
                log.outcomes[pending] = status
                pending = None
    settle("no outcome" if log.finished else "unfinished")
    return log


@dataclass
class ModuleRun:
    """One test module run in one mode (``copy``: which copy, from 1): wall seconds, the
    launcher's exit code, whether it was stopped at the timeout, and each rank's log."""

    module: str
    copy: int
    seconds: float
    exit_code: int | None
    timed_out: bool
    ranks: list[RankLog]

    def as_dict(self) -> dict[str, Any]:
        """The run as plain data (seconds in s)."""
        return {"module": self.module, "copy": self.copy, "seconds": round(self.seconds, 3),
                "exit_code": self.exit_code, "timed_out": self.timed_out,
                "ranks_finished": [r.finished for r in self.ranks],
                "ran": [r.ran for r in self.ranks]}


def outcomes(runs: list[ModuleRun]) -> dict[str, tuple[str, ...]]:
    """Per test id, its outcome on each rank (``NOT_RUN`` where a rank printed none), over the
    module runs of one copy."""
    found: dict[str, tuple[str, ...]] = {}
    for run in runs:
        ids = sorted({t for rank in run.ranks for t in rank.outcomes})
        for test in ids:
            found[test] = tuple(rank.outcomes.get(test, NOT_RUN) for rank in run.ranks)
    return found


def category(result: tuple[str, ...]) -> str:
    """A test's outcome over its ranks in one word: ``failed`` (a failure, an error or an
    unexpected success on some rank), ``skipped`` (skipped on every rank), ``passed`` (every
    rank passed or failed as expected), else ``other``."""
    if any(r in ("failed", "error", "unexpected success") for r in result):
        return "failed"
    if all(r == "skipped" for r in result):
        return "skipped"
    if all(r in ("passed", "expected failure") for r in result):
        return "passed"
    return "other"


def counts(found: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """How many tests there are and how many fall in each ``category``."""
    tally = {"tests": len(found), "passed": 0, "failed": 0, "skipped": 0, "other": 0}
    for result in found.values():
        tally[category(result)] += 1
    return tally


def differences(reference: dict[str, tuple[str, ...]], other: dict[str, tuple[str, ...]],
                ranks: int = RANKS) -> list[dict[str, Any]]:
    """Every test id whose per-rank outcomes differ between ``reference`` and ``other``
    (``NOT_RUN`` on every rank where one has no entry), sorted by id: test, reference's
    outcomes, other's."""
    missing = (NOT_RUN,) * ranks
    return [{"test": t, "plain": list(reference.get(t, missing)),
             "mode": list(other.get(t, missing))}
            for t in sorted(set(reference) | set(other))
            if reference.get(t, missing) != other.get(t, missing)]


def exit_differences(reference: list[ModuleRun], other: list[ModuleRun]) -> list[dict[str, Any]]:
    """Modules whose exit code differs from the reference's (None: stopped at the timeout)."""
    codes = {run.module: run.exit_code for run in reference}
    return [{"module": run.module, "plain": codes[run.module], "mode": run.exit_code}
            for run in other if run.module in codes and codes[run.module] != run.exit_code]


def hangs(runs: list[ModuleRun]) -> list[dict[str, Any]]:
    """The module runs stopped at the timeout, with the tests each rank was in (its
    ``unfinished`` test, if any)."""
    return [{"module": run.module, "copy": run.copy, "seconds": round(run.seconds, 1),
             "running": [next((t for t, o in rank.outcomes.items() if o == "unfinished"), None)
                         for rank in run.ranks]}
            for run in runs if run.timed_out]


@dataclass(frozen=True)
class Mode:
    """How the suite is launched: ``launch`` is ``plain`` (mpiexec), ``exec`` (testbed exec),
    ``mpirun`` (testbed mpirun into a service) or ``pair`` (two such clients at once), under
    ``scheduler`` (None for plain) with extra testbed ``options``."""

    name: str
    launch: str
    scheduler: str | None
    options: tuple[str, ...] = ()

    @property
    def copies(self) -> int:
        """How many copies of the suite run at once."""
        return 2 if self.launch == "pair" else 1


def parse_mode(name: str) -> Mode:
    """The mode called ``name``: ``plain``, ``S``, ``mpirun-S`` or ``pair-S`` for a scheduler
    ``S``; raises ``ValueError`` for any other name."""
    if name == "plain":
        return Mode(name, "plain", None)
    launch, _, scheduler = name.rpartition("-")
    if launch not in ("", "mpirun", "pair") or scheduler not in POLICIES:
        raise ValueError(f"unknown mode {name!r}: plain, S, mpirun-S or pair-S for S in "
                         f"{', '.join(POLICIES)}")
    return Mode(name, launch or "exec", scheduler, MODE_OPTIONS.get(scheduler, ()))


def all_modes() -> list[str]:
    """Every mode of the full run: plain, each scheduler under ``testbed exec``, gang and ics
    through a service, and two copies at once under gang and ics."""
    return ["plain", *POLICIES, "mpirun-gang", "mpirun-ics", "pair-gang", "pair-ics"]


def testbed_command() -> list[str]:
    """The ``testbed`` command installed beside this Python (what a suite's ``MPIRUN`` runs),
    else ``python -m testbed``."""
    script = Path(sys.executable).with_name("testbed")
    return [str(script)] if script.exists() else [sys.executable, "-m", "testbed"]


def stop_group(proc: subprocess.Popen[bytes], grace: float = GRACE_S) -> None:
    """Stop the process group ``proc`` leads (started with ``start_new_session``): SIGTERM,
    then SIGKILL if its leader is still there after ``grace`` seconds; reaps the leader."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def run_logged(argv: list[str], directory: Path, env: dict[str, str],
               timeout: float) -> tuple[float, int | None, bool]:
    """Run ``argv`` in ``directory`` (its output to ``launcher.out`` and ``launcher.err``
    there) in a session of its own; stop its group at ``timeout`` seconds.  Returns the wall
    seconds, the exit code (None when stopped) and whether it was stopped."""
    began = time.monotonic()
    with open(directory / "launcher.out", "wb") as out, \
            open(directory / "launcher.err", "wb") as err:
        proc = subprocess.Popen(argv, cwd=directory, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return time.monotonic() - began, None, True
        except BaseException:
            stop_group(proc)
            raise
    return time.monotonic() - began, proc.returncode, False


def read_ranks(directory: Path, ranks: int = RANKS) -> list[RankLog]:
    """Each rank's log in ``directory`` (``rank-R.err``), parsed; an empty one where a rank
    wrote none."""
    logs = []
    for rank in range(ranks):
        path = directory / f"rank-{rank}.err"
        logs.append(parse_log(path.read_text(errors="replace")) if path.exists() else RankLog())
    return logs


@dataclass
class Suite:
    """The suite to run: its ``test/`` directory, the unittest arguments every module run
    gets, and the MPI's ``mpiexec``."""

    directory: Path
    extra: tuple[str, ...]
    mpiexec: str

    def program(self, logs: Path, module: str) -> list[str]:
        """The command line of one rank running ``module``, its output going under ``logs``."""
        return [sys.executable, str(RANK_LOGS), str(logs), str(self.directory / "main.py"),
                "-v", *self.extra, module]


def run_module(suite: Suite, mode: Mode, module: str, directory: Path, copy: int,
               timeout: float, env: dict[str, str]) -> ModuleRun:
    """Run ``module`` once in ``mode`` (plain or exec, or one copy's client of a service whose
    socket ``env`` names) with its files in ``directory``; read its ranks' logs."""
    directory.mkdir(parents=True)
    program = suite.program(directory, module)
    if mode.launch == "plain":
        argv = [suite.mpiexec, "-n", str(RANKS), *program]
        env = {**env, **PLAIN_ENV}
    elif mode.launch == "exec":
        argv = [*testbed_command(), "exec", "-n", str(RANKS), "--scheduler", str(mode.scheduler),
                *mode.options, "--out", str(directory / "run"), "--", *program]
    else:
        argv = [*testbed_command(), "mpirun", "-np", str(RANKS), *program]
    seconds, code, timed_out = run_logged(argv, directory, env, timeout)
    return ModuleRun(module, copy, seconds, code, timed_out, read_ranks(directory))


@contextmanager
def service(mode: Mode,
            directory: Path) -> Iterator[tuple[dict[str, str], subprocess.Popen[bytes]]]:
    """A ``testbed serve`` of ``mode``'s scheduler on a private socket, its run directory
    ``directory/service``; yields the environment that points ``testbed mpirun`` at it and the
    service's process.  At the end it gets SIGTERM (it stops what still runs) and, if it is
    still there after ``GRACE_S`` seconds, its group SIGKILL (its watchdog then kills the
    ranks)."""
    sockets = Path(tempfile.mkdtemp(prefix="testbed-conformance-"))
    sock = sockets / "s.sock"
    run = directory / "service"
    with open(directory / "service.out", "wb") as out, \
            open(directory / "service.err", "wb") as err:
        proc = subprocess.Popen([*testbed_command(), "serve", "--scheduler", str(mode.scheduler),
                                 *mode.options, "--socket", str(sock), "--out", str(run)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + SERVICE_START_S
        while not (sock.exists() and (run / "events.jsonl").exists()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"testbed serve did not start (see {directory}/service.err)")
            time.sleep(0.05)
        yield dict(os.environ, TESTBED_SOCKET=str(sock)), proc
    finally:
        stop_group(proc)
        shutil.rmtree(sockets, ignore_errors=True)


def run_mode(suite: Suite, mode: Mode, modules: list[str], directory: Path,
             timeouts: dict[str, float]) -> tuple[list[list[ModuleRun]], float, str | None]:
    """Run ``modules`` in ``mode`` under ``directory/COPY/MODULE`` (each module's timeout from
    ``timeouts``, s, times the copies); returns each copy's module runs, the mode's wall
    seconds (a copy's module runs run one after another; copies run at once) and what went
    wrong with the mode itself (a service that ended early: ``testbed mpirun`` would then run
    the remaining modules under coordinators of their own, so they are not run), or None."""
    directory.mkdir(parents=True)
    results: list[list[ModuleRun]] = [[] for _ in range(mode.copies)]
    stopping = threading.Event()

    def copy_runs(copy: int, env: dict[str, str], server: subprocess.Popen[bytes] | None) -> None:
        for module in modules:
            if stopping.is_set() or (server is not None and server.poll() is not None):
                return
            run = run_module(suite, mode, module, directory / str(copy) / module, copy,
                             timeouts[module] * mode.copies, env)
            results[copy - 1].append(run)
            state = "TIMEOUT" if run.timed_out else f"exit {run.exit_code}"
            print(f"[{mode.name}{f' copy {copy}' if mode.copies > 1 else ''}] {module}: "
                  f"{run.seconds:.1f} s, {state}", file=sys.stderr, flush=True)

    if mode.launch in ("plain", "exec"):
        began = time.monotonic()
        copy_runs(1, dict(os.environ), None)
        return results, time.monotonic() - began, None
    with service(mode, directory) as (env, server):
        began = time.monotonic()
        threads = [threading.Thread(target=copy_runs, args=(copy, env, server))
                   for copy in range(1, mode.copies + 1)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        except BaseException:
            stopping.set()
            raise
        wall = time.monotonic() - began
        if server.poll() is not None:
            return results, wall, (f"testbed serve ended early (exit {server.returncode}, see "
                                   f"{directory}/service.err); later modules not run")
        return results, wall, None


def summarise(mode: Mode, copies: list[list[ModuleRun]], wall_s: float,
              plain: list[ModuleRun], plain_wall_s: float,
              error: str | None = None) -> dict[str, Any]:
    """The record of one mode against plain's module runs (``plain``, ``plain_wall_s`` s):
    counts per copy, whether identical, the differences by test id and exit code, the hangs,
    what went wrong with the mode itself (``error``), the wall time and its ratio to plain's
    for the same work."""
    reference = outcomes(plain)
    per_copy = []
    for runs in copies:
        found = outcomes(runs)
        per_copy.append({"counts": counts(found), "differences": differences(reference, found),
                         "exit_differences": exit_differences(plain, runs),
                         "hangs": hangs(runs), "runs": [r.as_dict() for r in runs]})
    ratio = wall_s / (plain_wall_s * mode.copies) if plain_wall_s > 0 else None
    return {"mode": mode.name, "launch": mode.launch, "scheduler": mode.scheduler,
            "options": list(mode.options), "copies": per_copy, "wall_s": round(wall_s, 2),
            "ratio": None if ratio is None else round(ratio, 3),
            "slow": ratio is not None and ratio > TIME_LIMIT, "error": error,
            "identical": error is None and all(
                not (c["differences"] or c["exit_differences"] or c["hangs"]) for c in per_copy)}


def _outcome_text(result: list[str]) -> str:
    return result[0] if len(set(result)) == 1 else "|".join(result)


def module_of(test: str) -> str:
    """The module of a test id (``module.Class.name ...`` or ``setUpClass (module.Class)``)."""
    first = test.split(" ")[0]
    return (first if "." in first else test.partition("(")[2]).split(".")[0]


def difference_lines(record: dict[str, Any]) -> list[str]:
    """The differences of a mode's record, a line each: what went wrong with the mode, each
    hang, each differing exit code, each test whose outcomes differ (its id, its outcomes under
    plain and the mode, ``a|b`` for rank 0's and rank 1's); the tests of a module that no rank
    ran in the mode (after a crash or a hang) are counted in one line per module.  A pair's
    lines name the copy."""
    lines = [record["error"]] if record["error"] else []
    for number, copy in enumerate(record["copies"], start=1):
        where = f"copy {number}: " if len(record["copies"]) > 1 else ""
        for hang in copy["hangs"]:
            running = ", ".join(f"rank {r}: {t or '-'}" for r, t in enumerate(hang["running"]))
            lines.append(f"{where}{hang['module']}: HANG, stopped after {hang['seconds']} s "
                         f"({running})")
        for d in copy["exit_differences"]:
            lines.append(f"{where}{d['module']}: exit code {d['plain']} under plain, "
                         f"{'none (stopped)' if d['mode'] is None else d['mode']} here")
        unrun: dict[str, Counter[str]] = {}
        for d in copy["differences"]:
            if set(d["mode"]) == {NOT_RUN}:
                unrun.setdefault(module_of(d["test"]), Counter())[_outcome_text(d["plain"])] += 1
            else:
                lines.append(f"{where}{d['test']}: {_outcome_text(d['plain'])} under plain, "
                             f"{_outcome_text(d['mode'])} here")
        for module, plain in unrun.items():
            lines.append(f"{where}{module}: {sum(plain.values())} tests not run here (under "
                         "plain: " + ", ".join(f"{n} {o}" for o, n in plain.items()) + ")")
    return lines


def _row(record: dict[str, Any]) -> list[Any]:
    tally = record["copies"][0]["counts"]
    identical = ("reference" if record["launch"] == "plain" else
                 "yes" if record["identical"] else "NO")
    count = sum(len(c["differences"]) for c in record["copies"])
    if count:
        identical += f" ({count} tests differ)"
    notes = [f"{sum(len(c['hangs']) for c in record['copies'])} hangs"] if any(
        c["hangs"] for c in record["copies"]) else []
    if record["slow"]:
        notes.append(f"slow (> {TIME_LIMIT:g}x)")
    ratio = "-" if record["ratio"] is None else f"{record['ratio']:.2f}"
    return [record["mode"], len(record["copies"]), tally["tests"], tally["passed"],
            tally["failed"], tally["skipped"], tally["other"], identical,
            f"{record['wall_s']:.1f}", ratio, ", ".join(notes) or "-"]


HEADER = ["mode", "copies", "tests", "passed", "failed", "skipped", "other", "identical to plain",
          "wall s", "ratio", "notes"]


def render(doc: dict[str, Any]) -> str:
    """The table of the modes (counts of copy 1; a pair's copies are compared alike) and the
    differences of every mode that has any."""
    blocks = [table(HEADER, [_row(r) for r in doc["modes"]])]
    for record in doc["modes"]:
        lines = difference_lines(record)
        if lines:
            blocks.append(f"== {record['mode']}: {len(lines)} ==\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def render_all(doc: dict[str, Any]) -> str:
    """``render`` of a run under one MPI, or of each MPI of a run under several."""
    if "mpis" not in doc:
        return render(doc)
    return "\n\n".join(f"=== {one['mpi']['version']} ===\n{render(one)}" for one in doc["mpis"])


def identical(doc: dict[str, Any]) -> bool:
    """Whether every mode of every MPI of a run is identical to its plain."""
    return all(r["identical"] for one in doc.get("mpis", [doc]) for r in one["modes"])


def markdown(doc: dict[str, Any], command: str) -> str:
    """A Markdown page of a run: title, the command that wrote the page (``command``; and the
    one that ran the suite, when that was another), machine (host, MPI, mpi4py), the suite and
    settings, the table of the modes and every difference by mode; for a run under several
    MPIs, a section each after a table of what differed."""
    if "mpis" not in doc:
        return "\n".join(_page_lines(doc, command, "MPI semantics under every scheduler: "
                                      "mpi4py's test suite"))
    ran = [f"- run by `{doc['command']}`"] if doc["command"] != command else []
    summary = [[one["mpi"]["version"], sum(not r["identical"] for r in one["modes"]),
                len(one["modes"]) - 1] for one in doc["mpis"]]
    lines = [*page_head("MPI semantics under every scheduler and every MPI: mpi4py's test "
                        "suite", "benchmarks.programs.conformance", command, doc["host"],
                        f"{doc['date']}, {doc['wall_s']:.0f} s in all"), *ran,
             "- each MPI from its own environment, every mode against that MPI's plain "
             "`mpiexec`", "",
             *markdown_table(["MPI", "modes not identical to plain", "modes"], summary), ""]
    for one in doc["mpis"]:
        lines += _page_lines(one, command, one["mpi"]["version"], level="##")
    return "\n".join(lines)


def _page_lines(doc: dict[str, Any], command: str, title: str, level: str = "") -> list[str]:
    """The page of a run under one MPI: with ``level`` (``##``), as a section of a page whose
    head is written already."""
    mpi = doc["mpi"]
    suite = doc["suite"]
    ran = [f"- run by `{doc['command']}`"] if doc["command"] != command else []
    head = ([f"{level} {title}", "", f"- measured: {doc['date']}, {doc['wall_s']:.0f} s in all"]
            if level else page_head(title, "benchmarks.programs.conformance", command, doc["host"],
                                    f"{doc['date']}, {doc['wall_s']:.0f} s in all"))
    lines = [
        *head, *(ran if not level else []),
        f"- MPI: {mpi['version']} (MPI {mpi['standard']}, {mpi['library']}); mpi4py "
        f"{mpi['mpi4py']}",
        f"- testbed: commit {doc['commit']}",
        f"- suite: mpi4py {suite['version']} `test/` ({suite['from']}, {suite['file']}, "
        f"SHA-256 {suite['sha256']}), {len(doc['modules'])} modules, one job each on "
        f"{doc['ranks']} ranks: `{' '.join(['main.py', '-v', *doc['extra'], 'MODULE'])}`",
        f"- a mode is identical when every test id has plain's outcome on every rank and "
        f"every module plain's exit code; ratio: wall time over plain's for the same work "
        f"(a pair's over twice plain's), slow above {doc['time_limit']:g}x; a module run "
        f"still going at its timeout is a hang", "",
        *markdown_table(HEADER, [_row(r) for r in doc["modes"]]), ""]
    for record in doc["modes"]:
        found = difference_lines(record)
        if found:
            lines += [f"{level or '#'}# {record['mode']}", "", *(f"- `{line}`" for line in found),
                      ""]
    return lines


def _names(text: str, what: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    if not names:
        raise argparse.ArgumentTypeError(f"{what}: give at least one")
    return names


def measure(args: argparse.Namespace, p: argparse.ArgumentParser,
            session: Session) -> dict[str, Any] | None:
    """Obtain the suite and run it in every mode ``args`` choose; the JSON document (None when
    the suite cannot be obtained, which is said on stderr); ``session``: the command that ran
    it."""
    try:
        modes = [parse_mode(n) for n in dict.fromkeys(
            ["plain", *(args.modes or (QUICK_MODES if args.quick else all_modes()))])]
    except ValueError as err:
        p.error(str(err))
    if len(os.sched_getaffinity(0)) < RANKS:
        p.error(f"the suite runs on {RANKS} ranks: this machine has fewer CPUs")
    version = installed_mpi4py()
    if args.suite is not None:
        if not (args.suite / "main.py").is_file():
            p.error(f"--suite {args.suite}: no main.py there")
        directory, source = args.suite.resolve(), {"version": version, "file": str(args.suite),
                                                   "sha256": "-", "from": "--suite"}
    else:
        try:
            directory, source = obtain_suite(args.cache or cache_dir(), version)
        except SuiteUnavailable as err:
            print(f"conformance: {err}", file=sys.stderr)
            return None
    known = suite_modules(directory)
    modules = args.modules or (list(QUICK_MODULES) if args.quick else known)
    unknown = [m for m in modules if m not in known]
    if unknown:
        p.error(f"--modules: not in the suite: {', '.join(unknown)}")
    mpi = detect_mpi()
    extra = ("-k", args.tests) if args.tests else ()
    suite = Suite(directory, extra, mpi.mpiexec)
    runs = (args.runs or default_out("conformance")).resolve()
    began, date = time.monotonic(), now_iso()
    plain_runs, _, _ = run_mode(suite, modes[0], modules, runs / "plain",
                                {m: args.timeout or PLAIN_TIMEOUT_S for m in modules})
    plain = [r for r in plain_runs[0]
             if any(rank.outcomes for rank in r.ranks) or r.exit_code != 0]
    chosen = [r.module for r in plain]
    plain_wall = sum(r.seconds for r in plain)
    timeouts = {r.module: args.timeout or max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * r.seconds)
                for r in plain}
    records = [summarise(modes[0], [plain], plain_wall, plain, plain_wall)]
    for mode in modes[1:]:
        copies, wall, error = run_mode(suite, mode, chosen, runs / mode.name, timeouts)
        records.append(summarise(mode, copies, wall, plain, plain_wall, error))
    return {"benchmark": "conformance", "host": host(), "date": date,
            "command": session.command, "commit": commit_of(ROOT),
            "mpi": {"vendor": mpi.vendor, "version": mpi.name(),
                    "library": mpi.library, "standard": mpi.standard, "mpi4py": mpi.mpi4py},
            "suite": {**source, "directory": str(directory)}, "ranks": RANKS,
            "extra": list(extra), "modules": chosen, "time_limit": TIME_LIMIT,
            "timeouts_s": {m: round(t, 1) for m, t in timeouts.items()}, "runs": str(runs),
            "modes": records, "wall_s": round(time.monotonic() - began, 1)}


def environment(name: str) -> Path:
    """The ``bin/`` of the environment of MPI ``name`` (``.venv-NAME`` beside this checkout);
    ``ValueError`` saying how to make it when there is none."""
    bin_dir = ROOT / f".venv-{name}" / "bin"
    if not (bin_dir / "python").exists():
        raise ValueError(f"--mpi {name}: no {bin_dir.parent} (scripts/setup-mpi {name} makes it)")
    return bin_dir


def forwarded(args: argparse.Namespace) -> list[str]:
    """The options of ``args`` that choose what runs, for the same benchmark in another
    environment."""
    out = ["--quick"] if args.quick else []
    for flag, value in (("--modes", args.modes), ("--modules", args.modules)):
        if value:
            out += [flag, ",".join(value)]
    for flag, value in (("--tests", args.tests), ("--timeout", args.timeout),
                        ("--suite", args.suite), ("--cache", args.cache)):
        if value is not None:
            out += [flag, str(value)]
    return out


def measure_elsewhere(name: str, args: argparse.Namespace, runs: Path) -> dict[str, Any] | None:
    """Run this benchmark with ``args`` in MPI ``name``'s environment (its logs under
    ``runs/NAME``); its JSON document, or None (said on stderr) when it wrote none."""
    bin_dir = environment(name)
    out = runs / f"{name}.json"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "TESTBED_MPIEXEC")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    subprocess.run([str(bin_dir / "python"), "-m", "benchmarks.programs.conformance",
                    *forwarded(args),
                    "--runs", str(runs / name), "--json", str(out)], cwd=ROOT, env=env,
                   stdout=sys.stderr)
    if not out.exists():
        print(f"conformance: the run under {name} wrote no JSON (see {runs / name})",
              file=sys.stderr)
        return None
    return json.loads(out.read_text())


def measure_all(args: argparse.Namespace, p: argparse.ArgumentParser,
                session: Session) -> dict[str, Any] | None:
    """Run the benchmark under every MPI of ``--mpi``; one document holding each's (None when
    one could not be run); ``session``: the command that ran it."""
    try:
        for name in args.mpi:
            if name != "here":
                environment(name)
    except ValueError as err:
        p.error(str(err))
    runs = (args.runs or default_out("conformance")).resolve()
    runs.mkdir(parents=True, exist_ok=True)
    began, date = time.monotonic(), now_iso()
    docs = []
    for name in args.mpi:
        if name == "here":
            one = measure(argparse.Namespace(**{**vars(args), "runs": runs / "here"}), p, session)
        else:
            one = measure_elsewhere(name, args, runs)
        if one is None:
            return None
        docs.append(one)
    return {"benchmark": "conformance", "host": host(), "date": date,
            "command": session.command, "runs": str(runs),
            "mpis": docs, "wall_s": round(time.monotonic() - began, 1)}


def main(argv: list[str] | None = None) -> int:
    """Run the suite in every mode chosen (or read an earlier run's JSON with ``--from``),
    print the table and the differences and write the JSON (and the page); exit 0 when every
    mode is identical to plain, 1 when one is not, 2 when the suite cannot be obtained."""
    p = parser("benchmarks.programs.conformance",
               "mpi4py's test suite under every scheduler, against "
               "plain mpiexec", quick=f"modules {','.join(QUICK_MODULES)} under modes "
                                      f"{','.join(QUICK_MODES)}",
               json_help=None, out_help=None, markdown_help="also write a Markdown page")
    p.add_argument("--modes", type=lambda t: _names(t, "--modes"), default=None,
                   help="comma-separated: plain, S, mpirun-S, pair-S (plain always runs first; "
                        "default: plain, every scheduler, mpirun-gang, mpirun-ics, pair-gang, "
                        "pair-ics)")
    p.add_argument("--modules", type=lambda t: _names(t, "--modules"), default=None,
                   help="comma-separated test modules (default: all of the suite)")
    p.add_argument("--tests", default=None, metavar="PATTERN",
                   help="only tests matching PATTERN (unittest's -k)")
    p.add_argument("--timeout", type=float, default=None,
                   help=f"seconds a module run may take (default {TIMEOUT_FACTOR:g}x plain's, "
                        f"at least {MIN_TIMEOUT_S:g} s, per copy)")
    p.add_argument("--mpi", type=lambda t: _names(t, "--mpi"), default=None,
                   help="comma-separated MPIs to run under, each against its own plain: here "
                        "(the one this Python loads) or NAME (the environment .venv-NAME, "
                        "which scripts/setup-mpi NAME makes)")
    p.add_argument("--runs", type=Path, default=None,
                   help="directory for the logs and run directories (default "
                        "runs/conformance-TIME)")
    p.add_argument("--json", "--out", dest="json", default=None,
                   help="write the JSON here ('-': stdout, the table then goes to stderr; "
                        "default RUNS/conformance.json; with --from, only if given)")
    p.add_argument("--from", dest="source", type=Path, default=None, metavar="JSON",
                   help="read the JSON of an earlier run instead of running (its page and "
                        "table again)")
    p.add_argument("--suite", type=Path, default=None,
                   help="a test/ directory of mpi4py's sources to use instead of fetching it")
    p.add_argument("--cache", type=Path, default=None,
                   help="where the fetched suite is kept (default ~/.cache/testbed)")
    args = p.parse_args(argv)
    session = Session.start("benchmarks.programs.conformance", argv, None, None)
    if args.source is not None:
        try:
            doc = json.loads(args.source.read_text())
        except (OSError, ValueError) as err:
            p.error(f"--from {args.source}: {err}")
    else:
        measured = (measure_all if args.mpi else measure)(args, p, session)
        if measured is None:
            return 2
        doc = measured
    to_stdout = args.json == "-"
    print(render_all(doc), file=sys.stderr if to_stdout else sys.stdout)
    session.page(args.markdown, lambda: markdown(doc, session.command))
    if not emit([doc], to_stdout, indent=2) and (args.json or args.source is None):
        out = Path(args.json) if args.json else Path(doc["runs"]) / "conformance.json"
        write_whole(out, json.dumps(doc, indent=2) + "\n")
        print(f"JSON: {out}\nlogs: {doc['runs']}")
    return 0 if identical(doc) else 1


if __name__ == "__main__":
    raise SystemExit(main())
