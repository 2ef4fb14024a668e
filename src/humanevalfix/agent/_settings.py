"""How a repair runs: the settings of a run, and which protocol an endpoint is spoken to in."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from humanevalfix.agent.strategies import REWRITE_TURNS

FEEDBACK_MODES = ("tests", "example", "none")


class ToolMode:
    """Per endpoint: native tool calling, or the text protocol once the endpoint shows it needs it.

    Shared by all the tasks of a run, so one task's discovery moves the others to text at their
    next turn; it never goes back.
    """

    def __init__(self, native: bool) -> None:
        self._native = native
        self.reason = "" if native else "preset has native_tools: false"
        self._lock = threading.Lock()

    @property
    def native(self) -> bool:
        return self._native

    @property
    def name(self) -> str:
        return "native" if self._native else "text"

    def switch_to_text(self, reason: str) -> None:
        with self._lock:
            if self._native:
                self._native = False
                self.reason = reason


@dataclass(frozen=True)
class AgentSettings:
    max_iters: int = 5
    feedback: str = "tests"
    temperatures: tuple[float, ...] = (0.0, 0.3, 0.5, 0.7)
    max_tokens: int = 1024
    repeat_bump: float = 0.2  # added to the temperature per repeated candidate so far
    docstring: bool = True  # the task's docstring in the prompt (eval --no-docstring: left out)
    engine: str = "builtin"  # who walks the steps (agent.engines): the same policy either way
    rewrite_turns: int | None = REWRITE_TURNS  # text protocol: turns of the last resort, then `stuck`; None: the budget's

    @property
    def budget(self) -> int:
        """Model turns: the first attempt and max_iters retries."""
        return 1 + max(0, self.max_iters)

    def temperature(self, turn: int, repeats: int) -> float:
        base = self.temperatures[min(turn, len(self.temperatures) - 1)]
        return round(min(1.0, base + self.repeat_bump * repeats), 3) if repeats else base
