"""What `fix` asks the model: its own request, built from the user's file and the scope.

The file is never named as if it were a function ("Write the function `stats.py`" was asked of
a text-protocol model once): without --function the model repairs the module, named as one, and
is never asked to rewrite it; with --function it repairs that function, shown with its signature
and docstring, and may be asked to rewrite it from the docstring. Test code the model pastes
along with its fix is dropped, as the benchmark drops it, not refused.

The end-to-end tests run the real command in process: real HTTP to the scripted server in the
text protocol (--text-tools), real pytest runs of the user's tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from humanevalfix.agent import RepairRequest, prompts
from humanevalfix.cli import main
from humanevalfix.fixer import Scope, load_tests, load_user_file, request_for_fix
from humanevalfix.testing.scripted_server import ScriptedServer, fenced, text

from .conftest import KEYS_ENV, scripted_fix_args

KEY = "sk-test-fix-request-0000"

STATS = '''"""Small statistics helpers."""


def mean(xs):
    """The arithmetic mean of xs."""
    return sum(xs) / (len(xs) + 1)


def spread(xs):
    return max(xs) - min(xs)
'''

MEAN_BUGGY = 'def mean(xs):\n    """The arithmetic mean of xs."""\n    return sum(xs) / (len(xs) + 1)\n'
MEAN_FIXED = 'def mean(xs):\n    """The arithmetic mean of xs."""\n    return sum(xs) / len(xs)\n'

TESTS = """from stats import mean, spread


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_spread():
    assert spread([3, 1, 2]) == 2
"""

# The model's last answer: the fix, with the user's test file pasted after it.
FIX_WITH_PASTED_TESTS = "import pytest\n\n" + MEAN_FIXED + "\n\n" + TESTS

# Tests that reach `mean` by a name the file does not give it, in another thread (the call tracer
# follows the tests' own thread only): nothing points to a function of stats.py (no frame in it, no
# call of its names on the failing line, no traced call), so the scope is the whole file.
INDIRECT_TESTS = TESTS.replace(
    "    assert mean([1, 2, 3]) == 2",
    "    from concurrent.futures import ThreadPoolExecutor\n\n    average = getattr(__import__('stats'), 'mean')\n"
    "    with ThreadPoolExecutor(1) as pool:\n        assert pool.submit(average, [1, 2, 3]).result() == 2",
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "stats.py").write_text(STATS, encoding="utf-8")
    (tmp_path / "test_stats.py").write_text(TESTS, encoding="utf-8")
    return tmp_path


def run_fix(project: Path, server: ScriptedServer, *extra: str) -> int:
    return main(
        [
            "fix",
            str(project / "stats.py"),
            "--tests",
            str(project / "test_stats.py"),
            *scripted_fix_args(server),
            "--max-iters",
            "5",
            *extra,
        ]
    )


def all_text(requests: list[Any]) -> str:
    return "\n".join(m["content"] for r in requests for m in r.body["messages"])


def strategies(requests: list[Any]) -> list[str]:
    """Which way each request asks: rewrite (its own system prompt), explain (a diagnosis first), or fix."""
    out = []
    for r in requests:
        messages = r.body["messages"]
        if messages[0]["content"] == prompts.REWRITE_SYSTEM_PROMPT:
            out.append("rewrite")
        elif "Before the code, write one sentence" in messages[-1]["content"]:
            out.append("explain")
        else:
            out.append("fix")
    return out


@pytest.mark.e2e
def test_the_whole_file_is_repaired_as_a_module_never_as_a_function_and_pasted_tests_are_dropped(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    (project / "test_stats.py").write_text(INDIRECT_TESTS, encoding="utf-8")
    replies = [fenced(STATS), fenced(STATS), text("The code looks right to me."), fenced(FIX_WITH_PASTED_TESTS)]
    with ScriptedServer(replies) as server:
        code = run_fix(project, server, "--redraws", "0")  # each stuck turn escalates
        requests = server.chat_requests()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(requests) == 4 and all("tools" not in r.body for r in requests)
    # Stuck on the unchanged file: explain; there is no rewrite of a module, not even in the second half.
    assert strategies(requests) == ["fix", "explain", "explain", "explain"]
    everything = all_text(requests)
    assert "`stats.py`" not in everything and "function `stats" not in everything
    assert prompts.REWRITE_SYSTEM_PROMPT not in everything
    first = requests[0].body["messages"][1]["content"]
    assert first.startswith("Fix the bug in the module `stats`.")
    assert "What it should do:\nSmall statistics helpers." in first  # the module's docstring
    assert "This is the whole file stats.py" in first  # the scope's rules
    # How the file fails now, from the run that checked the tests before the repair (not run again).
    assert "Run as it is now, the code fails:" in first and "pytest: 1 failed, 1 passed" in first
    assert err.count("tests: failed") == 0 and err.count("tests: passed") == 1
    assert prompts.UNCHANGED_MODULE in requests[1].body["messages"][-1]["content"]
    assert "Reply with the fixed definitions (only those you change)" in requests[3].body["messages"][-1]["content"]
    # The pasted tests and their imports are not in the fix: only `mean` changed.
    assert (project / "stats.py").read_text(encoding="utf-8") == STATS  # no --write
    assert "-    return sum(xs) / (len(xs) + 1)\n+    return sum(xs) / len(xs)\n" in out
    assert "test_mean" not in out and "import" not in out


@pytest.mark.e2e
def test_one_function_is_named_with_its_signature_and_rewritten_from_its_docstring(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY)
    pasted = MEAN_FIXED + "\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"
    replies = [fenced(MEAN_BUGGY), fenced(MEAN_BUGGY), fenced(MEAN_BUGGY), fenced(pasted)]
    with ScriptedServer(replies) as server:
        code = run_fix(project, server, "--function", "mean", "--write", "--redraws", "0")
        requests = server.chat_requests()
    _, err = capsys.readouterr()
    assert code == 0, err
    assert strategies(requests) == ["fix", "explain", "rewrite", "rewrite"]
    everything = all_text(requests)
    assert "`stats.py`" not in everything and "function `stats" not in everything
    first = requests[0].body["messages"][1]["content"]
    assert first.startswith("Fix the bug in `mean`.\n\nWhat it should do:\nThe arithmetic mean of xs.")
    assert "Change only the function `mean` (keep its signature `mean(xs)`)" in first
    assert "Run as it is now, the function fails:" in first
    rewrite = requests[2].body["messages"][1]["content"]
    assert rewrite.startswith("Write the function `mean`.\n\nWhat it should do:\nThe arithmetic mean of xs.")
    assert "Start from this header:\n```python\n" in rewrite and "def mean(xs):\n```" in rewrite
    assert "len(xs) + 1" not in rewrite  # the buggy body is not shown
    # The pasted test function is dropped, not refused; the file gets only the fix.
    assert "refused" not in err
    assert (project / "stats.py").read_text(encoding="utf-8") == STATS.replace("(len(xs) + 1)", "len(xs)")


def test_the_request_names_the_scope(tmp_path: Path) -> None:
    package = tmp_path / "lib"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "stats.py").write_text(STATS, encoding="utf-8")
    user_file = load_user_file(str(package / "stats.py"))
    tests = load_tests("assert mean([1, 2, 3]) == 2")

    def request(function: str | None, feedback: str = "tests") -> RepairRequest:
        return request_for_fix(user_file, tests, Scope(STATS, "stats.py", user_file.module, function), feedback)

    whole = request(None)
    assert (whole.target.name, whole.target.function, whole.rewrite) == ("lib.stats", None, None)
    assert whole.tests == tests.source and whole.description == "Small statistics helpers."
    assert whole.task_id == str(package / "stats.py") and whole.code == STATS
    one = request("mean", feedback="example")
    assert one.target.function == "mean" and one.tests is None  # the user's tests have no example part
    assert one.description == "The arithmetic mean of xs." and one.rewrite is not None
    # A function without a docstring has nothing to be rewritten from.
    bare = request("spread")
    assert bare.description == "" and bare.rewrite is None
    assert "`spread(xs)`" in bare.rules


def test_pasted_test_code_is_dropped_and_the_files_own_names_are_not() -> None:
    scope = Scope(STATS, "stats.py", "stats")
    pasted = scope.check(
        "from stats import mean\nimport pytest\n\n\n"
        + MEAN_FIXED
        + "\n\nclass TestMean:\n    pass\n\n\ndef check(f):\n    assert f([2]) == 2\n"
    )
    assert pasted.ok, pasted.message
    assert pasted.code == STATS.replace("(len(xs) + 1)", "len(xs)")
    only_tests = scope.check(TESTS)
    assert not only_tests.ok and "defines no function, class or constant" in only_tests.message
    # A test-like name the file defines itself is the file's, and may be fixed.
    own = STATS + "\n\ndef test_data():\n    return [1]\n"
    fixed = Scope(own, "stats.py", "stats").check("def test_data():\n    return [1, 2]\n")
    assert fixed.ok and "return [1, 2]" in fixed.code
    # Other new public names are still refused.
    added = scope.check(MEAN_FIXED + "\n\ndef helper():\n    return 1\n")
    assert not added.ok and "adds the public name(s) `helper`" in added.message
