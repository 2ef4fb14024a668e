"""The workspace tools (fixer.workspace) beside `run_code`, for a model with native tool calling.

A wrapper around the chat model, so the agent's loop stays as it is: each request that offers
tools also offers read_file, list_dir, grep, edit and git_diff; the calls the model makes to
those are answered here, in a conversation of the turn's own, and the model is asked again, a few
rounds at most; the first reply that is not only workspace calls goes back to the agent as the
turn's reply. A `run_code` call without code (or a reply with no call after an edit) runs the
scratch copy of the file in scope: it becomes `run_code` with that file's edited text, which the
scope checks and splices as any candidate (fixer.scope).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from itertools import count
from pathlib import Path

from humanevalfix.fixer.workspace import NAMES, TOOLS, Workspace
from humanevalfix.models.client import ChatModel, ChatReply, ChatRequest, ToolCall

ROUNDS = 6  # workspace rounds in one turn; then the turn's reply is taken as it is
ANSWER_CHARS = 6000  # of one tool's answer in the turn's conversation


def _code_of(call: ToolCall) -> str | None:
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        return None
    code = args.get("code") if isinstance(args, dict) else None
    return code if isinstance(code, str) else None


class WorkspaceModel:
    """A ChatModel: the wrapped one, with the workspace's tools answered here."""

    def __init__(
        self, inner: ChatModel, workspace: Workspace, on_call: Callable[[str, str], None] | None = None
    ) -> None:
        self.inner = inner
        self.workspace = workspace
        self.on_call = on_call or (lambda name, answer: None)
        self.target: Path | None = None  # the file in scope: `run_code` without code runs its scratch copy
        self.ids = count(1)

    def _scratch_run(self) -> ToolCall | None:
        text = self.workspace.edited(self.target) if self.target is not None else None
        return (
            ToolCall(f"workspace_run_{next(self.ids)}", "run_code", json.dumps({"code": text}))
            if text is not None
            else None
        )

    def _finish(self, reply: ChatReply, edited: bool) -> ChatReply:
        """The turn's reply for the agent: workspace calls out, `run_code` of the scratch copy in."""
        calls = [c for c in reply.tool_calls if c.name not in NAMES]
        run = self._scratch_run()
        if run is not None:
            calls = [
                replace(run, id=c.id) if c.name == "run_code" and not (_code_of(c) or "").strip() else c for c in calls
            ]
            if edited and not calls:
                calls = [run]
        return replace(reply, tool_calls=calls)

    def chat(self, request: ChatRequest) -> ChatReply:
        if not request.tools:
            return self.inner.chat(request)
        messages = list(request.messages)
        asked = replace(request, tools=list(request.tools) + TOOLS)
        edited = False
        reply = self.inner.chat(replace(asked, messages=messages))
        for _ in range(ROUNDS):
            ours = [c for c in reply.tool_calls if c.name in NAMES]
            if not ours or len(ours) != len(reply.tool_calls):
                for call in ours:  # beside a run_code call: an edit still counts before the run
                    edited |= call.name == "edit" and self.workspace.call(call.name, call.arguments).startswith(
                        "edited"
                    )
                return self._finish(reply, edited)
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.content or "",
                    "tool_calls": [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                        for c in ours
                    ],
                }
            )
            for call in ours:
                answer = self.workspace.call(call.name, call.arguments)[:ANSWER_CHARS]
                edited |= call.name == "edit" and answer.startswith("edited")
                self.on_call(call.name, answer)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
            reply = self.inner.chat(replace(asked, messages=messages))
        return self._finish(replace(reply, tool_calls=[c for c in reply.tool_calls if c.name not in NAMES]), edited)
