"""pass@1+ that anyone can reproduce (issue 51).

- The cases (inputs, canonical answers, candidate limits, drops by reason) are a pure function of
  the task and the generator: its budgets count steps, not seconds, so a machine beside CPU hogs
  computes the very cases a quiet one does, and so does one whose runs are cut short (the answers
  go on in another run from where one stopped).
- An input the candidate's run did not reach is unchecked: pass@1+ unknown (None) with the
  reason, never a silent pass or fail; a task without cases is unknown too. The summary counts
  those passes apart.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from humanevalfix.evaluation import robustness
from humanevalfix.evaluation.pluscases import Cases, CaseStore
from humanevalfix.evaluation.scorers import Plus
from humanevalfix.runspec import RunSpec
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, ExecResult, Executor, Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.tasks.task import Task

# Tasks whose canonical solution runs long on some inputs (dropped by steps, or by the budget of
# the inputs kept: Python/75, 63, 55, 106, 36 lost inputs to time before), and two quick ones.
SLOW = ("Python/75", "Python/63", "Python/55", "Python/106", "Python/36", "Python/0", "Python/32")
# A task whose long inputs are stopped by their CPU time, not their steps (base 1 in Python/44: a
# loop that copies an ever longer string, work in C): the same beside hogs, whichever stops first.
CPU_BOUND = ("Python/44",)


def _spin() -> None:
    while True:
        pass


@pytest.fixture
def hogs() -> Iterator[None]:
    """Busy loops beside the test: two more than the machine's cores, at least three."""
    procs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(max(3, (os.cpu_count() or 2) + 2))]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.join()


def _rows(executor: Executor, tasks: dict[str, Task], ids: tuple[str, ...] = SLOW + CPU_BOUND) -> dict[str, Any]:
    store = CaseStore(None)  # nothing kept: every task computed again
    found = {}
    for tid in ids:
        cases = store.get(tasks[tid], None, 0.0, executor)
        assert cases.problem is None, (tid, cases.problem)
        found[tid] = ([(c.text, c.expected, c.limit_s) for c in cases.cases], cases.dropped, cases.drops)
    return found


@pytest.fixture(scope="module")
def quiet(all_tasks: dict[str, Task]) -> dict[str, Any]:
    ex = build_executor("bwrap", Limits(timeout_s=DEFAULT_TIMEOUT_S))
    try:
        return _rows(ex, all_tasks)
    finally:
        ex.close()


@pytest.mark.e2e
def test_cases_beside_cpu_hogs_are_the_quiet_machines(
    quiet: dict[str, Any], all_tasks: dict[str, Task], hogs: None
) -> None:
    ex = build_executor("bwrap", Limits(timeout_s=DEFAULT_TIMEOUT_S))
    try:
        loaded = _rows(ex, all_tasks)
    finally:
        ex.close()
    for tid in SLOW + CPU_BOUND:  # input for input, answer for answer, limit for limit, drop for drop
        assert loaded[tid] == quiet[tid], tid
    assert json.loads(quiet["Python/75"][2]).get("budget"), quiet["Python/75"]  # the budget binds here
    assert json.loads(quiet["Python/63"][2]).get("long"), quiet["Python/63"]  # and a call's steps here


@pytest.mark.e2e
def test_cases_from_short_runs_are_those_of_one_long_run(quiet: dict[str, Any], all_tasks: dict[str, Task]) -> None:
    """Runs of 4 s (2.8 s for the answers, a run stopping between inputs once half is spent) in
    place of 6 s: the slow tasks' answers take more runs, with the same outcome."""
    ex = build_executor("bwrap", Limits(timeout_s=4.0))
    try:
        short = _rows(ex, all_tasks, SLOW)
    finally:
        ex.close()
    assert short == {tid: quiet[tid] for tid in SLOW}


# --- unknown, not a pass or a fail -------------------------------------------------------------


def _run(passed: bool, facts: dict[str, Any], message: str = "all tests passed") -> ExecResult:
    return ExecResult("passed" if passed else "failed", message, facts=facts)


def test_inputs_the_run_did_not_reach_leave_pass_at_1_plus_unknown() -> None:
    d = robustness.read_run(_run(True, {"plus": {"compared": 100, "disagreements": 0, "skipped": 40}}))
    assert d.agrees is None and d.compared == 100
    assert d.example and d.example.startswith(robustness.UNCHECKED) and "40 of 140 inputs" in d.example
    # A disagreement on an input that was checked is still a failure, whatever was left unchecked.
    wrong = _run(False, {"plus": {"compared": 3, "disagreements": 1, "skipped": 5}}, "AssertionError: plus: on input")
    assert robustness.read_run(wrong).agrees is False
    assert robustness.read_run(_run(True, {"plus": {"compared": 7, "disagreements": 0, "skipped": 0}})).agrees is True


def test_a_task_without_cases_makes_no_claim(all_tasks: dict[str, Task]) -> None:
    class NoRun:
        def run(self, code: str, test: str, support: str = "") -> ExecResult:
            raise AssertionError("nothing to run without cases")

    task = all_tasks["Python/0"]
    d = robustness.differential(task.canonical_code or "", task, NoRun(), Cases.of((), dropped=12))  # type: ignore[arg-type]
    assert d.agrees is None and d.example == robustness.NO_CASES + " (12 inputs dropped)"


def _record(passed: bool, final: bool | None, example: str | None = None, first: bool | None = None) -> Any:
    entry = {"final": final, "first": first if first is not None else final, "example": example}
    return SimpleNamespace(passed=passed, passed_first=passed, scores={"plus": entry}, task_id="t")


def test_the_summary_counts_unknown_passes_apart() -> None:
    plus = Plus()
    records = [
        _record(True, True),
        _record(True, False, "on input (1,)"),
        _record(True, None, robustness.NO_CASES),
        _record(True, None, robustness.unchecked(3, 10)),
        _record(False, None),
    ]
    entry = plus.summarize(records)
    assert entry is not None
    assert (entry["passed"], entry["unknown"], entry["no_cases"], entry["unknown_first"]) == (1, 2, 1, 2)
    rows = dict(plus.table_rows(entry, 5, RunSpec()))
    assert rows["pass@1+ unknown, first / after repair"].startswith("2 / 2 passes (1 of a task without cases")
    assert any(line.startswith("pass@1+ unknown") for line in plus.report_lines(entry, RunSpec()))
    # A run with every pass known reads as before: no new keys, no new row.
    known = plus.summarize(records[:2])
    assert known is not None and "unknown" not in known
    assert [name for name, _ in plus.table_rows(known, 2, RunSpec())] == ["pass@1+, first / after repair"]
    # Every pass unknown is still said, not "no pass@1+".
    only = plus.summarize(records[2:3])
    assert only is not None and only["passed"] == 0 and only["no_cases"] == 1
