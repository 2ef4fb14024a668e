"""Repair policies: the eval's repair options taken together, every default so far by name.

The defaults of the repair policy change when a full run shows a better one. Two things must not
change with them: the command printed beside an older committed run must still make that run's
settings, and a report must say which policy its numbers came from. So each default the eval has
had stays nameable (`--policy`), and a report names the policy a run's settings match, with the
options where they differ (`describe_policy`). What each option does: agent._settings.AgentSettings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from humanevalfix.agent.strategies import REWRITE_TURNS, STRATEGIES


@dataclass(frozen=True)
class RepairPolicy:
    redraws: int
    redraw_turns: int | None  # None: every turn
    strategies: tuple[str, ...] | None  # None: all, in escalation order
    rewrite_again: str
    rewrite_now: bool
    rewrite_turns: int = REWRITE_TURNS

    @classmethod
    def of(cls, settings: Any) -> RepairPolicy:
        """The policy of anything that has its fields (RunConfig, runspec.AgentSpec, AgentSettings)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})

    def options(self) -> dict[str, str]:
        """Each field as the option that sets it."""
        return {
            "redraws": f"--redraws {self.redraws}",
            "redraw_turns": "redraws in every turn"
            if self.redraw_turns is None
            else f"--redraw-turns {self.redraw_turns}",
            "strategies": "--strategies " + ",".join(self.strategies or tuple(STRATEGIES)),
            "rewrite_again": f"--rewrite-again {self.rewrite_again}",
            "rewrite_now": "--rewrite-now" if self.rewrite_now else "--no-rewrite-now",
            "rewrite_turns": f"--rewrite-turns {self.rewrite_turns}",
        }


# Each measured on all 164 tasks against the one before it (docs/results.md). `plain`: a repeat or a
# reply without code spends its turn; fix, explain, rewrite. `redraw`: such a first reply is drawn
# once more, and a stuck model goes from `fix` straight to `rewrite` (`explain` passed 2 tasks in
# 133 turns); 5 won, none lost. `rewrite-now`: a reply that brings nothing new even then is set
# aside and the same turn asks `rewrite`, whose later turns are fresh draws; 5 won, none lost.
POLICIES: Mapping[str, RepairPolicy] = MappingProxyType(
    {
        "plain": RepairPolicy(
            redraws=0, redraw_turns=None, strategies=None, rewrite_again="continue", rewrite_now=False
        ),
        "redraw": RepairPolicy(
            redraws=1, redraw_turns=1, strategies=("fix", "rewrite"), rewrite_again="continue", rewrite_now=False
        ),
        "rewrite-now": RepairPolicy(
            redraws=1, redraw_turns=1, strategies=("fix", "rewrite"), rewrite_again="fresh", rewrite_now=True
        ),
    }
)
DEFAULT_POLICY = "rewrite-now"  # the eval's; AgentSettings keeps the plain defaults
# `fix` (`--redraws`): each scope's first reply that repeats a tried candidate (the original included)
# or has no code is drawn again once, sampled, as `redraw` does; its other parts do not apply there
# (a helper or a function without a docstring has no rewrite), so `fix` keeps fix, explain, rewrite.
FIX_REDRAWS = 1


def describe_policy(settings: Any) -> str:
    """What a report says of a run's repair policy: the named policy nearest to its settings, with
    the options where they differ ("rewrite-now", "plain with --redraws 2"); none with one attempt."""
    if settings.max_iters == 0:
        return "none (one attempt: --max-iters 0)"
    options = RepairPolicy.of(settings).options()

    def differing(name: str) -> list[str]:
        named = POLICIES[name].options()
        return [text for key, text in options.items() if named[key] != text]

    nearest = min(POLICIES, key=lambda name: (len(differing(name)), name != DEFAULT_POLICY))  # on a tie, the default
    extra = differing(nearest) + (
        [f"--runtime-values {settings.runtime_values}"] if settings.runtime_values != "none" else []
    )
    return nearest + (f" with {' '.join(extra)}" if extra else "")
