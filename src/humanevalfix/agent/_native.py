"""The native tool-call protocol: `run_code` offered as a tool, the whole conversation every turn.

Each call is answered by a tool message (every call id needs one; only the first usable call
runs). A reply without a call after a candidate means "this is my answer". The endpoint may turn
out not to do tool calls: it rejects `tools` (the turn is sent again in text, no attempt spent)
or writes its calls as text; from then on the text protocol takes over (agent._text).
"""

from __future__ import annotations

from typing import Any

from humanevalfix.agent import prompts
from humanevalfix.agent._conversation import Conversation, Exchange
from humanevalfix.agent._request import RepairRequest
from humanevalfix.agent._result import AgentResult
from humanevalfix.agent._settings import AgentSettings, ToolMode
from humanevalfix.agent._text import TextConversation
from humanevalfix.agent.toolcalls import ParsedCall
from humanevalfix.errors import ModelCallError
from humanevalfix.models.client import ChatReply, ChatRequest
from humanevalfix.models.failures import is_tools_rejected


class NativeConversation:
    strategy = "native"
    text_protocol = False

    def __init__(self, request: RepairRequest, settings: AgentSettings, transcript: list[dict[str, Any]]) -> None:
        self.request = request
        self.settings = settings
        self.transcript = transcript  # the whole conversation: the trace, and every request

    @classmethod
    def start(
        cls, request: RepairRequest, settings: AgentSettings, transcript: list[dict[str, Any]]
    ) -> NativeConversation:
        transcript[:] = [
            {"role": "system", "content": prompts.system_prompt(text_protocol=False)},
            {"role": "user", "content": prompts.task_prompt(request, text_protocol=False)},
        ]
        return cls(request, settings, transcript)

    def for_mode(self, mode: ToolMode, last: Exchange | None) -> Conversation:
        if mode.native:
            return self
        return TextConversation(self.request, self.settings, self.transcript, last.messages() if last else [])

    def next_request(self, turn: int, result: AgentResult) -> ChatRequest:
        return ChatRequest(
            messages=self.transcript,
            temperature=self.settings.temperature(turn, result.repeats_since(0)),
            max_tokens=self.settings.max_tokens,
            tools=[prompts.run_code_tool(self.request.tests is not None)],
            task_id=self.request.task_id,
            seed=self.settings.request_seed(self.request.task_id, turn),
        )

    def retry_in_text(self, exc: ModelCallError, mode: ToolMode) -> bool:
        if not is_tools_rejected(exc):
            return False
        mode.switch_to_text(f"the endpoint rejected `tools`: {str(exc)[:200]}")
        # The task told in text from the start; nothing was exchanged yet on a first turn.
        self.transcript[0] = {"role": "system", "content": prompts.system_prompt(text_protocol=True)}
        self.transcript[1] = {"role": "user", "content": prompts.task_prompt(self.request, text_protocol=True)}
        return True

    def assistant_message(self, reply: ChatReply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or ""}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in reply.tool_calls
            ]
        return message

    def observe(self, reply: ChatReply, call: ParsedCall | None, mode: ToolMode) -> None:
        # A call written as text (tags, JSON, a TOOL_CALL line) means the endpoint does not do
        # native calls; plain code in the reply is only an answer given without the tool.
        if not reply.tool_calls and call is not None and call.via not in ("fenced", "bare"):
            mode.switch_to_text("replies carry tool calls as text instead of tool_calls")

    def stops_without_call(self, result: AgentResult) -> bool:
        return result.final_code is not None

    def record(self, turn: int, exchange: Exchange, stuck: bool) -> None:
        pass  # the transcript, which the driver extends, is the next request

    def rewrite_now(self, turn: int) -> bool:
        return False  # one conversation, no strategies

    def out_of_ways(self, turn: int) -> bool:
        return False  # one way of asking: the budget alone ends it
