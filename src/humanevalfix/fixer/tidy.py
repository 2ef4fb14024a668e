"""A spliced candidate cut down to the fix: what the model changed by accident goes back.

The model answers with a whole definition, often in its own style: four-space indentation in a
file that uses tabs, its docstring shortened or gone, the comments left out, a blank line with
spaces in it, the benchmark's prelude (`from typing import *`) on top. None of that is the fix,
and all of it would land in the user's diff. So, after splicing (fixer.scope):

- new imports are kept only where the changed code uses a name they bind (a star import from the
  standard library becomes the names it provides that the code uses; the rest is dropped);
- the definition takes the file's indentation unit (tabs, or its width of spaces);
- a function's docstring is the original's: the tests cannot check a docstring, the fix is code;
- full-line comments the candidate left out come back where they were;
- hunks that change only whitespace go back to the original's lines, trailing spaces are cut,
  and the file's own (missing) final newline is kept.

Every step but the docstring's keeps the candidate's syntax tree exactly (checked with
`ast.dump`): a step that would change what runs (a re-indented `return` that leaves a loop, a
comment inside a string) is not taken. `one_line_versions` does change what runs: once a fix has
passed, fixer.session runs the tests on each of its one-line versions, and keeps the first that
passes.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import importlib
import sys
from collections.abc import Sequence

from humanevalfix import pyast

_BUILTINS = frozenset(dir(builtins))


def _dump(text: str) -> str | None:
    try:
        return ast.dump(pyast.parse(text))
    except (SyntaxError, ValueError):
        return None


def _bound_at_top(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names if a.name != "*")
        else:
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def free_names(nodes: list[ast.stmt], defined: set[str]) -> set[str]:
    """Names the definitions load that nothing of theirs, the module (`defined`) or builtins bind."""
    loaded: set[str] = set()
    local: set[str] = set()
    for node in (n for root in nodes for n in ast.walk(root)):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else local).add(node.id)
        elif isinstance(node, ast.arg):
            local.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            local.update((a.asname or a.name).partition(".")[0] for a in node.names)
    return loaded - local - defined - _BUILTINS


def _star_names(module: str, wanted: set[str]) -> list[str]:
    """What `from module import *` gives of `wanted`; only the standard library is imported here."""
    if module.partition(".")[0] not in sys.stdlib_module_names:
        return []
    try:
        found = importlib.import_module(module)
    except Exception:  # an odd stdlib module that does not import here: nothing from it
        return []
    public = getattr(found, "__all__", None) or [n for n in dir(found) if not n.startswith("_")]
    return sorted(wanted & set(public))


def useful_imports(imports: Sequence[ast.stmt], changed: list[ast.stmt], original_tree: ast.Module) -> list[str]:
    """The new import lines worth adding: those binding a name the changed code needs."""
    defined = _bound_at_top(original_tree) | {getattr(n, "name", "") for n in changed}
    needed = free_names(changed, defined)
    out: list[str] = []
    for node in imports:
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            names = _star_names(node.module or "", needed) if node.level == 0 else []
            if names:
                out.append(f"from {node.module} import {', '.join(names)}\n")
                needed -= set(names)
            continue
        aliases = node.names if isinstance(node, (ast.Import, ast.ImportFrom)) else []
        kept = [a for a in aliases if (a.asname or a.name).partition(".")[0] in needed]
        if kept:
            needed -= {(a.asname or a.name).partition(".")[0] for a in kept}
            what = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
            if isinstance(node, ast.Import):
                out.append(f"import {what}\n")
            elif isinstance(node, ast.ImportFrom):  # the only other statement with names (`kept`)
                out.append(f"from {'.' * node.level}{node.module or ''} import {what}\n")
    return out


def indent_unit(source: str) -> str | None:
    """The file's indentation step: a tab, or its smallest indentation in spaces; None if none."""
    widths: list[int] = []
    for line in source.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        lead = line[: len(line) - len(line.lstrip())]
        if lead.startswith("\t"):
            return "\t"
        if lead:
            widths.append(len(lead))
    return " " * min(widths) if widths else None


def restyle(text: str, unit: str | None, base: str = "") -> str:
    """`text` (a definition already at `base` indentation) with its steps below `base` in `unit`."""
    mine = indent_unit(
        "".join(line[len(base) :] if line.startswith(base) else line for line in text.splitlines(keepends=True))
    )
    if unit is None or mine is None or mine == unit or "\t" in mine:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        rest = line[len(base) :] if line.startswith(base) else None
        if rest is None or not rest.strip():
            out.append(line)
            continue
        lead = len(rest) - len(rest.lstrip(" "))
        levels, extra = divmod(lead, len(mine))
        out.append(base + unit * levels + " " * extra + rest.lstrip(" "))
    return "".join(out)


def _docstring_span(fn: ast.AST) -> tuple[int, int] | None:
    body = getattr(fn, "body", [])
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first.lineno - 1, first.end_lineno or first.lineno
    return None


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            out.update(
                {
                    f"{node.name}.{m.name}": m
                    for m in node.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                }
            )
    return out


def keep_docstrings(original: str, new: str) -> str:
    """Each function's docstring as the original has it, where the candidate changed or dropped it."""
    try:
        old_fns, new_tree = _functions(pyast.parse(original)), pyast.parse(new)
    except SyntaxError:
        return new
    old_lines, lines = original.splitlines(keepends=True), new.splitlines(keepends=True)
    edits: list[tuple[int, int, list[str]]] = []
    for name, fn in _functions(new_tree).items():
        was = old_fns.get(name)
        span = _docstring_span(was) if was is not None else None
        mine = _docstring_span(fn)
        if was is None or not fn.body:
            continue
        if span is None:  # the original has none: a docstring the candidate wrote is not the fix
            if mine is not None and len(fn.body) > 1:
                edits.append((mine[0], mine[1], []))
            continue
        text = old_lines[span[0] : span[1]]
        if mine is not None:
            if lines[mine[0] : mine[1]] != text:
                edits.append((mine[0], mine[1], text))
            continue
        first = fn.body[0]
        if first.lineno == fn.lineno:  # a one-line `def f(): return x`
            continue
        indent = lines[first.lineno - 1][: first.col_offset]
        old_indent = old_lines[was.body[0].lineno - 1][: was.body[0].col_offset]
        edits.append(
            (
                first.lineno - 1,
                first.lineno - 1,
                [indent + t[len(old_indent) :] if t.startswith(old_indent) else t for t in text],
            )
        )
    for start, end, text in sorted(edits, reverse=True):
        lines[start:end] = text
    out = "".join(lines)
    return out if _dump(out) is not None else new


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _inside_block(lines: list[str], k: int) -> bool:
    before = next((s for s in reversed(lines[:k]) if s.strip()), "")
    after = next((s for s in lines[k + 1 :] if s.strip()), "")
    return before[:1] in (" ", "\t") and after[:1] in (" ", "\t")


def _with_comments(old: list[str], mine: list[str]) -> list[str]:
    """`mine` with the full-line comments of `old` it lacks, each before the line most like the one
    it stood before in `old` (after the one most like the line before it, at the end)."""
    out = list(mine)
    for k, line in enumerate(old):
        if not _is_comment(line) or line in mine:
            continue
        following = next((s for s in old[k + 1 :] if s.strip() and not _is_comment(s)), None)
        preceding = next((s for s in reversed(old[:k]) if s.strip() and not _is_comment(s)), None)
        at = len(out)
        for anchor, shift in ((following, 0), (preceding, 1)):
            close = difflib.get_close_matches(anchor, out, n=1, cutoff=0.5) if anchor else []
            if close:
                at = out.index(close[0]) + shift
                break
        out.insert(at, line)
    return out


def _same_tree(candidate: str, reference: str | None) -> bool:
    return reference is not None and _dump(candidate) == reference


def _revert_hunks(original: str, new: str) -> str:
    """Whitespace-only hunks back to the original; full-line comments the candidate dropped come back."""
    old_lines, lines = original.splitlines(keepends=True), new.splitlines(keepends=True)
    reference = _dump(new)
    ops = difflib.SequenceMatcher(None, old_lines, lines, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in reversed(ops):
        if tag == "equal":
            continue
        old, mine = old_lines[i1:i2], lines[j1:j2]
        if [s.strip() for s in old if s.strip()] == [s.strip() for s in mine if s.strip()]:
            trial = lines[:j1] + old + lines[j2:]
        else:
            if not any(not s.strip() for s in old):  # blank lines the candidate put inside a block
                mine = [s for k, s in enumerate(mine) if s.strip() or not _inside_block(lines, j1 + k)]
            mine = _with_comments(old, mine)
            if mine == lines[j1:j2]:
                continue
            trial = lines[:j1] + mine + lines[j2:]
        if _same_tree("".join(trial), reference):
            lines = trial
    return "".join(lines)


def _cut_trailing_spaces(original: str, new: str) -> str:
    have = set(original.splitlines(keepends=True))
    lines = [
        s if s in have else s.rstrip(" \t\n") + ("\n" if s.endswith("\n") else "")
        for s in new.splitlines(keepends=True)
    ]
    out = "".join(lines)
    return out if _same_tree(out, _dump(new)) else new


def minimal(original: str, new: str) -> str:
    """`new` (a spliced candidate) with only what changes the code left different from `original`."""
    if new == original:
        return new
    new = keep_docstrings(original, new)
    new = _cut_trailing_spaces(original, new)
    new = _revert_hunks(original, new)
    if not original.endswith("\n") and new.endswith("\n") and not new.endswith("\n\n"):
        new = new[:-1]
    return new


ONE_LINE_TRIALS = 6  # test runs at most, after a fix, to find a one-line version of it


def one_line_versions(original: str, new: str) -> list[str]:
    """The original with one line of `new`'s in place of the original line it most resembles (same
    indentation), most alike first: when one of them passes the tests, the bug was that line and
    the rest of a rewritten body is not the fix. Empty when `new` changes one line or fewer."""
    old, mine = original.splitlines(keepends=True), new.splitlines(keepends=True)
    chunks = [op for op in difflib.SequenceMatcher(None, old, mine, autojunk=False).get_opcodes() if op[0] != "equal"]
    if sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in chunks) <= 1:
        return []
    pairs: list[tuple[float, int, str]] = []
    for tag, i1, i2, j1, j2 in chunks:
        for i in range(i1, i2) if tag == "replace" else ():
            for line in mine[j1:j2]:
                indent = len(line) - len(line.lstrip())
                if indent != len(old[i]) - len(old[i].lstrip()) or line.strip() == old[i].strip():
                    continue
                ratio = difflib.SequenceMatcher(None, old[i].strip(), line.strip()).ratio()
                if ratio >= 0.5:
                    pairs.append((ratio, i, line))
    out: list[str] = []
    for _, i, line in sorted(pairs, key=lambda p: -p[0]):
        trial = "".join(old[:i] + [line] + old[i + 1 :])
        if trial not in out and _dump(trial) is not None:
            out.append(trial)
    return out[:ONE_LINE_TRIALS]
