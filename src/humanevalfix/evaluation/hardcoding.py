"""The static half of pass@1+: branches of a candidate that look fitted to the test's asserts.

A branch that compares a parameter to a literal from the tests (one the buggy code does not have)
and returns another test literal is how a repair loop hard-codes answers (`if n == 3: return 180`).
It is a flag for a reader, not a verdict: evaluation.robustness decides `plus` by running code.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from humanevalfix import pyast
from humanevalfix.tasks.task import Task

TRIVIAL = frozenset(map(repr, (True, False, None, 0, 1, -1, 2, "", [], (), {}, 0.0, 1.0)))


def _literals(source: str) -> set[str]:
    """repr of every literal (constants and literal containers) in the source, trivial ones left out."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):  # what literal_eval would give, without its walk
            try:
                found.add(repr(node.value))
            except ValueError:  # an int past the digits limit of int -> str
                continue
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp)):
            try:
                found.add(repr(ast.literal_eval(node)))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return found - TRIVIAL


@lru_cache(maxsize=512)  # a pure function of two strings, asked for the same task by every candidate
def _test_literals(test: str, buggy_code: str) -> frozenset[str]:
    return frozenset(_literals(test) - _literals(buggy_code))


def hardcoding(code: str, task: Task) -> tuple[str, ...]:
    """Branches that compare a parameter to a test literal and return another, unseen in the buggy code."""
    try:
        tree = pyast.parse(code)
    except SyntaxError:
        return ()
    # Any literal but the trivial ones first: most candidates have no such branch, and then the
    # test's literals (a walk of the whole test) are never needed.
    branches = _literal_branches(tree)
    if not branches:
        return ()
    from_tests = _test_literals(task.test, task.buggy_code)
    lines = code.splitlines()
    found = [
        f"line {node.lineno}: {lines[node.lineno - 1].strip()[:160]}"
        for node, params, body in branches
        if _compares_param_to(node.test, params, from_tests)
        and any(_returns_literal(stmt, from_tests) for stmt in body)
    ]
    return tuple(dict.fromkeys(found))


def _literal_branches(tree: ast.AST) -> list[tuple[ast.If | ast.IfExp, set[str], list[ast.stmt]]]:
    """Each branch (with its function's parameters and its body) that compares a parameter to a
    literal and returns a literal, trivial ones left out."""
    found: list[tuple[ast.If | ast.IfExp, set[str], list[ast.stmt]]] = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in func.args.args + func.args.kwonlyargs + func.args.posonlyargs}
        for node in ast.walk(func):
            if isinstance(node, (ast.If, ast.IfExp)):
                body: list[ast.stmt] = node.body if isinstance(node, ast.If) else [ast.Return(value=node.body)]
                if _compares_param_to(node.test, params, None) and any(_returns_literal(stmt, None) for stmt in body):
                    found.append((node, params, body))
    return found


def _compares_param_to(test: ast.expr, params: set[str], literals: frozenset[str] | None) -> bool:
    """Whether `test` compares a parameter to one of `literals` (None: to any literal but a trivial one)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Eq, ast.Is, ast.In)) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Name) and s.id in params for s in sides) and any(
                _literal_in(s, literals) for s in sides
            ):
                return True
    return False


def _returns_literal(stmt: ast.stmt, literals: frozenset[str] | None) -> bool:
    return isinstance(stmt, ast.Return) and stmt.value is not None and _literal_in(stmt.value, literals)


def _literal_in(node: ast.expr, literals: frozenset[str] | None) -> bool:
    try:
        text = repr(ast.literal_eval(node))
        return text not in TRIVIAL if literals is None else text in literals
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
