"""Each of two ranks waits for a message from the other, which never comes: a deadlock."""

from mpi4py import MPI

comm = MPI.COMM_WORLD
comm.recv(source=1 - comm.Get_rank())
