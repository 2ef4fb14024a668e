"""Static checks on a candidate before it costs an execution, and a fingerprint for loop detection."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass

from humanevalfix import pyast


@dataclass(frozen=True)
class CodeCheck:
    ok: bool
    code: str  # the candidate as it will run (helpers from the buggy code added back)
    message: str = ""  # why it was refused, phrased for the model
    fingerprint: str = ""


def params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str]]:
    """A function's parameters by name and kind: what a fix must keep (annotations and defaults may change)."""
    a = fn.args
    out = [(p.arg, "posonly") for p in a.posonlyargs] + [(p.arg, "pos") for p in a.args]
    if a.vararg:
        out.append((a.vararg.arg, "*"))
    out += [(p.arg, "kwonly") for p in a.kwonlyargs]
    if a.kwarg:
        out.append((a.kwarg.arg, "**"))
    return out


def top_level_function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node  # the last definition wins, as at run time
    return found


def function_header(code: str, entry_point: str) -> str:
    """Everything before the entry point's body: imports, helpers, the `def` line(s).

    What the `rewrite` strategy starts the model from. Helpers defined before it are kept (the
    function may need them); code that does not parse, or has no such function, falls back to
    its `def` line, or to all of it.
    """
    lines = code.splitlines(keepends=True)
    try:
        tree = pyast.parse(code)
    except SyntaxError:
        tree = None
    node = top_level_function(tree, entry_point) if tree is not None else None
    if node is not None:
        first = node.body[0]
        if first.lineno > node.lineno:
            return "".join(lines[: first.lineno - 1])
        return "".join(lines[: node.lineno - 1]) + lines[node.lineno - 1][: first.col_offset].rstrip() + "\n"
    for i, line in enumerate(lines):
        if line.lstrip().startswith(f"def {entry_point}"):
            return "".join(lines[: i + 1])
    return code


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def fingerprint(code: str) -> str:
    """Same fingerprint for code that differs only in comments, formatting or docstrings."""
    try:
        normal = ast.unparse(_strip_docstrings(pyast.parse(code)))
    except SyntaxError:
        normal = "\n".join(line.rstrip() for line in code.strip().splitlines())
    return hashlib.sha256(normal.encode()).hexdigest()[:16]


_IMPORTS = (ast.Import, ast.ImportFrom)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_test_scaffolding(node: ast.stmt) -> bool:
    """Top-level test code a model pasted along with its fix: the harness brings its own tests."""
    if isinstance(node, ast.FunctionDef) and node.name == "check":
        return True
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return isinstance(func, ast.Name) and func.id in ("check", "print")
    if isinstance(node, ast.If):  # if __name__ == "__main__": ...
        test = node.test
        return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
    return False


def check_candidate(code: str, buggy_code: str, entry_point: str) -> CodeCheck:
    """Parse, require the entry point with the original parameters, restore missing helpers."""
    try:
        tree = pyast.parse(code)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        where = f" at line {exc.lineno}" + (f": {line}" if line else "")
        return CodeCheck(
            False,
            code,
            f"Your code does not parse: SyntaxError{where} ({exc.msg}). Send the complete corrected function.",
        )
    original = pyast.parse(buggy_code)
    want = top_level_function(original, entry_point)
    got = top_level_function(tree, entry_point)
    expected_sig = f"{entry_point}({ast.unparse(want.args)})" if want else entry_point
    if got is None:
        return CodeCheck(
            False,
            code,
            f"Your code does not define the function `{entry_point}` at top level. "
            f"Send the complete fixed function `def {expected_sig}:`.",
        )
    if want is not None and params(got) != params(want):
        return CodeCheck(
            False,
            code,
            f"`{entry_point}` must keep its original signature `{expected_sig}`; "
            f"you wrote `{entry_point}({ast.unparse(got.args)})`. Keep the parameters unchanged.",
        )
    body = [node for node in tree.body if not _is_test_scaffolding(node)]
    defined = {n.name for n in body if isinstance(n, _DEFINITIONS)}
    # Helpers and imports of the original that the model left out are put back in front. An import
    # the candidate already has (the same statement, compared by AST) is not added again, unless
    # helpers go back too (they may use it as they are defined): then the candidate's copy goes.
    helpers = [n for n in original.body if isinstance(n, _DEFINITIONS) and n.name not in defined]
    imports = {ast.dump(n) for n in original.body if isinstance(n, _IMPORTS)}
    if helpers:
        body = [n for n in body if not (isinstance(n, _IMPORTS) and ast.dump(n) in imports)]
    else:
        imports -= {ast.dump(n) for n in body if isinstance(n, _IMPORTS)}
    restored = [n for n in original.body if n in helpers or (isinstance(n, _IMPORTS) and ast.dump(n) in imports)]
    if restored or len(body) != len(tree.body):
        final = "\n\n".join(ast.unparse(n) for n in restored)
        kept = ast.Module(body=body, type_ignores=[])
        final = (final + "\n\n\n" if final else "") + ast.unparse(kept) + "\n"
    else:
        final = code if code.endswith("\n") else code + "\n"
    return CodeCheck(True, final, "", fingerprint(final))
