"""What to repair: the prompt's parts, how a candidate is checked, what run_code runs against.

The loop knows nothing of where these come from: the benchmark builds a request from a
HumanEvalFix task (`request_for_task`), `fix` from the user's file and the scope they chose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from humanevalfix.agent._settings import AgentSettings
from humanevalfix.agent.codecheck import CodeCheck, check_candidate, function_header
from humanevalfix.sandbox.executor import ExecResult
from humanevalfix.tasks.support import support_code
from humanevalfix.tasks.task import Task

FUNCTION, MODULE = "function", "module"


@dataclass(frozen=True)
class Target:
    """What the model repairs, as the prompts name it: one function, or a whole module."""

    name: str  # the function's name, or the module's dotted name
    kind: str = FUNCTION

    @property
    def function(self) -> str | None:
        """The function a candidate must define (of several code blocks, the one defining it); None for a module."""
        return self.name if self.kind == FUNCTION else None


@dataclass(frozen=True)
class Rewrite:
    """The `rewrite` strategy's prompt: the function written anew from these, its buggy body not shown."""

    description: str  # "" : written from the tests alone
    header: str  # imports, helpers and the `def` line(s), as in the code (codecheck.function_header)


@dataclass(frozen=True)
class RepairRequest:
    task_id: str  # for logs and the oracle; never sent to the model
    target: Target
    code: str  # the code to repair, as the model is shown it
    check: Callable[[str], CodeCheck]  # a candidate as it will run, or why it is refused
    # Shown in the prompt and given to the executor's run(code, tests); None: no tests shown, and
    # candidates run against "" (the benchmark's executor then only runs the code).
    tests: str | None = None
    description: str = ""  # under "What it should do:"; "" leaves the section out
    rules: str = ""  # what the model may change, after the description; "" for none
    rewrite: Rewrite | None = None  # None: a stuck text-protocol model is never asked to rewrite
    # The code's own run against `tests` when the caller has it (fix checks its tests first); else
    # the text protocol runs the code once to show the model how it fails.
    baseline: ExecResult | None = None
    # Trusted code the judge runs before `tests` (the benchmark's helpers: tasks/support.py).
    support: str = ""

    def __post_init__(self) -> None:
        if self.rewrite is not None and self.target.function is None:
            raise ValueError(f"{self.task_id}: `rewrite` writes one function; a whole module is not rewritten")


def _feedback_test(task: Task, mode: str) -> str | None:
    if mode == "tests":
        return task.test
    if mode == "example":
        return task.example_test or None
    return None


def request_for_task(task: Task, settings: AgentSettings) -> RepairRequest:
    """The benchmark's request: the buggy function, its docstring and the tests as --protocol
    chooses (settings.docstring, settings.feedback); rewrite allowed where there is a description
    to write from."""
    described = settings.docstring and bool(task.docstring.strip())
    tests = _feedback_test(task, settings.feedback)
    # Without a description the shown tests are the specification (HumanEvalFixTests): a stuck
    # model may still write the function anew from them; only with neither is there nothing to go on.
    header = function_header(task.buggy_code, task.entry_point)
    return RepairRequest(
        task_id=task.task_id,
        target=Target(task.entry_point),
        code=task.buggy_code,
        check=partial(check_candidate, buggy_code=task.buggy_code, entry_point=task.entry_point),
        tests=tests,
        description=task.docstring if settings.docstring else "",
        rewrite=Rewrite(task.docstring if described else "", header) if described or tests else None,
        support=support_code(task),
    )
