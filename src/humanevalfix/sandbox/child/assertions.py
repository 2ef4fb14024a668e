"""What the rewritten asserts call at run time, and the message of a failed one.

The test program's asserts are instrumented by rewriting.py; each calls the `Recorder` (under
the name rewriting.HELPER) with the values it looks at, and the recorder keeps them, so that a
failed assertion says which call was made, what it returned and what was expected
(`ExplainedAssertion`). The values need no checking: the test runs in the judge's process, where
whatever came from the candidate arrived as plain data (judge.py, plaindata.py).

Standard library only: runs inside the sandboxed child, loaded by file path (see runner.py).
"""

from __future__ import annotations

import reprlib
import types
from dataclasses import dataclass
from typing import Any

MESSAGE_CAP = 1500


class ExplainedAssertion(AssertionError):
    """A failed test assertion, with what was called, returned and expected."""


def _short_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxstring = 160
    r.maxother = 160
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = 24
    r.maxdict = 16
    r.maxlevel = 4
    r.maxlong = 120
    return r


@dataclass
class CallRecord:
    slot: int
    func: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    done: bool = False
    result: Any = None


class Recorder:
    """What the rewritten asserts call, as `@hefix.<method>`; one per test run."""

    def __init__(self, infos: list[Any]) -> None:
        """`infos`: rewriting.AssertInfo per assert of the test."""
        self.infos = infos
        self.current = -1
        self.values: dict[int, Any] = {}
        self.calls: list[CallRecord] = []
        self._repr = _short_repr()

    # -- called by the rewritten asserts
    def begin(self, index: int) -> None:
        self.current = index
        self.values = {}
        self.calls = []

    def val(self, slot: int, value: Any) -> Any:
        self.values[slot] = value
        return value

    def call(self, slot: int, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        record = CallRecord(slot, func, args, kwargs)
        self.calls.append(record)
        result = func(*args, **kwargs)
        record.done, record.result = True, result
        self.values[slot] = result
        return result

    def truth(self, value: Any) -> bool:
        return bool(value)

    def failure(self, message: Any) -> ExplainedAssertion:
        return ExplainedAssertion(self.explain(message))

    # -- reporting
    def r(self, value: Any) -> str:
        try:
            return self._repr.repr(value)
        except Exception as exc:  # a repr that raises: say so rather than fail the report
            return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"

    def call_text(self, record: CallRecord) -> str:
        name = getattr(record.func, "__name__", None)
        if not isinstance(name, str):
            info = self.infos[self.current] if self.current >= 0 else None
            name = info.text(record.slot).split("(", 1)[0] if info is not None else "?"
        parts = [self.r(a) for a in record.args] + [f"{k}={self.r(v)}" for k, v in record.kwargs.items()]
        return _cap(f"{name}({', '.join(parts)})", 400)

    def in_flight(self) -> CallRecord | None:
        """The innermost call of the current assertion that has not returned (it raised)."""
        for record in reversed(self.calls):
            if not record.done and not _is_builtin(record.func):
                return record
        return None

    def _shown(self, slot: int | None, fallback: str) -> str:
        return self.r(self.values[slot]) if slot is not None and slot in self.values else fallback

    def _record(self, slot: int | None) -> CallRecord | None:
        for record in reversed(self.calls):
            if record.slot == slot and record.done:
                return record
        return None

    def explain(self, message: Any = None) -> str:
        """The failed assertion: the call, what was expected, what came back."""
        info = self.infos[self.current]
        lines = [f"assert {_cap(info.source.segment(info.span), 300)}"]
        shape = info.shape
        actual: int | None = shape[-1] if shape[0] != "compare" else shape[2]
        if shape[0] == "compare" and shape[1] in ("==", "is", "!=", "is not"):
            _, op, left, right = shape
            # The side that calls something is what the code produced; the other is expected.
            right_calls = right is not None and info.has_call[right]
            left_calls = left is not None and info.has_call[left]
            actual, expected = (right, left) if right_calls and not left_calls else (left, right)
        top_call = self._record(actual) if actual in info.calls else None
        if top_call is not None and _is_builtin(top_call.func):
            top_call = None  # `abs(f(x) - y)`: the call worth showing is f(x), listed below
        if top_call is not None:
            lines.append(f"  call:     {self.call_text(top_call)}")
        else:
            shown = [rec for rec in self.calls if rec.done and not _is_builtin(rec.func)]
            for rec in shown[:3]:
                lines.append(f"  call:     {self.call_text(rec)} returned {self.r(rec.result)}")
        if shape[0] == "compare":
            _, op, left, right = shape
            assert info.sides is not None
            texts = {left: info.source.segment(info.sides[0]), right: info.source.segment(info.sides[1])}
            if op in ("==", "is", "!=", "is not"):
                expected = right if actual == left else left
                want = self._shown(expected, texts.get(expected, "?"))
                got = self._shown(actual, "?")
                if op in ("==", "is"):
                    lines += [f"  expected: {want}", f"  got:      {got}"]
                else:
                    lines += [f"  expected: anything but {want}", f"  got:      {got}"]
            else:
                left_shown, right_shown = (
                    self._shown(left, texts.get(left, "?")),
                    self._shown(right, texts.get(right, "?")),
                )
                for slot, shown_value in ((left, left_shown), (right, right_shown)):
                    if texts.get(slot) != shown_value and (top_call is None or slot != top_call.slot):
                        lines.append(f"  {_cap(texts.get(slot, '?'), 160)} = {shown_value}")
                if top_call is not None:
                    lines.append(f"  got:      {left_shown if actual == left else right_shown}")
                lines.append(f"  but `{left_shown} {op} {right_shown}` is false")
        elif shape[0] == "not":
            lines += ["  expected: a false value", f"  got:      {self._shown(shape[1], '?')}"]
        else:
            lines += ["  expected: a true value", f"  got:      {self._shown(shape[1], '?')}"]
        if message is not None:
            lines.append(f"  assertion message: {_cap(message, 200) if isinstance(message, str) else self.r(message)}")
        return _cap("\n".join(lines), MESSAGE_CAP)


def _is_builtin(func: Any) -> bool:
    return isinstance(func, (types.BuiltinFunctionType, types.BuiltinMethodType, type)) or type(func).__name__ in (
        "method_descriptor",
        "wrapper_descriptor",
        "method-wrapper",
    )


def _cap(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."
