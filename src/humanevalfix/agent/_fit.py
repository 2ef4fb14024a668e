"""Fitting a turn's request into a server's context when the server says the prompt is too long.

A server that answers "maximum context length" (models.client: kind `context_exceeded`) gets the
same turn again, smaller, rather than the task failing: first a native conversation's older turns
are left out (the task and the latest exchange stay), then the tests shown are cut to their first
half, a quarter, and so on. The candidate still runs against the full tests, and the feedback still
names the failing assert. Each cut is recorded (AgentResult.context_trims, the task's record) so a
number says what the model saw. When nothing is left to cut, the repair ends as `context_exceeded`,
scored on what it produced so far, never as an infrastructure error.

The conversation itself (and so the trace) keeps everything: the cuts are made on copies, per request.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from humanevalfix.agent import prompts
from humanevalfix.models.client import ChatRequest

MIN_TEST_LINES = 2  # fewer shown lines than this and there is nothing left to show of the tests


@dataclass
class ContextFit:
    """How much of a request is left out; starts at nothing."""

    tests: str | None  # the tests as the prompts show them (prompts.tests_text), None if not shown
    history: bool = True  # a native conversation's older turns are sent
    test_lines: int | None = None  # how many lines of the tests are shown (None: all)

    @classmethod
    def for_tests(cls, tests: str | None) -> ContextFit:
        return cls(prompts.tests_text(tests) if tests else None)

    @property
    def most_cuts(self) -> int:
        """An upper bound on the cuts a repair can make (each is a retried `ask`)."""
        return 1 + len((self.tests or "").splitlines()).bit_length()

    def apply(self, request: ChatRequest) -> ChatRequest:
        """`request` with the cuts made so far (a copy; the conversation is left as it is)."""
        if self.history and self.test_lines is None:
            return request
        messages = request.messages if self.history else _latest_exchange(request.messages)
        if self.test_lines is not None and self.tests:
            shown = trimmed_tests(self.tests, self.test_lines)
            messages = [_replaced(m, self.tests, shown) for m in messages]
        return replace(request, messages=list(messages))

    def shrink(self, request: ChatRequest) -> str | None:
        """Cut one more step for `request`; what was cut, or None when nothing is left to cut."""
        if self.history and len(_latest_exchange(request.messages)) < len(request.messages):
            self.history = False
            return "earlier turns left out"
        if not self.tests or not any(self.tests in str(m.get("content") or "") for m in request.messages):
            return None
        total = len(self.tests.splitlines())
        fewer = (self.test_lines if self.test_lines is not None else total) // 2
        if fewer < MIN_TEST_LINES:
            return None
        self.test_lines = fewer
        return f"tests: first {fewer} of {total} lines shown"


def trimmed_tests(tests: str, lines: int) -> str:
    kept = tests.splitlines()
    if lines >= len(kept):
        return tests
    left_out = len(kept) - lines
    return "\n".join(
        kept[:lines] + [f"# ... {left_out} more lines of the tests, not shown: they do not fit the model's context"]
    )


def _latest_exchange(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The system and task messages, then everything from the last assistant message on (its tool
    answers stay with it: every call id needs one)."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    if last <= 2:
        return messages
    return messages[:2] + messages[last:]


def _replaced(message: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str) and old in content:
        return {**message, "content": content.replace(old, new)}
    return message
