"""In process: the first reply before the rest (models.gate), OPENAI_BASE_URL as --base-url
(cli._options.sdk_base_url), and the tokens row's wording. The runs that rely on them are in
tests/test_reasoning_runs.py and tests/test_run_faults.py."""

from __future__ import annotations

import argparse
import threading
import time

import pytest

from humanevalfix.cli._options import sdk_base_url
from humanevalfix.errors import ConfigError, ModelCallError
from humanevalfix.evaluation.results import tokens_text
from humanevalfix.models.client import ChatReply, ChatRequest
from humanevalfix.models.gate import FirstReplyGate
from humanevalfix.models.presets import load_presets

REQUEST = ChatRequest(messages=[{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=8)


class CountingModel:
    """Answers after `delay_s`, or fails with `failure` (a ModelCallError kind) while it is set."""

    def __init__(self, delay_s: float = 0.05, failure: str | None = None) -> None:
        self.delay_s, self.failure = delay_s, failure
        self.calls = 0
        self.in_flight = self.most_in_flight = 0
        self.rules = "the wrapped model's"
        self._lock = threading.Lock()

    def chat(self, request: ChatRequest) -> ChatReply:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(self.delay_s)
        with self._lock:
            self.in_flight -= 1
        if self.failure:
            raise ModelCallError("HTTP 404: The model `nosuch` does not exist", kind=self.failure)
        return ChatReply(content="ok")


def call_from(threads: int, gate: FirstReplyGate) -> list[str]:
    outcomes: list[str] = []

    def one() -> None:
        try:
            gate.chat(REQUEST)
            outcomes.append("reply")
        except ModelCallError as exc:
            outcomes.append(exc.kind)

    workers = [threading.Thread(target=one) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(10)
    return sorted(outcomes)


def test_one_call_goes_first_then_the_rest_together() -> None:
    model = CountingModel(delay_s=0.1)
    gate = FirstReplyGate(model, threading.Event())
    assert gate.chat(REQUEST).content == "ok" and model.most_in_flight == 1
    assert call_from(4, gate) == ["reply"] * 4
    assert model.most_in_flight > 1  # open: no longer one at a time
    assert gate.rules == "the wrapped model's"  # what the run reads of the model, through the gate


def test_calls_behind_a_failure_that_stops_the_run_are_not_sent() -> None:
    model, stop = CountingModel(failure="request"), threading.Event()
    gate = FirstReplyGate(model, stop)
    with pytest.raises(ModelCallError):
        gate.chat(REQUEST)
    stop.set()  # what the run does on that record (evaluation.health)
    assert call_from(3, gate) == [ModelCallError.NOT_SENT] * 3
    assert model.calls == 1


def test_a_failure_that_does_not_stop_the_run_lets_the_next_call_try_alone() -> None:
    model = CountingModel(failure="other")
    gate = FirstReplyGate(model, threading.Event(), settle_s=5)
    assert call_from(3, gate) == ["other"] * 3
    assert model.calls == 3 and model.most_in_flight == 1  # each alone, none held back for a stop


def test_a_run_that_does_not_stop_after_all_is_not_held_for_ever() -> None:
    model, stop = CountingModel(failure="auth"), threading.Event()
    gate = FirstReplyGate(model, stop, settle_s=0.05)
    with pytest.raises(ModelCallError):
        gate.chat(REQUEST)
    model.failure = None  # the key came good (another worker's)
    assert gate.chat(REQUEST).content == "ok" and model.calls == 2


def args(**given: str | None) -> argparse.Namespace:
    return argparse.Namespace(**{"base_url": None, "provider": None, "model": None, **given})


@pytest.mark.parametrize(
    ("given", "environ", "expected"),
    [
        ({}, {"OPENAI_BASE_URL": "http://localhost:8000/v1"}, "http://localhost:8000/v1"),
        ({}, {"OPENAI_BASE_URL": " http://a:1/v1 "}, "http://a:1/v1"),
        ({"model": "gpt-4o-mini"}, {"OPENAI_BASE_URL": "http://a:1/v1"}, "http://a:1/v1"),  # the SDK would go there
        ({}, {"OPENAI_BASE_URL": "https://api.openai.com/v1/"}, None),  # OpenAI's own: the default
        ({}, {}, None),
        ({"base_url": "http://b:2/v1"}, {"OPENAI_BASE_URL": "http://a:1/v1"}, None),  # the option wins
        ({"provider": "together"}, {"OPENAI_BASE_URL": "http://a:1/v1"}, None),
        ({"model": "qwen-coder-32b-together"}, {"OPENAI_BASE_URL": "http://a:1/v1"}, None),
        ({"model": "local"}, {"OPENAI_BASE_URL": "http://a:1/v1"}, None),
        ({"model": "oracle:canonical"}, {"OPENAI_BASE_URL": "http://a:1/v1"}, None),
    ],
)
def test_openai_base_url_decides_the_server_only_where_the_sdk_would_use_it(
    given: dict[str, str], environ: dict[str, str], expected: str | None
) -> None:
    assert sdk_base_url(args(**given), load_presets(), environ) == expected


def test_a_bad_openai_base_url_is_one_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL: not an http"):
        sdk_base_url(args(), load_presets(), {"OPENAI_BASE_URL": "localhost:8000"})


def test_the_tokens_row_names_the_reasoning_only_when_counted() -> None:
    assert tokens_text(1200, 3400) == "1,200 / 3,400"
    assert tokens_text(1200, 3400, 2900) == "1,200 / 3,400 (2,900 of them reasoning)"
