"""Which sampling parameters a model takes: OpenAI's reasoning models (o1, o3, o4-mini, the gpt-5
family) refuse `max_tokens` (they want `max_completion_tokens`) and any temperature but their own.

The known families start with those rules; any other endpoint that refuses a parameter by name
(HTTP 400, `unsupported_parameter` / `unsupported_value`) is adapted to once, and the client keeps
the rules for the rest of the run.

Two settings are sent only when a run sets them (--reasoning-effort, --thinking, or the preset's
fields), so that a run without them sends what it always did: `reasoning_effort` (OpenAI's
reasoning families, and any server that takes it), and for hybrid thinking models (Qwen3 and alike)
`chat_template_kwargs: {enable_thinking}` (vLLM, SGLang, recent llama.cpp) together with Qwen3's
soft switch, `/think` or `/no_think` at the end of the last user message, which the model reads
from the text on any server, also where the template's arguments are ignored (Ollama,
llama-cpp-python's server). A server that refuses either field by name is sent it no more (the
switch in the text stays).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

# OpenAI's reasoning families, bare or behind a router's prefix ("openai/o3-mini").
_REASONING_FAMILY = re.compile(r"(?:^|/)(?:o[1-9](?:-|$)|gpt-5)", re.I)
# How a server refuses a parameter by name (OpenAI's codes and words, vLLM's).
REFUSED: tuple[str, ...] = (
    "unsupported_parameter",
    "unsupported_value",
    "unsupported parameter",
    "unsupported value",
    "not supported",
    "does not support",
    "unrecognized request argument",  # OpenAI, for a field it does not know at all
    "extra inputs are not permitted",  # a pydantic server that forbids unknown fields
    "unknown field",
)
EFFORTS: tuple[str, ...] = ("low", "medium", "high")  # --reasoning-effort
THINKING: tuple[str, ...] = ("on", "off")  # --thinking
# Qwen3's soft switch: the model follows the last one it was given (in a user or system message).
SOFT_SWITCH = {"on": "/think", "off": "/no_think"}


@dataclass(frozen=True)
class ParameterRules:
    completion_tokens: bool = False  # send max_completion_tokens, not max_tokens
    no_temperature: bool = False  # send no temperature: the model uses its own
    no_reasoning_effort: bool = False  # the server refused `reasoning_effort`: none sent
    no_template_kwargs: bool = False  # the server refused `chat_template_kwargs`: the text switch alone

    def describe(self) -> str:
        said = ["max_completion_tokens for max_tokens"] * self.completion_tokens
        said += ["no temperature"] * self.no_temperature
        said += ["no reasoning_effort"] * self.no_reasoning_effort
        said += ["no chat_template_kwargs (the switch in the text alone)"] * self.no_template_kwargs
        return ", ".join(said) or "the standard parameters"


def rules_for(model: str) -> ParameterRules:
    reasoning = bool(_REASONING_FAMILY.search(model))
    return ParameterRules(completion_tokens=reasoning, no_temperature=reasoning)


def parameters(rules: ParameterRules, temperature: float, max_tokens: int) -> dict[str, Any]:
    sent: dict[str, Any] = {"max_completion_tokens" if rules.completion_tokens else "max_tokens": max_tokens}
    if not rules.no_temperature:
        sent["temperature"] = temperature
    return sent


def extra_body(rules: ParameterRules, reasoning_effort: str | None, thinking: str | None) -> dict[str, Any]:
    """The fields beyond the SDK's own parameters (sent through its `extra_body`): none unless set."""
    sent: dict[str, Any] = {}
    if reasoning_effort is not None and not rules.no_reasoning_effort:
        sent["reasoning_effort"] = reasoning_effort
    if thinking is not None and not rules.no_template_kwargs:
        sent["chat_template_kwargs"] = {"enable_thinking": thinking == "on"}
    return sent


def with_switch(messages: list[dict[str, Any]], thinking: str | None) -> list[dict[str, Any]]:
    """The messages with the soft switch (`/think`, `/no_think`) at the end of the last user
    message's text, where the model reads its latest instruction: a copy, the conversation itself
    unchanged. Without `thinking`, or without a user message, the messages as they are."""
    if thinking is None:
        return messages
    word = SOFT_SWITCH[thinking]
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            text = content.rstrip()
            # After several lines, on a line of its own: the end of a code fence would take it in.
            gap = "\n\n" if "\n" in text else " "
            content = f"{text}{gap}{word}" if text else word
        elif isinstance(content, list):  # parts: the switch is one more text part
            content = [*content, {"type": "text", "text": word}]
        else:
            return messages
        return [*messages[:i], {**message, "content": content}, *messages[i + 1 :]]
    return messages


def adapted(rules: ParameterRules, refusal: str) -> ParameterRules | None:
    """The rules after a 400 that refuses a parameter we send by name; None if it names none we can
    leave out or rename (then the refusal stands)."""
    text = refusal.lower()
    if not any(word in text for word in REFUSED):
        return None
    if "max_tokens" in text and not rules.completion_tokens:
        return replace(rules, completion_tokens=True)
    if "temperature" in text and not rules.no_temperature:
        return replace(rules, no_temperature=True)
    if "reasoning_effort" in text and not rules.no_reasoning_effort:
        return replace(rules, no_reasoning_effort=True)
    if "chat_template_kwargs" in text and not rules.no_template_kwargs:
        return replace(rules, no_template_kwargs=True)
    return None
