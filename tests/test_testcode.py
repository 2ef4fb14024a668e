"""Tests compiled by the harness (sandbox/testcode.py): the judge runs them instead of compiling.

What must hold: the verdict and the message are the ones the judge gives when it compiles the test
itself (a fresh-interpreter executor never gets a compiled test), failing asserts included (their
details are made again from the text); bytes that are not a compiled test are ignored; a server of
another Python gets none; and compiled tests are kept on disk only where candidates cannot write
the host's files, since the judge runs what it is given.
"""

from __future__ import annotations

import base64
import importlib.util
import marshal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from humanevalfix import pyast
from humanevalfix.evaluation import robustness
from humanevalfix.evaluation.plusstore import CaseStore
from humanevalfix.sandbox import testcode
from humanevalfix.sandbox.child import execution, rewriting
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.sandbox.testcode import CompiledTests
from humanevalfix.tasks.task import Task

SAMPLE = ("Python/0", "Python/2", "Python/10", "Python/32", "Python/55", "Python/129", "Python/150")
ADD_TEST = "def check(add):\n    assert add(1, 2) == 3\n    assert add(2, 2) == 4, 'two and two'\n\ncheck(add)\n"
CANDIDATES = {
    "right": "def add(a, b):\n    return a + b\n",
    "wrong": "def add(a, b):\n    return a - b\n",
    "off by one": "def add(a, b):\n    return a + b + (a == 2)\n",
    "raises": "def add(a, b):\n    return a + b + missing\n",
    "syntax": "def add(a, b)\n    return a + b\n",
}


@pytest.fixture(scope="module")
def warm() -> Iterator[Executor]:
    ex = build_executor("bwrap", Limits(timeout_s=20.0))
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def fresh() -> Iterator[Executor]:
    ex = build_executor("bwrap", Limits(timeout_s=20.0), fresh=True)
    yield ex
    ex.close()


def _names(ex: Executor) -> frozenset[str]:
    """The prelude names a server sends in its hello (its first run starts it)."""
    ex.run(CANDIDATES["right"], ADD_TEST)
    code = ex._testcode  # type: ignore[attr-defined]
    assert code is not None, "a bwrap server of this interpreter gets tests compiled by the harness"
    return code._env.prelude_names  # type: ignore[no-any-return]


@pytest.mark.e2e
@pytest.mark.parametrize("kind", sorted(CANDIDATES))
def test_a_compiled_test_gives_the_judges_own_verdict_and_message(warm: Executor, fresh: Executor, kind: str) -> None:
    code = CANDIDATES[kind]
    got, expected = warm.run(code, ADD_TEST), fresh.run(code, ADD_TEST)
    assert (got.status, got.message) == (expected.status, expected.message)


@pytest.mark.e2e
def test_dataset_tasks_with_the_plus_check_score_as_when_the_judge_compiles(
    warm: Executor, fresh: Executor, all_tasks: dict[str, Task], tmp_path: Path
) -> None:
    store = CaseStore(tmp_path / "cases")
    for tid in SAMPLE:
        task = all_tasks[tid]
        program = robustness.check_program(task, store.get(task, None, 0.0, warm))
        for code in (task.canonical_code, task.buggy_code):
            test = task.test + "\n" + program.call
            got, expected = warm.run(code, test, program.support), fresh.run(code, test, program.support)
            assert (got.status, got.message, got.facts) == (expected.status, expected.message, expected.facts), tid


@pytest.mark.e2e
def test_the_judge_runs_the_compiled_test_it_is_given(warm: Executor, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which is why only the harness makes it: code compiled from a test that passes, sent with one
    that fails, passes. (The candidate has no way into the request.)"""
    names = _names(warm)
    forged = CompiledTests(names).for_run("assert True\n", "")
    assert forged is not None
    test = ADD_TEST + "# a test this server has not compiled itself (it does so on a second coming)\n"
    assert warm.run(CANDIDATES["wrong"], test).status == "failed"
    monkeypatch.setattr(warm._testcode, "for_run", lambda test, support: forged)  # type: ignore[attr-defined]
    assert warm.run(CANDIDATES["wrong"], test).status == "passed"


@pytest.mark.e2e
def test_a_test_that_does_not_compile_is_left_to_the_judge(warm: Executor) -> None:
    code = CompiledTests(_names(warm))
    assert code.for_run("def check(:\n", "") is None
    result = warm.run(CANDIDATES["right"], "def check(:\n")
    assert result.status == "error" and "SyntaxError in test line 1" in result.message
    assert code.for_run("x = 1\n" * (testcode.SIZE_LIMIT // 6 + 1), "") is None  # too large: not kept


def test_bytes_that_are_not_a_compiled_test_are_ignored() -> None:
    env = SimpleNamespace(prelude_names=frozenset(), rewriting=rewriting)
    good = execution.compile_test(env, "assert f(1)\n")  # type: ignore[arg-type]
    assert execution.from_bytes(env, execution.to_bytes(good), "assert f(1)\n", "", None) is not None  # type: ignore[arg-type]
    for junk in (
        b"",
        b"not marshal",
        marshal.dumps(("code", None, ())),
        marshal.dumps((good.code, None, ("f", 1))),
        marshal.dumps([1, 2, 3]),
    ):
        assert execution.from_bytes(env, junk, "assert f(1)\n", "", None) is None  # type: ignore[arg-type]


def test_a_server_of_another_python_gets_no_compiled_tests() -> None:
    hello = {"ready": True, "magic": importlib.util.MAGIC_NUMBER.hex(), "names": ["print"]}
    assert CompiledTests.from_hello(hello, None) is not None
    assert CompiledTests.from_hello({**hello, "magic": "00000000"}, None) is None
    assert CompiledTests.from_hello({"ready": True}, None) is None  # an older server: no names
    assert CompiledTests.from_hello({**hello, "names": [1]}, None) is None


def test_compiled_tests_are_kept_on_disk_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = CompiledTests(frozenset({"print"}), tmp_path)
    text = first.for_run(ADD_TEST, "")
    assert text is not None and len(list(tmp_path.glob("*.marshal"))) == 1

    def refuse(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("compiled again")

    monkeypatch.setattr(execution, "compile_test", refuse)
    assert CompiledTests(frozenset({"print"}), tmp_path).for_run(ADD_TEST, "") == text  # another server, same file
    # Other prelude names are another compile (the names the test takes from the candidate differ).
    assert CompiledTests(frozenset({"print", "add"}), tmp_path).for_run(ADD_TEST, "") is None


@pytest.mark.e2e
@pytest.mark.parametrize("kind,kept", [("bwrap", True), ("process", False)])
def test_only_a_level_that_keeps_candidates_off_the_hosts_files_keeps_them_on_disk(
    kind: str, kept: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(testcode.CACHE_ENV, str(tmp_path / "compiled"))
    ex = build_executor(kind, Limits(timeout_s=20.0))
    try:
        assert ex.run(CANDIDATES["right"], ADD_TEST).passed
    finally:
        ex.close()
    assert bool(list((tmp_path / "compiled").glob("*.marshal"))) is kept


def test_the_cache_directory_follows_the_environment(tmp_path: Path) -> None:
    assert testcode.default_directory({testcode.CACHE_ENV: "off"}) is None
    assert testcode.default_directory({testcode.CACHE_ENV: str(tmp_path)}) == tmp_path
    assert testcode.default_directory({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "humanevalfix" / "compiled-tests"


@pytest.mark.e2e
def test_a_request_carries_the_compiled_test_as_base64_of_marshal(warm: Executor) -> None:
    text = CompiledTests(_names(warm)).for_run(ADD_TEST, "")
    assert text is not None
    code, own, wanted = marshal.loads(base64.b64decode(text))
    assert wanted == ("add",) and own is None and code.co_filename == execution.TEST_FILE


class _Cycle:
    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))  # Python code during a collection: a point where threads switch (test_pyast.py)


def test_workers_compile_tests_at_once_without_tripping_cpythons_shared_ast_state(all_tasks: dict[str, Task]) -> None:
    """Each worker's server has its own CompiledTests, and the scorer parses candidates meanwhile
    (pyast.parse): neither may fail. A compile that failed would only fall back to the judge and
    go unseen; without the lock one of these fails in most runs (python/cpython#106905)."""
    tests = [f"{task.test}\n# {round}\n" for round in range(2) for task in all_tasks.values()]
    missing: list[str] = []
    errors: list[str] = []

    def work() -> None:
        code = CompiledTests(frozenset({"print"}))
        for test in tests:
            _Cycle(), _Cycle(), _Cycle()
            if code.for_run(test, "") is None:
                missing.append(test[:40])

    def parse() -> None:
        for test in tests:
            _Cycle(), _Cycle(), _Cycle()
            try:
                pyast.parse(test)
            except SystemError as exc:
                errors.append(str(exc))

    workers = [threading.Thread(target=work) for _ in range(3)] + [threading.Thread(target=parse)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert missing == [] and errors == []


@pytest.mark.e2e
def test_without_a_compiled_test_the_server_compiles_it_on_its_second_coming(
    warm: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server the harness compiles nothing for (another Python's, a test that does not compile
    here) keeps its own cache: the same verdicts and messages the first, second and third time,
    the library after the mark included."""
    assert warm.run(CANDIDATES["right"], ADD_TEST).passed  # the server is up, with its hello read
    monkeypatch.setattr(warm._testcode, "for_run", lambda test, support: None)  # type: ignore[attr-defined]
    support = f"K = 2\n{execution.LIBRARY_MARK}def lib_twice(f, x):\n    return 2 * f(x, x)\n"
    test = ADD_TEST + "assert lib_twice(add, K) == 8\n"
    seen = [
        [
            (r.status, r.message)
            for r in (warm.run(CANDIDATES[c], test, support) for c in ("right", "wrong", "off by one"))
        ]
        for _ in range(3)
    ]
    assert seen[0] == seen[1] == seen[2], seen
    assert [status for status, _message in seen[0]] == ["passed", "failed", "failed"]
    assert "two and two" in seen[0][2][1]
