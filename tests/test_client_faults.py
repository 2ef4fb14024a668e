"""Odd replies from a real (scripted) server on loopback: a 200 that is no chat completion is a
server fault, retried like a 503, and after the retries that task's infrastructure error; never an
exception out of the run (one such reply used to end a whole run with IndexError, no results file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from humanevalfix.config import RunConfig
from humanevalfix.errors import ModelCallError
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.client import ChatRequest, OpenAIChatModel, RetryPolicy
from humanevalfix.models.keys import KeyPool
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, text, tool_call

from .conftest import KEYS_ENV, entry_point_of

FAULTS = {
    "empty choices": Response(200, {"id": "x", "object": "chat.completion", "choices": []}),
    "null choices": Response(200, {"id": "x", "object": "chat.completion", "choices": None}),
    "choice without message": Response(
        200, {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop"}]}
    ),
    "error object with 200": Response(200, {"error": {"message": "model is loading", "type": "server_error"}}),
    "html page": Response(200, raw=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
    "truncated json": Response(200, raw=b'{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "mess'),
}


def model_for(server: ScriptedServer, attempts: int = 3) -> OpenAIChatModel:
    return OpenAIChatModel(
        provider="compatible",
        model="scripted-model",
        base_url=server.base_url,
        keys=KeyPool(["sk-test-faults-0001"]),
        retry=RetryPolicy(attempts=attempts, initial_s=0.01, max_s=0.05, timeout_s=10.0),
    )


REQUEST = ChatRequest(messages=[{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=8)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_an_odd_reply_is_retried_and_the_next_good_one_is_used(fault: str) -> None:
    calls: list[int] = []

    def handler(rec: Recorded) -> Response:
        calls.append(1)
        return FAULTS[fault] if len(calls) == 1 else text("ok")

    with ScriptedServer(handler) as server:
        reply = model_for(server).chat(REQUEST)
    assert (reply.content, reply.http_attempts) == ("ok", 2)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_odd_replies_to_the_end_are_one_model_call_error_naming_the_fault(fault: str) -> None:
    with ScriptedServer(lambda rec: FAULTS[fault]) as server:
        with pytest.raises(ModelCallError) as caught:
            model_for(server, attempts=2).chat(REQUEST)
        assert len(server.chat_requests()) == 2
    assert "after 2 attempt(s)" in str(caught.value)


def test_a_run_with_odd_replies_for_one_task_records_its_error_and_finishes_the_others(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, "sk-test-faults-0002")
    victim = sorted(tiny_tasks)[0]

    def handler(rec: Recorded) -> Response:
        name = entry_point_of(rec)
        return FAULTS["empty choices"] if name == victim else tool_call(tiny_tasks[name].canonical_code or "")

    with ScriptedServer(handler) as server:
        outcome = run_eval(make_config(server, tiny_dataset))
    assert outcome.results_path.is_file()
    errors = {r.entry_point: r.error for r in outcome.records}
    assert errors[victim] and "without choices" in errors[victim]
    assert all(r.passed for r in outcome.records if r.entry_point != victim)
