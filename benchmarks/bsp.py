"""``python -m benchmarks.bsp``: the synthetic BSP job under its old name (``testbed.jobs.bsp``)."""

from testbed.jobs.bsp import main

if __name__ == "__main__":
    main()
