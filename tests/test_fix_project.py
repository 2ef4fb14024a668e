"""`fix --tests T` on a project, without FILE: the bug sits in a helper module that the tested
function calls, and no traceback reaches it (only the caller's result is asserted). The project's
run under the call tracer names it; it is the first scope, and the diff fixes it there.

Real HTTP to the scripted server (text protocol), the real sandbox (bwrap where it works) running
pytest on each candidate and tracing the baseline, the user's files in a git repository in a temp dir.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from humanevalfix.cli import main
from humanevalfix.testing.scripted_server import ScriptedServer, fenced

from .conftest import KEYS_ENV, scripted_fix_args

KEY = "sk-test-fix-project-0000"

GEOMETRY = (
    '"""Shape helpers."""\n\n\ndef square(x):\n    """The square of x."""\n    # the side times itself\n'
    "    return x * 2\n\n\ndef cube(x):\n    return x * x * x\n"
)
AREA = (
    "from shapes.geometry import square\n\n\ndef square_area(side):\n"
    '    """The area of a square with this side."""\n    return square(side)\n'
)
TESTS = (
    "from shapes.area import square_area\n\n\ndef test_square_area():\n    assert square_area(3) == 9\n\n\n"
    "def test_zero():\n    assert square_area(0) == 0\n"
)


def make_shapes(root: Path) -> Path:
    """The issue's project: a caller in shapes/area.py, the broken helper in shapes/geometry.py."""
    (root / "shapes").mkdir(parents=True)
    (root / "shapes" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shapes" / "geometry.py").write_text(GEOMETRY, encoding="utf-8")
    (root / "shapes" / "area.py").write_text(AREA, encoding="utf-8")
    (root / "test_area.py").write_text(TESTS, encoding="utf-8")
    return root


@pytest.fixture
def shapes(tmp_path: Path) -> Path:
    root = make_shapes(tmp_path / "proj")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def fix(server: ScriptedServer, *args: str) -> int:
    return main(
        [
            "fix",
            *args,
            *scripted_fix_args(server),
        ]
    )


def scope_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if re.match(r"^(scope: |widening )", line)]


@pytest.mark.e2e
def test_the_helper_module_is_found_and_fixed_without_file_or_function(
    shapes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(shapes)
    answer = fenced("def square(x):\n    return x * x\n")
    with ScriptedServer([answer]) as server:
        code = fix(server, "--tests", "test_area.py", "--write")
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert scope_lines(err) == [
        "scope: square in shapes/geometry.py (the wrong value is made here: `square_area(3) → square(3) returned 6` "
        "in test_square_area; `square_area` (shapes/area.py) calls it in the failing test)"
    ]
    prompt = requests[0].body["messages"][1]["content"]
    assert prompt.startswith("Fix the bug in `square`.")
    # Only the fix: the docstring and the comment the model left out stay, no other file changes.
    assert out == (
        "--- a/shapes/geometry.py\n+++ b/shapes/geometry.py\n@@ -4,7 +4,7 @@\n def square(x):\n"
        '     """The square of x."""\n     # the side times itself\n-    return x * 2\n+    return x * x\n \n \n'
        " def cube(x):\n"
    )
    assert (shapes / "shapes" / "geometry.py").read_text(encoding="utf-8") == GEOMETRY.replace("x * 2", "x * x")
    assert (shapes / "shapes" / "area.py").read_text(encoding="utf-8") == AREA
    assert (shapes / "shapes" / "geometry.py.orig").read_text(encoding="utf-8") == GEOMETRY


@pytest.mark.e2e
def test_a_model_that_rewrites_the_caller_gets_the_callers_scope_only_after_the_helpers(
    shapes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(shapes)
    wrong = fenced("def square(x):\n    return x + x\n")
    caller = fenced("def square_area(side):\n    return side * side\n")
    with ScriptedServer([wrong, wrong, caller, fenced("def square(x):\n    return x + 2\n"), caller]) as server:
        code = fix(server, "--tests", "test_area.py", "--max-iters", "5")  # 4 turns for square, 2 for square_area
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [line.split(" (")[0] for line in scope_lines(err)] == [
        "scope: square in shapes/geometry.py",
        "widening the scope to square_area in shapes/area.py",
    ]
    assert out.startswith("--- a/shapes/area.py\n+++ b/shapes/area.py\n")
    # The tests pass, but `square` still returns the wrong value for its other callers: said so.
    assert (
        "note: the fix changes `square_area`, but the failing tests' values show the wrong value made in `square`"
        in err
    )


@pytest.mark.e2e
def test_function_without_file_picks_that_function_among_the_suspects(
    shapes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(shapes)
    with ScriptedServer([fenced("def square(x):\n    return x * x\n")]) as server:
        assert fix(server, "--tests", "test_area.py", "--function", "cube") == 2
    assert (
        "--function cube: no function of that name ran in the failing tests (those that did: square, square_area)"
        in capsys.readouterr().err
    )


@pytest.mark.e2e
def test_given_the_helpers_file_the_traced_helper_is_the_scope_not_the_whole_file(
    shapes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(shapes)
    with ScriptedServer([fenced("def square(x):\n    return x * x\n")]) as server:
        code = fix(server, "shapes/geometry.py", "--tests", "test_area.py")
    out, err = capsys.readouterr()
    assert code == 0, err
    assert scope_lines(err) == [
        "scope: square in shapes/geometry.py (the wrong value is made here: `square_area(3) → square(3) returned 6` "
        "in test_square_area; it ran during the failing test, called by `square_area`)"
    ]
    assert out.startswith("--- a/shapes/geometry.py\n")


@pytest.mark.e2e
def test_from_another_directory_the_project_is_the_tests_one(
    shapes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    elsewhere = shapes.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # not in the project: files are named relative to the project's top
    with ScriptedServer([fenced("def square(x):\n    return x * x\n")]) as server:
        code = fix(server, "--tests", str(shapes / "test_area.py"))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert scope_lines(err)[0].startswith("scope: square in shapes/geometry.py (")
    assert out.startswith("--- a/shapes/geometry.py\n+++ b/shapes/geometry.py\n")  # relative to the project's git top


def test_a_function_counts_once_however_many_of_its_comprehensions_ran(tmp_path: Path) -> None:
    from humanevalfix.fixer import load_tests, load_user_file
    from humanevalfix.fixer.project import ProjectLocalizer
    from humanevalfix.fixer.usertests import FailedTest, Frame, Ran, RunReport
    from humanevalfix.sandbox.executor import ExecResult

    module = tmp_path / "cyclic.py"
    module.write_text(
        "def encode(s):\n    return [c for c in s]\n\n\ndef decode(s):\n    return encode(s)[::-1]\n", encoding="utf-8"
    )
    (tmp_path / "test_cyclic.py").write_text(
        "from cyclic import decode\n\n\ndef test_decode():\n    assert decode('ab') == ['a', 'b']\n", encoding="utf-8"
    )
    user_file, tests = load_user_file(str(module)), load_tests(str(tmp_path / "test_cyclic.py"))
    failure = FailedTest(
        "test_cyclic.py::test_decode",
        "test_decode",
        "AssertionError",
        "",
        (Frame("tests", 5, "test_decode"),),
        ("==", "['b', 'a']", "['a', 'b']"),
    )
    ran = (Ran(module, "decode", 5), Ran(module, "encode", 1, module, "decode")) + tuple(
        Ran(module, "encode.<locals>.<listcomp>", 2, module, "encode") for _ in range(3)
    )
    report = RunReport(ExecResult("failed", "", "", 0.0, 1), failures=(failure,), ran=ran)
    ranked = ProjectLocalizer(tests, tmp_path, user_file, only=module).rank(report)
    assert [(s.name, s.score) for s in ranked] == [("decode", 6), ("encode", 3)]
