"""The repair loop for one request: ask the model, check and run its candidate, feed the result back.

It stops when the feedback tests pass, when a native model stops calling the tool (its last
code is the answer), or when the budget of 1 + max_iters model turns is spent. The verdict that
counts is not decided here: the scorer reruns the final code against the full tests (the
benchmark), or `fix` checks it against the user's tests.

What each request holds and how the model is asked again is the conversation's business, one
per protocol (agent._native, agent._text); this module runs the turns.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from humanevalfix.agent import prompts
from humanevalfix.agent._conversation import Conversation, Exchange
from humanevalfix.agent._native import NativeConversation
from humanevalfix.agent._request import RepairRequest
from humanevalfix.agent._result import AgentResult, Attempt
from humanevalfix.agent._settings import AgentSettings, ToolMode
from humanevalfix.agent._text import TextConversation
from humanevalfix.agent.toolcalls import ParsedCall, extract_calls, first_usable
from humanevalfix.errors import ModelCallError
from humanevalfix.models.client import ChatModel, ChatReply
from humanevalfix.sandbox.executor import Executor


def repair(
    request: RepairRequest,
    model: ChatModel,
    executor: Executor,
    settings: AgentSettings,
    mode: ToolMode,
    stop: threading.Event | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> AgentResult:
    """`on_attempt`: told each turn's attempt once its outcome is known (fix prints a line per turn)."""
    return _Repair(request, model, executor, settings, mode, on_attempt).run(stop)


class _Repair:
    """One repair: the result (its messages are the transcript), the candidates tried, the conversation."""

    def __init__(
        self,
        request: RepairRequest,
        model: ChatModel,
        executor: Executor,
        settings: AgentSettings,
        mode: ToolMode,
        on_attempt: Callable[[Attempt], None] | None = None,
    ) -> None:
        self.on_attempt = on_attempt or (lambda attempt: None)
        self.request = request
        self.model = model
        self.executor = executor
        self.settings = settings
        self.mode = mode
        self.result = AgentResult(tool_mode=mode.name)
        self.tried: dict[str, str] = {}  # a candidate's fingerprint -> what its run returned
        transcript = self.result.messages  # the whole conversation, for traces
        self.conversation: Conversation = (
            NativeConversation.start(request, settings, transcript)
            if mode.native
            else TextConversation.start(request, settings, transcript, executor, self.tried)
        )
        self.last: Exchange | None = None  # the turn before, for a text conversation taking over

    @property
    def transcript(self) -> list[dict[str, Any]]:
        return self.result.messages

    def run(self, stop: threading.Event | None) -> AgentResult:
        result, budget, turn = self.result, self.settings.budget, 0
        while turn < budget:
            if stop is not None and stop.is_set():
                result.stop_reason = "interrupted"
                return result
            sender = self.conversation = self.conversation.for_mode(self.mode, self.last)
            request = sender.next_request(turn, result)
            try:
                reply = self.model.chat(request)
            except ModelCallError as exc:
                if sender.retry_in_text(exc, self.mode):
                    result.tool_mode = self.mode.name
                    continue  # the same turn again, as text; no attempt was spent
                if exc.kind == "context_exceeded":
                    # The model's own limit, like the budget: scored on what it produced so far.
                    result.stop_reason = "context_exceeded"
                    return result
                result.error, result.error_kind, result.stop_reason = str(exc), exc.kind, "error"
                return result
            self.transcript.append(sender.assistant_message(reply))
            call = first_usable(extract_calls(reply.content, reply.tool_calls, self.request.target.function))
            sender.observe(reply, call, self.mode)
            result.tool_mode = self.mode.name
            attempt = _attempt(turn, request.temperature, reply, call, sender.strategy)
            result.attempts.append(attempt)
            turn += 1
            # The feedback is worded for, and recorded by, the conversation that sends the next request.
            self.conversation = sender.for_mode(self.mode, self.last)
            if call is None:
                self.on_attempt(attempt)
                if self.conversation.stops_without_call(result) or turn >= budget:
                    result.stop_reason = "stopped_calling" if self.conversation.stops_without_call(result) else "budget"
                    return result
                attempt.feedback = prompts.no_code_text(self.request.target, self.conversation.text_protocol)
                self._answer(turn, reply, None, Exchange(reply.content or "", attempt.feedback), stuck=True)
                continue
            going_on = self._try(attempt, call)
            self.on_attempt(attempt)
            if not going_on:
                return result
            if attempt.outcome == "passed":
                self.transcript.extend(_reply_messages(reply, call, attempt.feedback))
                result.stop_reason = "passed"
                return result
            shown = prompts.code_reply(attempt.code) if attempt.code is not None else reply.content or ""
            self._answer(turn, reply, call, Exchange(shown, attempt.feedback), stuck=attempt.outcome == "repeat")
        result.stop_reason = "budget"
        return result

    def _answer(self, turn: int, reply: ChatReply, call: ParsedCall | None, exchange: Exchange, stuck: bool) -> None:
        self.transcript.extend(_reply_messages(reply, call, exchange.feedback))
        self.last = exchange
        self.conversation.record(turn, exchange, stuck)

    def _try(self, attempt: Attempt, call: ParsedCall) -> bool:
        """Check the call's candidate and run it unless refused or tried before; False ends the repair."""
        if call.code is None:
            attempt.outcome = "malformed"
            attempt.feedback = f"Your run_code call could not be read: {call.error}."
            return True
        check = self.request.check(call.code)
        attempt.code = check.code
        if not check.ok:
            attempt.outcome, attempt.feedback = "invalid", check.message
            return True
        if check.fingerprint in self.tried:
            attempt.outcome, attempt.feedback = "repeat", prompts.repeat_text(self.tried[check.fingerprint])
            return True
        self.tried[check.fingerprint] = ""
        result = self.result
        result.final_code = check.code
        if attempt.turn == 0:
            result.first_code = check.code
        if self.settings.max_iters == 0:
            attempt.outcome, result.stop_reason = "not_run", "budget"  # one attempt, no feedback
            return False
        run = self.executor.run(check.code, self.request.tests or "")
        attempt.exec_s = run.duration_s
        if run.status == "error":
            result.error, result.error_kind, result.stop_reason = f"executor: {run.message}", "executor", "error"
            attempt.outcome = "error"
            return False
        attempt.outcome = run.status
        if run.passed and self.request.tests is None:
            attempt.feedback = "The code ran without errors (no tests are shown in this mode)."
        else:
            attempt.feedback = prompts.tool_result_text(run.status, run.message, run.output)
        self.tried[check.fingerprint] = attempt.feedback
        if not run.passed:
            attempt.feedback = prompts.retry_text(attempt.feedback, self.request.target, self.conversation.text_protocol)
        return True


def _attempt(turn: int, temperature: float, reply: ChatReply, call: ParsedCall | None, strategy: str) -> Attempt:
    return Attempt(
        turn=turn,
        temperature=temperature,
        outcome="no_code",
        via=call.via if call else None,
        tokens_in=reply.usage.prompt_tokens,
        tokens_out=reply.usage.completion_tokens,
        latency_s=reply.latency_s,
        key_index=reply.key_index,
        http_attempts=reply.http_attempts,
        strategy=strategy,
    )


def _reply_messages(reply: ChatReply, call: ParsedCall | None, text: str) -> list[dict[str, Any]]:
    """Native calls are answered with tool messages (every call id needs one); text calls by the user."""
    if not reply.tool_calls:
        return [{"role": "user", "content": text}]
    out = []
    for tc in reply.tool_calls:
        answer = text if call is not None and tc.id == call.call_id else "Not run: one run_code call per turn."
        out.append({"role": "tool", "tool_call_id": tc.id, "content": answer})
    return out
