"""The verdict that counts: a separate, final run of a candidate against the task's full `test`.

It never reuses the agent's own tool results (those may have used other tests, or none),
and it runs with the reference harness's prelude, like bigcode-evaluation-harness. The test
runs in the sandbox's judge process with the task's own helpers (tasks/support.py); the
candidate's functions are reached in a process of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from humanevalfix.tasks.task import Task
from humanevalfix.tasks.support import support_code
from humanevalfix.sandbox.executor import ExecResult, Executor


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
    final = score_code(final_code, task, executor)
    first = final if first_code == final_code else score_code(first_code, task, executor)
    errors = [r.message for r in (final, first) if r.status == "error"]
    return Score(
        passed_first=first.passed,
        passed=final.passed,
        message=final.message,
        error=f"executor: {errors[0]}" if errors else None,
    )
