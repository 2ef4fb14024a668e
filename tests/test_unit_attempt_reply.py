"""In process: each turn keeps the model's reply as it came (bounded), for `humanevalfix view`;
its reasoning stays in the trace."""

from __future__ import annotations

from humanevalfix.agent._result import REPLY_KEPT, AgentResult, Attempt
from humanevalfix.agent._steps import _kept_reply
from humanevalfix.models.client import ChatReply, ToolCall


def test_the_reply_is_kept_as_text_and_native_calls_as_calls() -> None:
    assert _kept_reply(ChatReply("Here:\n```python\nx\n```")) == "Here:\n```python\nx\n```"
    native = ChatReply("", [ToolCall("c1", "run_code", '{"code": "x"}')])
    assert _kept_reply(native) == 'run_code({"code": "x"})'
    assert _kept_reply(ChatReply("")) is None


def test_a_long_reply_is_cut_and_says_how_much_was_not_kept() -> None:
    kept = _kept_reply(ChatReply("a" * (REPLY_KEPT + 10)))
    assert kept is not None and kept.startswith("a" * REPLY_KEPT)
    assert kept.endswith("… (10 more characters not kept)")


def test_the_reasoning_is_not_in_the_reply() -> None:
    reply = ChatReply("the answer", reasoning="a long draft")
    assert _kept_reply(reply) == "the answer"


def test_an_attempt_without_a_reply_is_recorded_as_before() -> None:
    result = AgentResult(attempts=[Attempt(turn=0, temperature=0.0, outcome="no_code")])
    assert "reply" not in result.attempts_dicts()[0]
    result.attempts[0].reply = "text"
    assert result.attempts_dicts()[0]["reply"] == "text"
