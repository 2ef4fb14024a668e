"""Assert rewriting for the test program: each `assert` instrumented before it runs.

As pytest does, each `assert` of the test is rewritten with `ast`, so that a failure can say
which call was made, what it returned and what was expected. Every value an assertion looks at
(call results, their arguments, names, operands) goes through the recorder, `@hefix.val(slot, x)`
and `@hefix.call(slot, f, args, kwargs)`, which keeps it for the message (assertions.py).
`AssertInfo` records, per assert, where each slot's expression is in the test's text, to quote it
only when the assert fails.

Standard library only: runs inside the sandboxed child, loaded by file path (see runner.py).
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass, field
from typing import Any, cast

HELPER = "@hefix"  # not an identifier: only the rewritten asserts can name it
TEST_FILE = "<test>"

Span = tuple[int, int, int, int]  # lineno, col_offset, end_lineno, end_col_offset (UTF-8 bytes)


class Source:
    """The test's text, to quote expressions lazily (only when an assertion fails)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)

    def segment(self, span: Span | None) -> str:
        if span is None:
            return "?"
        line, col, end_line, end_col = span
        if not (0 < line <= end_line <= len(self.lines)):
            return "?"
        chunk = [ln.encode("utf-8") for ln in self.lines[line - 1 : end_line]]
        if len(chunk) == 1:
            text = chunk[0][col:end_col]
        else:
            text = chunk[0][col:] + b"".join(chunk[1:-1]) + chunk[-1][:end_col]
        return " ".join(text.decode("utf-8", errors="replace").split())


@dataclass
class AssertInfo:
    source: Source
    span: Span  # the assert's expression
    shape: tuple[Any, ...]  # ("compare", op, left_slot, right_slot) | ("not", slot) | ("truth", slot)
    spans: list[Span] = field(default_factory=list)  # slot -> where the expression is
    has_call: list[bool] = field(default_factory=list)  # slot -> a call is part of it
    calls: set[int] = field(default_factory=set)  # slots that are calls
    sides: tuple[Span, Span] | None = None  # a comparison's left and right operands

    def text(self, slot: int | None) -> str:
        return self.source.segment(self.spans[slot]) if slot is not None and slot < len(self.spans) else "?"


OPS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


def _span(node: ast.expr) -> Span:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)


def _at(new: Any, node: ast.expr | ast.stmt) -> Any:
    """`new` (a node made here) at `node`'s place, as ast.fix_missing_locations would put it,
    without that function's walk through the whole test."""
    new.lineno, new.col_offset = node.lineno, node.col_offset
    new.end_lineno, new.end_col_offset = node.end_lineno, node.end_col_offset
    return new


def _helper(attr: str, node: ast.expr | ast.stmt, *args: ast.expr) -> ast.Call:
    name = _at(ast.Name(id=HELPER, ctx=ast.Load()), node)
    return _at(
        ast.Call(func=_at(ast.Attribute(value=name, attr=attr, ctx=ast.Load()), node), args=list(args), keywords=[]),
        node,
    )


class _Instrument(ast.NodeTransformer):
    """Wraps each value an assertion looks at: `@hefix.val(slot, x)`, `@hefix.call(slot, f, args, kwargs)`."""

    # Never wrapped: constants need no check, lambdas run later (maybe elsewhere), and slices or
    # starred items are syntax, not values.
    KEEP = (ast.Constant, ast.Lambda, ast.Slice, ast.Starred, ast.JoinedStr, ast.FormattedValue)

    def __init__(self, info: AssertInfo) -> None:
        self.info = info
        self.calls_seen = 0

    def _slot(self, node: ast.expr, has_call: bool) -> int:
        self.info.spans.append(_span(node))
        self.info.has_call.append(has_call)
        return len(self.info.spans) - 1

    def top(self, node: ast.expr) -> tuple[ast.expr, int | None]:
        """The instrumented `node` and the slot that records its value (None: not recorded)."""
        new = self.visit(node)
        if isinstance(new, ast.Call) and isinstance(new.func, ast.Attribute) and isinstance(new.func.value, ast.Name):
            if new.func.value.id == HELPER and new.args and isinstance(new.args[0], ast.Constant):
                return new, cast(int, new.args[0].value)  # the slot: an int made by _slot
        return new, None

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Call):
            return self.visit_Call(node)
        if isinstance(node, ast.Starred):
            node.value = self.visit(node.value)
            return node
        if isinstance(node, ast.Lambda):
            return node
        if not isinstance(node, ast.expr) or isinstance(node, self.KEEP):
            return self.generic_visit(node)
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            return self.generic_visit(node)
        if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts):
            return self.generic_visit(node)  # `x[1:2, 3]`: the tuple is subscript syntax
        before = self.calls_seen
        new = cast(ast.expr, self.generic_visit(node))  # generic_visit returns the node it is given
        slot = self._slot(node, self.calls_seen > before)
        return _helper("val", node, _at(ast.Constant(slot), node), new)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.calls_seen += 1
        slot = self._slot(node, True)
        self.info.calls.add(slot)
        func = node.func
        if isinstance(func, ast.Attribute):
            # the object a method is looked up on is a value too (generic_visit returns `func` itself)
            func = cast(ast.Attribute, self.generic_visit(func))
        elif not isinstance(func, ast.Name):
            func = self.visit(func)
        args = [self.visit(a) for a in node.args]
        keys: list[ast.expr | None] = []
        values: list[ast.expr] = []
        for kw in node.keywords:
            keys.append(_at(ast.Constant(kw.arg), node) if kw.arg is not None else None)
            values.append(self.visit(kw.value))
        packed_args = _at(ast.Tuple(elts=args, ctx=ast.Load()), node)
        packed_kwargs = _at(ast.Dict(keys=keys, values=values), node)
        return _helper("call", node, _at(ast.Constant(slot), node), func, packed_args, packed_kwargs)


class _Rewriter:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.infos: list[AssertInfo] = []

    def body(self, node: ast.AST) -> None:
        """Each statement list under `node` with its asserts rewritten, in source order.

        An assert is a statement, and statements live only in statement lists (bodies, handlers,
        match cases), so expressions are never walked: a test is mostly expressions.
        """
        for name, value in ast.iter_fields(node):
            if not isinstance(value, list):
                continue
            out: list[Any] = []
            changed = False
            for item in value:
                if isinstance(item, ast.Assert):
                    out.extend(self.assertion(item))
                    changed = True
                    continue
                if isinstance(item, (ast.stmt, ast.excepthandler, ast.match_case)):
                    self.body(item)
                out.append(item)
            if changed:
                setattr(node, name, out)

    def assertion(self, node: ast.Assert) -> list[ast.stmt]:
        index = len(self.infos)
        test = node.test
        info = AssertInfo(self.source, _span(test), ("truth", None))
        self.infos.append(info)
        inst = _Instrument(info)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            info.sides = (_span(test.left), _span(test.comparators[0]))
            left, left_slot = inst.top(test.left)
            right, right_slot = inst.top(test.comparators[0])
            info.shape = ("compare", OPS.get(type(test.ops[0]), "?"), left_slot, right_slot)
            new_test: ast.expr = ast.copy_location(ast.Compare(left=left, ops=test.ops, comparators=[right]), test)
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            operand, slot = inst.top(test.operand)
            info.shape = ("not", slot)
            new_test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=operand), test)
        else:
            new_test, slot = inst.top(test)
            info.shape = ("truth", slot)
        begin = ast.Expr(value=_helper("begin", node, _at(ast.Constant(index), node)))
        msg = node.msg if node.msg is not None else _at(ast.Constant(None), node)
        fail = _at(ast.Raise(exc=_helper("failure", node, msg), cause=None), node)
        check = ast.If(
            test=_at(ast.UnaryOp(op=ast.Not(), operand=_helper("truth", node, new_test)), node), body=[fail], orelse=[]
        )
        return [_at(begin, node), _at(check, node)]


def rewrite(test_source: str, tree: ast.Module | None = None) -> tuple[types.CodeType, list[AssertInfo]]:
    """Compile the test with its asserts instrumented. Raises SyntaxError like `compile`.
    `tree`: the source already parsed (it is rewritten in place)."""
    tree = tree if tree is not None else ast.parse(test_source, TEST_FILE)
    rewriter = _Rewriter(Source(test_source))
    rewriter.body(tree)
    return compile(tree, TEST_FILE, "exec", dont_inherit=True), rewriter.infos  # as the candidate's (execution.py)
