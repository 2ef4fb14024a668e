"""Ties: pass@1+ inputs on which the task's text leaves the answer open (issue 51).

"Select two numbers that are closest to each other" does not say which pair wins when two pairs
are equally close. The canonical solution picks one by the order it meets them, and a right fix
may pick the other, so such an input cannot decide a verdict. It shows itself by order: on a task
whose answer does not depend on the order of its list arguments (every seed with a list answers
the same with its lists reversed), an input whose canonical answer changes when its lists are
reversed is a tie. The answers program (evaluation/plusanswers.py) asks the canonical solution
again with each input's `partner` and drops the input as "tie" when the two answers differ.

No task is named here: the rule reads only the seeds and the canonical solution's answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Args = tuple[Any, ...]

# Seeds with a list whose reversal leaves the canonical answer as it is, at least: fewer say
# nothing about order (one example can be symmetric by chance).
MIN_SEEDS = 2

# Two answers in the check's normal form (pluscases.COMMON) that are the same up to a float's
# last digits: the order of a sum may change those. Run here and inside the answers program.
NEAR = """
def _near(a, b):
    if type(a) is list and type(b) is list and len(a) == len(b) == 2 and a[0] == b[0] == "float":
        x, y = a[1], b[1]
        return x == y or abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(_near(x, y) for x, y in zip(a, b))
    return a == b
"""


def _compiled_near() -> Callable[[Any, Any], bool]:
    namespace: dict[str, Any] = {}
    exec(compile(NEAR, "<plusties.NEAR>", "exec"), namespace)
    near: Callable[[Any, Any], bool] = namespace["_near"]
    return near


near = _compiled_near()


def reversed_args(args: Args) -> Args | None:
    """The arguments with every list of two or more items reversed; None where that changes nothing."""
    turned = tuple(list(reversed(a)) if type(a) is list and len(a) > 1 else a for a in args)
    return turned if turned != args else None


def seed_inputs(seeds: list[Args]) -> list[Args]:
    """What the canonical solution answers to decide whether order matters: each seed that has a
    list to reverse, then its reversal."""
    out: list[Args] = []
    for seed in seeds:
        turned = reversed_args(seed)
        if turned is not None:
            out += [seed, turned]
    return out


def order_free(seeds: list[Args], answers: dict[str, Any]) -> bool:
    """Whether the canonical answers (by `repr` of the arguments) say the task ignores order: at
    least MIN_SEEDS seeds answered both ways, and every one of them the same both ways."""
    both = 0
    for seed in seeds:
        turned = reversed_args(seed)
        if turned is None or repr(seed) not in answers or repr(turned) not in answers:
            continue
        if not near(answers[repr(seed)], answers[repr(turned)]):
            return False
        both += 1
    return both >= MIN_SEEDS


def partners(inputs: list[Args]) -> list[str | None]:
    """Each input's reversal as the answers program reads it (the source of a tuple), or None."""
    out: list[str | None] = []
    for args in inputs:
        turned = reversed_args(tuple(args))
        out.append(None if turned is None else repr(turned))
    return out
