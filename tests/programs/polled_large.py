"""Large messages (1 MiB, rendezvous) that rank 0 receives by polling, rank 1 sending each with
a blocking send that blocks, argv[2] rounds, L = argv[1] seconds.  Rank 0 tests with MPI_Test,
Testall, Testany or Testsome in turn, working L/4 between two tests.

argv[3] ``alone`` (the default): each round rank 0 posts its receive at L (rank 1's last send
long done), rank 1 sends at 2L and rank 0 tests from 3L on, so nothing but rank 0's tests can
progress the message while rank 1 is blocked.  ``forms``: each round rank 0 takes one message
posted first (its sender L late), one posted L late, and one matched by a probe and taken by
Imrecv.  Prints "ok"."""

import sys
import time

import numpy as np
from mpi4py import MPI

late, rounds = float(sys.argv[1]), int(sys.argv[2])
world = MPI.COMM_WORLD
assert world.Get_size() == 2
rank = world.Get_rank()
big = np.full(2**20, rank, dtype="u1")
got = np.empty_like(big)


def polled(request: MPI.Request, form: int) -> None:
    """Test ``request`` in form ``form`` (0-3), working ``late / 4`` s between two tests."""
    while True:
        if form == 0:
            done = request.Test()
        elif form == 1:
            done = MPI.Request.Testall([request])
        elif form == 2:
            done = MPI.Request.Testany([request])[1]
        else:
            done = bool(MPI.Request.Testsome([request]))
        if done:
            return
        time.sleep(late / 4)


def alone(i: int) -> None:
    """One round in which only rank 0's tests progress the message."""
    if rank == 0:
        got[:] = 0
        time.sleep(late)
        request = world.Irecv(got, source=1, tag=i)
        time.sleep(2 * late)
        polled(request, i % 4)
        assert (got == 1).all()
    else:
        time.sleep(2 * late)
        world.Send(big, dest=0, tag=i)


def forms(i: int) -> None:
    """One round of a receive posted first, one posted late and one taken by Imrecv."""
    if rank == 0:
        got[:] = 0
        polled(world.Irecv(got, source=1, tag=1), i % 4)
        assert (got == 1).all()
        got[:] = 0
        time.sleep(late)
        polled(world.Irecv(got, source=1, tag=2), i % 4)
        assert (got == 1).all()
        got[:] = 0
        while (message := world.Improbe(source=1, tag=3)) is None:
            time.sleep(late)
        polled(message.Irecv(got), i % 4)
        assert (got == 1).all()
    else:
        time.sleep(late)
        for tag in (1, 2, 3):
            world.Send(big, dest=0, tag=tag)


one_round = {"alone": alone, "forms": forms}[sys.argv[3] if len(sys.argv) > 3 else "alone"]
for i in range(rounds):
    one_round(i)
if rank == 0:
    print("ok", flush=True)
