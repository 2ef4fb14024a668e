"""The user's file for `fix`: read as it is (encoding, newlines, BOM kept for writing back), and
the dotted name their tests import it by."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from humanevalfix import pyast
from humanevalfix.errors import UserError


@dataclass(frozen=True)
class UserFile:
    path: Path  # absolute, symlinks resolved: what is read, run and written
    display: str  # as the user wrote it, for messages and the diff
    raw: bytes
    source: str  # decoded, "\n" newlines, without a BOM
    newline: str  # "\r\n" when the file uses it, written back the same way
    bom: bool
    module: str  # the dotted name it is imported by
    import_root: Path  # the directory that name is imported from
    is_package: bool

    def encode(self, text: str) -> bytes:
        return (b"\xef\xbb\xbf" if self.bom else b"") + text.replace("\n", self.newline).encode("utf-8")

    def functions(self) -> list[str]:
        tree = pyast.parse(self.source)
        return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def methods(self) -> list[str]:
        """`Class.method` for each method of a top-level class."""
        tree = pyast.parse(self.source)
        return [
            f"{c.name}.{n.name}"
            for c in tree.body
            if isinstance(c, ast.ClassDef)
            for n in c.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]


def syntax_error(where: str, exc: SyntaxError) -> str:
    line = (exc.text or "").strip()
    return f"{where}: syntax error at line {exc.lineno}: {exc.msg}" + (f" ({line})" if line else "")


def module_name(path: Path) -> tuple[str, Path]:
    """The dotted name and import root: walk up through directories that are packages."""
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts:
        raise UserError(f"{path}: an __init__.py outside any package cannot be imported")
    return ".".join(parts), folder


def load_user_file(text: str) -> UserFile:
    path = Path(text).expanduser()
    if not path.exists():
        raise UserError(f"file not found: {text}")
    if not path.is_file():
        raise UserError(f"not a file: {text}")
    if path.suffix != ".py":
        raise UserError(f"{text}: expected a Python file ending in .py")
    raw = path.read_bytes()
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        decoded = raw[3 if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{text}: not UTF-8 text (byte {exc.start})") from None
    newline = "\r\n" if "\r\n" in decoded else "\n"
    source = decoded.replace("\r\n", "\n")
    try:
        pyast.parse(source, text)
    except SyntaxError as exc:
        raise UserError(syntax_error(text, exc)) from None
    resolved = path.resolve()
    module, root = module_name(resolved)
    return UserFile(resolved, text, raw, source, newline, bom, module, root, resolved.name == "__init__.py")


def require_function(user_file: UserFile, name: str) -> None:
    """--function: a top-level function of the file, or a method as `Class.method`."""
    names = user_file.functions()
    if name not in names and name not in user_file.methods():
        listed = ", ".join(names) if names else "none"
        raise UserError(
            f"--function {name}: {user_file.display} has no top-level function `{name}` (its functions: {listed})"
        )
