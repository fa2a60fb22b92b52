"""MPI patterns whose completion needs a peer's progress while that peer waits in another call.

Each pattern is written as a plain MPI program would write it, and checks its own results.
In each, one rank waits (in a barrier, a receive, a wait) while the other does something that
completes only when the waiting rank's MPI makes progress: passive-target RMA, a rendezvous
send, a nonblocking collective left pending across a barrier, a generalized request completed
by another thread, ``MPI_Comm_idup``, a message polled with ``MPI_Test`` while its other
end waits in a barrier, intercommunicator collectives, probes of large messages,
persistent and partitioned operations, collectives the testbed's shim does not wrap.  Without
the testbed every pattern takes well under a second.

Two ranks (or more: the extra ones join the collectives).  Usage: ``progress_patterns.py
[ROUNDS] [PATTERN ...]``; rank 0 prints one line ``{"pattern": seconds, ...}`` (JSON) after
"ok".  A pattern that fails aborts the job (``MPI_Abort``: a non-zero exit).
"""

import json
import sys
import threading
import time

import numpy as np
from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
assert size >= 2
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
LARGE = 1 << 20  # doubles: 8 MiB, far past any eager limit


def rma_lock_all() -> None:
    """The issue's program: each rank in turn locks every window while the other waits in a
    barrier."""
    buf = np.zeros(8)
    win = MPI.Win.Create(buf, comm=world)
    for _ in range(ROUNDS):
        for i in range(size):
            if i == rank:
                win.Lock_all()
                win.Flush_all()
                win.Unlock_all()
            world.Barrier()
    win.Free()


def rma_put_get() -> None:
    """Exclusive locks with puts, gets and accumulates on a peer that waits in a barrier."""
    buf = np.zeros(4)
    win = MPI.Win.Create(buf, disp_unit=buf.itemsize, comm=world)
    peer = (rank + 1) % size
    for r in range(ROUNDS):
        for i in range(size):
            if i == rank:
                win.Lock(peer, MPI.LOCK_EXCLUSIVE)
                win.Put(np.full(1, float(r)), peer, target=0)
                win.Accumulate(np.ones(1), peer, target=1, op=MPI.SUM)
                win.Flush(peer)
                got = np.zeros(1)
                win.Get(got, peer, target=0)
                win.Unlock(peer)
                assert got[0] == r, (got, r)
            world.Barrier()
    win.Lock(rank, MPI.LOCK_SHARED)
    accumulated = buf[1]
    win.Unlock(rank)
    assert accumulated == ROUNDS, accumulated
    win.Free()


def rma_fence_and_pscw() -> None:
    """Active-target epochs: fences, and post-start-complete-wait between neighbours."""
    buf = np.zeros(size)
    win = MPI.Win.Create(buf, disp_unit=buf.itemsize, comm=world)
    group = world.Get_group()
    peer = (rank + 1) % size
    for r in range(ROUNDS):
        win.Fence()
        win.Put(np.full(1, float(rank + r)), peer, target=rank)
        win.Fence()
        assert buf[(rank - 1) % size] == (rank - 1) % size + r
        others = group.Excl([rank])
        win.Post(others)
        win.Start(others)
        win.Put(np.full(1, -1.0), peer, target=rank)
        win.Complete()
        win.Wait()
        others.Free()
        assert buf[(rank - 1) % size] == -1.0
    group.Free()
    win.Free()


def rendezvous_send() -> None:
    """A large send to a rank that has posted its receive but waits in a barrier first."""
    data = np.arange(LARGE, dtype="d")
    for _ in range(max(1, ROUNDS // 5)):
        if rank == 0:
            world.Send(data, dest=1, tag=7)
            world.Barrier()
        elif rank == 1:
            got = np.empty(LARGE)
            request = world.Irecv(got, source=0, tag=7)
            world.Barrier()
            request.Wait()
            assert got[-1] == LARGE - 1
        else:
            world.Barrier()


def polled_across_barrier() -> None:
    """A large message between a rank that waits in a barrier with its side posted and a rank
    that polls its own side with MPI_Test before the barrier, both ways round: the poller's
    request may complete only with the waiting rank's progress, while the poller is in no MPI
    call between its tests."""
    data = np.arange(LARGE, dtype="d")
    for r in range(max(2, ROUNDS // 5)):
        waiter, poller = (0, 1) if r % 2 == 0 else (1, 0)
        sends = r % 4 < 2           # whether the waiter is the sender
        if rank in (waiter, poller):
            peer = poller if rank == waiter else waiter
            got = np.empty(LARGE)
            if (rank == waiter) == sends:
                request = world.Isend(data, dest=peer, tag=8)
            else:
                request = world.Irecv(got, source=peer, tag=8)
            if rank == waiter:
                world.Barrier()
                request.Wait()
            else:
                while not request.Test():
                    pass
                world.Barrier()
            if (rank == waiter) != sends:
                assert got[-1] == LARGE - 1
        else:
            world.Barrier()


def nonblocking_collective_across_barrier() -> None:
    """A nonblocking collective started, a barrier, then its wait."""
    for r in range(ROUNDS):
        total = np.zeros(1)
        request = world.Iallreduce(np.full(1, float(rank + r)), total, op=MPI.SUM)
        world.Barrier()
        request.Wait()
        assert total[0] == sum(range(size)) + size * r


def complete_later(request: MPI.Grequest) -> None:
    """Complete ``request`` after 2 ms (in a thread of its own)."""
    time.sleep(0.002)
    request.Complete()


def generalized_request() -> None:
    """A generalized request completed by another thread of the rank, waited for."""
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        return
    for _ in range(ROUNDS):
        request = MPI.Grequest.Start()
        worker = threading.Thread(target=complete_later, args=(request,))
        worker.start()
        request.Wait()
        worker.join()
        world.Barrier()


def comm_idup() -> None:
    """MPI_Comm_idup left pending across a barrier, then used."""
    for _ in range(ROUNDS):
        copy, request = world.Idup()
        world.Barrier()
        request.Wait()
        assert copy.allreduce(1) == size
        copy.Free()


def intercommunicator_collectives() -> None:
    """Collectives across an intercommunicator of the even and the odd ranks."""
    local = world.Split(rank % 2, rank)
    inter = local.Create_intercomm(0, world, 1 - rank % 2, tag=11)
    remote = inter.Get_remote_size()
    for r in range(ROUNDS):
        total = inter.allreduce(rank + r)
        assert total == sum(x + r for x in range(size) if x % 2 != rank % 2)
        inter.Barrier()
        value = np.full(1, float(r))
        root = MPI.ROOT if rank == 0 else (MPI.PROC_NULL if rank % 2 == 0 else 0)
        inter.Bcast(value, root=root)
        assert value[0] == r
    assert remote == len([x for x in range(size) if x % 2 != rank % 2])
    merged = inter.Merge(high=bool(rank % 2))
    assert merged.Get_size() == size
    merged.Free()
    inter.Free()
    local.Free()


def probes() -> None:
    """Probes and matched probes of large messages sent while the receiver waits."""
    for r in range(max(1, ROUNDS // 5)):
        if rank == 0:
            world.Send(np.full(LARGE, float(r)), dest=1, tag=3)
            world.Send(np.full(LARGE, float(r + 1)), dest=1, tag=4)
        elif rank == 1:
            status = MPI.Status()
            world.Probe(source=0, tag=3, status=status)
            got = np.empty(status.Get_count(MPI.DOUBLE))
            world.Recv(got, source=0, tag=3)
            assert got[0] == r and got.size == LARGE
            message = world.Mprobe(source=0, tag=4)
            got = np.empty(LARGE)
            message.Recv(got)
            assert got[-1] == r + 1
        world.Barrier()


def persistent() -> None:
    """Persistent point-to-point requests in a ring and persistent collectives."""
    out, into = np.zeros(4096), np.zeros(4096)
    send = world.Send_init(out, dest=(rank + 1) % size, tag=5)
    recv = world.Recv_init(into, source=(rank - 1) % size, tag=5)
    total = np.zeros(1)
    value = np.zeros(1)
    allreduce = world.Allreduce_init(value, total, op=MPI.SUM)
    barrier = world.Barrier_init()
    for r in range(ROUNDS):
        out[:] = rank + r
        MPI.Prequest.Startall([recv, send])
        MPI.Request.Waitall([recv, send])
        assert into[0] == (rank - 1) % size + r
        value[0] = r
        allreduce.Start()
        allreduce.Wait()
        assert total[0] == size * r
        barrier.Start()
        barrier.Wait()
    for request in (send, recv, allreduce, barrier):
        request.Free()


def partitioned() -> None:
    """Partitioned sends from rank 0 to rank 1, readied one partition at a time."""
    parts, count = 4, 1024
    for r in range(max(1, ROUNDS // 2)):
        if rank == 0:
            data = np.full(parts * count, float(r))
            request = world.Psend_init(data, parts, dest=1, tag=9)
            request.Start()
            for p in range(parts):
                request.Pready(p)
            request.Wait()
            request.Free()
        elif rank == 1:
            got = np.zeros(parts * count)
            request = world.Precv_init(got, parts, source=0, tag=9)
            request.Start()
            request.Wait()
            request.Free()
            assert (got == r).all()
        world.Barrier()


def unwrapped_collectives() -> None:
    """Collectives the shim makes as themselves, entered while the peer still waits."""
    for r in range(ROUNDS):
        if rank == 1:
            time.sleep(0.001)
        assert world.scan(1) == rank + 1
        total = np.zeros(1)
        world.Reduce_scatter_block(np.full(size, float(r)), total, op=MPI.SUM)
        assert total[0] == size * r
        copy = world.Split(0, rank)
        assert copy.Get_size() == size
        copy.Free()


def synchronous_send_late_receiver() -> None:
    """An MPI_Ssend whose receiver posts late, after a barrier with a third party's pace."""
    for r in range(ROUNDS):
        if rank == 0:
            world.Ssend(np.full(16, float(r)), dest=1, tag=2)
        elif rank == 1:
            time.sleep(0.001)
            got = np.empty(16)
            world.Recv(got, source=0, tag=2)
            assert got[0] == r
        world.Barrier()


PATTERNS = {f.__name__: f for f in (
    rma_lock_all, rma_put_get, rma_fence_and_pscw, rendezvous_send,
    polled_across_barrier, nonblocking_collective_across_barrier, generalized_request, comm_idup,
    intercommunicator_collectives, probes, persistent, partitioned, unwrapped_collectives,
    synchronous_send_late_receiver)}

chosen = sys.argv[2:] or list(PATTERNS)
times = {}
for name in chosen:
    world.Barrier()
    start = time.monotonic()
    try:
        PATTERNS[name]()
    except BaseException as err:
        print(f"rank {rank}: {name} failed: {err!r}", file=sys.stderr, flush=True)
        world.Abort(1)
    world.Barrier()
    times[name] = round(time.monotonic() - start, 6)
if rank == 0:
    print("ok")
    print(json.dumps(times), flush=True)
