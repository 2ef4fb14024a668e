"""What the model is told: the system prompt with worked examples, the task, tool results.

The worked examples are written for this project and are not HumanEvalFix tasks. The benchmark's
prompts are pinned byte for byte (tests/test_repair_requests.py): the recorded results depend
on them. A whole module (`fix` without --function) is named and asked for in its own words.
"""

from __future__ import annotations

from typing import Any

from humanevalfix.agent._request import RepairRequest, Target
from humanevalfix.agent.strategies import strategy

TOOL_NAME = "run_code"

RUN_CODE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Run your complete fixed function against the tests. Returns PASSED, or the first failure with its message."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The complete fixed Python function (with any imports)."}
            },
            "required": ["code"],
        },
    },
}

# The docs protocol shows no tests and runs none: the tool must not promise any.
_RUN_ONLY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        **RUN_CODE_TOOL["function"],
        "description": "Run your complete fixed function. Returns whether it runs, or the error it raises.",
    },
}


def run_code_tool(tests_shown: bool) -> dict[str, Any]:
    return RUN_CODE_TOOL if tests_shown else _RUN_ONLY_TOOL


SYSTEM_PROMPT = """\
You fix bugs in Python functions. The function is mostly right: find the small bug and \
change as little as possible. Keep the function's name and parameters. Do not write tests.

To check a fix, call the tool `run_code` with the complete fixed function as `code`. \
You get back PASSED or the first failing test. If it failed, read the failure, think about \
what the function does on that input, and call `run_code` again with a different fix.

Example 1
Buggy function:
```python
def count_vowels(text: str) -> int:
    return sum(1 for ch in text if ch in "aeiou")
```
Failure: assert count_vowels("AEIOU") == 5
Fix: upper-case vowels were not counted.
run_code(code=\"\"\"def count_vowels(text: str) -> int:
    return sum(1 for ch in text.lower() if ch in "aeiou")\"\"\")

Example 2
Buggy function:
```python
def last_n(items: list, n: int) -> list:
    return items[-n + 1:]
```
Failure: assert last_n([1, 2, 3], 2) == [2, 3]
Fix: an off-by-one in the slice.
run_code(code=\"\"\"def last_n(items: list, n: int) -> list:
    return items[-n:] if n > 0 else []\"\"\")
"""

# Endpoints without tool calling (small local models above all) get their own, shorter prompt:
# no tool syntax to imitate, one output format (a ```python block), an example in that format.
# Every prompt token is paid for on each task, so it is kept short.
TEXT_SYSTEM_PROMPT = """\
You fix bugs in Python functions. The bug is small: a wrong operator, constant, variable, \
condition, index or a missing or extra step. Find it and change as little as possible. \
Keep the function's name and parameters.

Reply with the complete fixed function in one ```python code block. Write no explanation, \
no tests and no examples. Your code is run against the tests and you are told the result.

Example
Fix the bug in `count_vowels`.
```python
def count_vowels(text: str) -> int:
    return sum(1 for ch in text if ch in "aeiou")
```
Tests:
```python
assert count_vowels("AEIOU") == 5
```
Your reply:
```python
def count_vowels(text: str) -> int:
    return sum(1 for ch in text.lower() if ch in "aeiou")
```
"""


# The `rewrite` strategy (agent.strategies): the function written anew from its description.
REWRITE_SYSTEM_PROMPT = """\
You write Python functions from a description. Reply with the complete function in one \
```python code block, starting with the header you are given. Write no explanation, no tests \
and no examples. Your code is run against the tests and you are told the result.
"""
# ... and, with no description shown (--protocol tests), from the tests alone.
REWRITE_FROM_TESTS_SYSTEM_PROMPT = REWRITE_SYSTEM_PROMPT.replace("from a description.", "from their tests.")


def system_prompt(text_protocol: bool) -> str:
    return TEXT_SYSTEM_PROMPT if text_protocol else SYSTEM_PROMPT


def _named(target: Target) -> str:
    return f"`{target.name}`" if target.function else f"the module `{target.name}`"


def _answer(target: Target) -> str:
    """What the model is to send back."""
    return f"the complete fixed `{target.name}`" if target.function else "the fixed definitions (only those you change)"


def task_prompt(request: RepairRequest, text_protocol: bool = False, current_failure: str = "") -> str:
    """The task: what to fix, what it should do, any rules, the code, the tests, how it fails now.

    Without a description (eval --protocol tests) the model sees only the buggy code and the tests,
    as in the reference HumanEvalFixTests prompt."""
    target = request.target
    parts = [f"Fix the bug in {_named(target)}."]
    if request.description:
        parts += ["", "What it should do:", request.description.strip()]
    if request.rules:
        parts += ["", request.rules.strip()]
    parts += ["", "```python", request.code.strip(), "```"]
    if request.tests:
        parts += [
            "",
            "Tests:" if text_protocol else "It must pass these tests:",
            "```python",
            tests_text(request.tests),
            "```",
        ]
    if current_failure:
        subject = "the function" if target.function else "the code"
        parts += ["", f"Run as it is now, {subject} fails:", current_failure.strip()]
    if text_protocol:
        parts += ["", f"Reply with {_answer(target)} in one ```python block."]
    else:
        parts += ["", f"Call run_code with {_answer(target)}."]
    return "\n".join(parts)


def explain_text(target: Target) -> str:
    """The `explain` strategy: a one-sentence diagnosis before the code, so the code has to change."""
    return (
        f"Before the code, write one sentence: which line of {_named(target)} is wrong, and what it must be "
        f"instead. Then reply with {_answer(target)} in one ```python block."
    )


def rewrite_messages(request: RepairRequest) -> list[dict[str, Any]]:
    """The `rewrite` strategy's conversation: description, header and tests; the buggy body left out."""
    rewrite, name = request.rewrite, request.target.name
    if rewrite is None or request.tests is None:
        raise ValueError(f"{request.task_id}: no rewrite without tests")
    if rewrite.description.strip():
        parts = [f"Write the function `{name}`.", "", "What it should do:", rewrite.description.strip()]
    else:
        parts = [f"Write the function `{name}` so that it passes the tests below."]
    parts += [
        "",
        "Start from this header:",
        "```python",
        rewrite.header.rstrip(),
        "```",
        "",
        "Tests:",
        "```python",
        tests_text(request.tests),
        "```",
        "",
        f"Reply with the complete `{name}` in one ```python block.",
    ]
    system = REWRITE_SYSTEM_PROMPT if rewrite.description.strip() else REWRITE_FROM_TESTS_SYSTEM_PROMPT
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(parts)}]


def tests_text(test: str) -> str:
    """The test code without the blank lines HumanEvalPack pads it with."""
    return "\n".join(line for line in test.strip().splitlines() if line.strip())


def code_reply(code: str) -> str:
    """A previous candidate as the assistant turn of a compact conversation: just the code."""
    return "```python\n" + code.strip() + "\n```"


def tool_result_text(status: str, message: str, output: str) -> str:
    if status == "passed":
        return "PASSED: all tests passed."
    text = f"FAILED ({status}): {message}"
    if output.strip():
        text += "\nOutput:\n" + output.strip()[:800]
    return text


def retry_text(result: str, target: Target, text_protocol: bool) -> str:
    """A failed run's result, and what to do next."""
    if not text_protocol:
        return result
    if target.function is None:
        return (
            f"{result}\n\nThe bug is still there. Read the failing test, work out what the code should do for it, "
            f"and reply with different fixed definitions in one ```python block."
        )
    return (
        f"{result}\n\nThe bug is still there. Read the failing test, work out what `{target.name}` "
        f"should return for it, and reply with a different complete fixed `{target.name}` in one ```python block."
    )


# --runtime-values locate: after the trace (agent.tracing), a diagnosis before the code.
LOCATE_TEXT = "First say in one sentence which line above first gives a wrong value, and what it should give."


# What a repeat of the untouched code "returned" (the text protocol showed how it fails: agent._text).
UNCHANGED = "This is the original function, unchanged, so it still fails the same test."
UNCHANGED_MODULE = "This is the original code, unchanged, so it still fails the same test."


def unchanged_text(target: Target) -> str:
    return UNCHANGED if target.function else UNCHANGED_MODULE


def repeat_text(previous_result: str = "") -> str:
    if previous_result in (UNCHANGED, UNCHANGED_MODULE):
        return previous_result + " It was not run again. Find the bug and change the code."
    text = (
        "You already tried exactly this code (ignoring comments and formatting) and it failed. "
        "It was not run again. Try a different fix: look again at the failing test."
    )
    return text + (f"\nIt failed with:\n{previous_result}" if previous_result else "")


def no_code_text(target: Target, text_protocol: bool = False, unclosed: bool = False) -> str:
    """`unclosed`: the reply ended inside its reasoning, at the token limit (models.reasoning)."""
    wanted = f"the complete fixed function `{target.name}`" if target.function else _answer(target)
    found = (
        "Your reply ended inside your reasoning (the token limit was reached), so it had no answer and no "
        "code. Think less and answer sooner."
        if unclosed
        else "I found no code in your reply."
    )
    if text_protocol:
        return f"{found} Reply with {wanted} in one ```python block."
    return f"{found} Call run_code with {wanted}."


# The model's faults that the client made harmless (models.client.bounded): said plainly, then the
# turn goes on like any refused call.
UNENCODABLE_TEXT = (
    "Your run_code call could not be run: the code holds characters with no UTF-8 form (lone "
    "surrogates). Send the code again using only valid characters."
)


def too_large_text(size: int) -> str:
    return (
        f"Your reply was not read: {size} characters, above this run's limit. Send only the "
        "corrected function, much shorter."
    )


# The text protocol's strategies (agent.strategies), in the order a stuck model meets them: what
# each sends after a turn (after the task, or after its own opening). `exchange` is agent._conversation's
# Exchange (not imported: it imports toolcalls, which imports this).
@strategy("fix")
def _fix_next(request: RepairRequest, exchange: Any) -> list[dict[str, Any]]:
    """The last exchange as it was: the candidate and what running it said."""
    return exchange.messages()


@strategy("explain")
def _explain_next(request: RepairRequest, exchange: Any) -> list[dict[str, Any]]:
    """The last exchange, its feedback followed by a request for a one-sentence diagnosis first."""
    return exchange.messages(exchange.feedback + "\n\n" + explain_text(request.target))


@strategy("rewrite", opening=rewrite_messages)
def _rewrite_next(request: RepairRequest, exchange: Any) -> list[dict[str, Any]]:
    """Nothing on its first turn (its opening: description, header and tests); then the last exchange."""
    return exchange.messages()
