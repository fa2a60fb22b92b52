"""The fractal memory walk: its jump distribution and its determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from testbed.jobs.walk import Walk, jumps


@pytest.mark.parametrize("theta", [1.0, 1.5, 2.0])
def test_jump_sizes_follow_the_power_law(theta):
    n = 200_000
    sizes = np.sort(np.abs(np.array(jumps(theta, seed=11, n=n))))
    assert sizes[0] >= 1.0
    model = 1.0 - sizes ** -theta                  # Pr[X <= u] for u >= 1
    empirical_hi = np.arange(1, n + 1) / n
    d = max(np.max(empirical_hi - model), np.max(model - (empirical_hi - 1 / n)))
    assert d < 1.63 / math.sqrt(n), f"Kolmogorov-Smirnov D = {d:.5f} (1 % level)"


def test_jumps_are_signed_evenly():
    signs = np.sign(jumps(1.5, seed=3, n=100_000))
    assert abs(signs.mean()) < 0.01


def test_memory_paper_locality_figures():
    # MEMORY §4.1: at theta 2, 94 % of the jumps are shorter than 4; at theta 1, 75 %.
    assert np.mean(np.abs(jumps(2.0, 5, 100_000)) < 4) == pytest.approx(0.9375, abs=0.005)
    assert np.mean(np.abs(jumps(1.0, 5, 100_000)) < 4) == pytest.approx(0.75, abs=0.005)


def test_same_seed_same_walk_other_seed_other_walk():
    def checksum(seed):
        walk = Walk(8, 1.2, 1024, seed)
        try:
            return walk.run(50_000), walk.run(50_000)
        finally:
            walk.close()

    assert checksum(4) == checksum(4)
    assert checksum(4) != checksum(5)


def test_theta_outside_one_to_two_is_refused():
    with pytest.raises(ValueError, match="theta"):
        Walk(1, 2.5, 1024, 0)
