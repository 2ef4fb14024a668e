"""bench/executor.py --end-to-end and bench/plus_cases.py on a few tasks: they run, print their
figures and check their verdicts (the speed itself is measured by running them, not here)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import executor as executor_bench  # noqa: E402
import plus_cases  # noqa: E402


def test_end_to_end_prints_the_plain_loop_and_the_three_scored_passes_with_their_ratios(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert executor_bench.main(["--end-to-end", "--limit", "4", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"plain loop .*pass 4/4  \(each pass: [\d.]+, [\d.]+\)", out)
    own, first, kept = re.findall(r"scored, .*pass (\d)/4, pass@1\+ (\d)/4\s+ratio [\d.]+x", out)
    assert own == first == kept == ("4", "4")
    assert "no answers shipped (computes and keeps them)" in out and "new machine (the package's answers)" in out
    assert re.search(r"best of 2 alternated passes per side; ratio of the medians [\d.]+x", out)
    # The setting the ratio depends on: what a start of this interpreter costs, and without site.
    assert re.search(r"this interpreter starts in \d+ ms, \d+ ms without site \(-S\); its site runs ", out)
    assert re.search(r"plain loop without site's .pth files .*pass 4/4  ratio of the kept pass to it [\d.]+x", out)


def test_plus_cases_compares_two_budgets_task_by_task(capsys: pytest.CaptureFixture[str]) -> None:
    assert plus_cases.main(["--limit", "3", "--compare-budget", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.match(r"budget 10,000,000 steps: [\d.]+ inputs per task on average \(\d+ to \d+\), 3 tasks", lines[0])
    assert re.match(r"budget 0 steps: 0\.0 inputs per task on average \(0 to 0\), 3 tasks", lines[1])
    assert [line.split(":")[0].strip() for line in lines[2:]] == ["Python/0", "Python/1", "Python/2"]
