"""The embedded server's stop after the first code block (models/codestop.py), without a model."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.models import codestop
from humanevalfix.models.embedded import ServerOptions, server_command


@pytest.mark.parametrize(
    ("text", "closed"),
    [
        ("```python\ndef f():\n    return 1\n```", True),
        ("The bug is on line 2.\n\n```python\ndef f():\n    return 1\n```\nIt now returns 1.", True),
        ("```\nx = 1\n```", True),
        ("```python\ndef f():\n    return 1\n", False),  # still inside the block
        ("```python\n", False),
        ("Use `x` and ``` inline", False),
        ("", False),
        ("text ```python\nx\n```", False),  # a fence must start its line
        ("```python\ns = '```'\n", False),  # backticks inside a line do not close it
    ],
)
def test_a_block_is_closed_only_by_a_fence_line_after_an_opening_one(text: str, closed: bool) -> None:
    assert codestop.closed_code_block(text) is closed


def test_the_criterion_reads_only_the_reply_from_its_first_call_on() -> None:
    """The first call marks the prompt's end (llama-cpp-python calls it with the context before
    each new token): a closed block in the prompt does not stop the reply."""
    vocab = {1: "```python\nold\n```\n", 2: "```python\n", 3: "x = 1\n", 4: "```", 5: "\nmore"}

    def detokenize(tokens: list[int]) -> bytes:
        return "".join(vocab[t] for t in tokens).encode()

    stop = codestop.StopAfterCode(detokenize)
    prompt = [1]
    assert stop(prompt, None) is False  # the prompt, closed block and all
    assert stop([*prompt, 2], None) is False
    assert stop([*prompt, 2, 3], None) is False
    assert stop([*prompt, 2, 3, 4], None) is True


def test_install_adds_the_criterion_to_every_completion(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    class Llama:
        def detokenize(self, tokens: list[int]) -> bytes:
            return b""

        def create_completion(self, *args: Any, **kwargs: Any) -> str:
            seen.update(kwargs)
            return "done"

    fake = types.ModuleType("llama_cpp")
    fake.Llama = Llama  # type: ignore[attr-defined]
    fake.StoppingCriteriaList = list  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    codestop.install()
    own = object()
    assert Llama().create_completion(prompt="p", stopping_criteria=[own]) == "done"
    criteria = seen["stopping_criteria"]
    assert criteria[0] is own and isinstance(criteria[1], codestop.StopAfterCode)
    Llama().create_completion(prompt="p", stopping_criteria=None)
    assert [type(c) for c in seen["stopping_criteria"]] == [codestop.StopAfterCode]


def test_the_server_is_told_only_when_asked() -> None:
    assert codestop.environment(True) == {codestop.ENV: "1"} and codestop.environment(False) == {}
    # The launcher reads it by name before the server starts.
    assert codestop.ENV in server_command(Path("m.gguf"), "m", 1, ServerOptions())[2]
