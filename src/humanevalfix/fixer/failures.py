"""A failed test of the user's, read against the sources, and told as the eval tells a failure.

The driver (sandbox/child/fix_driver.py) reports each failure as data (usertests.FailedTest): the
traceback's frames in the user's file and in the tests, and a failed comparison's two sides as
pytest's own assertion rewriting saw them. Read here against the tests' source: the statement
that failed (what fixer.localize looks for calls in), and the failure in the eval's words, the
call with the expected and the actual value, or the exception with the user's line:

    Test failed (test_stats.py line 5, in test_mean):
    assert mean([1, 2, 3]) == 2
      call:     mean([1, 2, 3])
      expected: 2
      got:      1.5
"""

from __future__ import annotations

import ast

from humanevalfix import pyast
from humanevalfix.fixer.usertests import FailedTest, Frame, UserTests

STATEMENT_CAP = 300
MESSAGE_LINES = 4


def tests_name(tests: UserTests) -> str:
    """How the tests are named in a location: their file's name, or `test` for inline code (as the eval says)."""
    return tests.path.name if tests.path is not None else "test"


def parse_tests(tests: UserTests) -> ast.Module | None:
    try:
        return pyast.parse(tests.source)
    except SyntaxError:
        return None


def statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement at `line` (of several, the one spanning the fewest lines)."""
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if (
                best is None
                or (node.end_lineno or node.lineno) - node.lineno < (best.end_lineno or best.lineno) - best.lineno
            ):
                best = node
    return best


def evaluated_parts(stmt: ast.stmt) -> list[ast.AST]:
    """What runs on the statement's own line(s): a compound statement's header, not its body."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try)):
        return []
    return [stmt]


def anchor(failure: FailedTest) -> Frame | None:
    """The tests' frame that failed: the last one before the traceback enters the user's file."""
    found = None
    for frame in failure.frames:
        if frame.where == "file":
            break
        if frame.where == "tests":
            found = frame
    return found


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= STATEMENT_CAP else text[: STATEMENT_CAP - 3] + "..."


def _has_call(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _comparison(source: str, stmt: ast.stmt, compare: tuple[str, str, str]) -> list[str]:
    """The call, expected and actual value of a failed `assert a OP b`, as the eval shows them."""
    test = stmt.test if isinstance(stmt, ast.Assert) else None
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return []
    op, left_value, right_value = compare
    left, right = test.left, test.comparators[0]
    texts = [_one_line(ast.get_source_segment(source, side) or "?") for side in (left, right)]
    # The side that calls something is what the code produced; the other is what was expected.
    actual = 1 if _has_call(right) and not _has_call(left) else 0
    values = (left_value, right_value)
    lines = [f"  call:     {texts[actual]}"] if _has_call((left, right)[actual]) else []
    if op in ("==", "is"):
        return lines + [f"  expected: {values[1 - actual]}", f"  got:      {values[actual]}"]
    if op in ("!=", "is not"):
        return lines + [f"  expected: anything but {values[1 - actual]}", f"  got:      {values[actual]}"]
    shown = [f"  {text} = {value}" for text, value in zip(texts, values, strict=True) if text != value]
    return lines + shown + [f"  but `{left_value} {op} {right_value}` is false"]


def describe(failure: FailedTest, tests: UserTests, source: str, filename: str) -> str | None:
    """The failure in the eval's words; None when the report says too little (pytest's text is shown instead).

    `source`: the code that ran as the user's file `filename` (the lines the frames point to)."""
    at = anchor(failure)
    tree = parse_tests(tests)
    stmt = statement_at(tree, at.line) if at is not None and tree is not None else None
    if at is None or stmt is None:
        return None
    code = _one_line(ast.get_source_segment(tests.source, stmt) or "")
    inside = f", in {failure.function}" if failure.function else ""
    where = f"{tests_name(tests)} line {at.line}{inside}"
    in_file = [f for f in failure.frames if f.where == "file"]
    if failure.error == "AssertionError" and not in_file and isinstance(stmt, ast.Assert):
        lines = [f"Test failed ({where}):", code]
        detail = _comparison(tests.source, stmt, failure.compare) if failure.compare else []
        if not detail:  # pytest's explanation: `assert False` and where its values came from
            detail = ["  " + line for line in failure.message.splitlines()[:MESSAGE_LINES]]
        return "\n".join(lines + detail)
    first = failure.message.splitlines()[0] if failure.message else ""
    lines = [f"{failure.error}: {first}" if first else failure.error, f"  in the test: {code} ({where})"]
    if in_file:
        frame = in_file[-1]
        source_lines = source.splitlines()
        text = source_lines[frame.line - 1].strip() if 0 < frame.line <= len(source_lines) else ""
        lines.append(f"  raised in {frame.function} at {filename} line {frame.line}: {text}")
    return "\n".join(lines)
