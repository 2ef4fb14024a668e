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
"""

from __future__ import annotations

ORDER = ("fix", "explain", "rewrite")


class Strategy:
    """The current way of asking and the turn it started at: its temperature schedule's turn 0,
    and the first turn whose repeats raise its temperature (AgentResult.repeats_since)."""

    def __init__(self, can_rewrite: bool) -> None:
        self.name = "fix"
        self.start = 0
        self._last = "rewrite" if can_rewrite else "explain"

    def escalate(self, turn: int) -> None:
        """The next way of asking, from `turn` on, if there is one left."""
        if self.name != self._last:
            self.name, self.start = ORDER[ORDER.index(self.name) + 1], turn

    def before_turn(self, turn: int, budget: int) -> bool:
        """The second half of the turns rewrites; True if that starts now."""
        if self._last == "rewrite" and self.name != "rewrite" and turn > 0 and budget - turn <= budget // 2:
            self.name, self.start = "rewrite", turn
            return True
        return False
