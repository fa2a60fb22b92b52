"""benchmarks.calibration.coverage in its quick form: the intervals cover what they state, the tests
keep
their false alarms, nothing is called on 3 against 3 (pure: numbers drawn in-process)."""

from __future__ import annotations

import json

import numpy as np

from benchmarks.calibration import coverage
from testbed.experiments.stats import Interval

KEYS = {"kind", "method", "distribution", "n", "nominal", "coverage", "coverage_low",
        "coverage_high", "false_alarm", "power_10", "power_20", "stated_confidence"}


def test_the_quick_form_meets_every_target_and_prints_the_records(capsys, tmp_path):
    page = tmp_path / "coverage.md"
    assert coverage.main(["--quick", "--json", "--markdown", str(page)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(set(r) == KEYS for r in records)
    cells = {(r["method"], r["distribution"], r["n"]): r for r in records}
    assert len(records) == len(coverage.DISTRIBUTIONS) * len(coverage.QUICK_SIZES) * 9
    three = cells[("median", "discrete", 3)]
    assert three["kind"] == "interval" and three["stated_confidence"] == 0.75
    assert cells[("ratio", "normal", 3)]["stated_confidence"] == 0.9
    assert cells[("median", "normal", 8)]["stated_confidence"] is None
    assert cells[("median", "normal", 8)]["coverage"] >= 0.94
    for r in records:
        if r["kind"] == "test" and r["n"] == 3:
            assert r["false_alarm"] == r["power_10"] == r["power_20"] == 0
    assert cells[("call", "normal", 8)]["power_20"] > 0.5
    text = page.read_text()
    assert "## Targets" in text and "**missed**" not in text
    assert "| median | discrete | 3 |" in text


def _percentile_bootstrap(values: np.ndarray) -> Interval:
    """The median's 95 % percentile-bootstrap interval, as the comparisons had it before."""
    rng = np.random.default_rng(1)
    resampled = np.median(rng.choice(values, (999, values.size)), axis=1)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return Interval(float(np.median(values)), float(low), float(high))


def test_the_harness_catches_an_interval_that_covers_less_than_it_claims():
    old = coverage.Methods(_percentile_bootstrap, coverage.CURRENT.ratio,
                           coverage.CURRENT.test, "all")
    median = coverage.measure_cell(old, "lognormal", 3, 200, families=1)[0]
    assert median["method"] == "median" and median["stated_confidence"] is None
    assert median["coverage"] < 0.8
    assert not coverage.checks([median], 200)[0][1]
