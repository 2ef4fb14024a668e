"""What a candidate may change in the user's file, and splicing it in.

A candidate from the model is spliced into the user's file: only the definitions it changes are
replaced, so comments, formatting and everything else stay byte-for-byte and the diff is the fix.
Test code the model pasted along with its fix is dropped, as the benchmark drops it
(agent.codecheck): the user's tests are run as they are, never from the candidate; so is any other
top-level code that is not a definition or an import (`if __name__ == "__main__":`, prints).

The scope is the whole file, one top-level function, or one method (`Class.method`, where the
fault localisation points into a class): a method may come back alone or inside its class, and
only it is spliced in, at the class's indentation.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from humanevalfix import pyast
from humanevalfix.agent.codecheck import CodeCheck, check_candidate, fingerprint, params, top_level_function
from humanevalfix.fixer.tidy import indent_unit, minimal, restyle, useful_imports


def _name_of(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    out: dict[str, ast.stmt] = {}
    for node in tree.body:
        name = _name_of(node)
        if name is not None:
            out.pop(name, None)
            out[name] = node  # the last definition wins, as at run time; order kept by position
    return out


def _span(node: ast.stmt) -> tuple[int, int]:
    """0-based first line (decorators included) and end line (exclusive)."""
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno] + [d.lineno for d in decorators])
    return start - 1, node.end_lineno or node.lineno


def _segment(lines: list[str], node: ast.stmt) -> str:
    start, end = _span(node)
    text = "".join(lines[start:end])
    return text if text.endswith("\n") else text + "\n"


def _kind(node: ast.stmt) -> str:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "function"
    return "class" if isinstance(node, ast.ClassDef) else "variable"


def _public_methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        n.name: n
        for n in node.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (not n.name.startswith("_") or n.name == "__init__")
    }


def _signature(name: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    return f"{name}({ast.unparse(fn.args)})"


def _methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for n in node.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[n.name] = n  # the last definition wins, as at run time
    return out


def find_method(tree: ast.Module, qualified: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """`Class.method` of a top-level class, or None."""
    cls_name, _, name = qualified.partition(".")
    cls = _definitions(tree).get(cls_name)
    return _methods(cls).get(name) if isinstance(cls, ast.ClassDef) else None


def _reindent(text: str, indent: str, col: int) -> str:
    """A definition's lines moved from column `col` to `indent`; lines indented less (inside a string) stay."""
    out = []
    for line in text.splitlines(keepends=True):
        out.append(indent + line[col:] if line.strip() and not line[:col].strip() else line)
    return "".join(out)


def _parse(code: str) -> tuple[str, ast.Module]:
    """The candidate and its tree; a method sent at its class's indentation is dedented first."""
    try:
        return code, pyast.parse(code)
    except SyntaxError:
        dedented = textwrap.dedent(code)
        if dedented == code:
            raise
        try:
            return dedented, pyast.parse(dedented)
        except SyntaxError:
            pass
        raise


# A small model asked to fix a function tends to rewrite its body; the diff is then more than the
# fix (issue 53: `return max(low, min(high, value))` for a one-line bug).
SMALLEST = "Make the smallest change that fixes it: where the bug is one line, change only that line."


@dataclass(frozen=True)
class Scope:
    """What the model may change in `original`: one function or method, or any definition (public API fixed)."""

    original: str
    filename: str
    module: str  # the dotted name the tests import the file by
    function: str | None = None  # a top-level function, or `Class.method`; None: the whole file

    @property
    def method(self) -> tuple[str, str] | None:
        """(class, method) when the scope is a method."""
        if self.function and "." in self.function:
            cls_name, _, name = self.function.partition(".")
            return cls_name, name
        return None

    @property
    def label(self) -> str:
        return self.function or "the whole file"

    def rules(self) -> str:
        if self.method:
            cls_name, name = self.method
            fn = find_method(pyast.parse(self.original), self.function or "")
            signature = f" (keep its signature `{_signature(name, fn)}`)" if fn is not None else ""
            return (
                f"Change only the method `{name}` of the class `{cls_name}`{signature}; the rest of {self.filename} "
                "stays exactly as it is (you may add imports). Send the fixed method, alone or inside its class. "
                f"The tests import this file as the module `{self.module}`. {SMALLEST}"
            )
        if self.function:
            fn = top_level_function(pyast.parse(self.original), self.function)
            signature = f" (keep its signature `{_signature(self.function, fn)}`)" if fn is not None else ""
            return (
                f"Change only the function `{self.function}`{signature}; the rest of {self.filename} stays exactly "
                f"as it is (you may add imports). The tests import this file as the module `{self.module}`. {SMALLEST}"
            )
        return (
            f"This is the whole file {self.filename} (the tests import it as the module `{self.module}`). You may "
            f"change any of its functions, classes or constants, but keep its public names and their signatures. "
            f"Send only the definitions you change; new helpers must have names starting with an underscore."
        )

    def check(self, code: str) -> CodeCheck:
        code = code.replace("\r\n", "\n")
        try:
            code, tree = _parse(code)
        except SyntaxError as exc:
            line = (exc.text or "").strip()
            where = f" at line {exc.lineno}" + (f": {line}" if line else "")
            return CodeCheck(
                False, code, f"Your code does not parse: SyntaxError{where} ({exc.msg}). Send complete definitions."
            )
        if self.method:
            return self._check_method(code, tree)
        if self.function:
            base = check_candidate(code, self.original, self.function)
            if not base.ok:
                return base
        original_tree = pyast.parse(self.original)
        old = _definitions(original_tree)
        tree.body = [node for node in tree.body if not self._pasted_test(node, old)]
        new = _definitions(tree)
        changed = [n for n, node in new.items() if n in old and ast.dump(node) != ast.dump(old[n])]
        added = [n for n in new if n not in old]
        refusal = self._refusal(old, new, changed, added)
        if refusal:
            return CodeCheck(False, code, refusal)
        have = {ast.dump(n) for n in original_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
        new_imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and ast.dump(n) not in have]
        imports = useful_imports(new_imports, [new[n] for n in changed + added], original_tree)
        spliced = splice(self.original, original_tree, code, tree, changed, added, imports)
        return self._applied(code, spliced, old)

    def _applied(self, code: str, spliced: str, old: dict[str, ast.stmt]) -> CodeCheck:
        spliced = minimal(self.original, spliced)  # what runs is what the diff shows: only the fix
        try:
            now = _definitions(pyast.parse(spliced))
        except SyntaxError:  # a method whose lines could not be moved to the class's indentation
            return CodeCheck(
                False,
                code,
                "Your change could not be applied. Send the complete definitions with consistent indentation.",
            )
        lost = sorted(n for n in old if not n.startswith("_") and n not in now)
        if lost:  # a definition sharing a line with another statement: not safe to splice
            return CodeCheck(
                False,
                code,
                f"Your change could not be applied without losing `{', '.join(lost)}`. Send each definition on its "
                "own lines.",
            )
        return CodeCheck(True, spliced, "", fingerprint(spliced))

    def _check_method(self, code: str, tree: ast.Module) -> CodeCheck:
        """The method alone (at top level) or inside its class; only it is spliced in, and new imports."""
        cls_name, name = self.method or ("", "")
        original_tree = pyast.parse(self.original)
        old = _definitions(original_tree)
        old_cls = old[cls_name]
        old_fn = find_method(original_tree, f"{cls_name}.{name}")
        assert isinstance(old_cls, ast.ClassDef) and old_fn is not None  # the scope was built from the file
        tree.body = [node for node in tree.body if not self._pasted_test(node, old)]
        new = _definitions(tree)
        new_fn: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        others: list[str] = []
        new_cls = new.get(cls_name)
        if isinstance(new_cls, ast.ClassDef):
            new_fn = _methods(new_cls).get(name)
            was = _methods(old_cls)
            others = [
                f"{cls_name}.{m}"
                for m, fn in _methods(new_cls).items()
                if m != name and m in was and ast.dump(fn) != ast.dump(was[m])
            ]
        elif isinstance(top := new.get(name), (ast.FunctionDef, ast.AsyncFunctionDef)) and name not in old:
            new_fn = top
        only = f"Only `{self.function}` may change"
        others += [n for n, node in new.items() if n in old and n != cls_name and ast.dump(node) != ast.dump(old[n])]
        if others:
            return CodeCheck(
                False,
                code,
                f"{only}, but your code also changes {', '.join(f'`{n}`' for n in others)}. Send only the fixed "
                f"`{name}`.",
            )
        added = [n for n in new if n not in old and n != name]
        if added:
            return CodeCheck(
                False,
                code,
                f"{only}, but your code adds {', '.join(f'`{n}`' for n in added)} at top level. Define helpers "
                f"inside `{name}` instead.",
            )
        if new_fn is None:
            return CodeCheck(
                False,
                code,
                f"Your code does not define the method `{name}` of `{cls_name}`. Send the fixed `def "
                f"{_signature(name, old_fn)}:`, alone or inside `class {cls_name}`.",
            )
        if params(new_fn) != params(old_fn):
            return CodeCheck(
                False,
                code,
                f"`{self.function}` must keep its signature `{_signature(name, old_fn)}`; you wrote "
                f"`{_signature(name, new_fn)}`. Keep the parameters unchanged.",
            )
        lines = self.original.splitlines(keepends=True)
        start, end = _span(old_fn)
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        text = restyle(
            _reindent(_segment(code.splitlines(keepends=True), new_fn), indent, new_fn.col_offset),
            indent_unit(self.original),
            indent,
        )
        have = {ast.dump(n) for n in original_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
        new_imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and ast.dump(n) not in have]
        imports = useful_imports(new_imports, [new_fn], original_tree)
        spliced = splice(self.original, original_tree, code, tree, [], [], imports, [(start, end, text)])
        return self._applied(code, spliced, old)

    def _pasted_test(self, node: ast.stmt, old: dict[str, ast.stmt]) -> bool:
        """Test code the model sent along with its fix: tests it copied or wrote (the benchmark's
        `check`, pytest's test*/Test* names) that the file does not define, and imports of pytest
        or of the module itself (a module does not import itself; the tests import it)."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            prefix = "Test" if isinstance(node, ast.ClassDef) else "test"
            return node.name not in old and (node.name.startswith(prefix) or node.name == "check")
        if isinstance(node, ast.Import):
            return all(self._test_import(alias.name) for alias in node.names)
        if isinstance(node, ast.ImportFrom):
            return node.level == 0 and self._test_import(node.module or "")
        return False

    def _test_import(self, module: str) -> bool:
        return any(module == m or module.startswith(m + ".") for m in ("pytest", self.module))

    def _refusal(self, old: dict[str, ast.stmt], new: dict[str, ast.stmt], changed: list[str], added: list[str]) -> str:
        if self.function:
            others = [n for n in changed if n != self.function]
            if others:
                return (
                    f"Only `{self.function}` may change, but your code also "
                    f"changes {', '.join(f'`{n}`' for n in others)}. Send only the fixed `{self.function}`; "
                    f"leave the rest of the file as it is."
                )
            if added:
                return (
                    f"Only `{self.function}` may change, but your code adds {', '.join(f'`{n}`' for n in added)} at "
                    f"top level. Define helpers inside `{self.function}` instead."
                )
            return ""
        if not new:
            return (
                f"Your code defines no function, class or constant of {self.filename}. Send the complete fixed "
                "definitions."
            )
        public_added = [n for n in added if not n.startswith("_")]
        if public_added:
            return (
                f"Your code adds the public name(s) {', '.join(f'`{n}`' for n in public_added)}; the public names of "
                f"{self.filename} must stay the same. Give new helpers names starting with an underscore."
            )
        for name in changed:
            if name.startswith("_"):
                continue
            was, now = old[name], new[name]
            if _kind(was) != _kind(now):
                return f"`{name}` is a {_kind(was)} of {self.filename}'s public interface and must stay a {_kind(was)}."
            if isinstance(was, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(
                now, (ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                if params(was) != params(now):
                    return (
                        f"`{name}` must keep its signature `{_signature(name, was)}`; you wrote "
                        f"`{_signature(name, now)}`. "
                        f"Keep the parameters unchanged."
                    )
            if isinstance(was, ast.ClassDef) and isinstance(now, ast.ClassDef):
                methods = _public_methods(now)
                for method, fn in _public_methods(was).items():
                    if method not in methods:
                        return f"`{name}.{method}` is public and must stay; your version of `{name}` drops it."
                    if params(fn) != params(methods[method]):
                        return (
                            f"`{name}.{method}` must keep its signature `{_signature(method, fn)}`; "
                            f"you wrote `{_signature(method, methods[method])}`."
                        )
        return ""


def splice(
    original: str,
    original_tree: ast.Module,
    code: str,
    tree: ast.Module,
    changed: list[str],
    added: list[str],
    imports: list[str],
    replacements: Sequence[tuple[int, int, str]] = (),
) -> str:
    """The original text with the changed definitions replaced (in the file's indentation unit) and
    the new ones inserted; `imports`: new import lines; `replacements`: more (start, end, text)
    edits of the original's lines (a method's)."""
    lines = original.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    code_lines = code.splitlines(keepends=True)
    old = _definitions(original_tree)
    new = _definitions(tree)
    unit = indent_unit(original)
    edits: list[tuple[int, int, str]] = list(replacements)  # (start, end, text): lines[start:end] becomes text
    for name in changed:
        start, end = _span(old[name])
        edits.append((start, end, restyle(_segment(code_lines, new[name]), unit)))
    order = list(new)
    for name in added:
        # Before the next original definition that follows it in the model's code, else at the end.
        following = next((n for n in order[order.index(name) + 1 :] if n in old), None)
        text = restyle(_segment(code_lines, new[name]), unit)
        if following is not None:
            edits.append((_span(old[following])[0], _span(old[following])[0], text + "\n\n"))
        else:
            edits.append((len(lines), len(lines), "\n\n" + text))
    if imports:
        text = "".join(imports)
        existing = [n for n in original_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        if existing:
            at = _span(existing[-1])[1]
        else:
            first = original_tree.body[0] if original_tree.body else None
            docstring = (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            )
            at = _span(first)[1] if docstring and first is not None else 0
            text = ("\n" if at else "") + text + "\n"
        edits.append((at, at, text))
    # Bottom up, so earlier line numbers stay valid; a replacement before an insertion at its start.
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[start:end] = [text]
    return "".join(lines)
