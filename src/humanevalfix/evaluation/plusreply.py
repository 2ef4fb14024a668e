"""The answer a right candidate sends to the pass@1+ check, written by the harness once per task.

The judge compares a candidate's batch answer with this text byte for byte before it decodes
anything (sandbox/child/judge.py, `Channel.batch_json`): equal bytes are equal trees, so equal
values, and the comparison that would follow could only agree. That holds only if the text
stands for exactly the canonical answers, so it is made only where each expected answer's
normal form names one value (None, bool, int, str, float, and lists and tuples of those; a set,
a dict or an object names none: its normal form keeps only reprs or a type name), and where that
value's normal form, by the check's own function, is the expected one exactly (compared as JSON
text, so that True, 1 and 1.0 differ). Otherwise there is no text and the judge compares as
before. A property test (the answer is any value with a property) never uses it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from humanevalfix.sandbox.child import plaindata


def expected_reply(expected: Sequence[Any], plain: Callable[[Any], Any]) -> str | None:
    """The batch answer frame (sandbox/child/candidate.py) of a candidate that returns, on every
    case, the value each expected normal form names; None where one names no value or `plain`
    (the check's normal form) does not give it back exactly."""
    trees = []
    for form in expected:
        value = _value_of(form)
        if value is _NONE or _strict(plain(value)) != _strict(form):
            return None
        try:
            trees.append(["v", plaindata.to_tree(value)])
        except plaindata.NotPlain:
            return None
    return plaindata.dumps({"results": trees})


def _strict(form: Any) -> str:
    """A normal form as text: equal texts are the same form, with the same types (True, 1, 1.0)."""
    return json.dumps(form, separators=(",", ":"))


_NONE = object()


def _value_of(form: Any) -> Any:
    """The value whose normal form (pluscases.COMMON's _plain) `form` is, for the forms that name
    one value; else _NONE."""
    if form is None or type(form) in (bool, int, str):
        return form
    if type(form) is not list or len(form) != 2:
        return _NONE
    tag, body = form
    if tag == "float" and type(body) is float:
        return body
    if tag == "bigint" and type(body) is str:
        try:
            return int(body, 16)
        except ValueError:
            return _NONE
    if tag in ("list", "tuple") and type(body) is list:
        items = [_value_of(x) for x in body]
        if any(x is _NONE for x in items):
            return _NONE
        return items if tag == "list" else tuple(items)
    return _NONE
