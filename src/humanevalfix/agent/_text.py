"""The text protocol, for endpoints without tool calls (small local models above all).

The model replies with a ```python block. Each request holds the task and only the last
exchange, the candidate as clean code: long histories of failed fixes make small models repeat
them, and the unchanged prefix (system + task) stays in the server's prompt cache. A stuck model
is asked the next way (agent.strategies). Prose instead of code does not end the repair.
"""

from __future__ import annotations

from typing import Any

from humanevalfix.agent import prompts
from humanevalfix.agent._conversation import Conversation, Exchange
from humanevalfix.agent._request import RepairRequest
from humanevalfix.agent._result import AgentResult
from humanevalfix.agent._settings import AgentSettings, ToolMode
from humanevalfix.agent.strategies import STRATEGIES, Strategy
from humanevalfix.agent.toolcalls import ParsedCall
from humanevalfix.errors import ModelCallError
from humanevalfix.models.client import ChatReply, ChatRequest
from humanevalfix.sandbox.executor import Executor


class TextConversation:
    text_protocol = True

    def __init__(
        self,
        request: RepairRequest,
        settings: AgentSettings,
        transcript: list[dict[str, Any]],
        exchange: list[dict[str, Any]],
    ) -> None:
        """`transcript[:2]` (system and task) opens every request but a rewrite's; `exchange` is sent after it."""
        self.request = request
        self.settings = settings
        self.transcript = transcript
        self._exchange = exchange
        can_rewrite = request.rewrite is not None and request.tests is not None
        self._strategy = Strategy(can_rewrite, settings.rewrite_turns, settings.strategies)
        # The fresh conversations of the strategies that open one (rewrite), made once.
        self._openings = {
            s.name: s.opening(request) for s in STRATEGIES.values() if s.opening is not None and can_rewrite
        }

    @classmethod
    def start(
        cls,
        request: RepairRequest,
        settings: AgentSettings,
        transcript: list[dict[str, Any]],
        executor: Executor,
        tried: dict[str, str],
    ) -> TextConversation:
        """The task in text; with tests and turns to use them, how the code fails as it is (see _show_failure)."""
        transcript[:] = [
            {"role": "system", "content": prompts.system_prompt(text_protocol=True)},
            {"role": "user", "content": prompts.task_prompt(request, text_protocol=True)},
        ]
        if settings.max_iters > 0 and request.tests is not None:
            _show_failure(request, executor, transcript, tried)
        return cls(request, settings, transcript, [])

    @property
    def strategy(self) -> str:
        return self._strategy.name

    def for_mode(self, mode: ToolMode, last: Exchange | None) -> Conversation:
        return self  # an endpoint never goes back to native calls

    def next_request(self, turn: int, result: AgentResult) -> ChatRequest:
        """Also where the second half of the turns starts rewriting, in a fresh conversation."""
        if self._strategy.before_turn(turn, self.settings.budget):
            self._exchange = []
        strategy = self._strategy
        base = self._openings.get(strategy.name, self.transcript[:2])
        temperature = self.settings.temperature(turn - strategy.start, result.repeats_since(strategy.start))
        if self._fresh_again(turn):
            temperature = self.settings.redraw_temperature  # an independent draw from the same opening
        return ChatRequest(
            messages=base + self._exchange,
            temperature=temperature,
            max_tokens=self.settings.max_tokens,
            tools=None,
            task_id=self.request.task_id,
            seed=self.settings.request_seed(self.request.task_id, turn),
        )

    def retry_in_text(self, exc: ModelCallError, mode: ToolMode) -> bool:
        return False

    def assistant_message(self, reply: ChatReply) -> dict[str, Any]:
        return {"role": "assistant", "content": reply.content or ""}

    def observe(self, reply: ChatReply, call: ParsedCall | None, mode: ToolMode) -> None:
        pass

    def stops_without_call(self, result: AgentResult) -> bool:
        return False  # prose is not an answer: asked again while turns are left

    def record(self, turn: int, exchange: Exchange, stuck: bool) -> None:
        """The exchange sent along with the next request; a stuck model is asked the next way."""
        if stuck:
            self._strategy.escalate(turn)
        spec = self._strategy.spec
        if spec.opening is not None and (self._strategy.start == turn or self.settings.rewrite_again == "fresh"):
            self._exchange = []  # a fresh conversation: the buggy body is what it kept copying
        else:
            self._exchange = spec.next_exchange(self.request, exchange)

    def rewrite_now(self, turn: int) -> bool:
        """A reply that brought nothing new: the same turn asks the last resort, in its fresh
        conversation, if it is not the way already (AgentSettings.rewrite_now)."""
        if not self._strategy.to_last_resort(turn):
            return False
        self._exchange = []
        return True

    def _fresh_again(self, turn: int) -> bool:
        """A later turn of a strategy with an opening, asked afresh (--rewrite-again fresh)."""
        strategy = self._strategy
        return self.settings.rewrite_again == "fresh" and strategy.spec.opening is not None and turn > strategy.start

    def out_of_ways(self, turn: int) -> bool:
        return self._strategy.spent(turn)


def _show_failure(
    request: RepairRequest, executor: Executor, transcript: list[dict[str, Any]], tried: dict[str, str]
) -> None:
    """Put how the code fails as it is into the task prompt.

    Small models otherwise tend to send the function back unchanged; a concrete failing call
    (input, expected, got) points them at the bug. The unchanged code then counts as a repeat
    (recorded in `tried`): not run again, and the temperature rises. No --runtime-values trace
    here: with the buggy code's trace in the task prompt the 0.5B model's greedy first reply was
    the buggy code unchanged on 7 of 10 tasks, against 5 without (docs/results.md).
    """
    check = request.check(request.code)
    if not check.ok:
        return
    run = request.baseline or executor.run(check.code, request.tests or "", request.support)
    if run.passed or run.status == "error":
        return
    failure = run.message if run.status == "failed" else f"{run.status}: {run.message}"
    transcript[1] = {
        "role": "user",
        "content": prompts.task_prompt(request, text_protocol=True, current_failure=failure),
    }
    tried[check.fingerprint] = prompts.unchanged_text(request.target)
