"""``testbed`` / ``python -m testbed``: mpirun and mpiexec start without importing the rest."""

from __future__ import annotations

import sys


def main() -> int:
    """Dispatch: ``mpirun``/``mpiexec`` to the light client, everything else to the CLI."""
    if sys.argv[1:2] in (["mpirun"], ["mpiexec"]):
        from testbed.mpirun import mpirun_main
        return mpirun_main(sys.argv[2:], sys.argv[1])
    from testbed.cli import main as cli_main
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
