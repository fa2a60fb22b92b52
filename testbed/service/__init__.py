"""The coordinator as a service: ``testbed serve`` takes jobs over a local AF_UNIX socket.

``protocol`` is the wire format (framing, typed requests, replies) shared by the server and
its clients (``testbed mpirun``/``mpiexec``, ``submit``, ``queue``, ``cancel``, ``suspend``,
``resume``); ``mpirun_args`` turns an mpirun/mpiexec command line into a job request.
Both are pure: neither touches processes, sockets it did not get, or the clock.
"""
