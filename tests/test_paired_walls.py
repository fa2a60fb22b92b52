"""benchmarks.overheads.paired_walls: the interleaving order and the pairs' figures, on given
seconds."""

from __future__ import annotations

from benchmarks.overheads import paired_walls


def test_interleaved_alternates_which_goes_first_and_names_each_output() -> None:
    calls: list[str] = []

    def way(seconds: float):
        def run(out: str) -> float:
            calls.append(out)
            return seconds
        return run

    walls = paired_walls.interleaved(3, {"this": way(1.0), "base": way(2.0)})
    assert calls == ["this-0", "base-0", "base-1", "this-1", "this-2", "base-2"]
    assert walls == {"this": [1.0, 1.0, 1.0], "base": [2.0, 2.0, 2.0]}


def test_figures_pair_the_rounds() -> None:
    walls = {"this": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "base": [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]}
    record = paired_walls.figures(walls, "this", "base")
    assert record["this_median_s"] == 3.5 and record["base_median_s"] == 7.0
    assert abs(record["ratio"]["value"] - 0.5) < 1e-9
    assert record["ratio"]["low"] - 1e-9 <= 0.5 <= record["ratio"]["high"] + 1e-9
    assert record["p"] is not None and record["p"] < 0.05
    assert record["rounds"] == 6


def test_figures_with_one_pair_give_no_interval() -> None:
    record = paired_walls.figures({"a": [1.0], "b": [2.0]}, "a", "b")
    assert record["ratio"]["value"] == 0.5 and record["ratio"]["low"] is None
    assert record["p"] is None
