"""The sampling parameters a model takes (models/parameters.py and the client that applies them):
OpenAI's reasoning families get max_completion_tokens and no temperature from the first call; any
other endpoint that refuses a parameter by name is adapted to once, for the rest of the run. The e2e
tests talk to a loopback server that answers as OpenAI documents for its reasoning models."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from humanevalfix.errors import ConfigError
from humanevalfix.models.client import ChatRequest, OpenAIChatModel, RetryPolicy
from humanevalfix.models.keys import KeyPool
from humanevalfix.models.parameters import ParameterRules, adapted, extra_body, parameters, rules_for, with_switch
from humanevalfix.models.presets import load_presets, resolve
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


# --- --reasoning-effort and --thinking: sent only when set ---------------------------------------


def test_the_reasoning_fields_are_sent_only_when_set() -> None:
    assert extra_body(ParameterRules(), None, None) == {}
    assert extra_body(REASONING, "high", None) == {"reasoning_effort": "high"}
    assert extra_body(ParameterRules(), None, "off") == {"chat_template_kwargs": {"enable_thinking": False}}
    assert extra_body(ParameterRules(), "low", "on") == {
        "reasoning_effort": "low",
        "chat_template_kwargs": {"enable_thinking": True},
    }
    refused = ParameterRules(no_reasoning_effort=True, no_template_kwargs=True)
    assert extra_body(refused, "high", "off") == {}


def test_the_soft_switch_ends_the_last_user_message_of_a_copy() -> None:
    messages = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix f."},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "c1", "content": "failed"},
    ]
    kept = [dict(m) for m in messages]
    sent = with_switch(messages, "off")
    assert sent[1] == {"role": "user", "content": "Fix f. /no_think"}
    assert sent[0] == messages[0] and sent[2:] == messages[2:]
    assert messages == kept  # the conversation itself is unchanged
    assert with_switch(messages, "on")[1]["content"] == "Fix f. /think"
    assert with_switch(messages, None) is messages  # not set: the very same messages
    assert with_switch([{"role": "user", "content": "a\n"}], "off") == [{"role": "user", "content": "a /no_think"}]
    fenced = "Fix f:\n```python\ndef f(): pass\n```\n"  # after several lines: on a line of its own
    assert with_switch([{"role": "user", "content": fenced}], "off")[0]["content"] == fenced.rstrip() + "\n\n/no_think"
    assert with_switch([{"role": "user", "content": ""}], "on") == [{"role": "user", "content": "/think"}]
    parts = [{"role": "user", "content": [{"type": "text", "text": "a"}]}]
    assert with_switch(parts, "off")[0]["content"][-1] == {"type": "text", "text": "/no_think"}
    assert with_switch([{"role": "system", "content": "s"}], "off") == [{"role": "system", "content": "s"}]


@pytest.mark.parametrize(
    ("refusal", "rules"),
    [
        (
            "Unsupported parameter: 'reasoning_effort' is not supported with this model. (unsupported_parameter)",
            ParameterRules(no_reasoning_effort=True),
        ),
        ("Unrecognized request argument supplied: reasoning_effort", ParameterRules(no_reasoning_effort=True)),
        (
            "chat_template_kwargs: Extra inputs are not permitted (extra_forbidden)",
            ParameterRules(no_template_kwargs=True),
        ),
        ("unknown field `chat_template_kwargs`", ParameterRules(no_template_kwargs=True)),
    ],
)
def test_a_refused_reasoning_field_is_dropped_once(refusal: str, rules: ParameterRules) -> None:
    assert adapted(ParameterRules(), refusal) == rules
    assert adapted(rules, refusal) is None  # already left out: the refusal stands
    assert adapted(ParameterRules(), "reasoning_effort: 'extreme' is not one of low, medium, high") is None


def test_what_the_warning_says_of_a_dropped_field() -> None:
    assert ParameterRules(no_reasoning_effort=True).describe() == "no reasoning_effort"
    assert (
        ParameterRules(no_template_kwargs=True).describe() == "no chat_template_kwargs (the switch in the text alone)"
    )


def test_the_fields_go_through_extra_body_where_the_sdk_takes_it() -> None:
    from humanevalfix.models.client import _add_extras

    def with_extra_body(*, model: str, extra_body: object = None) -> None: ...

    def without(*, model: str, **rest: object) -> None: ...

    extras = {"reasoning_effort": "high"}
    kwargs: dict[str, object] = {"model": "m"}
    _add_extras(with_extra_body, kwargs, extras)
    assert kwargs == {"model": "m", "extra_body": {"reasoning_effort": "high"}}
    kwargs = {"model": "m"}
    _add_extras(without, kwargs, extras)  # the together SDK before 2.0 puts unknown arguments in the body
    assert kwargs == {"model": "m", "reasoning_effort": "high"}


def test_a_run_without_them_sends_no_extra_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """No HTTP: the client's `create` replaced, the request as built."""
    seen: list[dict[str, object]] = []
    request = ChatRequest([{"role": "user", "content": "hi"}], temperature=0.3, max_tokens=256)

    class Completions:  # as the openai SDK's: `extra_body` is a parameter
        def create(self, *, extra_body: object = None, **kwargs: object) -> object:
            seen.append({**kwargs, **({"extra_body": extra_body} if extra_body is not None else {})})
            raise RuntimeError("stop here")

    class Client:
        chat = type("Chat", (), {"completions": Completions()})()

    for effort, thinking in ((None, None), ("high", "off")):
        model = OpenAIChatModel(
            provider="compatible",
            model="qwen3",
            base_url="http://127.0.0.1:9/v1",
            keys=KeyPool(["x"]),
            retry=RetryPolicy(attempts=1, initial_s=0.01, timeout_s=5.0),
            reasoning_effort=effort,
            thinking=thinking,
        )
        monkeypatch.setattr(model, "_client", lambda lease: Client())
        with pytest.raises(Exception, match="stop here"):
            model.chat(request)
    plain, set_ = seen
    assert plain == {
        "model": "qwen3",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 256,
        "temperature": 0.3,
    }
    assert set_["messages"] == [{"role": "user", "content": "hi /no_think"}]
    assert set_["extra_body"] == {"reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": False}}
    assert request.messages == [{"role": "user", "content": "hi"}]


def test_presets_take_them_and_the_options_win(tmp_path: Path) -> None:
    models = tmp_path / "models.yaml"
    models.write_text(
        "q:\n  provider: compatible\n  base_url: http://h/v1\n  model: Qwen/Qwen3-8B\n  thinking: off\n"
        "o:\n  provider: openai\n  model: o3-mini\n  reasoning_effort: low\n",
        encoding="utf-8",
    )
    presets = load_presets(models)
    assert presets["q"].thinking == "off" and presets["q"].reasoning_effort is None  # YAML's off is false
    assert presets["o"].reasoning_effort == "low"
    assert resolve("o", reasoning_effort="high", presets=presets).reasoning_effort == "high"
    assert resolve("q", thinking="on", presets=presets).thinking == "on"
    assert resolve("q", presets=presets).public()["thinking"] == "off"
    assert "thinking" not in resolve("o", presets=presets).public()  # only when set: old presets read the same


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("reasoning_effort", "extreme", "must be one of low, medium, high, or null, got 'extreme'"),
        ("thinking", "maybe", "must be on or off (true or false), or null, got 'maybe'"),
        ("thinking", 1, "must be on or off (true or false), or null, got 1"),
    ],
)
def test_a_bad_preset_value_names_the_preset_and_field(
    tmp_path: Path, field: str, value: object, expected: str
) -> None:
    models = tmp_path / "models.yaml"
    models.write_text(f"mine:\n  provider: openai\n  model: o3\n  {field}: {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_presets(models)
    assert str(caught.value) == f"{models}: preset 'mine': field '{field}' {expected}"


def test_the_options_are_choices_and_reach_the_preset(capsys: pytest.CaptureFixture[str]) -> None:
    from humanevalfix.cli import build_parser
    from humanevalfix.cli._options import preset_from_args

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["eval", "--reasoning-effort", "extreme"])
    said = capsys.readouterr().err  # Python 3.12 quotes each choice, 3.11 does not
    assert "error: argument --reasoning-effort: invalid choice: 'extreme' (choose from " in said
    assert said.replace("'", "").endswith("(choose from low, medium, high)\n")
    with pytest.raises(SystemExit):
        parser.parse_args(["eval", "--thinking", "no"])
    said = capsys.readouterr().err
    assert "error: argument --thinking: invalid choice: 'no'" in said
    assert said.replace("'", "").endswith("(choose from on, off)\n")
    args = parser.parse_args(["eval", "--model", "o3-mini", "--reasoning-effort", "high", "--thinking", "off"])
    preset = preset_from_args(args)
    assert (preset.reasoning_effort, preset.thinking) == ("high", "off")
    assert preset_from_args(parser.parse_args(["eval", "--model", "o3-mini"])).reasoning_effort is None


def test_where_nothing_takes_them_they_are_ignored_said_and_not_recorded(capsys: pytest.CaptureFixture[str]) -> None:
    from humanevalfix.cli import build_parser
    from humanevalfix.cli._options import preset_from_args

    parser = build_parser()
    local = preset_from_args(
        parser.parse_args(["eval", "--model", "local", "--reasoning-effort", "high", "--thinking", "off"])
    )
    assert (local.reasoning_effort, local.thinking) == (None, "off")  # a Qwen3 GGUF reads the switch
    assert (
        "note: --reasoning-effort ignored: the embedded model's llama.cpp server takes none" in capsys.readouterr().err
    )
    oracle = preset_from_args(
        parser.parse_args(["eval", "--model", "oracle:canonical", "--reasoning-effort", "low", "--thinking", "on"])
    )
    assert (oracle.reasoning_effort, oracle.thinking) == (None, None)
    assert "note: --reasoning-effort and --thinking ignored: the oracle sends no request" in capsys.readouterr().err


@pytest.mark.e2e
def test_a_server_that_refuses_the_template_arguments_keeps_the_switch_in_the_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As a pydantic server that forbids unknown fields answers (422), then plain replies."""

    def strict(rec: Recorded) -> Response:
        if "chat_template_kwargs" in rec.body:
            return Response(
                422,
                {
                    "detail": [
                        {
                            "type": "extra_forbidden",
                            "loc": ["body", "chat_template_kwargs"],
                            "msg": "Extra inputs are not permitted",
                        }
                    ]
                },
            )
        return text("fine")

    request = ChatRequest([{"role": "user", "content": "hi"}], temperature=0.3, max_tokens=256)
    with caplog.at_level(logging.WARNING), ScriptedServer(strict) as server:
        model = OpenAIChatModel(
            provider="compatible",
            model="Qwen/Qwen3-8B",
            base_url=server.base_url,
            keys=KeyPool(["x"]),
            retry=RetryPolicy(attempts=4, initial_s=0.01, timeout_s=10.0),
            thinking="off",
        )
        replies = [model.chat(request).content, model.chat(request).content]
        sent = server.chat_requests()
    assert replies == ["fine", "fine"] and len(sent) == 3  # one refusal, for the whole run
    assert all(r.body["messages"] == [{"role": "user", "content": "hi /no_think"}] for r in sent)
    assert "chat_template_kwargs" not in sent[-1].body
    said = [r.getMessage() for r in caplog.records if "refused a parameter" in r.getMessage()]
    assert said == [
        "Qwen/Qwen3-8B refused a parameter: sending no chat_template_kwargs (the switch in the text alone) from now on"
    ]


@pytest.mark.e2e
def test_a_server_that_refuses_reasoning_effort_is_sent_none_after_one_warning() -> None:
    def no_effort(rec: Recorded) -> Response:
        if "reasoning_effort" in rec.body:
            return Response(
                400,
                {
                    "error": {
                        "message": "Unrecognized request argument supplied: reasoning_effort",
                        "type": "invalid_request_error",
                        "code": None,
                    }
                },
            )
        return text("fine")

    request = ChatRequest([{"role": "user", "content": "hi"}], temperature=0.3, max_tokens=256)
    with ScriptedServer(no_effort) as server:
        model = model_at(server, "gpt-4o-mini")
        model.reasoning_effort = "high"
        assert [model.chat(request).content, model.chat(request).content] == ["fine", "fine"]
        sent = server.chat_requests()
    assert [("reasoning_effort" in r.body) for r in sent] == [True, False, False]
    assert model.rules == ParameterRules(no_reasoning_effort=True)
