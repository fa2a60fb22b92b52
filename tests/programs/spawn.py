"""MPI_Comm_spawn from a job's ranks: two children, then collectives across the
intercommunicator and on the communicator merged from it, and a barrier among the children.

Run on any number of ranks; rank 0 of the parents prints "ok" once the children have been
checked.  A child inherits the job's environment (under the testbed: its records' names and
the preloaded shim), so this checks that a spawned process keeps to itself and that its
collectives still match its parents'."""

import sys

from mpi4py import MPI

parent = MPI.Comm.Get_parent()
if parent == MPI.COMM_NULL:
    world = MPI.COMM_WORLD
    children = world.Spawn(sys.executable, [__file__], maxprocs=2, root=0)
    assert children.allreduce(1) == 2          # the children's group, summed on the parents
    children.Barrier()
    merged = children.Merge(high=False)
    assert merged.allreduce(1) == world.Get_size() + 2
    merged.Barrier()
    merged.Free()
    children.Disconnect()
    if world.Get_rank() == 0:
        print("ok", flush=True)
else:
    world = MPI.COMM_WORLD
    assert parent.allreduce(1) == parent.Get_remote_size()
    parent.Barrier()
    world.Barrier()
    merged = parent.Merge(high=True)
    assert merged.allreduce(1) == parent.Get_remote_size() + 2
    merged.Barrier()
    merged.Free()
    parent.Disconnect()
