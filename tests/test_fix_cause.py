"""`fix --tests T` without FILE or --function finds the cause, not the symptom (issue 53): a clamp
helper returns `low` where it should return `high`, two functions of another module call it, and
the tests assert the callers' results (`r = scaled_rect(...); assert (r.width, r.height) == ...`).
No traceback reaches the helper and no failing line calls it: the traced run's values show that
what the callers returned was made in `clamp`, so `clamp` is offered first, with those values, and
the fix is a one-line diff to the helper.

Real HTTP to the scripted server (text protocol), the real sandbox running pytest on each candidate
and tracing the baseline, the user's files in a git repository in a temp dir.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from humanevalfix.cli import main
from humanevalfix.testing.scripted_server import ScriptedServer, fenced

from .conftest import KEYS_ENV, scripted_fix_args

KEY = "sk-test-fix-cause-0000"

HELPERS = '''"""Small numeric helpers."""


def clamp(value, low, high):
    """value, kept within [low, high]."""
    if value < low:
        return low
    if value > high:
        return low
    return value
'''
SHAPES = '''"""Shapes built on the helpers."""
from dataclasses import dataclass

from geometry.helpers import clamp


@dataclass(frozen=True)
class Rect:
    width: float
    height: float


def scaled_rect(rect, factor):
    """rect scaled by factor, each side kept within [0.1, 10]."""
    return Rect(clamp(rect.width * factor, 0.1, 10), clamp(rect.height * factor, 0.1, 10))


def opacity_percent(x):
    """x (0 to 1) as a whole percentage."""
    return round(clamp(x, 0, 1) * 100)
'''
TESTS = """from geometry.shapes import Rect, opacity_percent, scaled_rect


def test_scaled_rect():
    r = scaled_rect(Rect(1, 1), 50)
    assert (r.width, r.height) == (10, 10)


def test_opacity_percent():
    assert opacity_percent(2.0) == 100
"""
# The clamp sent back with its one wrong line fixed.
ONE_LINE = HELPERS.split("\n\n\n")[1].replace(
    "        return low\n    return value", "        return high\n    return value"
)


@pytest.fixture
def geometry(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "geometry").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "geometry" / "__init__.py").write_text("", encoding="utf-8")
    (root / "geometry" / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (root / "geometry" / "shapes.py").write_text(SHAPES, encoding="utf-8")
    (root / "tests" / "test_shapes.py").write_text(TESTS, encoding="utf-8")
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


@pytest.mark.e2e
def test_the_helper_that_made_the_wrong_value_is_offered_first_with_the_values_and_fixed(
    geometry: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(geometry)
    assert "return high" in ONE_LINE
    with ScriptedServer([fenced(ONE_LINE)]) as server:
        code = fix(server, "--tests", "tests/test_shapes.py")
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    scopes = [line for line in err.splitlines() if re.match(r"^(suspects: |scope: |widening )", line)]
    assert scopes == [
        "suspects: clamp in geometry/helpers.py (score 16), opacity_percent in geometry/shapes.py (score 6), "
        "scaled_rect in geometry/shapes.py (score 3)",
        "scope: clamp in geometry/helpers.py (the wrong value is made here: `scaled_rect(Rect(width=1, height=1), "
        "50) → clamp(50, 0.1, 10) returned 0.1` in test_scaled_rect, and in 1 more failing test; it ran during "
        "the failing test, called by `scaled_rect`)",
    ]
    prompt = requests[0].body["messages"][1]["content"]
    assert prompt.startswith("Fix the bug in `clamp`.")
    assert "where the bug is one line, change only that line" in prompt
    # The calls with their values, each under the call it was made in, and the callers' code.
    assert (
        "test_scaled_rect:\n"
        "  scaled_rect(Rect(width=1, height=1), 50) returned Rect(width=0.1, height=0.1)\n"
        "    <- clamp(50, 0.1, 10) returned 0.1\n"
        "test_opacity_percent:\n"
        "  opacity_percent(2.0) returned 0\n"
        "    <- clamp(2.0, 0, 1) returned 0"
    ) in prompt
    assert "# geometry/shapes.py\ndef opacity_percent(x):" in prompt
    assert out == (
        "--- a/geometry/helpers.py\n+++ b/geometry/helpers.py\n@@ -6,5 +6,5 @@\n"
        "     if value < low:\n         return low\n     if value > high:\n-        return low\n+        return high\n"
        "     return value\n"
    )
    assert "note:" not in err


def opacity_only(geometry: Path) -> tuple[list[str], str]:
    """Only the opacity test, whose caller can pass alone without the helper: two replies that change
    `clamp` and fail as the original does, and the caller written without it (a workaround)."""
    (geometry / "tests" / "test_shapes.py").write_text(
        "from geometry.shapes import opacity_percent\n\n\ndef test_opacity_percent():\n"
        "    assert opacity_percent(2.0) == 100\n",
        encoding="utf-8",
    )
    clamp = HELPERS.split("\n\n\n")[1]
    same = [fenced(clamp.replace("return value", f"return value{tail}")) for tail in (" * 1", " + 0")]
    return same, fenced("def opacity_percent(x):\n    return round(min(max(x, 0), 1) * 100)\n")


@pytest.mark.e2e
def test_a_suspect_without_progress_gives_its_turns_on_and_a_workaround_is_reported(
    geometry: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the opacity test: its caller can pass alone without the helper. The helper comes first;
    two candidates that fail as the original did move on to the caller, and its fix is a workaround."""
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(geometry)
    same, caller = opacity_only(geometry)
    with ScriptedServer([*same, caller]) as server:
        code = fix(server, "--tests", "tests/test_shapes.py")  # 6 turns: 4 for clamp, 2 for the next
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = [line for line in err.splitlines() if re.match(r"^(scope: |widening |  no progress)", line)]
    assert [line.split(" (")[0] for line in lines] == [
        "scope: clamp in geometry/helpers.py",
        "  no progress in clamp: its candidates fail as the original does; 2 turns left for the next scope",
        "widening the scope to opacity_percent in geometry/shapes.py",
    ]
    assert lines[-1].endswith(" after 2 turns")
    assert out.startswith("--- a/geometry/shapes.py\n")
    # The helper was tried once more, shown the workaround, and its two turns did not pass: the
    # workaround stays the fix, said as such.
    assert (
        "the fix works around a wrong value made in clamp in geometry/helpers.py (the workaround's cause): 2 more "
        "turns in its scope, shown that fix"
    ) in err
    assert "instead: the workaround is left out" not in err
    assert (
        "note: the fix changes `opacity_percent`, but the failing tests' values show the wrong value made in `clamp` "
        "(geometry/helpers.py: `clamp(2.0, 0, 1) returned 0`): this works around it"
    ) in err


@pytest.mark.e2e
def test_a_workaround_is_not_taken_while_the_helper_can_still_be_fixed(
    geometry: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As above, but shown the caller's passing workaround, the helper's scope fixes the helper:
    that is the diff, the workaround is left out and no note is said."""
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(geometry)
    same, caller = opacity_only(geometry)
    trace = tmp_path / "trace.json"
    with ScriptedServer([*same, caller, fenced(ONE_LINE)]) as server:
        code = fix(server, "--tests", "tests/test_shapes.py", "--trace", str(trace))
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "fixed in `clamp` instead: the workaround is left out" in err and "note:" not in err
    assert out.startswith("--- a/geometry/helpers.py\n") and "+        return high\n" in out
    assert "shapes.py" not in out
    cause = requests[3].body["messages"][1]["content"]
    assert cause.startswith("Fix the bug in `clamp`.")
    assert (
        "The tests pass when `opacity_percent` is changed as below, so that it no longer passes on what `clamp` "
        "returns:\n```python\ndef opacity_percent(x):\n"
    ) in cause
    assert (
        "    return round(min(max(x, 0), 1) * 100)\n```\nThat only works around the bug: `clamp` still makes the "
        "wrong value (`clamp(2.0, 0, 1) returned 0`, in geometry/helpers.py) for every caller. Fix `clamp` instead"
    ) in cause
    # The trace keeps every turn, each with its scope; the fix is the last one's.
    recorded = json.loads(trace.read_text(encoding="utf-8"))
    assert [a["scope"] for a in recorded["attempts"]] == [
        "clamp",
        "clamp",
        "geometry/shapes.py: opacity_percent",
        "clamp",
    ]
    assert [a["outcome"] for a in recorded["attempts"]] == ["failed", "failed", "passed", "passed"]


@pytest.mark.e2e
def test_a_first_reply_that_repeats_the_original_is_drawn_again_in_the_same_turn(
    geometry: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--redraws (default 1): the scope's first reply, the helper unchanged, is drawn again, sampled,
    and the turn is not spent on it; `--redraws 0` spends it."""
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(geometry)
    unchanged = fenced(HELPERS.split("\n\n\n")[1])
    with ScriptedServer([unchanged, fenced(ONE_LINE)]) as server:
        code = fix(server, "--tests", "tests/test_shapes.py")
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [r.body["temperature"] for r in requests] == [0, 0.8]
    assert requests[0].body["messages"] == requests[1].body["messages"]
    assert (
        "turn 1: asking scripted-model (temperature 0)\n  nothing new in the reply: drawn again (temperature 0.8)\n"
        in err
    )
    assert "turn 2" not in err and "+        return high\n" in out

    with ScriptedServer([unchanged, fenced(ONE_LINE)]) as server:
        code = fix(server, "--tests", "tests/test_shapes.py", "--redraws", "0")
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [r.body["temperature"] for r in requests] == [0, 0]  # the next strategy's first turn
    assert "  the original code, unchanged: not run\nturn 2: asking" in err


@pytest.mark.e2e
def test_a_rewritten_body_comes_back_as_its_one_line_fix(
    geometry: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the embedded model sent for this project: the fix, with `elif`/`else` around it."""
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(geometry)
    rewritten = (
        "def clamp(value, low, high):\n    if value < low:\n        return low\n    elif value > high:\n"
        "        return high\n    else:\n        return value\n"
    )
    with ScriptedServer([fenced(rewritten)]) as server:
        code = fix(server, "--tests", "tests/test_shapes.py")
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "smallest change: one line of the fix passes the tests alone; the rest is left out" in err
    assert [line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-        return low",
        "+        return high",
    ]


@pytest.mark.e2e
def test_told_the_function_the_workaround_is_the_fix_and_the_helper_is_left_alone(
    geometry: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--function opacity_percent: only it may change, so its passing workaround is the fix at once,
    said as one, and no turn goes to the helper."""
    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(geometry)
    _, caller = opacity_only(geometry)
    with ScriptedServer([caller, fenced(ONE_LINE)]) as server:
        code = fix(server, "--tests", "tests/test_shapes.py", "--function", "opacity_percent")
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(requests) == 1 and out.startswith("--- a/geometry/shapes.py\n")
    assert "more turns in its scope" not in err and "note: the fix changes `opacity_percent`" in err
