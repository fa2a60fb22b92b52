"""The regression check of repeated samples against a baseline (pure: given numbers)."""

import numpy as np
import pytest

from testbed.experiments.regression import MARGIN, check, least_rounds


def _sample(centre: float, n: int = 8, spread: float = 0.02, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(centre * (1 + rng.uniform(-spread, spread, n)))


def test_the_same_distribution_is_never_called():
    then = {"switch_p50_us": _sample(100, seed=1), "launch_s": _sample(0.2, seed=2)}
    now = {"switch_p50_us": _sample(100, seed=3), "launch_s": _sample(0.2, seed=4)}
    findings = check(now, then)
    assert [f.figure for f in findings] == ["launch_s", "switch_p50_us"]
    assert not any(f.regressed for f in findings)
    assert not any(f.regressed for f in check(then, then))


def test_a_separated_shift_beyond_the_margin_is_called_and_only_that_figure():
    then = {"a": _sample(100, seed=1), "b": _sample(50, seed=2)}
    now = {"a": _sample(130, seed=3), "b": _sample(50, seed=4)}
    findings = {f.figure: f for f in check(now, then)}
    assert findings["a"].regressed and not findings["b"].regressed
    assert findings["a"].ratio.value == pytest.approx(1.3, rel=0.05)
    assert findings["a"].ratio.low > 1 and findings["a"].p_adjusted < 0.05
    assert findings["a"].describe().startswith("a: 1.2")


def test_a_sure_shift_inside_the_margin_is_not_called():
    then, now = {"a": _sample(100, spread=0.001)}, {"a": _sample(105, spread=0.001, seed=2)}
    (finding,) = check(now, then)
    assert finding.p_adjusted < 0.05 and not finding.regressed
    (finding,) = check(now, then, margin=0.02)
    assert finding.regressed


def test_larger_is_worse_a_faster_figure_is_never_a_regression():
    then, now = {"a": _sample(100)}, {"a": _sample(50, seed=2)}
    (finding,) = check(now, then)
    assert finding.ratio.value < 1 and not finding.regressed


def test_overlapping_samples_are_not_called_even_with_a_large_median_shift():
    # Half the new rounds are as fast as before: the rank test cannot be sure.
    then = {"a": [100.0, 101, 102, 103, 104, 105]}
    now = {"a": [100.5, 101.5, 102.5, 150, 151, 152]}
    (finding,) = check(now, then)
    assert not finding.regressed


def test_holm_makes_many_figures_need_clearer_evidence():
    # Five rounds a side, completely separated: p = 1/252 one-sided.  Alone that is called;
    # among 20 figures the corrected p is 20/252 > 0.05 and nothing is.
    then, now = {"a": _sample(100, 5)}, {"a": _sample(130, 5, seed=2)}
    assert check(now, then)[0].regressed
    then.update({f"quiet{i}": _sample(10, 5, seed=10 + i) for i in range(19)})
    now.update({f"quiet{i}": _sample(10, 5, seed=40 + i) for i in range(19)})
    findings = {f.figure: f for f in check(now, then)}
    assert findings["a"].p == pytest.approx(1 / 252)
    assert not findings["a"].regressed


def test_figures_missing_or_empty_on_either_side_are_left_out():
    then = {"a": _sample(1), "b": _sample(1), "c": [float("nan")]}
    now = {"a": _sample(1, seed=2), "d": _sample(1), "c": _sample(1)}
    assert [f.figure for f in check(now, then)] == ["a"]


def test_least_rounds_for_the_corrected_test():
    assert least_rounds(1) == 4          # 1/70 < 0.05; 3 a side give 1/20
    assert least_rounds(7) == 5          # 7/252 = 0.028
    assert least_rounds(24) == 6         # 24/924 = 0.026
    assert least_rounds(60) == 7
    assert MARGIN == 0.10
