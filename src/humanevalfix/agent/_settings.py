"""How a repair runs: the settings of a run, and which protocol an endpoint is spoken to in."""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass, replace

from humanevalfix.agent.strategies import REWRITE_AGAIN, REWRITE_TURNS

FEEDBACK_MODES = ("tests", "example", "none")
# none: the failure alone; trace: and what the failing call did, line by line; locate: and the model
# is asked to name the line whose values go wrong before the code.
RUNTIME_VALUES = ("none", "trace", "locate")
DEFAULT_RUNTIME_VALUES = RUNTIME_VALUES[0]
DEFAULT_MAX_ITERS = 5  # repair turns after the first attempt (--max-iters)
DEFAULT_SAMPLES = 1  # independent repair runs per task (--samples)


class ToolMode:
    """Per endpoint: native tool calling, or the text protocol once the endpoint shows it needs it.

    Shared by all the tasks of a run, so one task's discovery moves the others to text at their
    next turn; it never goes back.
    """

    def __init__(self, native: bool, reason: str | None = None) -> None:
        self._native = native
        self.reason = "" if native else (reason or "preset has native_tools: false")
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
    max_iters: int = DEFAULT_MAX_ITERS
    feedback: str = "tests"
    temperatures: tuple[float, ...] = (0.0, 0.3, 0.5, 0.7)
    max_tokens: int = 1024
    repeat_bump: float = 0.2  # added to the temperature per repeated candidate so far
    docstring: bool = True  # the task's docstring in the prompt (eval: as --protocol says; `tests` leaves it out)
    engine: str = "builtin"  # who walks the steps (agent.engines): the same policy either way
    rewrite_turns: int | None = (
        REWRITE_TURNS  # text protocol: turns of the last resort, then `stuck`; None: the budget's
    )
    strategies: tuple[str, ...] | None = None  # text protocol: the ways of asking used, in escalation order (None: all)
    # A reply that still brings no new candidate once its redraws are spent is set aside, and the
    # same turn asks the last resort (rewrite) in its fresh conversation: the turn is not spent on it.
    rewrite_now: bool = False
    rewrite_again: str = REWRITE_AGAIN[0]  # text protocol: the last resort's later turns (strategies.REWRITE_AGAIN)
    seed: int | None = None  # the preset's: base of each request's seed (request_seed); None sends none
    # A reply that repeats a tried candidate or has no code is drawn again in the same turn, up to
    # this many times, sampled (redraw_temperature, a seed of its own): the turn is not spent on it.
    redraws: int = 0
    redraw_turns: int | None = None  # only in the first this many turns (None: every turn)
    redraw_temperature: float = 0.8
    runtime_values: str = DEFAULT_RUNTIME_VALUES  # RUNTIME_VALUES: a failing call's trace (agent.tracing)

    @property
    def budget(self) -> int:
        """Model turns: the first attempt and max_iters retries."""
        return 1 + max(0, self.max_iters)

    def temperature(self, turn: int, repeats: int) -> float:
        base = self.temperatures[min(turn, len(self.temperatures) - 1)]
        return round(min(1.0, base + self.repeat_bump * repeats), 3) if repeats else base

    def for_sample(self, sample: int) -> AgentSettings:
        """Sample k > 0 of a task (--samples) draws from other seeds than sample 0, which keeps the base."""
        if self.seed is None or sample == 0:
            return self
        return replace(self, seed=_mixed(f"{self.seed}/sample {sample}"))

    def request_seed(self, task_id: str, turn: int) -> int | None:
        """The seed of one request: the same task and turn get the same one in every run, so a turn
        sampled above temperature 0 repeats (on servers that honour seeds) whatever ran before it."""
        return None if self.seed is None else _mixed(f"{self.seed}/{task_id}/{turn}")

    def redraw_seed(self, task_id: str, turn: int, draw: int) -> int | None:
        """Draw k > 0 of a turn: a seed of its own (None when no seed is sent: sampling differs anyway)."""
        return None if self.seed is None else _mixed(f"{self.seed}/{task_id}/{turn}/draw {draw}")


def _mixed(text: str) -> int:
    return zlib.crc32(text.encode("utf-8")) & 0x7FFFFFFF
