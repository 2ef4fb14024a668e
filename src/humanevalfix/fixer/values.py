"""Runtime values of the failing tests: where a wrong value was made, not only where it was asserted.

The traced run of the original project (sandbox/child/fix_trace.py) keeps each project call of
the failing tests with its arguments, what it returned (or that it raised) and the call it was
made in, and how many failing and passing tests ran each function. The common test shape
`r = scaled_rect(Rect(1, 1), 50); assert r.width == 10` points at the caller; only the values show
that `scaled_rect` returned what `clamp(50, 0.1, 10)` returned. So a call whose returned value
shows up, unchanged, in the result of the call it was made in, and so on up to a call the test
made, made (part of) the value the test asserts: the deeper, the nearer the cause (`made`).

What the model is shown is the same chain, LDB-style (`chain_text`):

    test_scaled_rect: scaled_rect(Rect(width=1, height=1), 50) returned Rect(width=0.1, height=0.1)
      <- clamp(50, 0.1, 10) returned 0.1
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CHAIN_LINES = 8  # per failing test: the chain is a pointer, the source is shown beside it
NOT_A_VALUE = ("None", "True", "False", "")  # too common to say that a value flowed


@dataclass(frozen=True)
class Call:
    """One project call of a failing test; `parent`: the index of the call it was made in (-1: the test's)."""

    path: Path
    function: str  # qualified name
    parent: int
    args: str
    result: str | None  # its repr, cut (None: it raised)

    @property
    def raised(self) -> bool:
        return self.result is None

    def text(self) -> str:
        done = "raised" if self.result is None else f"returned {self.result}"
        return f"{self.function}({self.args}) {done}"


@dataclass(frozen=True)
class TestCalls:
    test: str | None  # the test function's name (None: a script)
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class Spectrum:
    path: Path
    function: str
    failing: int  # failing tests that ran it
    passing: int  # passing tests that ran it


@dataclass(frozen=True)
class Values:
    tests: tuple[TestCalls, ...] = ()
    spectrum: tuple[Spectrum, ...] = ()
    passing: int = 0  # passing tests traced


def parse_values(data: object) -> Values:
    """The header's `values`; anything malformed is left out."""
    if not isinstance(data, dict):
        return Values()
    try:
        fns = [(Path(str(path)), str(name)) for path, name in data.get("fns", [])]
        tests = tuple(
            TestCalls(
                str(test) if test is not None else None,
                tuple(
                    Call(*fns[int(fn)], int(parent), str(args), None if raised else str(result))
                    for fn, parent, args, result, raised in calls
                ),
            )
            for test, calls in data.get("tests", [])
        )
        spectrum = tuple(Spectrum(*fns[int(fn)], int(f), int(p)) for fn, f, p in data.get("spectrum", []))
        return Values(tests, spectrum, int(data.get("passing", 0)))
    except (TypeError, ValueError, IndexError):
        return Values()


def flows(value: str | None, into: str | None) -> bool:
    """Whether a returned repr shows, as a whole token, in another (`0.1` in `Rect(width=0.1, ...)`)."""
    if value is None or into is None or value in NOT_A_VALUE:
        return False
    return re.search(r"(?<![\w.])" + re.escape(value) + r"(?![\w.])", into) is not None


def _depth(calls: tuple[Call, ...], i: int) -> int | None:
    """How many calls below the test's own `calls[i]` was made, when its value flowed all the way up."""
    depth = 0
    while calls[i].parent >= 0:
        parent = calls[i].parent
        if parent >= len(calls) or not flows(calls[i].result, calls[parent].result):
            return None
        i, depth = parent, depth + 1
    return depth


@dataclass(frozen=True)
class Made:
    """A function that made part of a failing test's asserted value: the deepest call, and through whom."""

    path: Path
    function: str
    test: str | None
    depth: int  # 1: called by the function the test called
    call: Call
    top: Call  # the call the test made


def made(values: Values) -> list[Made]:
    """Per failing test, each function (once) whose returned value reached a call the test made,
    the deepest first. Not one the test also calls itself: it relies on its values (HumanEvalFix's
    `assert decode_cyclic(encode_cyclic(s)) == s`, where the caller passes the helper's value on
    when it should have changed it)."""
    out: list[Made] = []
    for test in values.tests:
        seen: dict[tuple[Path, str], Made] = {}
        direct = {(c.path, c.function) for c in test.calls if c.parent < 0}
        for i, call in enumerate(test.calls):
            depth = _depth(test.calls, i)
            if not depth or (call.path, call.function) in seen or (call.path, call.function) in direct:
                continue
            top = i
            while test.calls[top].parent >= 0:
                top = test.calls[top].parent
            seen[(call.path, call.function)] = Made(call.path, call.function, test.test, depth, call, test.calls[top])
        out += sorted(seen.values(), key=lambda m: -m.depth)
    return out


def only_failing(values: Values) -> list[Spectrum]:
    """With passing tests traced: the functions that ran in failing tests only."""
    return [s for s in values.spectrum if values.passing and s.failing and not s.passing]


def chain_text(values: Values, focus: set[str] | None = None) -> str:
    """The failing tests' project calls with their values, each under the call it was made in;
    `focus`: the functions to keep (with the calls above them), default all."""
    blocks: list[str] = []
    for test in values.tests:
        keep = set(range(len(test.calls)))
        if focus is not None:
            keep = set()
            for i, call in enumerate(test.calls):
                if call.function in focus:
                    while i >= 0 and i not in keep:
                        keep.add(i)
                        i = test.calls[i].parent
        lines: list[str] = []
        depth: dict[int, int] = {}
        for i, call in enumerate(test.calls):
            if i not in keep:
                continue
            depth[i] = depth.get(call.parent, -1) + 1
            line = "  " * depth[i] + ("<- " if depth[i] else "") + call.text()
            if line not in lines:
                lines.append(line)
        if lines:
            more = len(lines) - CHAIN_LINES
            name = test.test or "the failing script"
            shown = lines[:CHAIN_LINES] + ([f"  ... ({more} more calls)"] if more > 0 else [])
            blocks.append(f"{name}:\n" + "\n".join("  " + line for line in shown))
    return "\n".join(blocks)
