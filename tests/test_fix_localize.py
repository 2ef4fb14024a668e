"""Fault localisation for `fix`: the original file is run against the user's tests in the real
sandbox (the one `fix` picks), the driver reports each failure as data, and the file's functions
and methods are ranked by what the failures point to. Also: a failure told as the eval tells it,
the scopes planned from the ranking, and what a method scope accepts and splices in."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from humanevalfix.fixer import (
    FailedTest,
    Frame,
    Localizer,
    RunReport,
    Scope,
    Stage,
    UserTestExecutor,
    fix_executor,
    load_tests,
    load_user_file,
    plan,
)
from humanevalfix.fixer.failures import describe
from humanevalfix.fixer.usertests import read_only_paths
from humanevalfix.sandbox.executor import ExecResult, Limits

HELPER_BUG = '''"""Statistics helpers."""


def _total(xs):
    total = 0
    for x in xs[1:]:
        total += x
    return total


def mean(xs):
    """Arithmetic mean of a non-empty list."""
    return _total(xs) / len(xs)
'''

RAISING_HELPER = """def _last(xs):
    return xs[len(xs)]


def spread(xs):
    return _last(sorted(xs)) - sorted(xs)[0]


def count(xs):
    return len(xs)
"""

METHOD_BUG = '''class Acc:
    def __init__(self):
        self.items = []

    def add(self, x):
        self.items.append(x)
        return self

    def mean(self):
        """The mean of the items added."""
        return _total(self.items) / len(self.items[1:])


def _total(xs):
    return sum(xs)
'''

Baseline = Callable[[str, str, str], tuple[Localizer, RunReport]]


@pytest.fixture
def baseline(tmp_path: Path) -> Iterator[Baseline]:
    """Write the module and its tests (a file: its name on the first line; else inline code), run the
    tests on it as `fix` does."""
    made: list[UserTestExecutor] = []

    def run(name: str, source: str, tests: str) -> tuple[Localizer, RunReport]:
        (tmp_path / name).write_text(source, encoding="utf-8")
        if tests.split("\n", 1)[0].endswith(".py"):
            tests_name, tests_source = tests.split("\n", 1)
            (tmp_path / tests_name).write_text(tests_source, encoding="utf-8")
            tests = str(tmp_path / tests_name)
        user_file, user_tests = load_user_file(str(tmp_path / name)), load_tests(tests)
        executor = UserTestExecutor(
            fix_executor("auto", Limits(timeout_s=30), read_only_paths(user_file, user_tests)), user_file, user_tests
        )
        made.append(executor)
        report = executor.check(user_file.source)
        assert report.result.status == "failed", report.result.message
        return Localizer(user_file, user_tests), report

    yield run
    for executor in made:
        executor.close()


@pytest.mark.e2e
def test_the_bug_in_a_helper_ranks_the_tested_function_first_then_the_helper_it_calls(baseline: Baseline) -> None:
    localizer, report = baseline(
        "stats.py",
        HELPER_BUG,
        "test_stats.py\nfrom stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n",
    )
    # The driver's data: the assert failed in the test (no frame in stats.py), 1.666... against 2.
    (failure,) = report.failures
    assert failure.test == "test_stats.py::test_mean" and failure.function == "test_mean"
    assert failure.frames == (Frame("tests", 5, "test_mean"),)
    assert failure.compare == ("==", "1.6666666666666667", "2")
    suspects = localizer.rank(report)
    assert [s.name for s in suspects] == ["mean", "_total"]
    assert suspects[0].why == "the failing test test_mean calls it at test_stats.py:5"
    assert suspects[1].why == "`mean` calls it"
    # Two thirds of the turns for the function, the rest for the helper; the whole file with more turns.
    assert [(s.function, s.turns) for s in plan(suspects, 6, "stats.py")] == [("mean", 4), ("_total", 2)]
    assert [(s.function, s.turns) for s in plan(suspects, 12, "stats.py")] == [("mean", 8), ("_total", 2), (None, 2)]
    assert describe(failure, localizer.tests, localizer.user_file.source, "stats.py") == (
        "Test failed (test_stats.py line 5, in test_mean):\n"
        "assert mean([1, 2, 3]) == 2\n"
        "  call:     mean([1, 2, 3])\n"
        "  expected: 2\n"
        "  got:      1.6666666666666667"
    )


@pytest.mark.e2e
def test_an_exception_ranks_the_function_it_is_raised_in_first_then_the_one_the_test_calls(baseline: Baseline) -> None:
    tests = (
        "test_spread.py\nfrom stats import count, spread\n\n\ndef test_count():\n    assert count([1]) == 1\n\n\n"
        "def test_spread():\n    assert spread([3, 1, 2]) == 2\n"
    )
    localizer, report = baseline("stats.py", RAISING_HELPER, tests)
    (failure,) = report.failures  # test_count passes
    assert failure.error == "IndexError" and failure.compare is None
    assert failure.frames == (Frame("tests", 9, "test_spread"), Frame("file", 6, "spread"), Frame("file", 2, "_last"))
    suspects = localizer.rank(report)
    assert [s.name for s in suspects] == ["_last", "spread"]  # `count` is not pointed to
    assert suspects[0].why == "the IndexError is raised in it at stats.py:2"
    assert (
        suspects[1].why == "the traceback passes through it; the failing test test_spread calls it at test_spread.py:9"
    )
    assert describe(failure, localizer.tests, localizer.user_file.source, "stats.py") == (
        "IndexError: list index out of range\n"
        "  in the test: assert spread([3, 1, 2]) == 2 (test_spread.py line 9, in test_spread)\n"
        "  raised in _last at stats.py line 2: return xs[len(xs)]"
    )


@pytest.mark.e2e
def test_a_method_is_ranked_by_its_class_and_name(baseline: Baseline) -> None:
    tests = (
        "test_acc.py\nfrom calc import Acc\n\n\ndef test_mean():\n    acc = Acc().add(2)\n    assert acc.mean() == 2\n"
    )
    localizer, report = baseline("calc.py", METHOD_BUG, tests)
    suspects = localizer.rank(report)
    assert suspects[0].name == "Acc.mean"
    assert (
        suspects[0].why
        == "the ZeroDivisionError is raised in it at calc.py:11; the failing test test_mean calls it at test_acc.py:6"
    )
    # The test's other calls and the method's helper come after it.
    assert {s.name for s in suspects[1:]} == {"Acc.__init__", "Acc.add", "_total"}
    assert plan(suspects, 6, "calc.py")[0] == Stage("Acc.mean", 4, suspects[0].why)


@pytest.mark.e2e
def test_a_failure_with_nothing_in_the_file_leaves_the_whole_file_in_scope(baseline: Baseline) -> None:
    tests = (
        "test_stats.py\nimport stats\n\n\ndef test_mean():\n    average = getattr(stats, 'me' + 'an')\n"
        "    assert average([1, 2, 3]) == 2\n"
    )
    localizer, report = baseline("stats.py", HELPER_BUG, tests)
    assert report.failures and report.failures[0].frames == (Frame("tests", 6, "test_mean"),)
    assert localizer.rank(report) == []
    assert plan([], 6, "stats.py") == [
        Stage(None, 6, "no failing test's traceback or failing line reaches a function of stats.py")
    ]


@pytest.mark.e2e
def test_inline_and_script_tests_report_the_values_too(baseline: Baseline, tmp_path: Path) -> None:
    localizer, report = baseline("stats.py", HELPER_BUG, "assert mean([0, 5]) == 2.5\nassert mean([1, 2, 3]) == 2\n")
    (failure,) = report.failures
    assert (failure.test, failure.function, failure.frames) == (None, None, (Frame("tests", 2, "<module>"),))
    assert failure.compare == ("==", "1.6666666666666667", "2")
    assert localizer.rank(report)[0].why == "the failing line 2 of the inline tests calls it"
    told = describe(failure, localizer.tests, localizer.user_file.source, "stats.py")
    assert told is not None and told.startswith(
        "Test failed (test line 2):\nassert mean([1, 2, 3]) == 2\n  call:     mean([1, 2, 3])\n  expected: 2"
    )
    # A script file: named by its file; a comparison other than == says what was false.
    localizer, report = baseline(
        "stats.py", HELPER_BUG, "check_stats.py\nfrom stats import mean\n\nassert mean([2, 4]) > 2.5\n"
    )
    told = describe(report.failures[0], localizer.tests, localizer.user_file.source, "stats.py")
    assert (
        told == "Test failed (check_stats.py line 3):\nassert mean([2, 4]) > 2.5\n  call:     mean([2, 4])\n"
        "  mean([2, 4]) = 2.0\n  but `2.0 > 2.5` is false"
    )
    assert localizer.rank(report)[0].why == "the failing line check_stats.py:3 calls it"


def test_a_truth_assert_shows_pytests_explanation() -> None:
    failure = FailedTest(
        "t.py::test_iso",
        "test_iso",
        "AssertionError",
        "assert False\n +  where False = is_iso('2024-1-2')",
        (Frame("tests", 2, "test_iso"),),
    )
    tests = load_tests("assert True\nassert is_iso('2024-1-2')\n")
    assert (
        describe(failure, tests, "", "dates.py")
        == "Test failed (test line 2, in test_iso):\nassert is_iso('2024-1-2')\n  assert False\n"
        "   +  where False = is_iso('2024-1-2')"
    )
    assert (
        describe(FailedTest(None, None, "RuntimeError", "x", ()), tests, "", "dates.py") is None
    )  # nothing to point at


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (1, [("a", 1)]),
        (3, [("a", 3)]),
        (5, [("a", 5)]),
        (6, [("a", 4), ("b", 2)]),
        (9, [("a", 6), ("b", 3)]),
        (12, [("a", 8), ("b", 2), (None, 2)]),
        (14, [("a", 10), ("b", 2), (None, 2)]),
    ],
)
def test_the_first_suspect_gets_two_thirds_of_the_turns_the_others_two_at_least(
    budget: int, expected: list[tuple[str | None, int]]
) -> None:
    from humanevalfix.fixer import Suspect

    suspects = [Suspect("a", 5, ["x"]), Suspect("b", 1, ["y"]), Suspect("c", 1, ["z"])]
    assert [(s.function, s.turns) for s in plan(suspects, budget, "m.py")] == expected
    # One suspect: the whole file after it; none: the whole file from the start.
    assert [(s.function, s.turns) for s in plan(suspects[:1], budget, "m.py")] == [("a", expected[0][1])] + (
        [(None, budget - expected[0][1])] if budget > 5 else []
    )
    assert [(s.function, s.turns) for s in plan([], budget, "m.py")] == [(None, budget)]


# --- what a method scope accepts and splices in --------------------------------------------------

METHOD_FIXED = METHOD_BUG.replace("len(self.items[1:])", "len(self.items)")


def test_a_method_comes_back_alone_or_in_its_class_and_only_it_is_spliced_in() -> None:
    scope = Scope(METHOD_BUG, "calc.py", "calc", "Acc.mean")
    assert scope.method == ("Acc", "mean")
    assert "Change only the method `mean` of the class `Acc` (keep its signature `mean(self)`)" in scope.rules()
    body = '        """The mean of the items added."""\n        return _total(self.items) / len(self.items)\n'
    alone = scope.check("def mean(self):\n" + body.replace("        ", "    "))
    assert alone.ok and alone.code == METHOD_FIXED, alone.message
    indented = scope.check("    def mean(self):\n" + body)  # as it sits in the class
    assert indented.ok and indented.code == METHOD_FIXED
    whole_class = scope.check(
        "import math\n\n\n" + METHOD_FIXED + '\n\nif __name__ == "__main__":\n    print(Acc().add(1).mean())\n'
    )
    assert whole_class.ok and whole_class.code == METHOD_FIXED  # neither the unused import nor the main block
    other = scope.check(METHOD_FIXED.replace("self.items.append(x)", "self.items += [x]"))
    assert not other.ok and "Only `Acc.mean` may change, but your code also changes `Acc.add`" in other.message
    signature = scope.check("def mean(self, n):\n    return n\n")
    assert not signature.ok and "must keep its signature `mean(self)`" in signature.message
    missing = scope.check("class Acc:\n    def average(self):\n        return 0\n")
    assert not missing.ok and "does not define the method `mean` of `Acc`" in missing.message


def test_a_main_block_the_candidate_adds_is_dropped_and_the_files_own_is_kept() -> None:
    fixed_mean = 'def mean(xs):\n    """Arithmetic mean of a non-empty list."""\n    return sum(xs) / len(xs)\n'
    main = '\n\nif __name__ == "__main__":\n    print(mean([1, 2, 3]))\n'
    for function in ("mean", None):
        added = Scope(HELPER_BUG, "stats.py", "stats", function).check(fixed_mean + main)
        assert added.ok and "__main__" not in added.code and "return sum(xs) / len(xs)" in added.code
    own = HELPER_BUG + main
    kept = Scope(own, "stats.py", "stats", "mean").check(fixed_mean + main.replace("[1, 2, 3]", "[9]"))
    assert kept.ok and kept.code == own.replace("_total(xs) / len(xs)", "sum(xs) / len(xs)")


def test_a_failure_is_told_for_the_function_in_scope() -> None:
    """Of several failures, the model is told of the first that points to the function it fixes."""
    user_file_source = RAISING_HELPER
    tests = load_tests("assert count([]) == 1\nassert spread([3, 1]) == 2\n")
    first = FailedTest(
        None, None, "AssertionError", "assert 0 == 1", (Frame("tests", 1, "<module>"),), ("==", "0", "1")
    )
    second = FailedTest(
        None,
        None,
        "IndexError",
        "list index out of range",
        (Frame("tests", 2, "<module>"), Frame("file", 6, "spread"), Frame("file", 2, "_last")),
    )
    report = RunReport(ExecResult("failed", "", "", 0.0, 1), failures=(first, second))

    class _File:  # what Localizer reads of the user's file
        source = user_file_source
        module = "stats"
        path = Path("/nowhere/stats.py")

    localizer = Localizer(_File(), tests)  # type: ignore[arg-type]
    assert localizer.failure_for(report, "_last") is second
    assert localizer.failure_for(report, "count") is first
    assert localizer.failure_for(report, None) is first


LOOPING_HELPER = '''"""Statistics helpers."""


def _total(xs):
    total, i = 0, 0
    while i < len(xs):
        total += xs[i]  # the bug: i never moves on
    return total


def mean(xs):
    return _total(xs) / len(xs)


def count(xs):
    return len(xs)
'''


def _looping(tmp_path: Path, tests: str) -> tuple[Localizer, RunReport]:
    (tmp_path / "stats.py").write_text(LOOPING_HELPER, encoding="utf-8")
    user_file, user_tests = load_user_file(str(tmp_path / "stats.py")), load_tests(tests)
    inner = fix_executor("auto", Limits(timeout_s=4), read_only_paths(user_file, user_tests))
    executor = UserTestExecutor(inner, user_file, user_tests, timeout_s=4)
    try:
        return Localizer(user_file, user_tests), executor.check(user_file.source)
    finally:
        executor.close()


@pytest.mark.e2e
def test_tests_that_hang_are_stopped_before_the_limit_and_point_at_the_loop(tmp_path: Path) -> None:
    """A helper that loops forever: the driver stops the tests at 85% of --timeout, so the run still
    reports, with the frames of the loop, and the later test that would hang too is not started."""
    tests = tmp_path / "test_stats.py"
    tests.write_text(
        "from stats import count, mean\n\n\ndef test_count():\n    assert count([1]) == 1\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\ndef test_mean_again():\n    assert mean([4]) == 4\n",
        encoding="utf-8",
    )
    localizer, report = _looping(tmp_path, str(tests))
    assert report.result.status == "failed", report.result.message
    (failure,) = report.failures
    assert failure.error == "StoppedAtTimeLimit" and failure.function == "test_mean"
    assert failure.frames[0] == Frame("tests", 9, "test_mean") and failure.frames[-1].function == "_total"
    assert "the tests ran past 3.4 s: stopped here" in report.result.message
    assert report.summary == "1 failed, 1 passed"  # test_mean_again never started
    assert [s.name for s in localizer.rank(report)][:2] == ["_total", "mean"]


@pytest.mark.e2e
def test_an_inline_script_that_hangs_is_stopped_too(tmp_path: Path) -> None:
    localizer, report = _looping(tmp_path, "from stats import mean\nassert mean([1, 2, 3]) == 2\n")
    assert report.result.status == "failed", report.result.message
    (failure,) = report.failures
    assert failure.error == "StoppedAtTimeLimit" and failure.frames[-1].function == "_total"
    assert localizer.rank(report)[0].name == "_total"
