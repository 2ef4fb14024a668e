"""What the driver asks of a conversation, whichever protocol it speaks (agent._native, agent._text).

The driver runs the turns (ask, find the call, check and run the candidate, stop or go on); a
conversation decides what each request holds, how a reply goes into the history, and how the
model is asked again. An endpoint may turn out to need the text protocol in the middle of a task
(ToolMode is shared by all tasks), so a native conversation hands over to a text one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from humanevalfix.agent._result import AgentResult
from humanevalfix.agent._settings import ToolMode
from humanevalfix.agent.toolcalls import ParsedCall
from humanevalfix.errors import ModelCallError
from humanevalfix.models.client import ChatReply, ChatRequest


@dataclass(frozen=True)
class Exchange:
    """One turn, compact: the candidate as clean code (or the reply as written), and what the model was told."""

    shown: str
    feedback: str

    def messages(self, feedback: str | None = None) -> list[dict[str, Any]]:
        return [
            {"role": "assistant", "content": self.shown},
            {"role": "user", "content": self.feedback if feedback is None else feedback},
        ]


class Conversation(Protocol):
    text_protocol: bool  # how the feedback is worded

    @property
    def strategy(self) -> str:
        """Recorded on the attempt: native, or the text protocol's way of asking (read only: a
        class attribute or a property)."""

    def for_mode(self, mode: ToolMode, last: Exchange | None) -> Conversation:
        """This conversation, or the text one taking over from it once the endpoint needs text."""

    def next_request(self, turn: int, result: AgentResult) -> ChatRequest:
        """What turn `turn` sends."""

    def retry_in_text(self, exc: ModelCallError, mode: ToolMode) -> bool:
        """True when the failed request is to be sent again in text (the same turn, no attempt spent)."""

    def assistant_message(self, reply: ChatReply) -> dict[str, Any]:
        """The reply as the history keeps it."""

    def observe(self, reply: ChatReply, call: ParsedCall | None, mode: ToolMode) -> None:
        """What the reply shows about the endpoint."""

    def stops_without_call(self, result: AgentResult) -> bool:
        """Whether a reply without a call ends the repair (the model's answer is its last candidate)."""

    def record(self, turn: int, exchange: Exchange, stuck: bool) -> None:
        """A finished turn (`turn` is the next one's number); `stuck`: a repeat or no code at all."""

    def rewrite_now(self, turn: int) -> bool:
        """Whether a reply without a new candidate is answered in the same turn by the last resort."""

    def out_of_ways(self, turn: int) -> bool:
        """True when no way of asking is left before turn `turn`, budget or not (agent.strategies)."""
