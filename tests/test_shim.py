"""The spin-block shim with real MPI programs: counts, blocking, wake-up, the records."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROGRAMS, events, jobs_csv, run_testbed

from testbed.emulation import procs
from testbed.emulation.mpi_info import detect_mpi
from testbed.emulation.shim import EventSocket, library_path, mpicc
from testbed.policies.spin import Spin
from testbed.shim_record import Record, ffi, record_path

pytestmark = pytest.mark.realtime
BLOCKS = Spin("fixed", fixed_s=0.001)
CLIENTS = Path(__file__).parents[1] / "benchmarks" / "clients"
PATTERNS = {"rma_lock_all", "rma_put_get", "rma_fence_and_pscw", "rendezvous_send",
            "polled_across_barrier", "nonblocking_collective_across_barrier",
            "generalized_request", "comm_idup", "intercommunicator_collectives", "probes",
            "persistent", "partitioned", "unwrapped_collectives",
            "synchronous_send_late_receiver"}


def _shim_ranks(run_dir):
    ranks = {}
    for e in events(run_dir):
        if e["event"] == "counters":
            ranks.update({rank: values["shim"] for rank, values in e["ranks"].items()})
    return ranks


def test_shim_path_prints_a_built_library(tmp_path):
    done = run_testbed("shim", "--path", cwd=tmp_path)
    assert done.returncode == 0
    path = done.stdout.strip()
    assert os.path.exists(path) and path.endswith(".so")


def test_mpi4py_ringtest_runs_unmodified_and_is_counted(tmp_path):
    done = run_testbed("exec", "-n", "2", "--scheduler", "ics", "--out", "r", "--",
                       sys.executable, "-m", "mpi4py.bench", "ringtest", "-l", "50", "-s", "0",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ranks = _shim_ranks(tmp_path / "r")
    assert set(ranks) == {"0", "1"}
    for counters in ranks.values():
        assert counters["attached"] and counters["c_dc"] >= 100 and counters["c_cs"] == 0


def test_c_program_built_with_mpicc_runs_unmodified_and_is_counted(tmp_path):
    binary = tmp_path / "ring"
    subprocess.run([mpicc(detect_mpi()), "-O1", "-o", str(binary), str(PROGRAMS / "ring.c")],
                   check=True)
    done = run_testbed("exec", "-n", "2", "--scheduler", "ics", "--out", "r", "--",
                       str(binary), "40", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for counters in _shim_ranks(tmp_path / "r").values():
        assert counters["c_dc"] == 81  # 40 sends, 40 receives, 1 barrier


@contextlib.contextmanager
def _shimmed_job(program: str, *args: str, spins: list[Spin], nm_socket: str = "",
                 native_collectives: bool = False, run_id: str | None = None,
                 env: dict[str, str] | None = None,
                 **popen: object) -> Iterator[tuple[list[Record], subprocess.Popen]]:
    """Drive the shim as a node manager does: a record per rank, then ``mpiexec`` with the
    shim preloaded running ``program`` (``env`` added to the environment); afterwards no
    process or record is left."""
    mpi = detect_mpi()
    run_id = run_id or f"t{uuid.uuid4().hex[:8]}"
    records = [Record.create(record_path(run_id, "j1", r), r, "j1", r, nm_socket, spin,
                             native_collectives) for r, spin in enumerate(spins)]
    env = dict(os.environ, **(env or {}), TESTBED_RUN=run_id, TESTBED_JOB="j1")
    job = subprocess.Popen([mpi.mpiexec, "-n", str(len(spins)), "-genv", "LD_PRELOAD",
                            str(library_path(mpi)), sys.executable, str(PROGRAMS / program),
                            *args], env=env, start_new_session=True, **popen)
    try:
        yield records, job
    finally:
        procs.kill_marked(run_id)
        job.wait()
        for record in records:
            record.remove()


def test_a_rank_waiting_for_a_stopped_peer_blocks_and_wakes(tmp_path):
    """Drive the shim like a node manager does: records, a socket, a stopped peer."""
    run_id = f"t{uuid.uuid4().hex[:8]}"
    go = tmp_path / "go"
    spin = Spin("fixed", fixed_s=0.001)
    with (contextlib.closing(EventSocket(f"testbed-{run_id}-nm0")) as sock,
          _shimmed_job("wait_for_peer.py", str(go), spins=[spin, spin], nm_socket=sock.name,
                       run_id=run_id) as (records, job)):
        assert ffi.string(records[1].c.job) == b"j1" and records[1].c.rank == 1
        # Rank 0 is in its receive once its barrier has counted and it has blocked (an odd
        # block_seq: one more block than unblocks).  On a loaded machine either rank may also
        # block in the barrier first, and say so on the socket.
        deadline = time.monotonic() + 30
        first = records[0].counters()
        while not (first.blocked and first.block_seq % 2 and first.c_cs + first.c_dc == 1):
            assert time.monotonic() < deadline, first
            time.sleep(0.01)
            first = records[0].counters()
        assert first.attached and first.block_seq == 2 * first.blocks - 1
        # The record says "blocked" just before the datagram leaves: wait for the datagram.
        sent: list[tuple[bool, int]] = []
        while not sent or sent[-1][1] < first.block_seq:
            assert time.monotonic() < deadline, sent
            sent += [(b, seq) for i, b, seq in sock.read() if i == 0]
            time.sleep(0.01)
        assert sent == [(seq % 2 == 1, seq) for seq in range(1, first.block_seq + 1)]
        peer = records[1].counters().pid
        os.kill(peer, 19)  # SIGSTOP: the peer cannot send
        cpu0 = procs.cpu_seconds(first.pid)
        time.sleep(1.0)
        used = procs.cpu_seconds(first.pid) - cpu0
        # A spinning rank would use the whole second; benchmarks.overheads.shim_cost measures the
        # share.
        assert used < 0.1, f"a blocked rank used {used:.3f} s of CPU in 1 s"
        assert records[0].counters().blocked
        go.touch()
        os.kill(peer, 18)  # SIGCONT: now it sends
        assert job.wait(timeout=30) == 0
        last = records[0].counters()
        assert not last.blocked and last.blocked_s >= 1.0 and last.blocks == first.blocks
        assert [(b, seq) for i, b, seq in sock.read() if i == 0] == \
            [(False, first.block_seq + 1)]


def test_time_a_waiting_rank_spends_stopped_is_not_counted_as_wait(tmp_path):
    """THESIS §3.4: the node manager adds the stopped time before it continues the rank."""
    go = tmp_path / "go"
    spin = Spin("fixed", fixed_s=0.001)
    launched = time.monotonic()
    with _shimmed_job("wait_for_peer.py", str(go), spins=[spin, spin]) as (records, job):
        deadline = time.monotonic() + 30
        while not records[0].counters().blocked and time.monotonic() < deadline:
            time.sleep(0.01)
        waiter = records[0].counters().pid
        stopped_at = time.monotonic()
        os.kill(waiter, 19)
        time.sleep(1.0)
        records[0].add_stopped(time.monotonic() - stopped_at)
        os.kill(waiter, 18)
        go.touch()
        assert job.wait(timeout=30) == 0
        wall = time.monotonic() - launched
        last = records[0].counters()
        assert last.stopped_s >= 1.0
        # Without the exclusion the wait would be at least 1 s longer than all of this.
        assert 0 < last.t_dc < wall - 0.9, (last, wall)
        assert 0 < last.blocked_s < wall - 0.9, (last, wall)


@pytest.mark.parametrize("late", [[BLOCKS, BLOCKS], [BLOCKS, Spin("forever")]])
def test_a_blocked_rank_is_woken_by_its_peers_doorbell(late):
    """Every wait the shim trusts the doorbell for, the peer late, on two communicators:
    with a safety net of 10 minutes, a ring is the only thing that can end a blocked rank's
    sleep in time.  The peer either blocks too or, as a coscheduled FCS process does,
    busy-waits (its sends then ring after the blocking call)."""
    with _shimmed_job("doorbell.py", "0.05", spins=late, env={"TESTBED_SAFETY_NET_US": "6e8"},
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as shimmed:
        records, job = shimmed
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0 and out.strip() == "ok", err
        blocking = [r.counters() for r, spin in zip(records, late, strict=True) if spin == BLOCKS]
    for counters in blocking:
        # 2 communicators x 9 waits for a late peer (the receive after a probe finds its
        # message), each blocking after 1 ms of 50; every sleep ended by a ring.  On a loaded
        # machine the waiter itself may start a wait late, after its peer's message came, so
        # only most of the 18 are asked to block (a CI run beside two busy workers saw 17).
        assert counters.blocks >= 12 and counters.wakes_timed == 0, counters
        assert counters.wakes_rung >= counters.blocks // 2, counters
        assert 0 < counters.blocked_cpu_s < counters.blocked_s, counters


@pytest.mark.parametrize("late", [[BLOCKS, BLOCKS], [BLOCKS, Spin("forever")]])
def test_large_messages_between_blocked_ranks_are_woken_by_rings(late):
    """A large message (1 MiB, rendezvous) takes steps on both sides: the receiver rings its
    sender when it posts and completes the receive, and both ring each other as their waits
    go (which back off, at most 650 us a sleep), so blocked waits end by rings: a ping-pong,
    a Sendrecv and a send left pending while its sender sleeps in a small receive that its
    peer answers only after taking the large message (that receive's sleeps, with a safety
    net of 10 minutes, end by rings alone).  The peer blocks too or, as a coscheduled FCS
    process does, busy-waits."""
    with _shimmed_job("large_exchange.py", "0.02", "5", spins=late,
                      env={"TESTBED_SAFETY_NET_US": "6e8"}, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True) as shimmed:
        records, job = shimmed
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0 and out.strip() == "ok", err
        blocking = [r.counters() for r, spin in zip(records, late, strict=True) if spin == BLOCKS]
    for counters in blocking:
        # 5 rounds of at least 2 waits each for a peer 20 ms late.
        assert counters.blocks >= 10 and counters.wakes_rung >= counters.blocks // 2, counters


def test_a_large_receive_polled_by_the_program_rings_its_blocked_sender():
    """A large message taken by the program's own polling (MPI_Test, Testall, Testany,
    Testsome): the test that completes it rings the sender asleep in its blocking send."""
    rounds = 8
    with _shimmed_job("polled_large.py", "0.02", str(rounds), spins=[BLOCKS, BLOCKS],
                      env={"TESTBED_SAFETY_NET_US": "6e8"}, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True) as shimmed:
        records, job = shimmed
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0 and out.strip() == "ok", err
        sender = records[1].counters()
    # Each round the send waits 20 ms for a receive posted 20 ms before it, which only the
    # receiver's tests progress: it blocks after 1 ms of spin, backs off (at most 650 us a
    # sleep) and is rung by the test that completes the receive.  Nothing else rings it, so
    # without the tests' rings no sleep ends by one (0 of 8 in each of 13 runs, 8 of them with
    # CPU hogs); with them 6-8 of 8 (25 runs on a quiet machine), 7-8 with a hog on each core.
    assert sender.blocks >= rounds // 2 and sender.wakes_rung >= 3, sender


def test_large_receives_polled_in_every_form_complete_under_the_shim():
    """Receives posted before or after the send, or matched by a probe and taken by Imrecv,
    all polled by the program's tests while the sender blocks: every message arrives whole."""
    with _shimmed_job("polled_large.py", "0.02", "4", "forms", spins=[BLOCKS, BLOCKS],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as shimmed:
        _, job = shimmed
        out, err = job.communicate(timeout=120)
    assert job.returncode == 0 and out.strip() == "ok", err


@pytest.mark.parametrize("native_collectives", [False, True])
def test_ranks_that_spin_differently_still_match_their_collectives(native_collectives):
    """Under FCS the ranks of a job can be in different classes: a busy-waiting rank makes
    point-to-point calls natively, but every rank must use the same form of a collective."""
    spins = [Spin("forever"), Spin("fixed", fixed_s=0.0001)]
    with _shimmed_job("collectives.py", spins=spins, native_collectives=native_collectives,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as shimmed:
        records, job = shimmed
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0 and out.strip() == "ok", err
        assert records[0].counters().c_dc >= 20 * 8 and records[1].counters().c_dc >= 20 * 8


@pytest.mark.parametrize(("scheduler", "field", "other"), [("ics", "c_dc", "c_cs"),
                                                           ("fcs", "c_cs", "c_dc")])
def test_counters_split_by_the_coscheduled_flag(tmp_path, workload, scheduler, field, other):
    # 0.4 s of work in slots of G * T = 0.01 s: at least 40 iterations, more when the
    # calibrated exchange (slow on a loaded machine) leaves less of each slot to compute.
    path = workload("0 2 bsp --work 0.4 --granularity 0.05 --pattern nn\n")
    done = run_testbed("run", str(path), "--scheduler", scheduler, "--pes", "2", "--out", "r",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ranks = _shim_ranks(tmp_path / "r")
    iterations = {str(r["rank"]): r["iterations"] for e in events(tmp_path / "r")
                  if e["event"] == "stats" for r in e["ranks"]}
    assert set(ranks) == set(iterations) == {"0", "1"}
    # Calibration adds 21 exchanges, a barrier and an allreduce (4 operations in mpi4py), the
    # records' gather 2 more: 28 in all.
    for rank, counters in ranks.items():
        assert iterations[rank] >= 40
        assert iterations[rank] <= counters[field] <= iterations[rank] + 30, counters
        assert counters[other] == 0


def test_fcs_makes_the_fast_ranks_of_an_imbalanced_job_frustrated(tmp_path, workload):
    # Rank 1 computes three times as much as rank 0: even with rank 0 sharing its CPU with
    # another busy process (half speed), rank 0 is the one that waits.
    path = workload("0 2 bsp --work 1.5 --granularity 0.1 --pattern aa --imbalance 1:3\n")
    done = run_testbed("run", str(path), "--scheduler", "fcs", "--timeslice", "0.05",
                       "--pes", "2", "--out", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    changes = [e for e in events(tmp_path / "r") if e["event"] == "class"]
    final = {}
    for change in changes:
        final[change["rank"]] = change["new"]
        assert change["stats"]["events"] >= 0 and "w_cs" in change["stats"]
    assert final.get(0) == "F", changes
    shim = _shim_ranks(tmp_path / "r")
    waits = {rank: (c["t_cs"] + c["t_dc"]) / (c["c_cs"] + c["c_dc"]) for rank, c in shim.items()}
    assert waits["0"] > 2 * waits["1"], "the fast rank waits for the slow one, not the reverse"
    assert jobs_csv(tmp_path / "r")["j1"]["status"] == "done"


@pytest.mark.parametrize("native_collectives", [False, True])
def test_barriers_of_ranks_on_one_host_meet_on_arrival_counts(tmp_path, native_collectives):
    """Barriers whose ranks all have records here meet on the arrival counts (unless the job's
    collectives are native), each holding every rank back until all have entered it, the
    other collectives around them still right: on split communicators, with more
    communicators than slots (exactly those beyond the slots keep the nonblocking form), with
    communicators freed while a late peer is still in their barrier and slots used again,
    and a pending large send still progressed by a rank waiting in a barrier (its peer cannot
    receive it otherwise)."""
    with _shimmed_job("meetings.py", str(tmp_path), spins=[BLOCKS] * 3,
                      native_collectives=native_collectives, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True) as shimmed:
        records, job = shimmed
        out, err = job.communicate(timeout=180)
        assert job.returncode == 0 and out.startswith("ok"), (out, err)
        made = [r.counters().meetings for r in records]
    expected = [int(n) for n in out.split()[1:]]
    assert made == ([0, 0, 0] if native_collectives else expected), (made, expected)
    # By hand: world 2 barriers, the pair half 1, 62 of the 70 duplicates (slots 0 and 1 are
    # the world's and the half's), the 20 taken in turn; the third rank has no half.
    assert expected == [85, 84, 85]


@pytest.mark.parametrize(("mode", "drains"), [("collectives", (1, 1)), ("sends", (30, 30))])
def test_a_rank_leaving_a_meeting_drains_only_after_a_peers_other_calls(mode, drains):
    """A rank leaving a barrier meeting runs MPI's progress passes (a drain) only when a peer
    made a call since its last meeting that was not a completed blocking collective: after
    collectives, only the first meeting (no previous one) drains; after point-to-point
    messages every meeting does.  Counts, not timings: the same on any machine."""
    with _shimmed_job("drains.py", mode, "30", spins=[BLOCKS] * 2, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True) as (records, job):
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0 and out.startswith("ok"), (out, err)
        counted = tuple(r.counters() for r in records)
    assert tuple(c.meetings for c in counted) == (30, 30)
    assert tuple(c.drains for c in counted) == drains


@pytest.mark.parametrize("scheduler", ["ics", "fcs"])
def test_progress_dependent_patterns_finish_under_the_shim(tmp_path, scheduler):
    """Patterns whose completion needs a waiting peer's progress (passive-target RMA while the
    target waits in a barrier, a rendezvous send to a rank in a barrier, pending nonblocking
    collectives and MPI_Comm_idup across a barrier, generalized and partitioned requests,
    intercommunicator and unwrapped collectives, probes) finish with the right results, and the
    ranks' records say which calls they made and that none is left in one."""
    done = run_testbed("exec", "-n", "2", "--scheduler", scheduler, "--out", "r", "--",
                       sys.executable, str(CLIENTS / "progress_patterns.py"), "10",
                       cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("ok"), (done.stdout, done.stderr)
    assert set(json.loads(done.stdout.splitlines()[1])) == set(PATTERNS)


def test_passive_target_rma_with_the_peer_in_a_meeting_progresses(tmp_path):
    """Issue 35's program, with every wait blocking at once: a rank waiting in a barrier
    meeting grants the lock its peer asks for (MPI's progress runs while it waits), many times
    over, without waiting for the safety net each time."""
    with _shimmed_job(str(CLIENTS / "progress_patterns.py"), "200", "rma_lock_all",
                      spins=[BLOCKS] * 2, env={"TESTBED_SAFETY_NET_US": "2000000"},
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as shimmed:
        records, job = shimmed
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0 and out.startswith("ok"), (out, err)
        activity = [(bytes(ffi.buffer(r.c.call)).split(b"\0")[0], r.c.in_calls, r.c.calls_done)
                    for r in records]
    # 200 rounds of 2 turns: 400 barriers and 200 lock epochs a rank; waiting for a 2 s safety
    # net each time would take far past the timeout.
    assert all(calls >= 400 and in_calls == 0 for _, in_calls, calls in activity), activity
    assert {name for name, _, _ in activity} == {b"MPI_Finalize"}


@pytest.mark.parametrize("scheduler", ["ics", "gang"])
def test_processes_a_job_spawns_run_and_match_their_parents_collectives(tmp_path, scheduler):
    """MPI_Comm_spawn works under the testbed (hydra fails every spawn of a job launched with
    -bind-to, so the binding goes in its environment), and a spawned process, which inherits
    the job's environment and rank numbers, keeps a record of its own but its parents' form of
    collectives: a barrier and allreduces across the intercommunicator and on the merged
    communicator end, with the right sums."""
    done = run_testbed("exec", "-n", "2", "--scheduler", scheduler, "--hang-after", "30",
                       "--out", "r", "--", sys.executable, str(PROGRAMS / "spawn.py"),
                       cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("ok"), (done.stdout, done.stderr)
