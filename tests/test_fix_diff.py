"""The diff `fix` prints holds only the fix: no prelude, no lost docstring or comment, the file's own
line endings, indentation and final newline, no whitespace-only hunk; and it applies with the real
`git apply` and `patch -p1` from the project's top, one file or several."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from humanevalfix.fixer import Scope, load_user_file
from humanevalfix.fixer.patch import FileChange, change_of, project_diff
from humanevalfix.fixer.tidy import minimal

# Tabs, a docstring, comments, CRLF line endings and no final newline: the model answers in its own
# style (spaces, no docstring, no comments, a blank line with spaces, the benchmark's prelude).
TABBED = (
    '"""Geometry helpers."""\n'
    "import math\n"
    "\n"
    "\n"
    "def square(x):\n"
    '\t"""The square of x.\n'
    "\n"
    '\tUsed by area.py."""\n'
    "\t# the side times itself\n"
    "\tresult = x * 2\n"
    "\treturn result\n"
    "\n"
    "\n"
    "def circle(r):\n"
    "\treturn math.pi * r * r"
)
MODEL_ANSWER = (
    "from typing import *\nfrom collections import *\n\ndef square(x):\n    result = x * x\n    \n    return result\n"
)


def project_file(tmp_path: Path, name: str, text: str, newline: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


def changed_lines(diff: str) -> list[str]:
    return [line for line in diff.split("\n") if line[:1] and line[:1] in "+-" and not line.startswith(("+++", "---"))]


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    assert git(root, "init", "-q").returncode == 0
    return root


def apply_both_ways(root: Path, diff: str, expected: dict[str, bytes]) -> None:
    """`git apply` and `patch -p1` each turn the files on disk into `expected`, byte for byte."""
    originals = {name: (root / name).read_bytes() for name in expected}
    (root / "fix.patch").write_text(diff, encoding="utf-8", newline="")
    check = git(root, "apply", "--check", "--whitespace=error", "fix.patch")
    assert check.returncode == 0, check.stderr
    assert git(root, "apply", "fix.patch").returncode == 0
    assert {name: (root / name).read_bytes() for name in expected} == expected
    for name, data in originals.items():
        (root / name).write_bytes(data)
    proc = subprocess.run(
        ["patch", "-p1", "--binary", "-i", "fix.patch"], cwd=root, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {name: (root / name).read_bytes() for name in expected} == expected


@pytest.mark.e2e
@pytest.mark.parametrize("newline", ["\r\n", "\n"])
def test_the_diff_of_a_sloppy_answer_is_one_line_and_applies(repo: Path, newline: str) -> None:
    path = project_file(repo, "shapes/geometry.py", TABBED, newline)
    user_file = load_user_file(str(path))
    check = Scope(user_file.source, "geometry.py", "shapes.geometry", "square").check(MODEL_ANSWER)
    assert check.ok, check.message
    diff = project_diff([change_of(user_file, check.code, cwd=repo)])
    assert changed_lines(diff) == [
        "-\tresult = x * 2" + newline.rstrip("\n"),
        "+\tresult = x * x" + newline.rstrip("\n"),
    ]
    assert "typing" not in diff and "collections" not in diff
    assert diff.startswith("--- a/shapes/geometry.py\n+++ b/shapes/geometry.py\n")
    assert '"""The square of x.' in check.code and "# the side times itself" in check.code
    apply_both_ways(repo, diff, {"shapes/geometry.py": user_file.encode(check.code)})
    assert not (repo / "shapes/geometry.py").read_bytes().endswith(b"\n")  # still no final newline


@pytest.mark.e2e
def test_a_multi_file_fix_is_one_diff_that_git_apply_and_patch_take(repo: Path) -> None:
    geometry = load_user_file(str(project_file(repo, "shapes/geometry.py", TABBED, "\r\n")))
    area_text = "from shapes.geometry import square\n\n\ndef square_area(side):\n    return square(side) + 0\n"
    area = load_user_file(str(project_file(repo, "shapes/area.py", area_text, "\n")))
    new_geometry = geometry.source.replace("x * 2", "x * x")
    new_area = area.source.replace(" + 0", "")
    diff = project_diff([change_of(geometry, new_geometry, cwd=repo), change_of(area, new_area, cwd=repo)])
    assert diff.index("a/shapes/area.py") < diff.index("a/shapes/geometry.py")
    assert len(changed_lines(diff)) == 4
    apply_both_ways(
        repo, diff, {"shapes/area.py": area.encode(new_area), "shapes/geometry.py": geometry.encode(new_geometry)}
    )


def test_an_unchanged_file_adds_nothing_to_the_diff() -> None:
    assert project_diff([FileChange("a.py", "x = 1\n", "x = 1\n")]) == ""


def test_a_used_name_from_the_prelude_is_imported_by_name_and_the_rest_dropped() -> None:
    original = "def firsts(rows):\n    # first of each row\n    return [r[1] for r in rows]\n"
    answer = "from typing import *\nimport math\n\ndef firsts(rows: List[list]):\n    return [r[0] for r in rows]\n"
    check = Scope(original, "rows.py", "rows", "firsts").check(answer)
    assert check.ok, check.message
    assert check.code.startswith("from typing import List\n\ndef firsts(rows: List[list]):\n    # first of each row\n")
    assert "math" not in check.code


def test_a_change_of_indentation_that_changes_the_code_is_kept() -> None:
    original = (
        "def find(xs, x):\n    for i, y in enumerate(xs):\n        if y == x:\n            pass\n"
        "        return i\n    return -1\n"
    )
    fixed = (
        "def find(xs, x):\n    for i, y in enumerate(xs):\n        if y == x:\n            return i\n    return -1\n"
    )
    assert minimal(original, fixed) == fixed
    moved = original.replace(
        "        return i\n", "    return i\n"
    )  # out of the loop: whitespace only, but not the same code
    assert minimal(original, moved) == moved


def test_whitespace_only_hunks_and_trailing_spaces_go_back() -> None:
    original = "def f(x):\n    y = x + 1\n\n    return y\n\n\ndef g():\n    return 2\n"
    answer = "def f(x):\n    y = x + 2   \n    \n    return y\n\n\ndef g():\n  return 2\n"  # g: re-indented only
    assert minimal(original, answer) == original.replace("x + 1", "x + 2")


def test_a_docstring_the_model_rewrote_or_added_is_the_originals() -> None:
    original = (
        'def f(x):\n    """Add one.\n\n    >>> f(1)\n    2\n    """\n    return x + 2\n\n\ndef g():\n    return 1\n'
    )
    rewritten = 'def f(x):\n    """Adds one."""\n    return x + 1\n\n\ndef g():\n    """New."""\n    return 1\n'
    assert minimal(original, rewritten) == original.replace("x + 2", "x + 1")
