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
from humanevalfix.evaluation.plusanswers import ANSWERS_RUN_S
from humanevalfix.evaluation.pluscases import Cases
from humanevalfix.evaluation.plusstore import CaseStore
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


def _rows(
    executor: Executor, tasks: dict[str, Task], ids: tuple[str, ...] = SLOW + CPU_BOUND, run_s: float = ANSWERS_RUN_S
) -> dict[str, Any]:
    store = CaseStore(None, run_s=run_s, shipped=None)  # nothing kept or shipped: every task computed again
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
        # A property (Python/32: any root) is checked on its CPU time: beside hogs the canonical
        # solution's answers still have it, on every input.
        task = all_tasks["Python/32"]
        cases = CaseStore(None, shipped=None).get(task, None, 0.0, ex)
        verdict = robustness.differential(task.canonical_code or "", task, ex, cases)
        assert verdict.agrees is True and verdict.compared == cases.count > 0, verdict
    finally:
        ex.close()
    for tid in SLOW + CPU_BOUND:  # input for input, answer for answer, limit for limit, drop for drop
        assert loaded[tid] == quiet[tid], tid
    assert json.loads(quiet["Python/75"][2]).get("budget"), quiet["Python/75"]  # the budget binds here
    assert json.loads(quiet["Python/63"][2]).get("long"), quiet["Python/63"]  # and a call's steps here


@pytest.mark.e2e
def test_cases_from_short_runs_are_those_of_one_long_run(quiet: dict[str, Any], all_tasks: dict[str, Task]) -> None:
    """Runs of 4 s (2.8 s for the answers, a run stopping between inputs once half is spent) in
    place of 30 s, as an executor that takes no `timeout_s` gives them: the slow tasks' answers
    take more runs, with the same outcome."""
    ex = build_executor("bwrap", Limits(timeout_s=4.0))
    try:
        short = _rows(ex, all_tasks, SLOW, run_s=4.0)
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


# --- the answers' own time -----------------------------------------------------------------------


class _Seen:
    """An executor that records each run's time and answers with no cases (a run saying so)."""

    def __init__(self, with_timeout: bool) -> None:
        self.limits, self.times = Limits(timeout_s=6.0), []  # type: ignore[var-annotated]
        if with_timeout:
            self.run = self._run_timed  # type: ignore[method-assign]

    def _answer(self) -> ExecResult:
        state = {"kept": 0, "all": 0, "slow": 0, "per_call": 1, "size": 0, "drops": {}}
        return ExecResult("passed", "ok", facts={"cases": {"cases": [], "next": None, "state": state}})

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        self.times.append((None, _chunk(support)))
        return self._answer()

    def _run_timed(self, code: str, test: str, support: str = "", timeout_s: float | None = None) -> ExecResult:
        self.times.append((timeout_s, _chunk(support)))
        return self._answer()

    def close(self) -> None:
        pass


def _chunk(program: str) -> float | None:
    """The run's time the answers program was written for (its __CHUNK_S__), if it is one."""
    marker = "this run's %g s ran out before its steps or CPU time\" % (_i, "
    return float(program.split(marker, 1)[1].split(")", 1)[0]) if marker in program else None


def test_answers_runs_take_their_own_time_where_the_executor_takes_one(all_tasks: dict[str, Task]) -> None:
    from humanevalfix.evaluation.activity import Activity, TrackedExecutor
    from humanevalfix.evaluation.pluscases import compute
    from humanevalfix.sandbox.executor import takes_timeout
    from humanevalfix.sandbox.pool import ExecutorPool

    task = all_tasks["Python/0"]
    timed, plain = _Seen(True), _Seen(False)
    assert takes_timeout(timed) and not takes_timeout(plain)
    # Every answers run (the seeds' run that decides whether order matters, then the inputs').
    compute(task, [([1.0, 2.0], 0.5)], 0.0, timed)  # type: ignore[arg-type]
    assert timed.times and set(timed.times) == {(ANSWERS_RUN_S, ANSWERS_RUN_S - 1.2)}
    compute(task, [([1.0, 2.0], 0.5)], 0.0, plain)  # type: ignore[arg-type]  # a plugin: its own 6 s
    assert plain.times and set(plain.times) == {(None, 6.0 - 1.2)}
    # Wrappers take it only where what they wrap does: the pool, and a tracked pool.
    for inner, takes in ((timed, True), (plain, False)):
        pool = ExecutorPool(lambda inner=inner: inner, 1)  # type: ignore[misc]
        tracked = TrackedExecutor(pool, Activity(lambda: 0.0), 0, task.task_id)
        assert (takes_timeout(pool), takes_timeout(tracked)) == (takes, takes)
    tracked.run("", "pass\n")  # a run without `timeout_s` passes none on
    assert plain.times[-1] == (None, None)
