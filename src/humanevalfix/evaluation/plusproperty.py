"""A test that checks a property of the answer instead of its value (`assert abs(poly(xs, x)) < 1e-4`).

For such a task many answers are right, so the pass@1+ check cannot compare a candidate's answer
with the canonical solution's: it checks the candidate's answer has the test's property instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from humanevalfix import pyast


@dataclass(frozen=True)
class Property:
    """`x = f(args...)` followed by asserts on x that are not `x == value`: the answer is one of many."""

    params: tuple[str | None, ...]  # the test's name for each argument (None: not used by the asserts)
    result: str
    asserts: tuple[str, ...]  # the asserted expressions, as source
    imports: tuple[str, ...]  # the test's import statements

    def as_literal(self) -> dict[str, object]:
        """The form the check programs take it in (a dict literal in their source)."""
        return {
            "params": list(self.params),
            "result": self.result,
            "asserts": list(self.asserts),
            "imports": list(self.imports),
        }


def _root_name(expr: ast.expr) -> str | None:
    """`xs` for `xs`, `copy.deepcopy(xs)`, `list(xs)`: the test's variable an argument comes from."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
        return _root_name(expr.args[0])
    return None


@lru_cache(maxsize=512)  # a pure function of two strings, asked for the same task by every candidate
def asserted_property(test: str, entry_point: str) -> Property | None:
    """The property a test asserts of the answer, where it asserts no value; None for a value test."""
    try:
        tree = pyast.parse(test)
    except SyntaxError:
        return None
    if not _assigns_a_call(tree, entry_point):
        return None  # most tests: asserts on calls, no `x = f(...)`; a walk of the statements says so
    names = {entry_point} | {
        f.args.args[0].arg
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name == "check" and f.args.args
    }
    imports = tuple(ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.FunctionDef):
            continue
        for node in ast.walk(scope):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            call = node.value
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in names
                and not call.keywords
            ):
                continue
            result = node.targets[0].id
            asserts = [
                a.test
                for a in ast.walk(scope)
                if isinstance(a, ast.Assert)
                and any(isinstance(n, ast.Name) and n.id == result for n in ast.walk(a.test))
            ]
            if not asserts or any(_is_equality_on(a, result) for a in asserts):
                return None
            return Property(
                tuple(_root_name(a) for a in call.args), result, tuple(ast.unparse(a) for a in asserts), imports
            )
    return None


def _statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Every statement in the tree: the statement lists only (bodies, handlers, cases), not the
    expressions, which are most of a test's nodes."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                todo.extend(block)


def _assigns_a_call(tree: ast.AST, entry_point: str) -> bool:
    """Whether some `x = f(...)` calls the entry point or a `check` function's first parameter:
    without one, asserted_property finds nothing."""
    statements = list(_statements(tree))
    names = {entry_point} | {
        s.args.args[0].arg for s in statements if isinstance(s, ast.FunctionDef) and s.name == "check" and s.args.args
    }
    return any(
        isinstance(s, ast.Assign)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Name)
        and s.value.func.id in names
        for s in statements
    )


def _is_equality_on(test: ast.expr, name: str) -> bool:
    return (
        isinstance(test, ast.Compare)
        and any(isinstance(op, (ast.Eq, ast.Is)) for op in test.ops)
        and any(isinstance(s, ast.Name) and s.id == name for s in [test.left, *test.comparators])
    )
