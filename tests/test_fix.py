"""`fix FILE --tests TESTS` end to end: the real CLI in a child process, real HTTP to the scripted
server, the real subprocess executor running pytest (or a script) against each candidate, and the
user's files in a temp dir checked byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from humanevalfix.cli import main
from humanevalfix.fixer import Scope, UserTestExecutor, fix_executor, load_tests, load_user_file
from humanevalfix.fixer.usertests import read_only_paths
from humanevalfix.sandbox.executor import Limits
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, tool_call

from .conftest import KEYS_ENV, REPO_ROOT, clean_env, last_message, run_cli, turn_of

KEY = "sk-test-fix-0000ffff"

BUGGY = '''"""Small date helpers (a fixture for `fix`)."""
import re

SEPARATOR = "-"


def parse_date(text):
    # ISO dates only: YYYY-MM-DD
    year, month, day = text.split(SEPARATOR)
    return int(year), int(month), int(day) + 1


def format_date(parts):
    """The inverse of parse_date."""
    return "%04d-%02d-%02d" % parts


def is_iso(text):
    return re.fullmatch(r"\\d{4}-\\d{2}-\\d{2}", text) is not None
'''

FIXED = BUGGY.replace("int(day) + 1", "int(day)")

PYTEST_FILE = """from dates import format_date, parse_date


def test_parse_date():
    assert parse_date("2024-01-02") == (2024, 1, 2)


def test_round_trip():
    assert format_date(parse_date("1999-12-31")) == "1999-12-31"


def test_is_iso():
    from dates import is_iso

    assert is_iso("2024-01-02") and not is_iso("2024-1-2")
"""


def parse_date_source(expression: str) -> str:
    """parse_date as a model would send it, returning `expression` for the day."""
    return (
        "def parse_date(text):\n"
        "    # ISO dates only: YYYY-MM-DD\n"
        "    year, month, day = text.split(SEPARATOR)\n"
        f"    return int(year), int(month), {expression}\n"
    )


# `\x20`: a blank context line's one space, escaped so that no line of this file ends in whitespace.
EXPECTED_DIFF = """\
--- a/dates.py
+++ b/dates.py
@@ -7,7 +7,7 @@
 def parse_date(text):
     # ISO dates only: YYYY-MM-DD
     year, month, day = text.split(SEPARATOR)
-    return int(year), int(month), int(day) + 1
+    return int(year), int(month), int(day)
\x20
\x20
 def format_date(parts):
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "dates.py").write_text(BUGGY, encoding="utf-8")
    (root / "test_dates.py").write_text(PYTEST_FILE, encoding="utf-8")
    return root


def by_turn(answers: Callable[[int], Response]) -> Callable[[Recorded], Response]:
    return lambda rec: answers(turn_of(rec))


def model_args(server: ScriptedServer) -> list[str]:
    return [
        "--base-url",
        server.base_url,
        "--model",
        "scripted-model",
        "--api-key-env",
        KEYS_ENV,
        "--retries",
        "2",
        "--request-timeout",
        "20",
        "--timeout",
        "30",
    ]


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def fix_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(["fix", *args], cwd=cwd, env=clean_env(**{KEYS_ENV: KEY}), timeout=180)


# --- end to end through the CLI ----------------------------------------------------------------


@pytest.mark.e2e
def test_pytest_file_fix_prints_the_diff_writes_it_and_keeps_the_original(project: Path, tmp_path: Path) -> None:
    answers = {0: parse_date_source("int(day) - 1"), 1: parse_date_source("int(day)")}
    trace = tmp_path / "traces" / "session.json"
    with ScriptedServer(by_turn(lambda turn: tool_call(answers[turn]))) as server:
        proc = fix_cli(
            ["dates.py", "--tests", "test_dates.py", "--write", "--trace", str(trace), *model_args(server)], project
        )
        requests = server.chat_requests()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == EXPECTED_DIFF
    # The failing tests point to parse_date: it is the scope, and the first, wrong fix went back
    # to the model as the eval tells a failure (the call, expected, got), with pytest's count.
    assert "scope: parse_date in dates.py (the failing test test_parse_date calls it at test_dates.py:5" in proc.stderr
    feedback = last_message(requests[1])
    assert feedback["role"] == "tool"
    assert (
        'Test failed (test_dates.py line 5, in test_parse_date):\nassert parse_date("2024-01-02") == (2024, 1, 2)\n'
        '  call:     parse_date("2024-01-02")\n  expected: (2024, 1, 2)\n  got:      (2024, 1, 1)\n\n'
        "pytest: 2 failed, 1 passed"
    ) in feedback["content"]
    assert len(requests) == 2
    assert all(r.api_key == KEY for r in requests)
    # --write: the fix in place, the original beside it, nothing else in the user's tree.
    assert (project / "dates.py").read_text(encoding="utf-8") == FIXED
    assert (project / "dates.py.orig").read_text(encoding="utf-8") == BUGGY
    assert listing(project) == ["dates.py", "dates.py.orig", "test_dates.py"]
    real = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_dates.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"),
    )
    assert real.returncode == 0, real.stdout
    assert "3 passed" in real.stdout
    # The trace has the eval's trace fields, and no key.
    document = json.loads(trace.read_text(encoding="utf-8"))
    assert set(document) == {
        "task_id",
        "sample",
        "passed",
        "passed_first",
        "stop_reason",
        "tool_mode",
        "error",
        "attempts",
        "messages",
    }
    assert document["passed"] is True and document["stop_reason"] == "passed"
    assert [a["outcome"] for a in document["attempts"]] == ["failed", "passed"]
    assert KEY not in trace.read_text(encoding="utf-8")
    assert "turn 2" in proc.stderr and "fixed" in proc.stderr


@pytest.mark.e2e
def test_inline_tests_with_function_print_a_diff_and_leave_the_file_alone(project: Path) -> None:
    """The third command of the README, through `python -m src` from the repository root."""
    with ScriptedServer([tool_call(parse_date_source("int(day)"))]) as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "humanevalfix",
                "fix",
                str(project / "dates.py"),
                "--function",
                "parse_date",
                "--tests",
                "assert parse_date('2024-01-02') == (2024, 1, 2)",
                *model_args(server),
            ],
            cwd=REPO_ROOT,
            env=clean_env(**{KEYS_ENV: KEY}),
            capture_output=True,
            text=True,
            timeout=180,
        )
        prompt = server.chat_requests()[0].body["messages"][1]["content"]
    assert proc.returncode == 0, proc.stderr
    absolute = str(project / "dates.py")
    assert proc.stdout == EXPECTED_DIFF.replace("a/dates.py", absolute).replace("b/dates.py", absolute)
    assert (project / "dates.py").read_text(encoding="utf-8") == BUGGY
    assert listing(project) == ["dates.py", "test_dates.py"]
    assert "Change only the function `parse_date`" in prompt
    assert "assert parse_date('2024-01-02') == (2024, 1, 2)" in prompt


@pytest.mark.e2e
def test_no_fix_found_leaves_the_file_byte_for_byte(project: Path) -> None:
    original = BUGGY.replace("\n", "\r\n").rstrip("\r\n").encode("utf-8")  # CRLF, no final newline
    (project / "dates.py").write_bytes(original)
    before = listing(project)
    wrong = lambda turn: tool_call(parse_date_source(f"int(day) + {turn + 2}"))  # noqa: E731
    with ScriptedServer(by_turn(wrong)) as server:
        proc = fix_cli(
            ["dates.py", "--tests", "test_dates.py", "--write", "--max-iters", "1", *model_args(server)], project
        )
        calls = len(server.chat_requests())
    assert proc.returncode == 1, proc.stderr
    assert calls == 2
    assert proc.stdout.startswith("no fix found after 2 attempts\nlast failure:\npytest: 2 failed, 1 passed\n")
    assert "assert (2024, 1, 5) == (2024, 1, 2)" in proc.stdout  # the last candidate's failure
    assert proc.stderr.count("tests: failed") == 2  # each candidate ran once (the last is not rerun)
    assert (project / "dates.py").read_bytes() == original
    assert listing(project) == before
    assert "unchanged" in proc.stderr


@pytest.mark.e2e
def test_oracle_style_model_may_change_only_the_named_function(project: Path, tmp_path: Path) -> None:
    """An oracle-like model answers with the whole corrected file; its first answer also rewrites
    `format_date`, which --function parse_date forbids: refused, not run; the second is applied.
    With --feedback none the loop only imports candidates, so the fix is tested once at the end."""
    also_format = FIXED.replace('return "%04d-%02d-%02d" % parts', 'return "-".join(str(p) for p in parts)')
    answers = {0: also_format, 1: FIXED}
    trace = tmp_path / "trace.json"
    with ScriptedServer(by_turn(lambda turn: tool_call(answers[turn]))) as server:
        proc = fix_cli(
            [
                "dates.py",
                "--function",
                "parse_date",
                "--tests",
                "test_dates.py",
                "--write",
                "--trace",
                str(trace),
                "--feedback",
                "none",
                *model_args(server),
            ],
            project,
        )
        requests = server.chat_requests()
    assert proc.returncode == 0, proc.stderr
    refusal = last_message(requests[1])["content"]
    assert refusal.startswith("Only `parse_date` may change")
    assert "`format_date`" in refusal
    attempts = json.loads(trace.read_text(encoding="utf-8"))["attempts"]
    assert [a["outcome"] for a in attempts] == ["invalid", "passed"]
    assert proc.stdout == EXPECTED_DIFF
    assert (project / "dates.py").read_text(encoding="utf-8") == FIXED
    assert "refused: Only `parse_date` may change" in proc.stderr
    assert "running the tests on the final candidate" in proc.stderr
    assert "It must pass these tests" not in requests[0].body["messages"][1]["content"]


# --- bad input: one clear message, exit 2, before any model call -------------------------------


def write(root: Path, name: str, text: str) -> str:
    (root / name).write_text(text, encoding="utf-8")
    return str(root / name)


BAD_INPUTS: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "missing file": (lambda r: [str(r / "nope.py"), "--tests", "assert True"], "file not found:"),
    "syntax error": (
        lambda r: [write(r, "broken.py", "def f(:\n    pass\n"), "--tests", "assert f()"],
        "broken.py: syntax error at line 1",
    ),
    "unknown function": (
        lambda r: [str(r / "dates.py"), "--function", "parse", "--tests", "assert True"],
        "has no top-level function `parse` (its functions: parse_date, format_date, is_iso)",
    ),
    "missing tests file": (
        lambda r: [str(r / "dates.py"), "--tests", "tests/test_nope.py"],
        "--tests: file not found: tests/test_nope.py",
    ),
    "tests do not parse": (
        lambda r: [str(r / "dates.py"), "--tests", "assert parse_date(("],
        "--tests (inline code): syntax error at line 1",
    ),
    "tests already pass": (
        lambda r: [str(r / "dates.py"), "--tests", "assert format_date((2024, 1, 2)) == '2024-01-02'"],
        "already pass on",
    ),
    "tests import a missing module": (
        lambda r: [
            str(r / "dates.py"),
            "--tests",
            write(
                r,
                "test_missing.py",
                "import not_installed_anywhere\n\n\ndef test_x():\n    assert not_installed_anywhere.f()\n",
            ),
        ],
        "import `not_installed_anywhere`, which is not installed",
    ),
    "tests import a missing name": (
        lambda r: [
            str(r / "dates.py"),
            "--tests",
            write(r, "test_name.py", "from dates import parse_iso\n\n\ndef test_x():\n    assert parse_iso('x')\n"),
        ],
        "import `parse_iso` from `dates`, but",
    ),
    "tests use an undefined name": (
        lambda r: [str(r / "dates.py"), "--tests", "assert parse_dat('2024-01-02') == (2024, 1, 2)"],
        "use `parse_dat`, which is not defined",
    ),
    "sandbox that hides the files": (
        lambda r: [str(r / "dates.py"), "--tests", "assert True", "--sandbox", "restricted"],
        "--sandbox restricted: fix runs pytest and imports your modules",
    ),
    "backup would be overwritten": (
        lambda r: [str(r / "dates.py"), "--tests", "assert parse_date('2024-01-02') == (2024, 1, 2)", "--write"],
        "dates.py.orig already exists",
    ),
}


@pytest.mark.e2e
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_exits_2_with_one_clear_message(
    case: str, project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEYS_ENV, raising=False)  # nothing may reach a model: there is none
    monkeypatch.setenv("COLUMNS", "1000")  # one line per message, whatever the paths' length
    if case == "backup would be overwritten":
        write(project, "dates.py.orig", "something else\n")
    make_args, expected = BAD_INPUTS[case]
    args = make_args(project)
    before = {p: p.read_bytes() for p in project.rglob("*")}
    code = main(
        [
            "fix",
            *args,
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--api-key-env",
            KEYS_ENV,
            "--timeout",
            "30",
        ]
    )
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2, err
    assert len(errors) == 1, err
    assert expected in " ".join(err.split()), err
    assert out == ("already passing\n" if case == "tests already pass" else "")
    assert {p: p.read_bytes() for p in project.rglob("*")} == before


# --- the pieces: running the user's tests, and what a candidate may change ---------------------


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A package whose __init__ re-exports from the module: the candidate must be what it imports."""
    root = tmp_path / "lib"
    pkg = root / "calendarx"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .dates import parse_date\n", encoding="utf-8")
    (pkg / "_sep.py").write_text('SEPARATOR = "-"\n', encoding="utf-8")
    (pkg / "dates.py").write_text(BUGGY.replace('SEPARATOR = "-"', "from ._sep import SEPARATOR"), encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_cal.py").write_text(
        "from calendarx import parse_date\n\n\ndef test_parse():\n"
        "    assert parse_date('2024-01-02') == (2024, 1, 2)\n",
        encoding="utf-8",
    )
    return root


@pytest.fixture
def executor_for() -> Iterator[Callable[[Path, str], UserTestExecutor]]:
    """The executor the CLI uses (the sandbox `auto` picks for fix), closed after the test."""
    made: list[UserTestExecutor] = []

    def build(file: Path, tests: str) -> UserTestExecutor:
        user_file, user_tests = load_user_file(str(file)), load_tests(tests)
        inner = fix_executor("auto", Limits(timeout_s=30), read_only_paths(user_file, user_tests))
        made.append(UserTestExecutor(inner, user_file, user_tests))
        return made[-1]

    yield build
    for executor in made:
        executor.close()


@pytest.mark.e2e
def test_candidate_is_imported_in_place_of_the_file_inside_its_package(
    package: Path, executor_for: Callable[[Path, str], UserTestExecutor]
) -> None:
    before = listing(package)
    user_file = load_user_file(str(package / "calendarx" / "dates.py"))
    assert (user_file.module, user_file.import_root) == ("calendarx.dates", package)
    executor = executor_for(package / "calendarx" / "dates.py", str(package / "tests" / "test_cal.py"))
    buggy = executor.check(user_file.source)
    fixed = executor.check(user_file.source.replace("int(day) + 1", "int(day)"))
    crashing = executor.check(user_file.source.replace("int(day) + 1", "int(day) // 0"))
    assert not buggy.passed and "assert (2024, 1, 3) == (2024, 1, 2)" in buggy.result.message
    assert fixed.passed, fixed.result.message
    # The traceback shows the candidate's line (the file on disk has another one there).
    assert "ZeroDivisionError" in crashing.result.message
    assert "return int(year), int(month), int(day) // 0" in crashing.result.message
    assert listing(package) == before  # no __pycache__, no .pytest_cache


@pytest.mark.e2e
def test_plain_assert_script_reports_the_values(
    project: Path, executor_for: Callable[[Path, str], UserTestExecutor]
) -> None:
    script = write(
        project,
        "check_dates.py",
        "from dates import parse_date\n\nresult = parse_date('2024-01-02')\nassert result == (2024, 1, 2), result\n"
        "print('checked')\n",
    )
    tests = load_tests(script)
    assert tests.kind == "script"
    executor = executor_for(project / "dates.py", script)
    buggy = executor.check(BUGGY)
    assert buggy.result.status == "failed"
    assert "AssertionError: (2024, 1, 3)" in buggy.result.message
    assert 'check_dates.py", line 4' in buggy.result.message
    fixed = executor.check(FIXED)
    assert fixed.passed
    assert "checked" in fixed.result.output  # what the tests printed, apart from the report


def test_whole_file_scope_keeps_public_names_and_signatures() -> None:
    scope = Scope(BUGGY, "dates.py", "dates")
    signature = scope.check("def format_date(parts, sep):\n    return sep.join(parts)\n")
    assert not signature.ok and "`format_date` must keep its signature `format_date(parts)`" in signature.message
    public = scope.check("def split_date(text):\n    return text.split('-')\n")
    assert not public.ok and "adds the public name(s) `split_date`" in public.message
    kind = scope.check("format_date = None\n")
    assert not kind.ok and "must stay a function" in kind.message
    helper = scope.check(
        "import functools\n\n\ndef _day(text):\n    return int(text)\n\n\n"
        "def parse_date(text):\n    year, month, day = text.split(SEPARATOR)\n"
        "    return int(year), int(month), _day(day)\n"
    )
    assert helper.ok, helper.message
    expected = BUGGY.replace(
        "def parse_date(text):\n    # ISO dates only: YYYY-MM-DD\n    year, month, day = text.split(SEPARATOR)\n"
        "    return int(year), int(month), int(day) + 1\n",
        "def _day(text):\n    return int(text)\n\n\ndef parse_date(text):\n    # ISO dates only: YYYY-MM-DD\n"
        "    year, month, day = text.split(SEPARATOR)\n    return int(year), int(month), _day(day)\n",
    )
    assert helper.code == expected  # only what changed: the unused import dropped, the dropped comment back


def test_function_scope_accepts_the_whole_file_when_only_that_function_changed() -> None:
    scope = Scope(BUGGY, "dates.py", "dates", "parse_date")
    whole = scope.check(FIXED + "\n\nassert parse_date('2024-01-02') == (2024, 1, 2)\n")
    assert whole.ok and whole.code == FIXED
    constant = scope.check(FIXED.replace('SEPARATOR = "-"', 'SEPARATOR = "/"'))
    assert not constant.ok and "also changes `SEPARATOR`" in constant.message
    renamed = scope.check("def parse_date(value):\n    return value\n")
    assert not renamed.ok and "must keep its original signature" in renamed.message
