"""Large messages (1 MiB, rendezvous) that rank 0 receives by polling, rank 1 sending each with
a blocking send that blocks: argv[1] seconds is how late rank 0 is and how long it works
between two tests, argv[2] rounds.  Each round rank 0 takes one message posted first and
polled (its sender late), one posted late and polled, and one matched by a probe and taken
by Imrecv, testing with MPI_Test, Testall, Testany or Testsome in turn.  Prints "ok"."""

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
    """Test ``request`` in form ``form`` (0-3), working ``late`` s between two tests."""
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
        time.sleep(late)


for i in range(rounds):
    form = i % 4
    if rank == 0:
        got[:] = 0
        polled(world.Irecv(got, source=1, tag=1), form)
        assert (got == 1).all()
        got[:] = 0
        time.sleep(late)
        polled(world.Irecv(got, source=1, tag=2), form)
        assert (got == 1).all()
        got[:] = 0
        while (message := world.Improbe(source=1, tag=3)) is None:
            time.sleep(late)
        polled(message.Irecv(got), form)
        assert (got == 1).all()
    else:
        time.sleep(late)
        world.Send(big, dest=0, tag=1)
        world.Send(big, dest=0, tag=2)
        world.Send(big, dest=0, tag=3)
world.Barrier()
if rank == 0:
    print("ok", flush=True)
