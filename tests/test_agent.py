"""The repair loop end to end: real HTTP to the scripted server through the real `openai` client,
the real agent and runner, real executions of candidates against the real HumanEvalFix tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from humanevalfix.agent import AgentResult, AgentSettings, ToolMode, prompts, repair, request_for_task
from humanevalfix.config import RunConfig
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.client import ChatModel, OpenAIChatModel, RetryPolicy
from humanevalfix.models.keys import KeyPool
from humanevalfix.sandbox.executor import Executor
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, error, fenced, text, tool_call

from .conftest import KEYS_ENV, CountingExecutor, entry_point_of, last_message, results_of, turn_of

KEY = "sk-test-agent-0000aaaa"


def repair_task(
    task: Task,
    model: ChatModel,
    executor: Executor,
    settings: AgentSettings,
    mode: ToolMode,
    stop: threading.Event | None = None,
) -> AgentResult:
    """The benchmark's way in: the task's request, as the runner builds it."""
    return repair(request_for_task(task, settings), model, executor, settings, mode, stop)


@pytest.fixture(autouse=True)
def one_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)


def by_turn(tasks: dict[str, Task], answers: Callable[[Task, int], Response]) -> Callable[[Recorded], Response]:
    """A handler answering each task's n-th model call with answers(task, n)."""

    def handler(rec: Recorded) -> Response:
        return answers(tasks[entry_point_of(rec)], turn_of(rec))

    return handler


def scripted_model(server: ScriptedServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        provider="compatible",
        model="scripted-model",
        base_url=server.base_url,
        keys=KeyPool([KEY]),
        retry=RetryPolicy(attempts=2, initial_s=0.01, timeout_s=10.0),
    )


def test_native_tool_call_with_canonical_fix_passes(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    handler = by_turn(tiny_tasks, lambda task, turn: tool_call(task.canonical_code or ""))
    with ScriptedServer(handler) as server:
        outcome = run_eval(make_config(server, tiny_dataset))
        requests = server.chat_requests()
    assert outcome.status == "complete"
    assert [r.task_id for r in outcome.records] == ["Python/0", "Python/2", "Python/3"]
    assert len(requests) == 3  # one model call per task: the first run passed
    for rec in requests:
        assert rec.api_key == KEY
        assert [t["function"]["name"] for t in rec.body["tools"]] == ["run_code"]
        assert rec.body["model"] == "scripted-model"
    for record in outcome.records:
        assert record.passed and record.passed_first, record.score_message
        assert record.error is None
        assert (record.iterations, record.executions, record.stop_reason) == (1, 1, "passed")
        assert (record.tokens_in, record.tokens_out) == (100, 20)  # the server's usage block
        assert record.tool_mode == "native"
        [attempt] = record.attempts
        assert attempt["via"] == "native" and attempt["outcome"] == "passed"
        assert attempt["key_index"] == 0 and attempt["http_attempts"] == 1
    summary = results_of(outcome.results_path)["summary"]
    assert (summary["tasks"], summary["passed"], summary["passed_first"], summary["errors"]) == (3, 3, 3, 0)
    assert (summary["tokens_in"], summary["tokens_out"]) == (300, 60)


def test_fenced_python_block_counts_as_the_run_code_call(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    handler = by_turn(tiny_tasks, lambda task, turn: fenced(task.canonical_code or "", prose="The bug is the + 1.0."))
    with ScriptedServer(handler) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",)))
        assert len(server.chat_requests()) == 1
    [record] = outcome.records
    assert record.passed and record.passed_first
    assert record.executions == 1
    assert record.attempts[0]["via"] == "fenced"
    assert record.attempts[0]["outcome"] == "passed"
    assert record.tool_mode == "native"  # a fenced block alone does not switch the endpoint to text


def test_bare_code_answer_does_not_switch_a_native_endpoint_to_text(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    """Unfenced code is an answer given without the tool, not a tool call written as text."""
    handler = by_turn(tiny_tasks, lambda task, turn: text("Here is the fix:\n\n" + (task.canonical_code or "")))
    with ScriptedServer(handler) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",)))
    [record] = outcome.records
    assert record.passed and record.attempts[0]["via"] == "bare"
    assert record.tool_mode == "native" and outcome.config["tool_mode"] == "native"


def test_repeated_code_is_not_run_again_and_the_temperature_rises(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    task = tiny_tasks["truncate_number"]
    # Same code as the buggy one modulo a comment, a docstring, parentheses and blank lines.
    same_again = (
        "def truncate_number(number: float) -> float:\n"
        '    """Return the decimal part."""\n\n'
        "    # keep only the fraction\n"
        "    return (number % 1.0) + 1.0\n"
    )
    script = [tool_call(task.buggy_code), tool_call(same_again), tool_call(task.canonical_code or "")]
    with ScriptedServer(lambda rec: script[turn_of(rec)]) as server:
        # One base temperature for every turn, so any rise comes from the repeat.
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",), temperatures=(0.0,)))
        requests = server.chat_requests()
    [record] = outcome.records
    assert [a["outcome"] for a in record.attempts] == ["failed", "repeat", "passed"]
    assert record.executions == 2
    assert record.attempts[1]["exec_s"] == 0.0
    told = last_message(requests[2])
    assert told["role"] == "tool"
    assert "already tried" in told["content"] and "not run again" in told["content"]
    assert [r.body["temperature"] for r in requests] == [0.0, 0.0, 0.2]
    assert record.passed and not record.passed_first


def test_wrong_signature_and_syntax_error_are_refused_without_execution(all_tasks: dict[str, Task]) -> None:
    task = all_tasks["Python/0"]
    wrong_signature = task.canonical_code.replace(  # type: ignore[union-attr]
        "def has_close_elements(numbers: List[float], threshold: float) -> bool:",
        "def has_close_elements(numbers: List[float], threshold: float, strict: bool = False) -> bool:",
    )
    assert wrong_signature != task.canonical_code
    broken = "def has_close_elements(numbers, threshold):\n    return any(abs(a - b) < threshold for a, b in (\n"
    script = [tool_call(wrong_signature), tool_call(broken), tool_call(task.canonical_code or "")]
    executor = CountingExecutor()
    with ScriptedServer(lambda rec: script[turn_of(rec)]) as server:
        result = repair_task(task, scripted_model(server), executor, AgentSettings(max_iters=3), ToolMode(native=True))
        requests = server.chat_requests()
    assert [a.outcome for a in result.attempts] == ["invalid", "invalid", "passed"]
    assert len(executor.runs) == 1  # only the valid candidate ran
    about_signature = last_message(requests[1])
    assert about_signature["role"] == "tool"
    assert (
        "must keep its original signature `has_close_elements(numbers: List[float], threshold: float)`"
        in about_signature["content"]
    )
    assert (
        "you wrote `has_close_elements(numbers: List[float], threshold: float, strict: bool=False)`"
        in about_signature["content"]
    )
    about_syntax = last_message(requests[2])["content"]
    assert "does not parse: SyntaxError" in about_syntax and "line 2" in about_syntax
    assert result.stop_reason == "passed"


def test_malformed_tool_arguments_are_reported_to_the_model(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    task = tiny_tasks["truncate_number"]
    script = [
        tool_call("", arguments='{"code": "def truncate_number(number):\n    return number % 1.0'),  # cut off, not JSON
        tool_call(task.canonical_code or ""),
    ]
    with ScriptedServer(lambda rec: script[turn_of(rec)]) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",)))
        requests = server.chat_requests()
    [record] = outcome.records
    assert [a["outcome"] for a in record.attempts] == ["malformed", "passed"]
    assert record.executions == 1
    told = last_message(requests[1])
    assert told["role"] == "tool" and "not valid JSON" in told["content"]
    assert record.attempts[0]["code"] is None
    assert record.passed and not record.passed_first  # the first turn produced no candidate


def test_max_iters_zero_is_one_model_call_without_feedback(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    def answer(task: Task, turn: int) -> Response:
        return tool_call(task.canonical_code if task.entry_point == "has_close_elements" else task.buggy_code)  # type: ignore[arg-type]

    with ScriptedServer(by_turn(tiny_tasks, answer)) as server:
        outcome = run_eval(make_config(server, tiny_dataset, max_iters=0))
        requests = server.chat_requests()
    assert len(requests) == 3
    assert all([m["role"] for m in r.body["messages"]] == ["system", "user"] for r in requests)
    passed = {r.task_id: (r.passed_first, r.passed) for r in outcome.records}
    assert passed == {"Python/0": (True, True), "Python/2": (False, False), "Python/3": (False, False)}
    for record in outcome.records:
        assert record.executions == 0 and record.iterations == 1
        assert [a["outcome"] for a in record.attempts] == ["not_run"]
        assert record.attempts[0]["feedback"] == ""
    assert results_of(outcome.results_path)["config"]["max_iters"] == 0


def test_feedback_example_shows_only_the_example_and_the_scorer_uses_the_full_test(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    # Passes the example test (3.5 -> 0.5) but not the full one (1.33, 123.456).
    overfit = "def truncate_number(number: float) -> float:\n    return 0.5\n"
    with ScriptedServer([tool_call(overfit)]) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",), protocol="hidden"))
        [request] = server.chat_requests()
    prompt = request.body["messages"][1]["content"]
    assert "assert truncate_number(3.5) == 0.5" in prompt
    assert "123.456" not in prompt and "1.33" not in prompt
    [record] = outcome.records
    assert record.attempts[0]["outcome"] == "passed"  # against the example test, as the agent saw it
    assert record.stop_reason == "passed"
    assert not record.passed and not record.passed_first  # against the full test
    assert "truncate_number(1.33)" in record.score_message  # a line of the full test, not of the example


def test_feedback_tests_sends_the_full_test(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    task = tiny_tasks["truncate_number"]
    with ScriptedServer([tool_call(task.canonical_code or "")]) as server:
        run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",)))
        [request] = server.chat_requests()
    assert "123.456" in request.body["messages"][1]["content"]


def test_first_attempt_and_final_pass_are_told_apart(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    task = tiny_tasks["truncate_number"]
    script = [tool_call(task.buggy_code), tool_call(task.canonical_code or "")]
    with ScriptedServer(lambda rec: script[turn_of(rec)]) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",)))
        requests = server.chat_requests()
    [record] = outcome.records
    assert (record.passed_first, record.passed) == (False, True)
    assert (record.iterations, record.executions) == (2, 2)
    assert record.first_code is not None and "+ 1.0" in record.first_code
    assert record.final_code is not None and "+ 1.0" not in record.final_code
    told = last_message(requests[1])
    assert told["role"] == "tool" and told["content"].startswith("FAILED (failed)")
    assert "truncate_number(3.5)" in told["content"]  # the failing test line is shown
    summary = outcome.summary
    assert (summary.pass_at_1_first, summary.pass_at_1_final) == (0.0, 1.0)


def test_stop_event_interrupts_before_the_next_model_call(all_tasks: dict[str, Task]) -> None:
    stop = threading.Event()
    stop.set()
    with ScriptedServer([]) as server:
        result = repair_task(
            all_tasks["Python/2"], scripted_model(server), CountingExecutor(), AgentSettings(), ToolMode(True), stop
        )
        assert server.chat_requests() == []
    assert result.stop_reason == "interrupted" and result.attempts == []


def test_reply_without_code_is_told_and_a_later_stop_keeps_the_last_candidate(all_tasks: dict[str, Task]) -> None:
    task = all_tasks["Python/2"]
    script = [
        text("Let me think about the modulo first."),
        tool_call(task.buggy_code),
        text("I am done; that should be right."),
    ]
    executor = CountingExecutor()
    with ScriptedServer(lambda rec: script[turn_of(rec)]) as server:
        result = repair_task(task, scripted_model(server), executor, AgentSettings(max_iters=5), ToolMode(native=True))
        requests = server.chat_requests()
    assert len(requests) == 3
    told = last_message(requests[1])
    assert told["role"] == "user" and "found no code" in told["content"] and "truncate_number" in told["content"]
    assert [a.outcome for a in result.attempts] == ["no_code", "failed", "no_code"]
    assert result.stop_reason == "stopped_calling"
    assert result.final_code is not None and "+ 1.0" in result.final_code
    assert result.first_code is None  # the first turn had no candidate
    assert len(executor.runs) == 1


def test_helpers_are_restored_and_pasted_tests_dropped(all_tasks: dict[str, Task]) -> None:
    task = all_tasks["Python/38"]  # decode_cyclic calls the helper encode_cyclic
    only_the_fix = (
        "def decode_cyclic(s: str):\n"
        "    return encode_cyclic(encode_cyclic(s))\n\n"
        "assert decode_cyclic('abc') == 'abc'\n"
        "print(decode_cyclic('bca'))\n"
        "if __name__ == '__main__':\n"
        "    raise SystemExit(1)\n"
    )
    executor = CountingExecutor()
    with ScriptedServer([tool_call(only_the_fix)]) as server:
        result = repair_task(task, scripted_model(server), executor, AgentSettings(max_iters=2), ToolMode(native=True))
    assert [a.outcome for a in result.attempts] == ["passed"]
    [ran] = executor.runs
    assert "def encode_cyclic(s: str):" in ran and "return encode_cyclic(encode_cyclic(s))" in ran
    assert "print(" not in ran and "assert decode_cyclic" not in ran and "__main__" not in ran


def test_tool_call_written_as_text_switches_the_endpoint_to_the_text_protocol(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    def answer(rec: Recorded) -> Response:
        task = tiny_tasks[entry_point_of(rec)]
        body = json.dumps({"name": "run_code", "arguments": {"code": task.canonical_code}})
        return text(f"<tool_call>\n{body}\n</tool_call>")

    with ScriptedServer(answer) as server:
        outcome = run_eval(make_config(server, tiny_dataset))
        requests = server.chat_requests()
    assert all(r.passed for r in outcome.records)
    assert [r.attempts[0]["via"] for r in outcome.records] == ["hermes"] * 3
    assert "tools" in requests[0].body
    # After the first such reply the endpoint is spoken to in text: no `tools`, the protocol in the prompt.
    assert all("tools" not in r.body for r in requests[1:])
    assert requests[1].body["messages"][0]["content"] == prompts.system_prompt(text_protocol=True)
    assert requests[0].body["messages"][0]["content"] == prompts.system_prompt(text_protocol=False)
    config = results_of(outcome.results_path)["config"]
    assert config["tool_mode"] == "text" and "as text" in config["tool_mode_reason"]


def test_endpoint_rejecting_tools_is_retried_in_text_without_spending_a_turn(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    def answer(rec: Recorded) -> Response:
        if "tools" in rec.body:
            return error(400, "this model does not support tools")
        return fenced(tiny_tasks[entry_point_of(rec)].canonical_code or "")

    with ScriptedServer(answer) as server:
        outcome = run_eval(make_config(server, tiny_dataset, task_ids=("Python/2",)))
        requests = server.chat_requests()
    assert ["tools" in r.body for r in requests] == [True, False]
    [record] = outcome.records
    assert record.passed and record.passed_first and record.error is None
    assert record.iterations == 1 and record.tool_mode == "text"
