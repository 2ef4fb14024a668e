"""A reply's reasoning apart from its answer: the answer is what follows the reasoning, never a draft
written inside it.

Reasoning models give it in one of two ways, both handled here:

- a field beside the content: `reasoning_content` (vLLM's reasoning parsers, llama.cpp's
  `--reasoning-format deepseek`, DeepSeek's API) or `reasoning` (OpenRouter, Ollama);
- inline, in the content: `<think> ... </think>` (Qwen3, QwQ, DeepSeek-R1 served raw). A chat template
  may open the block in the prompt, so a reply can start inside it with only the closing tag; and a
  reply cut at its token limit can end inside it, with no answer at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN = "<think>"
CLOSE = "</think>"
_BLOCK = re.compile(r"<think>(.*?)</think>", re.S)
# The fields a server may put the reasoning in, in the order they are read.
REASONING_FIELDS = ("reasoning_content", "reasoning")


@dataclass(frozen=True)
class Split:
    answer: str  # what the model answered: the only text code is taken from
    reasoning: str  # its reasoning: never code, never sent back
    unclosed: bool = False  # the reply ended inside its reasoning (cut at its limit): no answer


def split_reply(content: str, field: str | None = None) -> Split:
    """`content` without its think blocks, and the reasoning from `field` and those blocks."""
    parts = [field] if field else []
    answer = content
    head, sep, tail = answer.partition(CLOSE)
    if sep and OPEN not in head:
        # The block was opened by the chat template, in the prompt: the reply starts inside it.
        parts.append(head)
        answer = tail
    parts += [m.group(1) for m in _BLOCK.finditer(answer)]
    answer = _BLOCK.sub("", answer)
    unclosed = OPEN in answer
    if unclosed:
        answer, _, rest = answer.partition(OPEN)
        parts.append(rest)
    reasoning = "\n\n".join(part.strip() for part in parts if part and part.strip())
    return Split(answer=answer.strip() if reasoning else answer, reasoning=reasoning, unclosed=unclosed)


def reasoning_field(message: object) -> str | None:
    """The reasoning a server put beside the content, if any (a string field of the message)."""
    extra = getattr(message, "model_extra", None) or {}
    for name in REASONING_FIELDS:
        value = getattr(message, name, None) if name not in extra else extra[name]
        if isinstance(value, str) and value:
            return value
    return None
