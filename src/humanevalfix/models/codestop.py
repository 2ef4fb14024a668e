"""The embedded server's replies end at the close of their first code block (issue 54, a speed lever).

The text protocol reads the code of one ```python block; whatever a small model writes after it
(an explanation, the tests again, "Your reply:" and the code once more) is generated token by token
and then thrown away. In the committed 1.5B full run, 17% of the reply text came after the first
block. llama-cpp-python's server takes no stopping criterion over HTTP, so `install` adds one to
every completion in the server's process, the way models.drafting adds its draft.

The block the agent reads can change: of several blocks defining the function, the longest is read
(agent.toolcalls), and after the first one there is no other. Off by default; measured with
`bench/local_speed.py`'s `-stop` setting before any preset takes it.
"""

from __future__ import annotations

import re
from typing import Any

ENV = "HEFIX_STOP_AFTER_CODE"  # the launcher (models.embedded) reads it by name
# An opening fence at the start of a line, its body, and a closing fence line.
_CLOSED_BLOCK = re.compile(r"(?:^|\n)[ \t]*```[^\n`]*\n(?:.*?\n)?[ \t]*```", re.DOTALL)


def closed_code_block(text: str) -> bool:
    """Whether `text` holds a whole fenced block, opening and closing fence."""
    return _CLOSED_BLOCK.search(text) is not None


class StopAfterCode:
    """A llama-cpp-python stopping criterion: True once the reply so far holds a closed block.

    Called with every token of the context (prompt and reply) before each new token; its first
    call marks where the reply starts."""

    def __init__(self, detokenize: Any) -> None:
        self._detokenize = detokenize
        self._start: int | None = None

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self._start is None:
            self._start = len(input_ids)
            return False
        reply = self._detokenize([int(t) for t in input_ids[self._start :]])
        return closed_code_block(reply.decode("utf-8", errors="ignore"))


def install() -> None:
    """In the server's process, before it serves: each completion stops after its first code block."""
    import llama_cpp

    create = llama_cpp.Llama.create_completion

    def create_completion(self: Any, *args: Any, **kwargs: Any) -> Any:
        criteria = list(kwargs.get("stopping_criteria") or [])
        kwargs["stopping_criteria"] = llama_cpp.StoppingCriteriaList([*criteria, StopAfterCode(self.detokenize)])
        return create(self, *args, **kwargs)

    llama_cpp.Llama.create_completion = create_completion  # type: ignore[method-assign]


def environment(on: bool) -> dict[str, str]:
    """What the launcher reads (models.embedded)."""
    return {ENV: "1"} if on else {}
