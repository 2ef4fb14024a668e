"""The repair policy as steps and routes: what both engines run, the built-in loop and the LangGraph graph.

A turn is a walk through a few steps: `ask` the model, `read` its reply for a run_code call,
`check` the candidate (parse, signature, tried before?), `run` it, then tell the model what came
of it (`feedback`, or `repeat` for a candidate tried before, or `no_code` for a reply without a
call). Each step acts on one RepairRun and returns a route; ROUTES says where each route leads.
agent._driver walks that table in a `while` loop, agent._graph makes a LangGraph node of each
step and a conditional edge of each route, so the two engines cannot drift apart: there is one
copy of the policy, here and in the modules it calls (prompts, toolcalls, codecheck, strategies,
the conversations).

What a repair holds lives on the RepairRun (the graph's state carries it): the conversation, the
attempts (`result`), the fingerprints tried, the turn against the budget.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from humanevalfix.agent import prompts
from humanevalfix.agent._conversation import Conversation, Exchange
from humanevalfix.agent._fit import ContextFit
from humanevalfix.agent._native import NativeConversation
from humanevalfix.agent._request import RepairRequest
from humanevalfix.agent._result import REPLY_KEPT, AgentResult, Attempt
from humanevalfix.agent._settings import AgentSettings, ToolMode
from humanevalfix.agent._text import TextConversation
from humanevalfix.agent.codecheck import CodeCheck
from humanevalfix.agent.toolcalls import ParsedCall, extract_calls, first_usable
from humanevalfix.agent.tracing import with_runtime_values
from humanevalfix.errors import ModelCallError
from humanevalfix.models.client import ChatModel, ChatReply, ChatRequest
from humanevalfix.safetext import encodable
from humanevalfix.sandbox.executor import Executor

END = "__end__"  # the same name LangGraph gives its end node
FIRST = "ask"

# step -> {route it returns: the next step}. The routes are the policy's decisions; the graph's
# conditional edges are drawn from this table, and the built-in loop follows it.
ROUTES: dict[str, dict[str, str]] = {
    "ask": {"reply": "read", "retry": "ask", "context_exceeded": END, "error": END, "interrupted": END},
    "read": {"call": "check", "no_code": "no_code", "redraw": "ask"},
    "check": {"new": "run", "malformed": "feedback", "invalid": "feedback", "repeat": "repeat", "not_run": END},
    "run": {"passed": END, "failed": "feedback", "error": END},
    "feedback": {"again": "ask", "budget": END},
    "repeat": {"again": "ask", "budget": END},
    "no_code": {"again": "ask", "stopped_calling": END, "budget": END},
}

# One line per step, for `humanevalfix graph`, the README and docs/langgraph.md.
STEP_DOCS: dict[str, str] = {
    "ask": (
        "send this turn's request (its strategy's prompt and temperature); a tools rejection retries in text, a "
        "prompt too long for the context retries cut down (context_exceeded once nothing is left to cut), a stop "
        "event ends"
    ),
    "read": (
        "find the run_code call in the reply and record the turn's attempt; a repeat or a reply without code is "
        "drawn again in the same turn, sampled, while --redraws allow, then (--rewrite-now) asked the last "
        "resort's way"
    ),
    "check": (
        "the candidate's syntax and signature, then its fingerprint against those tried; with --max-iters 0 it "
        "ends here"
    ),
    "run": "run the candidate against the feedback tests in the sandbox",
    "feedback": "tell the model the failure (or why its call was refused) and go on while turns are left",
    "repeat": "tell the model it sent that code before (not run again): its strategy escalates, its temperature rises",
    "no_code": "a reply without a call: a native model's last candidate is its answer, else it is asked for code",
}


class RepairRun:
    """One repair in progress: the request, the conversation, the attempts, the candidates tried, the turn.

    The steps are its methods; `attempt`, `reply`, `call` and `checked` are the current turn's, set
    by the step that learns them.
    """

    def __init__(
        self,
        request: RepairRequest,
        model: ChatModel,
        executor: Executor,
        settings: AgentSettings,
        mode: ToolMode,
        stop: threading.Event | None = None,
        on_attempt: Callable[[Attempt], None] | None = None,
    ) -> None:
        self.on_attempt = on_attempt or (lambda attempt: None)
        self.request = request
        self.model = model
        self.executor = executor
        self.settings = settings
        self.mode = mode
        self.stop = stop
        self.result = AgentResult(tool_mode=mode.name)
        self.tried: dict[str, str] = {}  # a candidate's fingerprint -> what its run returned
        self.conversation: Conversation = (
            NativeConversation.start(request, settings, self.transcript)
            if mode.native
            else TextConversation.start(request, settings, self.transcript, executor, self.tried)
        )
        self.last: Exchange | None = None  # the turn before, for a text conversation taking over
        self.turn = 0  # model turns spent (a retry in text spends none)
        self.sent: ChatRequest | None = None
        self.reply: ChatReply | None = None
        self.call: ParsedCall | None = None
        self.attempt: Attempt | None = None
        self.checked: CodeCheck | None = None
        self.redrawn: list[tuple[str, ChatReply]] = []  # this turn's replies set aside: (repeat | no_code, reply)
        self.rewritten_from: str | None = None  # this turn's strategy before it asked the last resort instead
        self.fit = ContextFit.for_tests(request.tests)  # what is left out to fit the server's context

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The whole conversation, for traces (a native conversation sends it as it is)."""
        return self.result.messages

    # ------------------------------------------------------------ the steps

    def ask(self) -> str:
        result = self.result
        if self.stop is not None and self.stop.is_set():
            result.stop_reason = "interrupted"
            return "interrupted"
        sender = self.conversation = self.conversation.for_mode(self.mode, self.last)
        full = sender.next_request(self.turn, result)
        if self.redrawn and self.rewritten_from is None:  # the same turn drawn again: sampled, from a seed of its own
            seed = self.settings.redraw_seed(self.request.task_id, self.turn, len(self.redrawn))
            full = replace(full, temperature=max(full.temperature, self.settings.redraw_temperature), seed=seed)
        self.sent = self.fit.apply(full)
        try:
            self.reply = self.model.chat(self.sent)
        except ModelCallError as exc:
            if exc.kind == ModelCallError.NOT_SENT:  # the run stopped before this call went out (models.gate)
                result.stop_reason = "interrupted"
                return "interrupted"
            if sender.retry_in_text(exc, self.mode):
                result.tool_mode = self.mode.name
                return "retry"  # the same turn again, as text; no attempt was spent
            if exc.kind == "context_exceeded":
                cut = self.fit.shrink(full)
                if cut is not None:
                    result.context_trims.append(f"turn {self.turn}: {cut}")
                    return "retry"  # the same turn, smaller; no attempt was spent
                # The model's own limit, like the budget: scored on what it produced so far.
                result.stop_reason = "context_exceeded"
                return "context_exceeded"
            result.error, result.error_kind, result.stop_reason = str(exc), exc.kind, "error"
            return "error"
        return "reply"

    @property
    def _one_attempt(self) -> bool:
        """--max-iters 0, the published single-attempt setting: its one reply is the one attempt,
        never drawn again nor handed to --rewrite-now, and never run."""
        return self.settings.max_iters == 0

    def _may_redraw(self) -> bool:
        turns = self.settings.redraw_turns
        return not self._one_attempt and (turns is None or self.turn < turns)

    def read(self) -> str:
        sender, reply, result = self.conversation, self._reply(), self.result
        assert self.sent is not None
        call = self.call = first_usable(extract_calls(reply.content, reply.tool_calls, self.request.target.function))
        if reply.reasoning or reply.reasoning_unclosed:
            result.reasoning.append({"turn": self.turn, "text": reply.reasoning, "unclosed": reply.reasoning_unclosed})
        wasted = self._wasted(call, reply)
        if wasted is not None and len(self.redrawn) < self.settings.redraws and self._may_redraw():
            self.redrawn.append((wasted, reply))
            return "redraw"
        if wasted is not None and self.settings.rewrite_now and self.rewritten_from is None and not self._one_attempt:
            strategy = sender.strategy
            if sender.rewrite_now(self.turn):  # asked as its own fresh conversation asks, not sampled
                self.redrawn.append((wasted, reply))
                self.rewritten_from = strategy
                return "redraw"
        self.transcript.append(sender.assistant_message(reply))
        sender.observe(reply, call, self.mode)
        result.tool_mode = self.mode.name
        self.attempt = _attempt(self.turn, self.sent.temperature, reply, call, sender.strategy)
        _count_redrawn(self.attempt, self.redrawn)
        self.attempt.rewritten_from, self.rewritten_from = self.rewritten_from, None
        self.redrawn = []
        if call is None and reply.oversize:
            self.attempt.outcome = "too_large"  # the reply was dropped unread (models.client.bounded)
        result.attempts.append(self.attempt)
        self.turn += 1
        # The feedback is worded for, and recorded by, the conversation that sends the next request.
        self.conversation = sender.for_mode(self.mode, self.last)
        return "no_code" if call is None else "call"

    def check(self) -> str:
        """Refuse a call that cannot be read or code that does not parse or keep the signature; spot a repeat."""
        attempt, call, result = self._current(), self.call, self.result
        assert call is not None
        reply = self._reply()
        if call.code is None and reply.oversize:
            # Dropped unread by the client, never stored whole: the model's outcome, told like a refusal.
            attempt.outcome, attempt.feedback = "too_large", prompts.too_large_text(reply.oversize)
            return self._told("invalid")
        if call.code is None:
            attempt.outcome = "malformed"
            attempt.feedback = f"Your run_code call could not be read: {call.error}."
            return self._told("malformed")
        if not encodable(call.code) or (reply.unencodable and "\ufffd" in call.code):
            # A lone surrogate cannot be source code, nor be sent or stored: the model's fault.
            attempt.outcome, attempt.feedback = "unencodable", prompts.UNENCODABLE_TEXT
            return self._told("invalid")
        check = self.request.check(call.code)
        attempt.code = check.code
        if not check.ok:
            attempt.outcome, attempt.feedback = "invalid", check.message
            return self._told("invalid")
        if check.fingerprint in self.tried:
            attempt.outcome, attempt.feedback = "repeat", prompts.repeat_text(self.tried[check.fingerprint])
            return self._told("repeat")
        self.tried[check.fingerprint] = ""
        self.checked = check
        result.final_code = check.code
        if attempt.turn == 0:
            result.first_code = check.code
        if self._one_attempt:
            attempt.outcome, result.stop_reason = "not_run", "budget"  # one attempt, no feedback
            return self._told("not_run")
        return "new"

    def run(self) -> str:
        attempt, check, result = self._current(), self.checked, self.result
        assert check is not None
        run = self.executor.run(check.code, self.request.tests or "", self.request.support)
        attempt.exec_s = run.duration_s
        if run.status == "error":
            result.error, result.error_kind, result.stop_reason = f"executor: {run.message}", "executor", "error"
            attempt.outcome = "error"
            return self._told("error")
        attempt.outcome = run.status
        if run.passed and self.request.tests is None:
            attempt.feedback = "The code ran without errors (no tests are shown in this mode)."
        else:
            attempt.feedback = prompts.tool_result_text(run.status, run.message, run.output)
        self.tried[check.fingerprint] = attempt.feedback
        if not run.passed:
            told = attempt.feedback
            if run.status in ("failed", "timeout"):  # what the failing call did: an unscored run, text only
                told = with_runtime_values(
                    told, self.executor, check.code, run.message, self.request.target, self.settings.runtime_values
                )
            attempt.feedback = prompts.retry_text(told, self.request.target, self.conversation.text_protocol)
        self.on_attempt(attempt)
        if run.passed:
            self.transcript.extend(_reply_messages(self._reply(), self.call, attempt.feedback))
            result.stop_reason = "passed"
            return "passed"
        return "failed"  # a timeout too: both are told to the model the same way

    def feedback(self) -> str:
        return self._answer(stuck=False)

    def repeat(self) -> str:
        return self._answer(stuck=True)

    def no_code(self) -> str:
        attempt, result = self._current(), self.result
        self.on_attempt(attempt)
        # A reply cut inside its reasoning is no answer, even from a native model that stops when it answers.
        if not self._reply().reasoning_unclosed and self.conversation.stops_without_call(result):
            result.stop_reason = "stopped_calling"
            return "stopped_calling"
        if self.turn >= self.settings.budget:
            result.stop_reason = "budget"
            return "budget"
        attempt.feedback = prompts.no_code_text(
            self.request.target, self.conversation.text_protocol, self._reply().reasoning_unclosed
        )
        self._record(Exchange(self._reply().content or "", attempt.feedback), stuck=True)
        return self._next_turn()

    # ------------------------------------------------------------ shared by the steps

    def _wasted(self, call: ParsedCall | None, reply: ChatReply) -> str | None:
        """`repeat` or `no_code` when the reply brings no new candidate (and may be drawn again),
        else None. A native model's reply without a call is its answer, not a wasted draw."""
        if call is None:
            return "no_code" if self.conversation.text_protocol and not reply.oversize else None
        if call.code is None or not encodable(call.code):
            return None
        check = self.request.check(call.code)
        return "repeat" if check.ok and check.fingerprint in self.tried else None

    def _answer(self, stuck: bool) -> str:
        """The candidate as clean code (or the reply as written) and its feedback go into the history;
        `stuck` (a repeat) asks the next way. The budget decides whether there is a next turn."""
        attempt = self._current()
        shown = prompts.code_reply(attempt.code) if attempt.code is not None else self._reply().content or ""
        self._record(Exchange(shown, attempt.feedback), stuck)
        if self.turn >= self.settings.budget:
            self.result.stop_reason = "budget"
            return "budget"
        return self._next_turn()

    def _next_turn(self) -> str:
        """Another turn, unless the conversation has no way of asking left: a small model that
        rewrote the function and is still stuck would only repeat itself (agent.strategies). That
        ends the task like the budget does (the same route), recorded as `stuck`."""
        if self.conversation.out_of_ways(self.turn):
            self.result.stop_reason = "stuck"
            return "budget"
        return "again"

    def _record(self, exchange: Exchange, stuck: bool) -> None:
        self.transcript.extend(_reply_messages(self._reply(), self.call, exchange.feedback))
        self.last = exchange
        self.conversation.record(self.turn, exchange, stuck)

    def _told(self, route: str) -> str:
        """The attempt's outcome is known: say so (fix prints a line per turn), and go on by `route`."""
        self.on_attempt(self._current())
        return route

    def _current(self) -> Attempt:
        assert self.attempt is not None, "a step ran before `read`"
        return self.attempt

    def _reply(self) -> ChatReply:
        assert self.reply is not None, "a step ran before `ask`"
        return self.reply


Step = Callable[[RepairRun], str]
STEPS: dict[str, Step] = {name: getattr(RepairRun, name) for name in ROUTES}


def walk(run: RepairRun, routes: dict[str, dict[str, str]] = ROUTES, steps: dict[str, Step] = STEPS) -> AgentResult:
    """The built-in engine: from FIRST, each step's route to the next, until END."""
    step = FIRST
    while step != END:
        step = routes[step][steps[step](run)]
    return run.result


def _attempt(turn: int, temperature: float, reply: ChatReply, call: ParsedCall | None, strategy: str) -> Attempt:
    return Attempt(
        turn=turn,
        temperature=temperature,
        outcome="no_code",
        via=call.via if call else None,
        tokens_in=reply.usage.prompt_tokens,
        tokens_out=reply.usage.completion_tokens,
        tokens_reasoning=reply.usage.reasoning_tokens,
        latency_s=reply.latency_s,
        key_index=reply.key_index,
        http_attempts=reply.http_attempts,
        strategy=strategy,
        reply=_kept_reply(reply),
    )


def _kept_reply(reply: ChatReply) -> str | None:
    """The reply as the attempt keeps it (REPLY_KEPT characters at most, the cut said)."""
    text = reply.content or ""
    for call in reply.tool_calls:
        text += ("\n" if text else "") + f"{call.name}({call.arguments})"
    if len(text) > REPLY_KEPT:
        text = text[:REPLY_KEPT] + f"\n… ({len(text) - REPLY_KEPT} more characters not kept)"
    return text or None


def _count_redrawn(attempt: Attempt, redrawn: list[tuple[str, ChatReply]]) -> None:
    """The replies set aside in the turn: named on its attempt, their cost added to its cost."""
    attempt.redrawn = [outcome for outcome, _ in redrawn]
    for _, reply in redrawn:
        attempt.tokens_in += reply.usage.prompt_tokens
        attempt.tokens_out += reply.usage.completion_tokens
        attempt.tokens_reasoning += reply.usage.reasoning_tokens
        attempt.latency_s = round(attempt.latency_s + reply.latency_s, 3)
        attempt.http_attempts += reply.http_attempts


def _reply_messages(reply: ChatReply, call: ParsedCall | None, text: str) -> list[dict[str, Any]]:
    """Native calls are answered with tool messages (every call id needs one); text calls by the user."""
    if not reply.tool_calls:
        return [{"role": "user", "content": text}]
    out = []
    for tc in reply.tool_calls:
        answer = text if call is not None and tc.id == call.call_id else "Not run: one run_code call per turn."
        out.append({"role": "tool", "tool_call_id": tc.id, "content": answer})
    return out
