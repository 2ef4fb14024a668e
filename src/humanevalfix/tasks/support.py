"""The task's trusted helpers: the dataset's own code around the entry point, run by the judge.

A test may call more than the function under repair: HumanEvalFix's find_zero test checks the
answer with `poly`, decode_cyclic's encodes with `encode_cyclic`. Taken from the candidate, such
a helper is the candidate's to rig (`def poly(xs, x): return 0` passes any find_zero), so the
judge runs the dataset's copy instead (sandbox/child/judge.py): the canonical program when the
row has one, else the buggy program, less every top-level statement that binds the entry point.
The candidate's own helpers still serve its own code, in its own process.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from humanevalfix.tasks.task import Task


def support_code(task: Task) -> str:
    """What the judge runs before the test: `task`'s own code without its entry point."""
    return without(task.canonical_code or task.buggy_code, task.entry_point)


@lru_cache(maxsize=512)  # a pure function of two strings, asked for the same task many times by a run
def without(source: str, name: str) -> str:
    """`source` less its top-level statements that bind `name` (a def, a class, an assignment,
    an import, or a block that holds one); "" if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if _binds(node, name):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            drop.update(range(first, (node.end_lineno or node.lineno) + 1))
    return "".join(line for number, line in enumerate(lines, 1) if number not in drop)


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name  # a helper's own locals are not the module's
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub.name == name:
            return True
        if isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(sub, ast.alias) and (sub.asname or sub.name.split(".")[0]) == name:
            return True
        if isinstance(sub, ast.Global) and name in sub.names:
            return True
    return False
