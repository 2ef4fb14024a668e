"""Which sampling parameters a model takes: OpenAI's reasoning models (o1, o3, o4-mini, the gpt-5
family) refuse `max_tokens` (they want `max_completion_tokens`) and any temperature but their own.

The known families start with those rules; any other endpoint that refuses a parameter by name
(HTTP 400, `unsupported_parameter` / `unsupported_value`) is adapted to once, and the client keeps
the rules for the rest of the run.
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
)


@dataclass(frozen=True)
class ParameterRules:
    completion_tokens: bool = False  # send max_completion_tokens, not max_tokens
    no_temperature: bool = False  # send no temperature: the model uses its own

    def describe(self) -> str:
        said = ["max_completion_tokens for max_tokens"] * self.completion_tokens
        said += ["no temperature"] * self.no_temperature
        return ", ".join(said) or "the standard parameters"


def rules_for(model: str) -> ParameterRules:
    reasoning = bool(_REASONING_FAMILY.search(model))
    return ParameterRules(completion_tokens=reasoning, no_temperature=reasoning)


def parameters(rules: ParameterRules, temperature: float, max_tokens: int) -> dict[str, Any]:
    sent: dict[str, Any] = {"max_completion_tokens" if rules.completion_tokens else "max_tokens": max_tokens}
    if not rules.no_temperature:
        sent["temperature"] = temperature
    return sent


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
    return None
