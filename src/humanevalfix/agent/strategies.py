"""Text protocol: how the next turn asks, escalated when the model gets stuck.

Small models mostly send the buggy function back unchanged (in one measured run, 409 of 779
turns were repeats), and a higher temperature alone rarely moves them. So a repeat or a reply
without code moves to the next way of asking: `fix` (change as little as possible, code only),
then `explain` (name the wrong line in one sentence first, then the code), then `rewrite` (write
the function anew from its description, or from the tests when no description is shown, and its
header, the buggy body not shown). `rewrite` needs something to write from and tests to check it,
so not under --protocol docs (no tests shown) or for a whole module (fix without --function); it
also takes over for the second half of the turns, whatever happened before. (Under --protocol tests
it used to stop at `explain`, where the 0.5B model answered prose without code on 164 of 300 turns.)
Each strategy starts its own temperature schedule, since its prompt is new.

`rewrite`, the last resort, gets REWRITE_TURNS turns, then the repair ends (stop_reason `stuck`)
instead of spending the rest of the budget. Its first turn is a fresh, greedy conversation that does
not depend on what came before, and that is where its passes come from: in the full
`--protocol tests` repair run of commit ad3ce1a, 20 of the 21 rewrite passes came on its first turn,
one on its second, and none in the ~220 later rewrite turns (about a quarter of the run's 830 turns,
mostly the model repeating its own rewrite).

A strategy is registered with `@strategy(name)` on what it sends after a turn (its wording is in
agent/prompts.py, where the built-in ones are registered); the order of registration is the order of
escalation; a run may use only some of them (`--strategies`, AgentSettings.strategies), in that
order. One with an `opening` starts a fresh conversation from it instead of the task, and needs
what a rewrite needs (a description or tests to write from, and tests); the last of the usable ones
is the last resort: REWRITE_TURNS turns, and the second half of the budget when it has an opening.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from humanevalfix.registry import Registry

REWRITE_TURNS = 2
# How a strategy with an opening asks on its later turns: `continue` sends its last exchange (the
# candidate and how it failed); `fresh` starts from the opening again, sampled (redraw_temperature,
# the turn's seed), an independent draw: continued, the 0.5B model's second rewrite passed no task
# in five full runs (0 in ~120 turns each) and repeated its own rewrite in two thirds of them;
# drawn afresh it passed 5 of 119 (docs/results.md).
REWRITE_AGAIN = ("continue", "fresh")

Messages = list[dict[str, Any]]
# (request, exchange) -> the messages sent after the opening on the next turn (agent._text).
NextExchange = Callable[[Any, Any], Messages]
Opening = Callable[[Any], Messages]  # request -> a fresh conversation's first messages


@dataclass(frozen=True)
class StrategySpec:
    name: str
    next_exchange: NextExchange
    opening: Opening | None = None


# Types named loosely: the wording (agent/prompts.py) imports the request, whose settings import this.
STRATEGIES: Registry[StrategySpec] = Registry("strategy", "strategy", builtins="humanevalfix.agent.prompts")


def strategy(name: str, opening: Opening | None = None) -> Callable[[NextExchange], NextExchange]:
    """Register the decorated function as strategy `name`, the next way of asking after those before it."""

    def register(next_exchange: NextExchange) -> NextExchange:
        STRATEGIES.register(name, StrategySpec(name, next_exchange, opening))
        return next_exchange

    return register


def usable_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` checked (registered; at least one without an opening, which every task can use:
    a rewrite needs tests to write from) and put in the order of escalation. ValueError names
    the problem."""
    unknown = [name for name in names if name not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r} (choose from {', '.join(STRATEGIES)})")
    if not any(STRATEGIES[name].opening is None for name in names):
        plain = ", ".join(name for name, spec in STRATEGIES.items() if spec.opening is None)
        raise ValueError(f"needs one of {plain}: {', '.join(names)} cannot be used where no tests are shown")
    return tuple(name for name in STRATEGIES if name in names)


class Strategy:
    """The current way of asking and the turn it started at: its temperature schedule's turn 0,
    and the first turn whose repeats raise its temperature (AgentResult.repeats_since)."""

    def __init__(
        self, can_rewrite: bool, rewrite_turns: int | None = REWRITE_TURNS, names: tuple[str, ...] | None = None
    ) -> None:
        """`names`: the strategies this run may use (None: all); a rewrite only where it can."""
        chosen = [spec for spec in STRATEGIES.values() if names is None or spec.name in names]
        self._order = [spec for spec in chosen if spec.opening is None or can_rewrite]
        self.spec = self._order[0]
        self.start = 0
        self._rewrite_turns = rewrite_turns

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def _last(self) -> StrategySpec:
        return self._order[-1]

    def escalate(self, turn: int) -> None:
        """The next way of asking, from `turn` on, if there is one left."""
        if self.spec is not self._last:
            self.spec, self.start = self._order[self._order.index(self.spec) + 1], turn

    def spent(self, turn: int) -> bool:
        """Whether the last resort has had its turns by `turn` (the next turn's number)."""
        return (
            self.spec.opening is not None
            and self._rewrite_turns is not None
            and turn - self.start >= self._rewrite_turns
        )

    def to_last_resort(self, turn: int) -> bool:
        """The last resort from `turn` on, if it opens a conversation of its own and is not the way
        already (AgentSettings.rewrite_now); True if that starts now."""
        if self._last.opening is not None and self.spec is not self._last:
            self.spec, self.start = self._last, turn
            return True
        return False

    def before_turn(self, turn: int, budget: int) -> bool:
        """The second half of the turns rewrites; True if that starts now."""
        return turn > 0 and budget - turn <= budget // 2 and self.to_last_resort(turn)
