"""The benchmark's requests, pinned byte for byte: every message, temperature and tool list the
repair loop sends for real HumanEvalFix tasks, in both protocols and through every strategy.

The recorded greedy results (results/) depend on these prompts, so a refactor of the agent must
not change them. The expected requests are in golden/repair_requests.json, written by the code
before the agent was split into a driver and one conversation per protocol; regenerate them
(`python -m tests.test_repair_requests`) only for a prompt change that is meant, and say so in
the commit.

No HTTP and no sandbox: a scripted model answers and a scripted executor judges (a candidate
passes when it is the canonical solution), so only the agent's own text is pinned.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.agent import AgentSettings, ToolMode, repair, request_for_task
from humanevalfix.agent.codecheck import check_candidate, fingerprint
from humanevalfix.errors import ModelCallError
from humanevalfix.evaluation.dataset import DATASET_ENV, Task, bundled_path, load_file
from humanevalfix.models.client import ChatReply, ChatRequest, ToolCall, Usage
from humanevalfix.sandbox.executor import ExecResult

GOLDEN = Path(__file__).resolve().parent / "golden" / "repair_requests.json"

# A scenario: (task id, native tools?, AgentSettings fields, the model's replies in order).
# A reply is (kind, code): kind fenced | native | natives (two calls) | malformed | prose | hermes
# | reject (the endpoint refuses `tools`); code buggy | canonical | wrong<N> | badsig | syntax.
SCENARIOS: dict[str, tuple[str, bool, dict[str, Any], list[tuple[str, str]]]] = {
    "text: fix, explain, rewrite, prose, then a pass": (
        "Python/3",
        False,
        {"max_iters": 5, "temperatures": (0.0, 0.5), "rewrite_turns": None},
        [
            ("fenced", "buggy"),
            ("fenced", "buggy"),
            ("fenced", "buggy"),
            ("prose", ""),
            ("fenced", "wrong1"),
            ("fenced", "canonical"),
        ],
    ),
    # The default since the rewrite cap: the last resort's two turns, then the task ends as `stuck`.
    "text: rewrite gets two turns, then stuck": (
        "Python/3",
        False,
        {"max_iters": 5},
        [("fenced", "buggy"), ("fenced", "buggy"), ("fenced", "wrong1"), ("fenced", "wrong1")],
    ),
    "text: the second half rewrites; helpers restored": (
        "Python/10",
        False,
        {"max_iters": 5, "rewrite_turns": None},
        [
            ("fenced", "wrong1"),
            ("fenced", "wrong2"),
            ("fenced", "wrong3"),
            ("fenced", "wrong4"),
            ("fenced", "wrong3"),
            ("fenced", "canonical"),
        ],
    ),
    "text: no docstring, rewrite from the tests": (
        "Python/0",
        False,
        {"max_iters": 3, "docstring": False},
        [("fenced", "buggy"), ("fenced", "buggy"), ("fenced", "badsig"), ("fenced", "syntax")],
    ),
    "text: example feedback": (
        "Python/0",
        False,
        {"max_iters": 3, "feedback": "example"},
        [("fenced", "wrong1"), ("prose", ""), ("fenced", "canonical")],
    ),
    "native: example feedback without an example": (
        "Python/38",
        True,
        {"max_iters": 2, "feedback": "example"},
        [("native", "wrong1")],
    ),
    "text: no feedback": (
        "Python/3",
        False,
        {"max_iters": 2, "feedback": "none"},
        [("prose", ""), ("fenced", "wrong1")],
    ),
    "text: max-iters 0": ("Python/3", False, {"max_iters": 0}, [("fenced", "wrong1")]),
    "native: malformed, fail, repeat, two calls, then stops calling": (
        "Python/3",
        True,
        {"max_iters": 5},
        [("malformed", ""), ("native", "wrong1"), ("native", "wrong1"), ("natives", "wrong2"), ("prose", "")],
    ),
    "native: refusals, then a pass": (
        "Python/0",
        True,
        {"max_iters": 3, "max_tokens": 333},
        [("native", "badsig"), ("native", "syntax"), ("fenced", "wrong1"), ("native", "canonical")],
    ),
    "native: no feedback, prose first": (
        "Python/38",
        True,
        {"max_iters": 1, "feedback": "none"},
        [("prose", ""), ("native", "wrong1")],
    ),
    "native: max-iters 0": ("Python/0", True, {"max_iters": 0, "docstring": False}, [("native", "canonical")]),
    "native: tools rejected, text from the same turn": (
        "Python/3",
        True,
        {"max_iters": 4},
        [("reject", ""), ("fenced", "buggy"), ("fenced", "wrong1"), ("fenced", "wrong1"), ("fenced", "canonical")],
    ),
    "native: a call written as text switches mid-task": (
        "Python/10",
        True,
        {"max_iters": 5, "rewrite_turns": None},
        [
            ("native", "wrong1"),
            ("hermes", "wrong2"),
            ("fenced", "wrong2"),
            ("fenced", "wrong3"),
            ("fenced", "wrong4"),
            ("fenced", "canonical"),
        ],
    ),
}


def candidate(task: Task, kind: str) -> str:
    if kind == "buggy":
        return task.buggy_code
    if kind == "canonical":
        return task.canonical_code or ""
    if kind.startswith("wrong"):
        return task.buggy_code.rstrip() + f"\n\n\n_WRONG = {kind[5:]}\n"  # a different AST each time
    if kind == "badsig":
        return f"def {task.entry_point}(*args, **kwargs):\n    return None\n"
    if kind == "syntax":
        return f"def {task.entry_point}(:\n    return (\n"
    raise ValueError(kind)


class ToolsRejected(Exception):
    status_code = 400


class ScriptedModel:
    def __init__(self, task: Task, replies: list[tuple[str, str]]) -> None:
        self.task = task
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    def chat(self, request: ChatRequest) -> ChatReply:
        self.requests.append(copy.deepcopy(request))  # as sent: the native request's list grows later
        kind, code_kind = self.replies.pop(0)
        code = candidate(self.task, code_kind) if code_kind else ""
        usage = Usage(prompt_tokens=100 + len(self.requests), completion_tokens=10)
        n = len(self.requests)
        if kind == "reject":
            raise ModelCallError("HTTP 400: tools are not supported") from ToolsRejected(
                "this model does not support tools"
            )
        if kind == "fenced":
            return ChatReply(f"Here is the fix:\n```python\n{code.rstrip()}\n```\n", usage=usage)
        if kind == "prose":
            return ChatReply("I think the function is correct.", usage=usage)
        if kind == "hermes":
            return ChatReply(
                f"<tool_call>\n{json.dumps({'name': 'run_code', 'arguments': {'code': code}})}\n</tool_call>",
                usage=usage,
            )
        if kind == "malformed":
            return ChatReply("", [ToolCall(f"call_{n}", "run_code", '{"code": "def f(')], usage=usage)
        if kind == "native":
            return ChatReply("", [ToolCall(f"call_{n}", "run_code", json.dumps({"code": code}))], usage=usage)
        if kind == "natives":
            other = candidate(self.task, "wrong9")
            calls = [
                ToolCall(f"call_{n}a", "run_code", json.dumps({"code": code})),
                ToolCall(f"call_{n}b", "run_code", json.dumps({"code": other})),
            ]
            return ChatReply("Two tries.", calls, usage=usage)
        raise ValueError(kind)


class ScriptedExecutor:
    """Passes the canonical solution (as the agent cleans it); anything else fails, named by its fingerprint."""

    name = "scripted"
    isolation = "none"

    def __init__(self, task: Task) -> None:
        self.good = fingerprint(check_candidate(task.canonical_code or "", task.buggy_code, task.entry_point).code)
        self.runs: list[tuple[str, str]] = []

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        self.runs.append((code, test))
        if not test.strip() or fingerprint(code) == self.good:
            return ExecResult("passed", "")
        return ExecResult(
            "failed",
            f"AssertionError: candidate {fingerprint(code)[:6]}\ngot: 0",
            output="printed\n" if "_WRONG = 2" in code else "",
        )

    def close(self) -> None:
        pass


def run_scenario(task: Task, native: bool, settings: dict[str, Any], replies: list[tuple[str, str]]) -> dict[str, Any]:
    model = ScriptedModel(task, replies)
    executor = ScriptedExecutor(task)
    agent_settings = AgentSettings(**settings)
    result = repair(request_for_task(task, agent_settings), model, executor, agent_settings, ToolMode(native))
    assert not model.replies, "every scripted reply is used"
    return {
        "requests": [
            {
                "messages": r.messages,
                "temperature": r.temperature,
                "max_tokens": r.max_tokens,
                "tools": r.tools,
                "task_id": r.task_id,
            }
            for r in model.requests
        ],
        "attempts": result.attempts_dicts(),  # as recorded
        "runs": [list(r) for r in executor.runs],
        "trace": result.messages,
        "first_code": result.first_code,
        "final_code": result.final_code,
        "stop_reason": result.stop_reason,
        "tool_mode": result.tool_mode,
        "error": result.error,
    }


def capture(tasks: dict[str, Task]) -> dict[str, Any]:
    return {
        name: run_scenario(tasks[tid], native, settings, replies)
        for name, (tid, native, settings, replies) in SCENARIOS.items()
    }


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_requests_for_a_task_are_unchanged(name: str, all_tasks: dict[str, Task]) -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))[name]
    tid, native, settings, replies = SCENARIOS[name]
    # Through JSON as the golden file went, so tuples compare as lists.
    actual = json.loads(json.dumps(run_scenario(all_tasks[tid], native, settings, replies)))
    for i, (got, want) in enumerate(zip(actual["requests"], expected["requests"], strict=False)):
        assert got == want, f"request {i} differs"
    assert actual == expected


def test_the_scenarios_reach_every_strategy_and_outcome() -> None:
    """The golden file covers what it claims: both protocols, every strategy, each way a turn ends."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    attempts = [a for scenario in golden.values() for a in scenario["attempts"]]
    assert {a["strategy"] for a in attempts} == {"native", "fix", "explain", "rewrite"}
    assert {a["outcome"] for a in attempts} >= {
        "passed",
        "failed",
        "invalid",
        "repeat",
        "malformed",
        "no_code",
        "not_run",
    }
    assert {s["stop_reason"] for s in golden.values()} == {"passed", "stopped_calling", "budget", "stuck"}
    assert {s["tool_mode"] for s in golden.values()} == {"native", "text"}


if __name__ == "__main__":  # regenerate the golden file (only for a prompt change that is meant)
    path = Path(os.environ[DATASET_ENV]) if os.environ.get(DATASET_ENV) else bundled_path()
    tasks = {t.task_id: t for t in load_file(path).tasks}
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(capture(tasks), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
