"""What the model is told: the system prompt with worked examples, the task, tool results.

The worked examples are written for this project and are not HumanEvalFix tasks.
"""

from __future__ import annotations

from typing import Any

from .dataset import Task

TOOL_NAME = "run_code"

RUN_CODE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Run your complete fixed function against the tests. "
            "Returns PASSED, or the first failure with its message."
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

TEXT_PROTOCOL = """
Your replies cannot call tools directly. To call `run_code`, reply with the complete fixed \
function in one ```python code block and nothing else; it will be run and you will get the result.
"""


def system_prompt(text_protocol: bool) -> str:
    return SYSTEM_PROMPT + (TEXT_PROTOCOL if text_protocol else "")


def task_prompt(task: Task, feedback_test: str | None) -> str:
    parts = [f"Fix the bug in `{task.entry_point}`.", "", "```python", task.buggy_code.rstrip(), "```"]
    if task.docstring:
        parts += ["", "What it should do:", task.docstring.strip()]
    if feedback_test:
        parts += ["", "It must pass these tests:", "```python", feedback_test.strip(), "```"]
    parts += ["", f"Call run_code with the complete fixed `{task.entry_point}`."]
    return "\n".join(parts)


def tool_result_text(status: str, message: str, output: str) -> str:
    if status == "passed":
        return "PASSED: all tests passed."
    text = f"FAILED ({status}): {message}"
    if output.strip():
        text += "\nOutput:\n" + output.strip()[:800]
    return text


def repeat_text() -> str:
    return (
        "You already tried exactly this code (ignoring comments and formatting) and it failed. "
        "It was not run again. Try a different fix: look again at the failing test."
    )


def no_code_text(entry_point: str) -> str:
    return f"I found no code in your reply. Call run_code with the complete fixed function `{entry_point}`."
