"""The fix as a patch: a unified diff that `git apply` and `patch -p1` take from the project's top.

Each file is named relative to the top of its git work tree (whatever directory `fix` ran in),
else relative to the current directory when it lies under it; with `a/` and `b/` prefixes either
way. Outside both, the absolute path (no prefix: `patch` strips none from it). The diff is of the
file's bytes as they are and as they will be written (fixer.userfile.UserFile.encode): CRLF lines
stay CRLF, a BOM and a missing final newline stay, so the patch applies to the file on disk. A fix
of several files is one diff, file after file.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from humanevalfix.fixer.userfile import UserFile
from humanevalfix.fixer.usertests import project_root

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")  # str.splitlines would also split at \f, \x1c, \u2028...


@dataclass(frozen=True)
class FileChange:
    """One file of a fix: its name in the patch and its text before and after, newlines as on disk."""

    name: str
    old: str
    new: str


def patch_name(path: Path, cwd: Path | None = None) -> str:
    """`path` (absolute, resolved) as the patch names it."""
    for base in (project_root(path.parent), (cwd or Path.cwd()).resolve()):
        if base is not None and path.is_relative_to(base) and path != base:
            return path.relative_to(base).as_posix()
    return str(path)


def lines_of(text: str) -> list[str]:
    """Lines with their ends ("\\n" or "\\r\\n"); only "\\n" ends a line, as for git and patch."""
    return _LINE.findall(text)


def unified_diff(old: str, new: str, name: str) -> str:
    """A patch of `name` from `old` to `new`: a/ b/ prefixes when the name is relative."""
    a, b = (name, name) if Path(name).is_absolute() else (f"a/{name}", f"b/{name}")
    out: list[str] = []
    for line in difflib.unified_diff(lines_of(old), lines_of(new), a, b):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def change_of(user_file: UserFile, new_source: str, cwd: Path | None = None) -> FileChange:
    """The user's file before and after the fix, as its bytes read and will be written."""
    old = user_file.raw.decode("utf-8")
    return FileChange(patch_name(user_file.path, cwd), old, user_file.encode(new_source).decode("utf-8"))


def project_diff(changes: Sequence[FileChange]) -> str:
    """One patch for all the files that change, in name order."""
    return "".join(unified_diff(c.old, c.new, c.name) for c in sorted(changes, key=lambda c: c.name) if c.old != c.new)
