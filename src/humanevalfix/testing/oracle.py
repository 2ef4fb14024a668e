"""Handlers for the scripted server that answer like a model that knows the fixes.

The handler reads the task back out of the prompt (the buggy code block, which also tells apart
the HumanEvalFix tasks that share an entry point name) and answers with a native tool call:
`oracle_handler` always with the canonical fix, `scripted_repairs` with the buggy code until a
planned turn. The throughput benchmark and the tests drive the whole pipeline with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from humanevalfix.tasks.task import Task
from humanevalfix.testing.scripted_server import Recorded, Response, tool_call

_FIX_LINE = re.compile(r"Fix the bug in `([^`]+)`")
_CODE_BLOCK = re.compile(r"```python\n(.*?)\n```", re.S)


@dataclass(frozen=True)
class Lookup:
    by_buggy: dict[str, Task]
    by_entry: dict[str, list[Task]]

    @classmethod
    def of(cls, tasks: list[Task]) -> Lookup:
        by_entry: dict[str, list[Task]] = {}
        for t in tasks:
            by_entry.setdefault(t.entry_point, []).append(t)
        return cls({t.buggy_code.rstrip(): t for t in tasks}, by_entry)

    def task_of(self, request: Recorded) -> Task:
        """The task a chat request is about: its entry point, disambiguated by the buggy code."""
        user = next(m for m in request.body["messages"] if m["role"] == "user")
        content = user["content"]
        entry = _FIX_LINE.search(content)
        if entry is None:
            raise LookupError("no 'Fix the bug in `name`' line in the prompt")
        candidates = self.by_entry.get(entry.group(1), [])
        if len(candidates) == 1:
            return candidates[0]
        block = _CODE_BLOCK.search(content)
        if block is not None and block.group(1).rstrip() in self.by_buggy:
            return self.by_buggy[block.group(1).rstrip()]
        raise LookupError(f"cannot tell which task `{entry.group(1)}` is")


def model_turn(request: Recorded) -> int:
    """0 for the first model call of a conversation, 1 for the next, …"""
    return sum(1 for m in request.body["messages"] if m["role"] == "assistant")


def oracle_handler(tasks: list[Task]) -> Callable[[Recorded], Response]:
    """Always the canonical fix, first turn."""
    lookup = Lookup.of(tasks)

    def handle(request: Recorded) -> Response:
        task = lookup.task_of(request)
        return tool_call(task.canonical_code or task.buggy_code)

    return handle


def scripted_repairs(tasks: list[Task], plan: Callable[[Task], int | None]) -> Callable[[Recorded], Response]:
    """A model that sends the buggy code until turn `plan(task)`, then the canonical fix
    (None: never fixes it); token usage grows with the conversation, like a real one."""
    lookup = Lookup.of(tasks)

    def handle(request: Recorded) -> Response:
        task = lookup.task_of(request)
        turn = model_turn(request)
        fix_at = plan(task)
        fixed = fix_at is not None and turn >= fix_at
        code = task.canonical_code if fixed else task.buggy_code
        if not fixed and turn > 0:
            code = f"{task.buggy_code.rstrip()}\n\n_attempt = {turn}\n"  # a new candidate each turn, not a repeat
        reply = tool_call(code or "")
        reply.body["usage"] = {
            "prompt_tokens": 300 + 150 * turn,
            "completion_tokens": 40 + len(code or "") // 4,
            "total_tokens": 340 + 150 * turn + len(code or "") // 4,
        }
        return reply

    return handle
