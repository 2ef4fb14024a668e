"""What a repair produced: one Attempt per model turn, and the run's outcome."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

_ONLY_WHEN_SET = ("rewritten_from", "tokens_reasoning", "reply")  # left out of a recorded attempt when None or 0
REPLY_KEPT = 8192  # characters of a turn's reply kept in its attempt (the viewer's turn), the rest cut and said


@dataclass
class Attempt:
    turn: int
    temperature: float
    # passed | failed | timeout | invalid | repeat | malformed | no_code | not_run | error | too_large | unencodable
    outcome: str
    via: str | None = None  # how the call was found: native, hermes, json, tool_call_line, fenced
    code: str | None = None  # the candidate as run (None when there was none)
    feedback: str = ""  # what the model was told
    tokens_in: int = 0
    tokens_out: int = 0  # the reasoning's included, as the APIs count them
    tokens_reasoning: int = 0  # of tokens_out: the reasoning's, where the server says
    latency_s: float = 0.0
    exec_s: float = 0.0
    key_index: int | None = None
    http_attempts: int = 0
    strategy: str = "fix"  # native, or in the text protocol fix | explain | rewrite (see strategies)
    # Replies drawn before this one in the same turn and set aside (AgentSettings.redraws), by what
    # they were: repeat | no_code. Their tokens and latency are counted in this attempt's.
    redrawn: list[str] = field(default_factory=list)
    # The strategy whose last reply in this turn brought nothing new, before the turn asked the last
    # resort instead (AgentSettings.rewrite_now); None when the turn kept its strategy.
    rewritten_from: str | None = None
    # The model's reply as it came (its answer; native calls as `name(arguments)`), at most REPLY_KEPT
    # characters: what `humanevalfix view` shows of the turn. Its reasoning is in the trace only.
    reply: str | None = None


@dataclass
class AgentResult:
    attempts: list[Attempt] = field(default_factory=list)
    first_code: str | None = None  # the candidate of the first turn (the classic pass@1 sample)
    final_code: str | None = None  # the last valid candidate
    stop_reason: str = ""  # passed | stopped_calling | budget | stuck | context_exceeded | error | interrupted
    error: str | None = None  # an infrastructure failure, not the model's
    error_kind: str | None = None  # auth | connection | timeout | executor | other (ModelCallError.kind)
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_mode: str = "native"
    # What was left out of the requests to fit the server's context (agent._fit), in order.
    context_trims: list[str] = field(default_factory=list)
    # Each reply's reasoning, for the trace only (models.reasoning): {"turn", "text", "unclosed"}.
    reasoning: list[dict[str, Any]] = field(default_factory=list)

    @property
    def iterations(self) -> int:
        return len(self.attempts)

    def attempts_dicts(self) -> list[dict[str, Any]]:
        """As recorded: `rewritten_from` only where a turn asked the last resort instead, and
        `tokens_reasoning` only where there were some, so the records of runs without --rewrite-now
        or a reasoning model read as before."""
        return [{k: v for k, v in asdict(a).items() if k not in _ONLY_WHEN_SET or v} for a in self.attempts]

    def repeats_since(self, turn: int) -> int:
        """Candidates sent again (not run again) from `turn` on: each raises the temperature."""
        return sum(1 for a in self.attempts if a.outcome == "repeat" and a.turn >= turn)
