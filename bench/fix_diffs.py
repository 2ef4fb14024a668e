"""What a `fix` diff holds besides the fix, and whether it applies: bench/fix_bench.py's checks of
every diff it records (both task sets)."""

from __future__ import annotations

import ast
import difflib
import re
import subprocess
import tempfile
from pathlib import Path


def _changed(diff: str) -> dict[str, list[str]]:
    """The +/- lines of each file in a unified diff (marker kept)."""
    out: dict[str, list[str]] = {}
    name = ""
    for line in diff.split("\n"):
        if line.startswith("+++ "):
            name = line[4:].removeprefix("b/")
            out.setdefault(name, [])
        elif line.startswith(("---", "@@", "\\")):
            continue
        elif line[:1] in ("+", "-") and name:
            out[name].append(line)
    return out


def _docstrings(source: str) -> dict[str, str | None]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    return {
        n.name: ast.get_docstring(n, clean=False)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def diff_extras(diff: str, before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What a fix's diff holds besides the fix: blank, whitespace-only, comment or import lines
    changed, or a docstring changed (file names as in the diff)."""
    extras: list[str] = []
    for name, lines in _changed(diff).items():
        plus = [line[1:] for line in lines if line.startswith("+")]
        minus = [line[1:] for line in lines if line.startswith("-")]
        if any(not s.strip() for s in plus + minus):
            extras.append(f"{name}: blank line")
        stripped_minus = [s.strip() for s in minus]
        if any(s.strip() in stripped_minus and s not in minus for s in plus if s.strip()):
            extras.append(f"{name}: whitespace-only change")
        if any(s.strip().startswith("#") for s in plus + minus):
            extras.append(f"{name}: comment")
        if any(re.match(r"\s*(import|from)\s", s) for s in plus + minus):
            extras.append(f"{name}: import")
        old, new = _docstrings(before.get(name, "")), _docstrings(after.get(name, ""))
        if any(old.get(fn) != new.get(fn) for fn in old if fn in new):
            extras.append(f"{name}: docstring")
    return extras


def touched(diff: str) -> set[str]:
    return set(_changed(diff))


def applied(diff: str, before: dict[str, str]) -> dict[str, str] | None:
    """The files after `git apply` of the diff on a fresh copy of them as they were; None: it does not apply."""
    with tempfile.TemporaryDirectory(prefix="fixbench-apply-") as tmp:
        root = Path(tmp)
        for name, text in before.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(text.encode("utf-8"))
        (root / "fix.patch").write_bytes(diff.encode("utf-8"))
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        if subprocess.run(["git", "apply", "fix.patch"], cwd=root, capture_output=True, timeout=60).returncode != 0:
            return None
        return {name: (root / name).read_bytes().decode("utf-8") for name in before}


def quality(diff: str, before: dict[str, str]) -> tuple[bool | None, str]:
    """(whether the diff applies, what it holds besides the fix); (None, "") without a diff."""
    if not diff:
        return None, ""
    after = applied(diff, before)
    if after is None:
        return False, "does not apply"
    return True, "; ".join(diff_extras(diff, before, after))


def changed_lines(diff: str) -> int:
    """The lines a unified diff removes or adds, every file together (issue 53's size of a fix)."""
    return sum(len(lines) for lines in _changed(diff).values())


def dataset_changed_lines(buggy: str, canonical: str) -> int:
    """The same count for the dataset's own change, buggy to canonical: what a fix needs at least,
    or near it (a fix may be right another way)."""
    diff = "\n".join(difflib.unified_diff(buggy.split("\n"), canonical.split("\n"), "a/x", "b/x", lineterm=""))
    return changed_lines(diff)
