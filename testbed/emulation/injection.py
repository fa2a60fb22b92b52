"""Known slowdowns injected on purpose, to check that the overhead suite detects a regression.

Both are off unless their environment variable is set, and a run records them in its
``config.json`` (``injected_delays``) so a slowed run is never mistaken for a normal one:

* ``TESTBED_DELAY_SWITCH_US``: each node manager busy-waits this many microseconds in every
  switch that stops or continues a rank, between the stops and the continues (so the switch
  latency grows by about that much);
* ``TESTBED_DELAY_SHIM_NS``: the shim busy-waits this many nanoseconds at the end of every MPI
  call it wraps (read by ``native/shim.c`` in each rank).
"""

from __future__ import annotations

from collections.abc import Mapping

SWITCH_ENV = "TESTBED_DELAY_SWITCH_US"
SHIM_ENV = "TESTBED_DELAY_SHIM_NS"


# Each delay: its key in ``config.json``, its environment variable and its unit.
DELAYS = (("switch_us", SWITCH_ENV, "microseconds"), ("shim_ns", SHIM_ENV, "nanoseconds"))


def _amount(env: Mapping[str, str], name: str, unit: str) -> float:
    text = env.get(name, "").strip()
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(f"{name}={text!r}: not a number of {unit} >= 0")
    return value


def switch_delay_s(env: Mapping[str, str]) -> float:
    """The switch delay ``env`` asks for, in seconds (0 when unset); ``ValueError`` when it
    is not a number >= 0."""
    return _amount(env, SWITCH_ENV, "microseconds") / 1e6


def describe(env: Mapping[str, str]) -> dict[str, float] | None:
    """The injected delays ``env`` sets (``{"switch_us": ..., "shim_ns": ...}``, only those
    set), None when none is; ``ValueError`` when one is not a number >= 0."""
    found = {key: _amount(env, name, unit) for key, name, unit in DELAYS}
    return {key: value for key, value in found.items() if value} or None
