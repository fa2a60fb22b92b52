"""jobs.csv's text, joined column-wise a piece of rows at a time, is the text csv.writer writes
row by row."""

from __future__ import annotations

import csv
import io
import math
import random

from testbed.results.report import _cells, _float_texts, csv_pieces

AWKWARD = ["", "plain", "a,b", 'say "hi"', "two\nlines", "cr\rhere", " lead", "end,", '"',
           "ü", "killed: ran past its limit"]


def _by_rows(columns: dict[str, list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(columns))
    writer.writerows(zip(*(_cells(values) for values in columns.values()), strict=True))
    return out.getvalue()


def test_the_column_wise_text_is_csv_writers_on_random_columns():
    rng = random.Random(7)
    for _ in range(2000):
        rows = rng.randrange(0, 6)
        draws = [lambda: rng.uniform(-1e6, 1e6), lambda: rng.random() * 1e-7,
                 lambda: rng.randrange(-5, 10**6), lambda: None, lambda: rng.random() < 0.5,
                 lambda: rng.choice(AWKWARD), lambda: float(rng.randrange(100)),
                 lambda: rng.choice([float("nan"), float("inf"), -0.0, 5e-7, 4e-7, 1e-4]),
                 lambda: rng.uniform(-1, 1) * 10.0 ** rng.randrange(-9, 12)]
        columns = {}
        for at in range(rng.randrange(1, 5)):
            mixed = rng.sample(draws, rng.randrange(1, 4))
            columns[f"c{at}" if at else rng.choice(["id", "a,b"])] = [
                rng.choice(mixed)() for _ in range(rows)]
        assert "".join(csv_pieces(columns, rng.randrange(1, 8))) == _by_rows(columns)


def test_floats_formatted_in_bulk_are_their_rounded_reprs():
    rng = random.Random(11)
    for _ in range(200):
        exponent = rng.randrange(-8, 9)
        values = [rng.uniform(-1, 1) * 10.0 ** exponent for _ in range(100)]
        values += [round(v, rng.randrange(0, 8)) for v in values[:20]]
        values += [float(round(v)) for v in values[20:40]]
        values += rng.sample([math.inf, -math.inf, math.nan, -0.0, 0.0, 1e17, -2.5e16], 3)
        mostly_whole = [float(round(v)) if math.isfinite(v) else v for v in values] + values[:30]
        for column in (values, mostly_whole):
            assert _float_texts(column) == [str(round(v, 6)) for v in column]
