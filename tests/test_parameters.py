"""The sampling parameters a model takes (models/parameters.py and the client that applies them):
OpenAI's reasoning families get max_completion_tokens and no temperature from the first call; any
other endpoint that refuses a parameter by name is adapted to once, for the rest of the run. The e2e
tests talk to a loopback server that answers as OpenAI documents for its reasoning models."""

from __future__ import annotations

import logging

import pytest

from humanevalfix.models.client import ChatRequest, OpenAIChatModel, RetryPolicy
from humanevalfix.models.keys import KeyPool
from humanevalfix.models.parameters import ParameterRules, adapted, parameters, rules_for
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, text

REASONING = ParameterRules(completion_tokens=True, no_temperature=True)


@pytest.mark.parametrize("model", ["o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "openai/o3", "O3-MINI"])
def test_openais_reasoning_families_start_with_their_rules(model: str) -> None:
    assert rules_for(model) == REASONING


@pytest.mark.parametrize(
    "model", ["gpt-4o-mini", "gpt-4.1", "qwen2.5-coder-0.5b-instruct", "o", "foo3-mini", "Qwen/o1x"]
)
def test_other_models_get_the_standard_parameters(model: str) -> None:
    assert rules_for(model) == ParameterRules()


def test_the_parameters_sent() -> None:
    assert parameters(ParameterRules(), 0.3, 256) == {"temperature": 0.3, "max_tokens": 256}
    assert parameters(REASONING, 0.3, 256) == {"max_completion_tokens": 256}


def test_a_refusal_by_name_adapts_once_and_anything_else_stands() -> None:
    max_tokens = "Unsupported parameter: 'max_tokens' is not supported with this model. (unsupported_parameter)"
    temperature = "Unsupported value: 'temperature' does not support 0.3 with this model. (unsupported_value)"
    step = adapted(ParameterRules(), max_tokens)
    assert step == ParameterRules(completion_tokens=True)
    assert adapted(step, temperature) == REASONING
    assert adapted(REASONING, temperature) is None  # nothing left to leave out: the refusal stands
    assert adapted(ParameterRules(), "messages[0]: content must be a string") is None
    assert REASONING.describe() == "max_completion_tokens for max_tokens, no temperature"


def openai_reasoning_rules(rec: Recorded) -> Response:
    """As OpenAI answers its reasoning models: each refused parameter by name, with its code."""

    def refused(message: str, code: str) -> Response:
        return Response(400, {"error": {"message": message, "type": "invalid_request_error", "code": code}})

    if "max_tokens" in rec.body:
        return refused("Unsupported parameter: 'max_tokens' is not supported with this model.", "unsupported_parameter")
    if rec.body.get("temperature", 1) != 1:
        return refused("Unsupported value: 'temperature' does not support 0.3 with this model.", "unsupported_value")
    return text("fine")


def model_at(server: ScriptedServer, name: str) -> OpenAIChatModel:
    return OpenAIChatModel(
        provider="compatible",
        model=name,
        base_url=server.base_url,
        keys=KeyPool(["x"]),
        retry=RetryPolicy(attempts=4, initial_s=0.01, timeout_s=10.0),
    )


@pytest.mark.e2e
def test_a_reasoning_family_is_sent_its_parameters_from_the_first_call() -> None:
    with ScriptedServer(openai_reasoning_rules) as server:
        model = model_at(server, "o3-mini")
        reply = model.chat(ChatRequest([{"role": "user", "content": "hi"}], temperature=0.3, max_tokens=256))
        [sent] = server.chat_requests()
    assert reply.content == "fine"
    assert (
        sent.body["max_completion_tokens"] == 256 and "max_tokens" not in sent.body and "temperature" not in sent.body
    )


@pytest.mark.e2e
def test_an_unknown_model_that_refuses_parameters_is_adapted_to_once_for_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    request = ChatRequest([{"role": "user", "content": "hi"}], temperature=0.3, max_tokens=256)
    with caplog.at_level(logging.WARNING), ScriptedServer(openai_reasoning_rules) as server:
        model = model_at(server, "my-reasoner")
        first = model.chat(request)
        second = model.chat(request)
        sent = server.chat_requests()
    assert (first.content, second.content) == ("fine", "fine")
    assert len(sent) == 4  # two refusals on the first call, none after: the rules are kept
    assert model.rules == REASONING
    assert "max_completion_tokens" in sent[-1].body and "temperature" not in sent[-1].body
    said = [r.getMessage() for r in caplog.records if "refused a parameter" in r.getMessage()]
    assert (
        said[-1]
        == "my-reasoner refused a parameter: sending max_completion_tokens for max_tokens, no temperature from now on"
    )
