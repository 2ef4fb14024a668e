"""Issue 53's size of a fix (bench/fix_diffs.py, bench/fix_bench.py): the lines a `fix` diff removes
or adds, against the dataset's own buggy -> canonical change on the same task, and the medians the
bench prints."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import fix_bench  # noqa: E402
import fix_diffs  # noqa: E402
from fix_tasks import Row  # noqa: E402

ONE_LINE = """--- a/geo/helpers.py
+++ b/geo/helpers.py
@@ -3,3 +3,3 @@
     if value > high:
-        return low
+        return high
     return value
"""


def test_a_diff_counts_the_lines_it_removes_and_adds() -> None:
    assert fix_diffs.changed_lines(ONE_LINE) == 2
    rewrite = ONE_LINE.replace("-        return low\n", "-        return low\n-    return value\n+    x = 1\n")
    assert fix_diffs.changed_lines(rewrite) == 4
    assert fix_diffs.changed_lines("") == 0


def test_the_datasets_own_change_counts_the_same_way() -> None:
    buggy = "def f(x):\n    if x > 1:\n        return 0\n    return x\n"
    canonical = buggy.replace("return 0", "return 1")
    assert fix_diffs.dataset_changed_lines(buggy, canonical) == 2
    assert fix_diffs.dataset_changed_lines(buggy, buggy) == 0


def _row(task: str, passed: bool, lines: int | None, dataset: int | None) -> Row:
    return Row(task, 0, True, passed, passed, 2, 2, 1.0, True, "diff", changed_lines=lines, dataset_lines=dataset)


def test_the_bench_prints_the_median_of_the_fixes_that_passed() -> None:
    rows = [_row("a", True, 2, 2), _row("b", True, 6, 2), _row("c", True, 4, 4), _row("d", False, 40, 2)]
    summary = fix_bench.summarize(rows)
    assert (summary["changed_lines_median"], summary["dataset_lines_median"]) == (4, 2)  # "d" failed: left out
    assert fix_bench.summarize([_row("d", False, 40, 2)])["changed_lines_median"] is None
