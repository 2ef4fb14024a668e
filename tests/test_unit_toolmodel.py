"""fixer/toolmodel.py in-process: WorkspaceModel between the agent and a scripted chat model, over a
real Workspace on a small project in tmp_path. What the agent gets back (the turn's reply: workspace
calls answered and taken out, `run_code` without code turned into a run of the scratch copy), what
the model is asked in between (the workspace's tools offered, its calls and their answers in the
turn's conversation), and the bound on rounds per turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from humanevalfix.fixer.toolmodel import ANSWER_CHARS, ROUNDS, WorkspaceModel
from humanevalfix.fixer.workspace import NAMES, TOOLS, Workspace
from humanevalfix.models.client import ChatReply, ChatRequest, ToolCall

RUN_CODE = {"type": "function", "function": {"name": "run_code", "parameters": {"type": "object"}}}
SOURCE = "def add(a, b):\n    return a - b\n\n\ndef twice(x):\n    return add(x, x)\n"
FIXED_ADD = "def add(a, b):\n    return a + b"


@dataclass
class Scripted:
    """A ChatModel answering the replies given, in order; keeps every request as it was when sent
    (WorkspaceModel grows one list of messages over a turn's rounds)."""

    replies: list[ChatReply]
    requests: list[ChatRequest] = field(default_factory=list)

    def chat(self, request: ChatRequest) -> ChatReply:
        self.requests.append(replace(request, messages=[dict(m) for m in request.messages]))
        return self.replies.pop(0)


def call(name: str, n: int = 1, **arguments: object) -> ToolCall:
    return ToolCall(f"call_{name}_{n}", name, json.dumps(arguments))


def reply(*calls: ToolCall, content: str = "") -> ChatReply:
    return ChatReply(content, list(calls))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "calc.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "README.md").write_text("calc: add and twice\n", encoding="utf-8")
    return tmp_path


def request(tools: bool = True) -> ChatRequest:
    return ChatRequest(
        [{"role": "user", "content": "fix add"}], 0.0, 256, tools=[RUN_CODE] if tools else None, task_id="t"
    )


def test_a_request_without_tools_goes_straight_to_the_model(project: Path) -> None:
    inner = Scripted([reply(content="plain")])
    model = WorkspaceModel(inner, Workspace(project))
    asked = request(tools=False)
    assert model.chat(asked).content == "plain"
    assert inner.requests == [asked]  # the very request, no tools added


def test_run_code_alone_is_the_turns_reply_and_the_workspace_tools_are_offered(project: Path) -> None:
    run = call("run_code", code=FIXED_ADD)
    inner = Scripted([reply(run, content="here")])
    model = WorkspaceModel(inner, Workspace(project))
    out = model.chat(request())
    assert out.tool_calls == [run] and out.content == "here"
    (asked,) = inner.requests
    offered = [t["function"]["name"] for t in asked.tools or []]
    assert offered == ["run_code", *[t["function"]["name"] for t in TOOLS]]
    assert set(offered[1:]) == NAMES
    assert asked.messages == [{"role": "user", "content": "fix add"}]


def test_workspace_calls_are_answered_in_the_turns_conversation(project: Path) -> None:
    seen: list[tuple[str, str]] = []
    run = call("run_code", code=FIXED_ADD)
    inner = Scripted(
        [
            reply(call("read_file", path="pkg/calc.py"), call("grep", 2, text="add("), content="looking"),
            reply(call("list_dir", path="..")),
            reply(run),
        ]
    )
    model = WorkspaceModel(inner, Workspace(project), on_call=lambda name, answer: seen.append((name, answer)))
    asked = request()
    out = model.chat(asked)
    assert out.tool_calls == [run]
    assert [name for name, _ in seen] == ["read_file", "grep", "list_dir"]
    assert seen[0][1].startswith("pkg/calc.py (lines 1-6 of 6):\n    1  def add(a, b):")
    assert seen[1][1].splitlines() == [
        "pkg/calc.py:1: def add(a, b):",
        "pkg/calc.py:6:     return add(x, x)",
    ]
    assert seen[2][1] == "refused: ..: `..` is not allowed; paths stay inside the project"
    assert len(inner.requests) == 3
    second = inner.requests[1].messages
    assert len(second) == 4  # the user's, the model's calls, an answer to each
    assert second[0] == {"role": "user", "content": "fix add"}
    assert second[1]["role"] == "assistant" and second[1]["content"] == "looking"
    assert [c["function"]["name"] for c in second[1]["tool_calls"]] == ["read_file", "grep"]
    assert second[2] == {"role": "tool", "tool_call_id": "call_read_file_1", "content": seen[0][1]}
    assert second[3] == {"role": "tool", "tool_call_id": "call_grep_2", "content": seen[1][1]}
    third = inner.requests[2].messages
    assert len(third) == 6 and third[:4] == second and third[-1]["content"] == seen[2][1]  # it keeps growing
    assert inner.requests[0].messages == [{"role": "user", "content": "fix add"}]
    assert asked.messages == [{"role": "user", "content": "fix add"}]  # the agent's own list untouched


def test_an_edit_then_no_call_runs_the_scratch_copy(project: Path) -> None:
    workspace = Workspace(project)
    inner = Scripted([reply(call("edit", path="pkg/calc.py", function="add", text=FIXED_ADD)), reply(content="done")])
    model = WorkspaceModel(inner, workspace)
    model.target = project / "pkg" / "calc.py"
    out = model.chat(request())
    assert out.content == "done"
    (run,) = out.tool_calls
    assert (run.id, run.name) == ("workspace_run_1", "run_code")
    assert len(inner.requests) == 2
    code = json.loads(run.arguments)["code"]
    assert code == SOURCE.replace("return a - b", "return a + b")
    assert (project / "pkg" / "calc.py").read_text(encoding="utf-8") == SOURCE  # the project is never written
    assert inner.requests[1].messages[-1]["content"].startswith("edited pkg/calc.py in the scratch copy")


def test_run_code_without_code_runs_the_scratch_copy_under_its_own_id(project: Path) -> None:
    workspace = Workspace(project)
    calc = project / "pkg" / "calc.py"
    edit = call("edit", path="pkg/calc.py", start=2, end=2, text="    return a + b")
    empty_run = ToolCall("call_run_9", "run_code", json.dumps({"code": "  "}))
    bad_json_run = ToolCall("call_run_10", "run_code", "{not json")
    inner = Scripted([reply(edit, empty_run, bad_json_run)])  # an edit beside run_code: applied before the run
    model = WorkspaceModel(inner, workspace)
    model.target = calc
    out = model.chat(request())
    assert [c.id for c in out.tool_calls] == ["call_run_9", "call_run_10"]
    assert all(c.name == "run_code" for c in out.tool_calls)
    assert {json.loads(c.arguments)["code"] for c in out.tool_calls} == {SOURCE.replace("a - b", "a + b")}
    assert len(inner.requests) == 1  # nothing of ours alone in the reply: no second round
    assert workspace.edited(calc) == SOURCE.replace("a - b", "a + b")


def test_without_an_edit_or_a_target_the_reply_is_left_as_it_is(project: Path) -> None:
    empty_run = ToolCall("call_run_1", "run_code", "{}")
    model = WorkspaceModel(Scripted([reply(empty_run)]), Workspace(project))
    assert model.chat(request()).tool_calls == [empty_run]  # no target: nothing to run instead
    model = WorkspaceModel(Scripted([reply(content="nothing")]), Workspace(project))
    model.target = project / "pkg" / "calc.py"
    assert model.chat(request()).tool_calls == []  # no edit: no run made up
    refused_edit = call("edit", path="pkg/calc.py", function="add", text="def add(:")
    inner = Scripted([reply(refused_edit), reply(content="gave up")])
    model = WorkspaceModel(inner, Workspace(project))
    model.target = project / "pkg" / "calc.py"
    assert model.chat(request()).tool_calls == []  # an edit refused is no edit
    assert "not applied: pkg/calc.py would not parse" in inner.requests[1].messages[-1]["content"]


def test_rounds_are_bounded_and_long_answers_cut(project: Path) -> None:
    (project / "big.py").write_text("".join(f"x{i} = {'1' * 200}\n" for i in range(150)), encoding="utf-8")
    answers: list[str] = []
    endless = [reply(call("read_file", n, path="big.py")) for n in range(ROUNDS + 1)]
    inner = Scripted(endless)
    model = WorkspaceModel(inner, Workspace(project), on_call=lambda name, answer: answers.append(answer))
    out = model.chat(request())
    assert len(inner.requests) == ROUNDS + 1 and len(answers) == ROUNDS
    assert out.tool_calls == []  # the last reply's workspace calls are dropped, not answered
    assert all(len(a) == ANSWER_CHARS for a in answers)
    assert inner.requests[-1].messages[-1]["content"] == answers[-1]
