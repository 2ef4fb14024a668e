"""A prompt too long for the server's context: the turn is sent again smaller (older turns left out,
then fewer lines of the tests shown), recorded per task; only when nothing is left to cut does the
repair end as context_exceeded. Against the scripted server on loopback, whose "context" here is a
number of characters, and the real sandbox running the full tests."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from humanevalfix.agent import AgentSettings, ToolMode, prompts, repair, request_for_task
from humanevalfix.agent._fit import ContextFit, trimmed_tests
from humanevalfix.config import RunConfig
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.client import ChatRequest, OpenAIChatModel, RetryPolicy
from humanevalfix.models.keys import KeyPool
from humanevalfix.reports.summary import print_summary
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, error, fenced, tool_call

from .conftest import CountingExecutor, entry_point_of

LONG_TESTS = "Python/87"  # 30 lines of tests, the longest with Python/141
OVERFLOW = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."


def model_for(server: ScriptedServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        provider="compatible",
        model="scripted-model",
        base_url=server.base_url,
        keys=KeyPool(["x"]),
        retry=RetryPolicy(attempts=1, initial_s=0.01, timeout_s=10.0),
    )


def size(rec: Recorded) -> int:
    return sum(len(str(m.get("content") or "")) for m in rec.body["messages"])


@pytest.fixture
def task(all_tasks: dict[str, Task]) -> Task:
    return all_tasks[LONG_TESTS]


def test_cuts_history_first_then_halves_the_tests_then_gives_up() -> None:
    tests = "\n".join(f"assert f({i}) == {i}" for i in range(8))
    fit = ContextFit.for_tests(tests)
    task_message = {"role": "user", "content": f"Fix it.\n```python\n{tests}\n```"}
    native = [
        {"role": "system", "content": "s"},
        task_message,
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}]},
        {"role": "tool", "tool_call_id": "a", "content": "failed 1"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "b"}]},
        {"role": "tool", "tool_call_id": "b", "content": "failed 2"},
    ]
    request = ChatRequest(messages=native, temperature=0.0, max_tokens=10)
    assert fit.apply(request) is request  # nothing cut yet
    assert fit.shrink(request) == "earlier turns left out"
    cut = fit.apply(request).messages
    assert [m.get("content") for m in cut] == [
        "s",
        task_message["content"],
        "",
        "failed 2",
    ]  # the latest call keeps its answer
    assert fit.shrink(request) == "tests: first 4 of 8 lines shown"
    shown = fit.apply(request).messages[1]["content"]
    assert (
        "assert f(3) == 3" in shown
        and "assert f(4) == 4" not in shown
        and "4 more lines of the tests, not shown" in shown
    )
    assert fit.shrink(request) == "tests: first 2 of 8 lines shown"
    assert fit.shrink(request) is None  # one line would say nothing
    assert native[1] is task_message and "assert f(7) == 7" in native[1]["content"]  # the conversation keeps everything


def test_without_tests_shown_there_is_nothing_to_cut_after_the_history() -> None:
    fit = ContextFit.for_tests(None)
    request = ChatRequest(
        messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], temperature=0.0, max_tokens=10
    )
    assert fit.shrink(request) is None
    assert trimmed_tests("a\nb", 5) == "a\nb"


@pytest.mark.e2e
def test_a_text_prompt_too_long_is_sent_again_with_fewer_test_lines_and_the_full_tests_still_run(task: Task) -> None:
    settings = AgentSettings(max_iters=2, docstring=False)
    full = prompts.tests_text(task.test)
    budget: list[int] = []

    def small_context(rec: Recorded) -> Response:
        if not budget:
            budget.append(size(rec) - len(full) // 3)  # the first prompt is a third of its tests too long
        if size(rec) > budget[0]:
            return error(400, OVERFLOW)
        return fenced(task.canonical_code or "")

    executor = CountingExecutor()
    with ScriptedServer(small_context) as server:
        result = repair(request_for_task(task, settings), model_for(server), executor, settings, ToolMode(native=False))
        sent = server.chat_requests()
    assert result.stop_reason == "passed" and result.error is None
    assert result.context_trims == ["turn 0: tests: first 15 of 30 lines shown"]
    assert [a.outcome for a in result.attempts] == ["passed"]  # the overflow spent no attempt
    answered = sent[-1].body["messages"][1]["content"]
    assert "15 more lines of the tests, not shown" in answered and full not in answered
    assert executor.runs[-1].strip() == (task.canonical_code or "").strip()  # and it ran against the full tests:
    assert "failed" not in str(result.attempts[0].feedback).lower()


@pytest.mark.e2e
def test_a_native_conversation_drops_its_older_turns_first(task: Task) -> None:
    settings = AgentSettings(max_iters=3)
    wrong = [task.buggy_code.replace("return", f"return {i} or", 1) for i in (1, 2)]

    answers = [*wrong, task.canonical_code or ""]
    given: list[str] = []

    def two_turns_of_context(rec: Recorded) -> Response:
        if sum(1 for m in rec.body["messages"] if m.get("role") == "assistant") >= 2:
            return error(400, OVERFLOW)
        given.append(answers[len(given)])
        return tool_call(given[-1])

    with ScriptedServer(two_turns_of_context) as server:
        result = repair(
            request_for_task(task, settings), model_for(server), CountingExecutor(), settings, ToolMode(native=True)
        )
        sent = server.chat_requests()
    assert result.stop_reason == "passed", result.attempts
    assert result.context_trims == ["turn 2: earlier turns left out"]
    assert [m["role"] for m in sent[-1].body["messages"]] == ["system", "user", "assistant", "tool"]
    assert len(result.messages) > 6  # the trace keeps every turn


@pytest.mark.e2e
def test_a_run_records_the_cuts_and_says_so_and_a_prompt_that_never_fits_ends_as_context_exceeded(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    first = sorted(tiny_tasks)[0]

    def never_fits_for_one(rec: Recorded) -> Response:
        if entry_point_of(rec) == first:
            return error(400, OVERFLOW)
        return tool_call(tiny_tasks[entry_point_of(rec)].canonical_code or "")

    with ScriptedServer(never_fits_for_one) as server:
        outcome = run_eval(make_config(server, tiny_dataset))
    assert outcome.status == "complete" and outcome.summary.errors == 0
    by_entry = {r.entry_point: r for r in outcome.records}
    stuck = by_entry[first]
    assert stuck.stop_reason == "context_exceeded" and stuck.error is None and stuck.iterations == 0
    assert stuck.context_trims and stuck.context_trims[-1].startswith("turn 0: tests: first 2 of")
    assert all(r.passed and r.context_trims == [] for e, r in by_entry.items() if e != first)
    console = Console(file=io.StringIO(), width=400)
    print_summary(console, outcome.summary, outcome.spec, outcome.records)
    assert "1 ended at the context limit" in console.file.getvalue()  # type: ignore[attr-defined]
