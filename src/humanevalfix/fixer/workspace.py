"""The model's view of the user's project for `fix`: read, list, grep, edit a scratch copy, diff it.

With native tool calling the model gets these tools beside `run_code` (fixer.toolmodel answers
them). Everything is confined to the project's root: a path is relative, has no `..`, and resolves
(symlinks followed) to a file or folder inside the root; anything else is refused with one line.
Reads are bounded (lines, bytes, entries, matches). The project itself is never written: an edit
changes a scratch copy held here (the user's files' text, "\\n" newlines), and `git_diff` shows that
copy against the original as the patch `fix` would print (fixer.patch).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

from humanevalfix import pyast
from humanevalfix.errors import UserError
from humanevalfix.fixer.localize import units_of
from humanevalfix.fixer.patch import FileChange, project_diff

READ_LINES = 200
LINE_CHARS = 300
LIST_ENTRIES = 200
GREP_MATCHES = 50
GREP_FILES = 2000
FILE_BYTES = 1_000_000  # larger files are not read, listed as such
EDIT_CHARS = 20_000
SKIPPED_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache"}


class WorkspaceError(Exception):
    """A call the workspace refuses; its text is the tool's answer."""


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_PATH = {"type": "string", "description": "a path relative to the project's root"}
TOOLS = [
    _schema(
        "read_file",
        "Read a file of the project, with line numbers.",
        {"path": _PATH, "start": {"type": "integer"}, "end": {"type": "integer"}},
        ["path"],
    ),
    _schema("list_dir", "List a folder of the project.", {"path": _PATH}, []),
    _schema(
        "grep",
        "Find lines containing a text in the project's files.",
        {"text": {"type": "string"}, "path": _PATH},
        ["text"],
    ),
    _schema(
        "edit",
        "Replace one top-level function (`function`, or Class.method) or the lines start..end of a file in the "
        "scratch copy. Then call run_code with no code to test the scratch copy.",
        {
            "path": _PATH,
            "function": {"type": "string"},
            "start": {"type": "integer"},
            "end": {"type": "integer"},
            "text": {"type": "string"},
        },
        ["path", "text"],
    ),
    _schema("git_diff", "The scratch copy's changes against the project, as a unified diff.", {}, []),
]
NAMES = frozenset(t["function"]["name"] for t in TOOLS)


class Workspace:
    """The project under `root`, read-only, and a scratch copy of the files the model edits."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.scratch: dict[Path, str] = {}  # path -> edited text ("\n" newlines)

    def resolve(self, text: object, want: str = "any") -> Path:
        """A path the model gave, inside the root, or WorkspaceError. `want`: "file", "dir" or "any"."""
        if not isinstance(text, str) or "\x00" in text:
            raise WorkspaceError("the path must be a string")
        given = Path(text.strip() or ".")
        if given.is_absolute() or text.strip().startswith("~"):
            raise WorkspaceError(f"{text}: give a path relative to the project's root, not an absolute one")
        if ".." in given.parts:
            raise WorkspaceError(f"{text}: `..` is not allowed; paths stay inside the project")
        path = (self.root / given).resolve()
        if path != self.root and not path.is_relative_to(self.root):
            raise WorkspaceError(f"{text}: it leads outside the project (a symlink?)")
        if want == "file" and not path.is_file():
            raise WorkspaceError(f"{text}: no such file in the project")
        if want == "dir" and not path.is_dir():
            raise WorkspaceError(f"{text}: no such folder in the project")
        return path

    def text_of(self, path: Path) -> str:
        if path in self.scratch:
            return self.scratch[path]
        if path.stat().st_size > FILE_BYTES:
            raise WorkspaceError(f"{self.shown(path)}: larger than {FILE_BYTES} bytes, not read")
        try:
            return path.read_bytes().decode("utf-8-sig").replace("\r\n", "\n")
        except UnicodeDecodeError:
            raise WorkspaceError(f"{self.shown(path)}: not UTF-8 text") from None

    def shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path != self.root else "."

    # --- the tools ---------------------------------------------------------------------------
    # Paths and texts are the model's JSON values (`call`), any type: resolve() and the tools check them.

    def read_file(self, path: object, start: int = 1, end: int | None = None) -> str:
        target = self.resolve(path, "file")
        lines = self.text_of(target).splitlines()
        first = max(1, int(start))
        last = min(len(lines), int(end) if end else first + READ_LINES - 1, first + READ_LINES - 1)
        body = "\n".join(f"{n:5d}  {lines[n - 1][:LINE_CHARS]}" for n in range(first, last + 1))
        more = f"\n({len(lines) - last} more lines: read_file with start={last + 1})" if last < len(lines) else ""
        return f"{self.shown(target)} (lines {first}-{last} of {len(lines)}):\n{body}{more}"

    def list_dir(self, path: str = ".") -> str:
        target = self.resolve(path, "dir")
        entries = sorted(p for p in target.iterdir() if p.name not in SKIPPED_DIRS)
        shown = [p.name + ("/" if p.is_dir() else "") for p in entries[:LIST_ENTRIES]]
        more = f"\n({len(entries) - LIST_ENTRIES} more not shown)" if len(entries) > LIST_ENTRIES else ""
        return f"{self.shown(target)}:\n" + "\n".join(shown) + more

    def grep(self, text: object, path: object = ".") -> str:
        if not isinstance(text, str) or not text:
            raise WorkspaceError("grep needs a non-empty `text`")
        target = self.resolve(path)
        files = [target] if target.is_file() else self._files(target)
        out: list[str] = []
        for file in files:
            try:
                lines = self.text_of(file).splitlines()
            except (WorkspaceError, OSError):
                continue
            out += [f"{self.shown(file)}:{n}: {line[:LINE_CHARS]}" for n, line in enumerate(lines, 1) if text in line]
            if len(out) >= GREP_MATCHES:
                return "\n".join(out[:GREP_MATCHES]) + "\n(more matches not shown; narrow `path`)"
        return "\n".join(out) if out else f"no line contains {text!r}"

    def _files(self, folder: Path) -> list[Path]:
        found: list[Path] = []
        for top, dirs, names in os.walk(folder):  # symlinked folders are not followed
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in sorted(names):
                path = Path(top) / name
                if path.resolve().is_relative_to(self.root) and path.resolve().is_file():
                    found.append(path.resolve())
                if len(found) >= GREP_FILES:
                    return found
        return found

    def edit(
        self, path: object, text: object, function: str | None = None, start: int | None = None, end: int | None = None
    ) -> str:
        target = self.resolve(path, "file")
        if target.suffix != ".py":
            raise WorkspaceError(f"{path}: only Python files of the project can be edited")
        if not isinstance(text, str) or len(text) > EDIT_CHARS:
            raise WorkspaceError(f"`text` must be a string of at most {EDIT_CHARS} characters")
        lines = self.text_of(target).splitlines(keepends=True)
        if function:
            unit = units_of(pyast.parse("".join(lines))).get(function)
            if unit is None:
                raise WorkspaceError(f"{self.shown(target)} has no top-level function or method `{function}`")
            first = min([unit.node.lineno] + [d.lineno for d in unit.node.decorator_list])
            start, end = first, unit.node.end_lineno or unit.node.lineno
        if start is None or end is None or not 1 <= int(start) <= int(end) + 1 <= len(lines) + 1:
            raise WorkspaceError(f"give `function`, or `start` and `end` between 1 and {len(lines)}")
        new = (
            "".join(lines[: int(start) - 1])
            + text.replace("\r\n", "\n").rstrip("\n")
            + "\n"
            + "".join(lines[int(end) :])
        )
        try:
            ast.parse(new)
        except SyntaxError as exc:
            raise WorkspaceError(
                f"not applied: {self.shown(target)} would not parse (line {exc.lineno}: {exc.msg})"
            ) from None
        self.scratch[target] = new
        return f"edited {self.shown(target)} in the scratch copy; run_code with no code runs the tests on it"

    def git_diff(self) -> str:
        changes = [FileChange(self.shown(p), self._original(p), text) for p, text in self.scratch.items()]
        return project_diff(changes) or "no changes"

    def _original(self, path: Path) -> str:
        return path.read_bytes().decode("utf-8-sig").replace("\r\n", "\n")

    def edited(self, path: Path) -> str | None:
        """The scratch copy of `path`, when the model edited it."""
        return self.scratch.get(path.resolve())

    def call(self, name: str, arguments: str) -> str:
        """One tool call as the model sent it; a refusal or bad arguments are the answer, never raised."""
        try:
            args = json.loads(arguments or "{}")
            if not isinstance(args, dict):
                raise WorkspaceError("the arguments must be a JSON object")
            if name == "read_file":
                return self.read_file(args.get("path"), int(args.get("start") or 1), args.get("end"))
            if name == "list_dir":
                return self.list_dir(args.get("path") or ".")
            if name == "grep":
                return self.grep(args.get("text"), args.get("path") or ".")
            if name == "edit":
                return self.edit(
                    args.get("path"), args.get("text"), args.get("function"), args.get("start"), args.get("end")
                )
            if name == "git_diff":
                return self.git_diff()
            raise WorkspaceError(f"no tool `{name}`")
        except (WorkspaceError, ValueError, TypeError, OSError, UserError) as exc:
            return f"refused: {exc}"[:2000]
