"""The verdict that counts: a separate, final run of a candidate against the task's full `test`.

It never reuses the agent's own tool results (those may have used other tests, or none),
and it runs with the reference harness's prelude, like bigcode-evaluation-harness. The test
runs in the sandbox's judge process with the task's own helpers (tasks/support.py); the
candidate's functions are reached in a process of their own.

`score_task` adds the pass@1+ check (evaluation/robustness.py) in the same run where it can: once
the task's canonical answers are known and the executor has a judge (executor.JUDGE), the check is
appended to the test. The test marks the point it reached first (`@hefix.mark`, on the judge's
channel), so the verdict is the test's alone, as if it had run by itself: the mark says whether
the test passed; a run that ended before the mark ended inside the test, with the test's own
status and message. Otherwise the test runs alone, and the check after it for a passing candidate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from humanevalfix.evaluation import robustness
from humanevalfix.evaluation import scores as scoring
from humanevalfix.evaluation.plusstore import CaseStore
from humanevalfix.evaluation.robustness import Inputs, Robustness
from humanevalfix.evaluation.scores import Candidates, Judged
from humanevalfix.sandbox.executor import JUDGE, ExecResult, Executor
from humanevalfix.tasks.support import support_code
from humanevalfix.tasks.task import Task

PASSED_MESSAGE = "all tests passed"


@dataclass(frozen=True)
class Score:
    passed_first: bool
    passed: bool
    message: str  # the final candidate's verdict message
    error: str | None = None  # the executor failed (not the candidate)


def score_code(code: str | None, task: Task, executor: Executor) -> ExecResult:
    if code is None:
        return ExecResult("failed", "no candidate code")
    return executor.run(code, task.test, support_code(task))


def score(first_code: str | None, final_code: str | None, task: Task, executor: Executor) -> Score:
    """The verdicts alone (no pass@1+)."""
    final = score_code(final_code, task, executor)
    first = final if first_code == final_code else score_code(first_code, task, executor)
    return _score(first, final)


def _score(first: ExecResult, final: ExecResult) -> Score:
    errors = [r.message for r in (final, first) if r.status == "error"]
    return Score(
        passed_first=first.passed,
        passed=final.passed,
        message=final.message,
        error=f"executor: {errors[0]}" if errors else None,
    )


@dataclass(frozen=True)
class Scored:
    score: Score
    scores: dict[str, Any]  # every registered scorer's entry: TaskRecord.scores (evaluation/scores.py)


def score_task(
    first_code: str | None,
    final_code: str | None,
    task: Task,
    executor: Executor,
    store: CaseStore,
    inputs: Inputs | None = None,
) -> Scored:
    """The verdicts and the pass@1+ checks of a task's first and final candidates (one run each),
    turned into their record entries by the registered scorers."""
    final = _judge(final_code, task, executor, store, inputs)
    first = final if first_code == final_code else _judge(first_code, task, executor, store, inputs)
    candidates = Candidates(task, first_code, final_code, Judged(*first), Judged(*final), executor)
    return Scored(_score(first[0], final[0]), scoring.entries(candidates))


def _judge(
    code: str | None, task: Task, executor: Executor, store: CaseStore, inputs: Inputs | None
) -> tuple[ExecResult, Robustness]:
    if code is None:
        return ExecResult("failed", "no candidate code"), Robustness(plus=None)
    known = (
        store.cached(task, None if inputs is None else inputs.args, 0.0 if inputs is None else inputs.atol, executor)
        if task.canonical_code
        else None
    )
    if known is not None and known.count and JUDGE in getattr(executor, "guarantees", frozenset()):
        program = robustness.check_program(task, known)
        run = executor.run(code, task.test + "\n" + program.call, program.support)
        mark = run.facts.get("test")
        if mark is True:
            verdict = ExecResult("passed", PASSED_MESSAGE, run.output, run.duration_s, run.exit_code, run.exec_s)
            return verdict, robustness.outcome(code, task, robustness.read_run(run))
        if mark is False or run.status != "passed":
            return run, Robustness(plus=None)  # it failed inside the test: the test's own verdict
        # Passed without reaching the mark: not what a judge does; the test alone decides.
    verdict = score_code(code, task, executor)
    return verdict, robustness.check(code, task, executor, verdict.passed, inputs, store)
