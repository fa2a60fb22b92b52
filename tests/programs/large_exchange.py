"""Large messages (rendezvous) between two ranks whose waits block, the other rank late by
argv[1] seconds, argv[2] rounds: a ping-pong of blocking sends and receives, a Sendrecv, and a
nonblocking send left pending while its sender blocks in a small receive that its peer answers
only after taking the large message (the sender's progress then needs the receiver's
handshake), and a blocking send taken by a nonblocking receive and a wait.  Prints "ok"."""

import sys
import time

import numpy as np
from mpi4py import MPI

late, rounds = float(sys.argv[1]), int(sys.argv[2])
world = MPI.COMM_WORLD
assert world.Get_size() == 2
rank = world.Get_rank()
peer = 1 - rank
big = np.full(2**20, rank, dtype="u1")
got = np.empty_like(big)
small = np.zeros(4, dtype="i")
for i in range(rounds):
    for first in (0, 1):
        if rank == first:
            time.sleep(late)
            world.Send(big, dest=peer, tag=1)
            world.Recv(got, source=peer, tag=2)
        else:
            world.Recv(got, source=peer, tag=1)
            time.sleep(late)
            world.Send(big, dest=peer, tag=2)
        assert (got == peer).all()
    if rank == 0:
        time.sleep(late)
    world.Sendrecv(big, peer, 3, got, peer, 3)
    assert (got == peer).all()
    if rank == i % 2:
        pending = world.Isend(big, dest=peer, tag=4)
        world.Recv(small, source=peer, tag=5)
        pending.Wait()
    else:
        time.sleep(late)
        world.Recv(got, source=peer, tag=4)
        assert (got == peer).all()
        world.Send(small, dest=peer, tag=5)
    if rank == i % 2:
        world.Send(big, dest=peer, tag=6)
    else:
        time.sleep(late)
        world.Irecv(got, source=peer, tag=6).Wait()
        assert (got == peer).all()
world.Barrier()
if rank == 0:
    print("ok", flush=True)
