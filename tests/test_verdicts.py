"""benchmarks.calibration.verdicts in its quick form: the reproduction's rules give few unsupported
verdicts, and the measure would see a rule that gives many (pure, a few seconds)."""

from __future__ import annotations

import json

from benchmarks.calibration import verdicts
from benchmarks.papers.reproduce.claims import AGREES, Decision
from testbed.experiments.stats import ALPHA


def test_quick_run_meets_the_target_and_writes_its_page(tmp_path, capsys):
    page = tmp_path / "verdicts.md"
    assert verdicts.main(["--quick", "--json", "--markdown", str(page)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == len(verdicts.CASES) * 2 * 4 * len(verdicts.QUICK_SIZES)
    assert all(r["agrees"] + r["disagrees"] + r["cannot_tell"] == 1.0 for r in records)
    holds = [r for r in records if r["truth"] == "1" and r["rule"] == "band"
             and r["design"] == "independent" and r["n"] == 5 and r["distribution"] == "normal"]
    assert holds[0]["agrees"] > 0.5
    assert "unsupported" in page.read_text()


def test_a_rule_that_always_agrees_is_caught(monkeypatch):
    monkeypatch.setattr(verdicts, "verdict", lambda case, samples, paired:
                        Decision(AGREES, "always"))
    case = next(c for c in verdicts.CASES if c.rule == "direction" and c.truths == (1.0,))
    record = verdicts.measure_case(case, "normal", 3, False, 50)
    assert record["wrong"] == 1.0
    met, _ = verdicts.check([record])
    assert not met and record["wrong_low"] > ALPHA
