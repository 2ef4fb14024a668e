"""The restricted executor's policy (sandbox/child/restricted.py) in-process: what it refuses, at
compile time or when the code runs, and that the constructs correct solutions need still run.

The in-process counterparts of the restricted-mode cases of tests/test_sandbox_conformance.py and
tests/test_judge_probes.py (and of the restricted rows of tests/test_hostile.py's attacks), which
run the policy inside a sandbox child: here the candidate is compiled with `compile_candidate`
and executed in `candidate_globals` over the real prelude, in this process (the policy restricts
the language; nothing it allows touches the process).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest

from humanevalfix.sandbox.child import execution, restricted

NOT_ALLOWED = restricted.NOT_ALLOWED


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"humanevalfix.sandbox.child.{name}")


@pytest.fixture(scope="module")
def prelude() -> dict[str, Any]:
    return execution.prepare(_load, "restricted").namespace


def run(prelude: dict[str, Any], code: str) -> dict[str, Any]:
    """The candidate's module code, compiled and run as the restricted executor runs it."""
    namespace = restricted.candidate_globals(prelude, "__candidate__")
    exec(restricted.compile_candidate(code, "<candidate>"), namespace)
    return namespace


# --- what correct solutions need --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("out = sum(range(5000))", 12497500),  # the real range: more than RestrictedPython's 1000
        ("out = list('abc') + [tuple(), list()]", ["a", "b", "c", (), []]),
        ("c = [0, 0]\nc[1] += 5\nc[0] -= 2\nout = c", [-2, 5]),  # item augmented assignment (Python/69)
        ("d = {'k': 'a'}\nd['k'] *= 3\nout = d", {"k": "aaa"}),
        ("n = 1\nn <<= 4\nout = n", 16),
        ("out = eval('1 + 2 * 3')", 7),  # eval of arithmetic (Python/160)
        ("import math\nfrom math import sqrt\nout = sqrt(16) + math.floor(1.5)", 5.0),
        ("import sys\nout = sys.maxsize > 0", True),
        ("import collections.abc\nfrom numpy import linalg\nout = 1", 1),
        ("a, b = 1, 2\nout = [i * j for i, j in [(a, b), (3, 4)]]", [2, 12]),
        ("def g(*a, **k):\n    return a, k\nout = g(*[1], **{'z': 2})", ((1,), {"z": 2})),
        ("out = max([3, 1, 2]) + min(1, 2) + sorted([2, 1])[0] + next(iter([4]))", 9),
        ("print('hi')\nout = printed", "hi\n"),
        ("import numpy as np\nout = int(np.sum(np.array([1, 2])))", 3),
        # The candidate's own classes: attribute writes, augmented ones too (linked lists, counters)
        (
            "class Node:\n    def __init__(self, val, next=None):\n        self.val = val\n        self.next = next\n"
            "a = Node(1)\na.next = Node(2)\na.next.val += 5\na.val, a.next.next = 0, a\n"
            "out = (a.val, a.next.val, a.next.next is a)",
            (0, 7, True),
        ),
        (
            "class C:\n    def __init__(self):\n        self.n = 0\n    def inc(self):\n        self.n += 1\n"
            "c = C()\nc.inc()\nc.inc()\nout = c.n",
            2,
        ),
    ],
)
def test_what_correct_solutions_need_runs(prelude: dict[str, Any], code: str, expected: Any) -> None:
    assert run(prelude, code)["out"] == expected


def test_the_namespace_holds_the_prelude_and_the_guards_but_not_the_real_builtins(prelude: dict[str, Any]) -> None:
    namespace = restricted.candidate_globals(prelude, "__candidate__")
    assert namespace["__name__"] == "__candidate__" and namespace["math"] is prelude["math"]
    table = namespace["__builtins__"]
    assert table["__import__"] is restricted.guarded_import and table["getattr"] is restricted.guarded_getattr
    assert "open" not in table and "exec" not in table and "compile" not in table
    assert all(name in table for name in restricted.WIDENED)
    assert namespace["_inplacevar_"]("+=", [1], [2]) == [1, 2]
    assert namespace["_apply_"](max, 1, 2) == 2


# --- refused when the code is compiled ------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("x = _secret", '"_secret" is an invalid variable name because it starts with "_"'),
        ("x = (1).__class__", '"__class__" is an invalid attribute name because it starts with "_"'),
        ("def f():\n    return [0]\nf().n += 1\n", "Augmented assignment of attributes is not allowed"),
        ("def f():\n    return [0]\nf()[0] += 1\n", "Augmented assignment of object items and slices is not allowed"),
        ("def f(:\n", "SyntaxError: invalid syntax"),
    ],
)
def test_refused_at_compile_time(code: str, why: str) -> None:
    with pytest.raises(restricted.NotAllowed) as caught:
        restricted.compile_candidate(code, "<candidate>")
    assert str(caught.value).startswith(f"{NOT_ALLOWED}: Line ")
    assert why in str(caught.value)


def test_only_the_first_complaint_is_spelled_out() -> None:
    with pytest.raises(restricted.NotAllowed, match=r'"_a" is an invalid variable name .* \(and 1 more\)$'):
        restricted.compile_candidate("x = _a\ny = _b\n", "<candidate>")


# --- refused when the code runs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import os", "import of module 'os' (allowed: collections, copy, dataclasses, datetime, functools, hashlib,"),
        ("from . import x", "relative imports"),
        ("import sys\nout = sys.modules", "sys.modules (allowed: byteorder,"),
        ("from sys import modules", "sys.modules (allowed: byteorder,"),
        ("import numpy\nnumpy.save('x', 1)", "numpy.save"),
        ("import numpy as np\nnp.array([1]).tofile('x')", "the method `tofile` (it writes files)"),
        ("import typing\ntyping.get_type_hints(len)", "typing.get_type_hints"),
        ("out = 'a{}'.format(1)", "Using the format*() methods of `str` is not safe"),
        ("import re\nout = re.enum", "module 'enum' (reached as re.enum)"),
        ("out = getattr([], '__class__')", 'the attribute "__class__" (names starting with "_")'),
        ("out = eval('1', {})", "eval with a namespace argument"),
        ("out = eval(1)", "eval of anything but a string"),
        ("out = eval('().__class__')", 'in eval: Line 1: "__class__" is an invalid attribute name'),
    ],
)
def test_refused_when_it_runs(prelude: dict[str, Any], code: str, why: str) -> None:
    with pytest.raises(restricted.NotAllowed) as caught:
        run(prelude, code)
    assert str(caught.value).startswith(f"{NOT_ALLOWED}: {why}")


@pytest.mark.parametrize(
    "code",
    [
        "import math\nmath.pi = 3",  # a module of the prelude, shared with the judge's other runs
        "def f():\n    pass\nf.x = 1",  # a function (its type is not the candidate's)
        "class A:\n    pass\nA.x = 1",  # a class object: its type is `type`
        "import collections\nd = collections.OrderedDict()\nd.x = 1",  # a library's class
    ],
)
def test_attribute_writes_outside_the_candidates_own_classes_are_refused(prelude: dict[str, Any], code: str) -> None:
    with pytest.raises(TypeError, match="attribute-less object"):
        run(prelude, code)


def test_a_withheld_builtin_is_a_name_error_the_policy_can_name(prelude: dict[str, Any]) -> None:
    with pytest.raises(NameError, match="'open' is not defined"):
        run(prelude, "out = open('x')")
    assert restricted.refused_builtin("open") and restricted.refused_builtin("exec")
    assert not restricted.refused_builtin("sum")  # widened
    assert not restricted.refused_builtin("eval")  # replaced by the restricted eval
    assert not restricted.refused_builtin("no_such_builtin")  # a plain NameError, not a refusal


def test_module_attributes_are_guarded_on_modules_outside_the_allowed_set() -> None:
    import os

    with pytest.raises(restricted.NotAllowed, match="module 'os'"):
        restricted.guarded_getattr(os, "getcwd")
    assert restricted.guarded_getattr([], "missing", 7) == 7  # a default is honoured for public names
    assert restricted.guarded_getattr("ab", "upper")() == "AB"


def test_inplace_operators_are_complete() -> None:
    assert set(restricted.INPLACE_NAMES.values()) == set(restricted.INPLACE)
    assert restricted.inplacevar("//=", 7, 2) == 3 and restricted.inplacevar("^=", 6, 3) == 5


# --- the classes of a prompt (issue 50): special methods, slots, annotations, dataclasses ----------


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "class P:\n    __slots__ = ('x', 'y')\n    def __init__(self, x, y):\n"
            "        self.x = x\n        self.y = y\np = P(1, 2)\np.x += 5\nout = (p.x, p.y)",
            (6, 2),
        ),
        (
            "class I:\n    def __init__(self, n):\n        self.n = n\n    def __repr__(self):\n"
            "        return 'I(%r)' % (self.n,)\n    def __hash__(self):\n        return hash(self.n)\n"
            "    def __len__(self):\n        return self.n\nout = (repr(I(3)), len(I(4)), hash(I(5)) == hash(5))",
            ("I(3)", 4, True),
        ),
        ("x: int = 3\ny: list\nout = x", 3),
        (
            "from dataclasses import dataclass, field\n@dataclass\nclass E:\n    src: str\n    dst: str\n"
            "    weight: int = 1\n    tags: list = field(default_factory=list)\n"
            "e = E('a', 'b')\ne.tags.append('t')\nout = (e.src, e.weight, e.tags, e == E('a', 'b', 1, ['t']), repr(e))",
            ("a", 1, ["t"], True, "E(src='a', dst='b', weight=1, tags=['t'])"),
        ),
        ("import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass F:\n    a: int\nout = F(2).a", 2),
    ],
)
def test_the_classes_a_prompt_defines_run(prelude: dict[str, Any], code: str, expected: Any) -> None:
    assert run(prelude, code)["out"] == expected


@pytest.mark.parametrize(
    ("code", "why"),
    [
        # The hooks that change how the guards see an object, and the names the guards read.
        ("class A:\n    def __getattr__(self, n):\n        return 1\n", '"__getattr__" is an invalid variable name'),
        ("class A:\n    def __setattr__(self, n, v):\n        pass\n", '"__setattr__" is an invalid variable name'),
        ("class A:\n    __module__ = 'x'\n", '"__module__" is an invalid variable name'),
        ("def __repr__():\n    return 1\n", '"__repr__" is an invalid variable name'),  # not at module level
        ("x = 1\nx.__repr__()\n", '"__repr__" is an invalid attribute name'),  # reading one stays refused
        ("class A:\n    pass\na = A()\na.b: int = 1\n", "annotated assignment to anything but a name"),
        ("__annotations__ = {}\n", '"__annotations__" is an invalid variable name'),
    ],
)
def test_what_a_class_may_not_define(code: str, why: str) -> None:
    with pytest.raises(restricted.NotAllowed) as caught:
        restricted.compile_candidate(code, "<candidate>")
    assert why in str(caught.value)


def test_a_dataclass_writes_no_name_into_its_source_that_a_class_body_could_not(prelude: dict[str, Any]) -> None:
    """The methods dataclass makes are source text with the field names in it, run unrestricted:
    a field name that is not an identifier (reachable only by writing a class's annotations from
    outside the policy) is refused, and so is make_dataclass, whose namespace reaches a class's dict."""

    class Crafted:
        pass

    Crafted.__annotations__ = {"a=__import__('os').system('true')": int}
    with pytest.raises(restricted.NotAllowed, match="a dataclass field named"):
        restricted.safe_dataclass(Crafted)
    with pytest.raises(restricted.NotAllowed, match=r"dataclasses.make_dataclass \(allowed: FrozenInstanceError"):
        run(prelude, "from dataclasses import make_dataclass\n")
    with pytest.raises(restricted.NotAllowed, match='"_FIELDS" is an invalid attribute name'):
        run(prelude, "import dataclasses\nx = dataclasses._FIELDS\n")
