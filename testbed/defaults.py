"""Run defaults that more than one layer needs: their one home.

The policy's configuration (``testbed.policies.config.PolicyConfig``, whose defaults the run
options and the experiment plans take), the workload loader (``bsp`` lines inherit the
timeslice) and the benchmark's own options read them from here.  Constants only: the ranks
import it at start-up.
"""

TIMESLICE_S = 0.2
"""The timeslice, seconds: a gang scheduler's slot and the BSP benchmark's T."""
