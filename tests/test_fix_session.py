"""`fix` without --function, end to end: the failing tests choose the scope, the session widens it
when that scope's turns are spent, every turn prints what came of it, and the diff applies with
`git apply` and `patch -p1` from the project's top.

Real HTTP to the scripted server (text protocol, --text-tools, so the strategies are the
benchmark's), the real sandbox running pytest on each candidate, the user's files in a temp dir.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.cli import main
from humanevalfix.testing.scripted_server import ScriptedServer, fenced, text

from .conftest import KEYS_ENV, clean_env, run_cli, scripted_fix_args
from .test_fix_localize import HELPER_BUG

KEY = "sk-test-fix-session-0000"

CONSTANT_BUG = '''"""Statistics helpers."""

OFFSET = 1


def _total(xs):
    return sum(xs)


def mean(xs):
    """Arithmetic mean of a non-empty list."""
    return _total(xs) / (len(xs) + OFFSET)
'''

TESTS = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"


def mean_source(body: str) -> str:
    return f'def mean(xs):\n    """Arithmetic mean of a non-empty list."""\n    return {body}\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "test_stats.py").write_text(TESTS, encoding="utf-8")
    return tmp_path


def fix(project: Path, server: ScriptedServer, *extra: str) -> int:
    return main(
        [
            "fix",
            str(project / "stats.py"),
            "--tests",
            str(project / "test_stats.py"),
            *scripted_fix_args(server),
            *extra,
        ]
    )


def progress(err: str) -> list[str]:
    """The session's lines: scopes, turns (temperature left out) and each turn's outcome."""
    keep = re.compile(r"^(scope: |widening |turn \d+: |  )")
    return [re.sub(r" \(temperature [\d.]+\)$", "", line) for line in err.splitlines() if keep.match(line)]


def task_prompt(request: Any) -> str:
    return request.body["messages"][1]["content"]


def test_the_tested_function_first_then_the_helper_it_calls(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    (project / "stats.py").write_text(HELPER_BUG, encoding="utf-8")
    wrong_mean = fenced(mean_source("_total(xs) / (len(xs) - 1)"))
    fixed_total = fenced("def _total(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n")
    trace = tmp_path / "trace.json"
    other_mean = fenced(mean_source("_total(xs) / (len(xs) + 1)"))
    with ScriptedServer([wrong_mean, wrong_mean, text("I do not know."), other_mean, fixed_total]) as server:
        code = fix(project, server, "--trace", str(trace))  # 6 turns: 4 for mean, 2 for _total
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert progress(err) == [
        "scope: mean in stats.py (the failing test test_mean calls it at test_stats.py:5)",
        "turn 1: asking scripted-model",
        "  tests: failed (1 failed)",
        "turn 2: asking scripted-model",
        "  repeat of turn 1: not run",
        "turn 3: asking scripted-model",
        "  no code in the reply",
        "turn 4: asking scripted-model",
        "  tests: failed (1 failed)",
        "widening the scope to _total in stats.py (`mean` calls it) after 4 turns",
        "turn 5: asking scripted-model",
        "  tests: passed (1 passed)",
    ]
    # As on the benchmark: the function named with its docstring, how it fails (call, expected,
    # got), then rewritten from its docstring in the second half of its turns.
    first = task_prompt(requests[0])
    assert first.startswith(
        "Fix the bug in `mean`.\n\nWhat it should do:\nArithmetic mean of a non-empty list.\n\n"
        "Change only the function `mean`"
    )
    assert (
        "Run as it is now, the function fails:\nTest failed (test_stats.py line 5, in test_mean):\n"
        "assert mean([1, 2, 3]) == 2\n  call:     mean([1, 2, 3])\n  expected: 2\n"
        "  got:      1.6666666666666667\n" in first
    )
    assert [task_prompt(r).split(".")[0] for r in requests] == [
        "Fix the bug in `mean`",
        "Fix the bug in `mean`",
        "Write the function `mean`",
        "Write the function `mean`",
        "Fix the bug in `_total`",
    ]
    assert task_prompt(requests[4]).startswith("Fix the bug in `_total`.\n\nChange only the function `_total`")
    assert "\n-    for x in xs[1:]:\n+    for x in xs:\n" in out
    attempts = json.loads(trace.read_text(encoding="utf-8"))["attempts"]
    assert [(a["turn"], a["scope"], a["outcome"]) for a in attempts] == [
        (0, "mean", "failed"),
        (1, "mean", "repeat"),
        (2, "mean", "no_code"),
        (3, "mean", "failed"),
        (4, "_total", "passed"),
    ]


def test_the_whole_file_last_and_a_line_for_every_turn(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    (project / "stats.py").write_text(CONSTANT_BUG, encoding="utf-8")
    replies = [
        fenced("OFFSET = 0\n\n\n" + mean_source("_total(xs) / (len(xs) + OFFSET)")),  # changes more than mean: refused
        fenced(mean_source("_total(xs) / (len(xs) - OFFSET)")),
        *[fenced(mean_source(f"_total(xs) / (len(xs) + {k})")) for k in range(2, 6)],
        text("The code looks right to me."),
        fenced("def _total(xs):\n    return sum(xs) - 1\n"),
        fenced("OFFSET = 0\n"),  # the whole file: any definition may change
    ]
    with ScriptedServer(replies) as server:
        # 12 turns: 8 for mean, 2 for _total, 2 for the file; each stuck turn escalates (no redraws)
        code = fix(project, server, "--max-iters", "11", "--redraws", "0")
        # (mean's last two unspent: after two turns of its last strategy, rewrite, a scope ends)
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = progress(err)
    failed = [
        line for turn in range(3, 7) for line in (f"turn {turn}: asking scripted-model", "  tests: failed (1 failed)")
    ]
    assert lines == [
        "scope: mean in stats.py (the failing test test_mean calls it at test_stats.py:5)",
        "turn 1: asking scripted-model",
        lines[2],
        "turn 2: asking scripted-model",
        "  tests: failed (1 failed)",
        *failed,
        "widening the scope to _total in stats.py (`mean` calls it) after 6 turns",
        "turn 7: asking scripted-model",
        "  no code in the reply",
        "turn 8: asking scripted-model",
        "  tests: failed (1 failed)",
        "widening the scope to the whole file stats.py after 8 turns",
        "turn 9: asking scripted-model",
        "  tests: passed (1 passed)",
    ]
    assert lines[2].startswith("  refused: Only `mean` may change, but your code also changes `OFFSET`.")
    # The whole file is asked for as a module, with pytest's report; no rewrite of a module.
    last = task_prompt(requests[8])
    assert last.startswith("Fix the bug in the module `stats`.") and "This is the whole file stats.py" in last
    assert "Run as it is now, the code fails:\npytest: 1 failed" in last
    assert out.endswith(" \n-OFFSET = 1\n+OFFSET = 0\n \n \n def _total(xs):\n")
    assert (project / "stats.py").read_text(encoding="utf-8") == CONSTANT_BUG


def test_no_fix_in_any_scope_leaves_the_file_and_says_the_last_failure(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    (project / "stats.py").write_text(HELPER_BUG, encoding="utf-8")
    wrong = [fenced(mean_source(f"_total(xs) / (len(xs) - {n})")) for n in (1, 2, 3, 4)] + [
        fenced(f"def _total(xs):\n    return sum(xs) + {n}\n") for n in (1, 2)
    ]
    with ScriptedServer(wrong) as server:
        code = fix(project, server, "--write")  # 6 turns: 4 for mean, 2 for _total
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "widening the scope to _total in stats.py (`mean` calls it) after 4 turns" in err
    assert out.startswith("no fix found after 6 attempts\nlast failure:\npytest: 1 failed\n")
    assert "assert 2.6666666666666665 == 2" in out  # the last candidate's run: _total + 2
    assert (project / "stats.py").read_text(encoding="utf-8") == HELPER_BUG and not (project / "stats.py.orig").exists()


MEAN_BUG = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n"


def git(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60, check=True)


def test_the_diff_applies_with_git_apply_and_patch_p1_from_the_top_of_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    repo = tmp_path / "repo"
    (repo / "lib").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "lib" / "stats.py").write_text(MEAN_BUG, encoding="utf-8")
    (repo / "tests" / "test_stats.py").write_text(TESTS, encoding="utf-8")
    git(repo, "init", "-q")
    monkeypatch.chdir(repo / "tests")  # run from a subfolder, the file given relative to it
    with ScriptedServer([fenced("def mean(xs):\n    return sum(xs) / len(xs)\n")]) as server:
        code = main(
            [
                "fix",
                "../lib/stats.py",
                "--tests",
                "test_stats.py",
                "--text-tools",
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--api-key-env",
                KEYS_ENV,
                "--retries",
                "1",
                "--timeout",
                "60",
            ]
        )
    diff, err = capsys.readouterr()
    assert code == 0, err
    assert diff.startswith("--- a/lib/stats.py\n+++ b/lib/stats.py\n@@ -1,2 +1,2 @@\n")
    fixed = "def mean(xs):\n    return sum(xs) / len(xs)\n"
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git"))
    git(repo, "apply", "--check", stdin=diff)
    git(repo, "apply", stdin=diff)
    assert (repo / "lib" / "stats.py").read_text(encoding="utf-8") == fixed
    patched = subprocess.run(["patch", "-p1"], cwd=copy, input=diff, capture_output=True, text=True, timeout=60)
    assert patched.returncode == 0, patched.stdout + patched.stderr
    assert (copy / "lib" / "stats.py").read_text(encoding="utf-8") == fixed


def test_outside_a_repository_the_diff_is_relative_to_the_current_directory(tmp_path: Path) -> None:
    from humanevalfix.fixer import patch_name

    (tmp_path / "pkg").mkdir()
    file = (tmp_path / "pkg" / "stats.py").resolve()
    assert patch_name(file, cwd=tmp_path) == "pkg/stats.py"
    assert patch_name(file, cwd=tmp_path / "pkg") == "stats.py"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert patch_name(file, cwd=elsewhere) == str(file)  # not under it: the absolute path


def test_verbose_output_keeps_stdout_to_the_diff(project: Path) -> None:
    (project / "stats.py").write_text(MEAN_BUG, encoding="utf-8")
    with ScriptedServer([fenced("def mean(xs):\n    return sum(xs) / len(xs)\n")]) as server:
        proc = run_cli(
            [
                "fix",
                "stats.py",
                "--tests",
                "test_stats.py",
                "-v",
                "--text-tools",
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--api-key-env",
                KEYS_ENV,
                "--retries",
                "1",
                "--timeout",
                "60",
            ],
            cwd=project,
            env=clean_env(**{KEYS_ENV: KEY}),
            timeout=180,
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "--- a/stats.py\n+++ b/stats.py\n@@ -1,2 +1,2 @@\n def mean(xs):\n"
        "-    return sum(xs) / (len(xs) + 1)\n+    return sum(xs) / len(xs)\n"
    )
    assert "E   assert 1.5 == 2" in proc.stderr  # -v: the test report, on stderr
