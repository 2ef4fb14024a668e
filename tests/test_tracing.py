"""Runtime values in the feedback (agent.tracing) and replies drawn again in their turn (--redraws).

The tracer runs in the real sandbox executor; the model is a script. The traced run is text for
the model only: the candidate's outcome and the scorer's verdict never change with it.
"""

from __future__ import annotations

import pytest

from humanevalfix.agent import AgentSettings, ToolMode, repair, request_for_task
from humanevalfix.agent.tracing import BUDGET, failing_call, runtime_values
from humanevalfix.evaluation.dataset import Task
from humanevalfix.models.client import ChatReply, ChatRequest, Usage

from .conftest import CountingExecutor

LOOP = """def below_zero(operations):
    balance = 0
    for op in operations:
        balance += op
        if balance == 0:
            return True
    return False
"""


class Script:
    """A model that answers from a list, and keeps what it was asked."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    def chat(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        return ChatReply(self.replies.pop(0), usage=Usage(100, 10), latency_s=1.0)


def fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


@pytest.fixture
def executor() -> CountingExecutor:
    ex = CountingExecutor()
    yield ex
    ex.close()


def test_the_failing_call_is_read_from_both_feedback_forms_and_only_with_literal_arguments() -> None:
    assert failing_call("Test failed (test line 7):\nassert f(3) == 4\n  call:     f(3)\n  expected: 4", "f") == "f(3)"
    assert failing_call("IndexError: x\n  while calling f([1, -2], k='a') (test line 3)", "f") == "f([1, -2], k='a')"
    assert failing_call("  call:     f(x)", "f") is None  # built by the test: not traced
    assert failing_call("  call:     g(3)", "f") is None  # another function
    assert failing_call("  call:     f(*[1])", "f") is None
    assert failing_call("  call:     f([1, 2, ...", "f") is None  # cut by the feedback's cap
    assert failing_call("AssertionError\n  test line 3: assert f(1)", "f") is None


@pytest.mark.e2e
def test_a_trace_shows_the_changed_values_line_by_line(executor: CountingExecutor) -> None:
    text = runtime_values(executor, LOOP, "  call:     below_zero([1, 2, -3])", "below_zero")
    assert text.startswith("What `below_zero([1, 2, -3])` did, line by line")
    assert "call below_zero(operations=[1, 2, -3])" in text
    assert "line 4  balance += op  | balance=3" in text
    assert "line 6  return True  -> returns True" in text
    indexed = runtime_values(executor, "def f(xs):\n    y = xs[0] + 1\n    return y\n", "  call:     f([1])", "f")
    assert "y = xs[0] + 1  | y=2" in indexed  # the model's text: brackets as written, no console escapes


@pytest.mark.e2e
def test_a_long_or_endless_call_is_bounded_and_the_candidates_prints_are_not_the_trace(
    executor: CountingExecutor,
) -> None:
    code = "def f(n):\n    print('MARK' * 1000)\n    while True:\n        n += 1\n"
    text = runtime_values(executor, code, "  call:     f(1)", "f")
    assert "steps not shown" in text and "(stopped after 5000 steps)" in text
    assert "MARK" not in text.split("\n", 2)[2] or "print(" in text  # only the source line, never the output
    assert len(text) <= BUDGET + 200
    long_repr = runtime_values(executor, "def f(s):\n    t = s * 100\n    return t\n", "  call:     f('abc')", "f")
    assert max(len(line) for line in long_repr.splitlines()) < 200


@pytest.mark.e2e
def test_no_trace_without_a_call_or_when_the_tracer_shows_nothing(executor: CountingExecutor) -> None:
    assert runtime_values(executor, LOOP, "SyntaxError: invalid syntax", "below_zero") == ""
    assert runtime_values(executor, "import sys\nsys.exit(0)\n", "  call:     f(1)", "f") == ""


def _task(all_tasks: dict[str, Task], task_id: str) -> Task:
    return all_tasks[task_id]


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["none", "trace", "locate"])
def test_the_feedback_on_a_candidate_carries_the_trace_only_when_asked_and_the_outcomes_do_not_change(
    mode: str, all_tasks: dict[str, Task], executor: CountingExecutor
) -> None:
    task = _task(all_tasks, "Python/3")  # buggy code and tests shown, no docstring (--protocol tests)
    settings = AgentSettings(max_iters=1, docstring=False, runtime_values=mode)
    wrong = task.buggy_code.replace("balance == 0", "balance == 1")
    model = Script([fenced(wrong), fenced(task.buggy_code.replace("balance == 0", "balance == 2"))])
    result = repair(request_for_task(task, settings), model, executor, settings, ToolMode(False))
    assert [a.outcome for a in result.attempts] == ["failed", "failed"]
    task_prompt = model.requests[0].messages[1]["content"]
    feedback = result.attempts[0].feedback
    assert ("did, line by line" in feedback) == (mode != "none")
    assert "did, line by line" not in task_prompt  # only the model's own candidates are traced
    assert ("which line above first gives a wrong value" in feedback) == (mode == "locate")
    assert ("balance=1" in feedback) == (mode != "none")


@pytest.mark.e2e
def test_a_repeat_and_a_reply_without_code_are_drawn_again_in_the_same_turn(
    all_tasks: dict[str, Task], executor: CountingExecutor
) -> None:
    task = _task(all_tasks, "Python/3")
    settings = AgentSettings(max_iters=1, docstring=False, redraws=2, seed=0, temperatures=(0.0,))
    model = Script([fenced(task.buggy_code), "No bug here.", fenced(task.canonical_code)])
    result = repair(request_for_task(task, settings), model, executor, settings, ToolMode(False))
    assert [a.outcome for a in result.attempts] == ["passed"]
    attempt = result.attempts[0]
    assert attempt.turn == 0 and attempt.redrawn == ["repeat", "no_code"]
    assert (attempt.tokens_in, attempt.tokens_out, attempt.latency_s) == (300, 30, 3.0)  # every draw is paid for
    temps = [r.temperature for r in model.requests]
    seeds = [r.seed for r in model.requests]
    assert temps == [0.0, 0.8, 0.8] and len(set(seeds)) == 3
    assert result.first_code is not None  # the turn's candidate is the first attempt


@pytest.mark.e2e
def test_without_redraws_a_repeat_spends_its_turn(all_tasks: dict[str, Task], executor: CountingExecutor) -> None:
    task = _task(all_tasks, "Python/3")
    settings = AgentSettings(max_iters=1, docstring=False)
    model = Script([fenced(task.buggy_code), fenced(task.buggy_code)])
    result = repair(request_for_task(task, settings), model, executor, settings, ToolMode(False))
    assert [a.outcome for a in result.attempts] == ["repeat", "repeat"]
    assert all(a.redrawn == [] for a in result.attempts)


@pytest.mark.e2e
def test_redraw_turns_keeps_the_redraws_to_the_first_turns(
    all_tasks: dict[str, Task], executor: CountingExecutor
) -> None:
    task = _task(all_tasks, "Python/3")
    settings = AgentSettings(max_iters=2, docstring=False, redraws=1, redraw_turns=1, seed=0, temperatures=(0.0,))
    wrong = fenced(task.buggy_code.replace("balance == 0", "balance == 1"))
    # Turn 0: the buggy code again is drawn once more; turn 1: a repeat spends the turn.
    model = Script([fenced(task.buggy_code), wrong, wrong, fenced(task.canonical_code)])
    result = repair(request_for_task(task, settings), model, executor, settings, ToolMode(False))
    assert [(a.outcome, a.redrawn) for a in result.attempts] == [("failed", ["repeat"]), ("repeat", []), ("passed", [])]
