"""The collector held off while a large input is read, and left as it was found."""

from __future__ import annotations

import gc

import pytest

from testbed.collector import collector_paused


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_held_off_and_left_as_it_was(enabled):
    (gc.enable if enabled else gc.disable)()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() == enabled
        with pytest.raises(KeyError), collector_paused():
            raise KeyError("x")
        assert gc.isenabled() == enabled
    finally:
        gc.enable()
