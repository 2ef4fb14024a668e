"""Failure messages a model can act on: the call, the expected and the actual value; for an
exception its type, message and the candidate line that raised; one failure, capped.

Most cases run through a real executor (the warm one `--sandbox auto` picks); the rewriting
itself is also checked in-process, for the expressions the dataset's tests use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from humanevalfix.sandbox.child import assertions, rewriting
from humanevalfix.sandbox.child.execution import MESSAGE_CAP
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor


@pytest.fixture(scope="module")
def ex() -> Iterator[Any]:
    executor = build_executor("auto", Limits(timeout_s=10.0))
    yield executor
    executor.close()


# From the dataset (Python/0), as HumanEvalPack gives it.
HAS_CLOSE = """from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    for idx, elem in enumerate(numbers):
        for idx2, elem2 in enumerate(numbers):
            if idx != idx2:
                distance = elem - elem2
                if distance < threshold:
                    return True

    return False
"""
HAS_CLOSE_TEST = """



def check(has_close_elements):
    assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True
    assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False
    assert has_close_elements([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True

check(has_close_elements)"""


@pytest.mark.e2e
def test_equality_failure_shows_the_call_expected_and_actual(ex: Any) -> None:
    result = ex.run(HAS_CLOSE, HAS_CLOSE_TEST)
    assert result.status == "failed"
    assert result.message == (
        "Test failed (test line 7):\n"
        "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False\n"
        "  call:     has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05)\n"
        "  expected: False\n"
        "  got:      True"
    )


@pytest.mark.e2e
def test_only_the_first_failure_is_reported(ex: Any) -> None:
    test = "def check(f):\n    assert f(1) == 10\n    assert f(2) == 20\ncheck(f)\n"
    result = ex.run("def f(x):\n    return -x\n", test)
    assert "f(1)" in result.message and "got:      -1" in result.message
    assert "f(2)" not in result.message


@pytest.mark.e2e
def test_arguments_are_shown_as_values_not_names(ex: Any) -> None:
    test = (
        "def check(candidate):\n    for x in range(2, 8):\n        assert candidate(x, x + 1) == str(x)\n"
        "check(change_base)\n"
    )
    result = ex.run("def change_base(x, base):\n    return str(base)\n", test)
    assert "call:     change_base(2, 3)" in result.message
    assert "expected: '2'" in result.message and "got:      '3'" in result.message


@pytest.mark.e2e
def test_not_equal(ex: Any) -> None:
    result = ex.run("def f(x):\n    return 3\n", "def check(f):\n    assert f(1) != 3\ncheck(f)\n")
    assert "call:     f(1)" in result.message
    assert "expected: anything but 3" in result.message and "got:      3" in result.message


@pytest.mark.e2e
def test_abs_difference_below_epsilon_names_the_inner_call(ex: Any) -> None:
    test = "def check(candidate):\n    assert abs(candidate(1.33) - 0.33) < 1e-6\ncheck(truncate_number)\n"
    result = ex.run("def truncate_number(number):\n    return 0.5\n", test)
    lines = result.message.splitlines()
    assert lines[1] == "assert abs(candidate(1.33) - 0.33) < 1e-6"
    assert "call:     truncate_number(1.33) returned 0.5" in result.message
    assert "abs(candidate(1.33) - 0.33) = 0.16999999999999998" in result.message
    assert "`0.16999999999999998 < 1e-6` is false" in result.message


@pytest.mark.e2e
def test_less_than_on_the_call_itself(ex: Any) -> None:
    result = ex.run("def f(x):\n    return 9\n", "def check(f):\n    assert f(1) < 5\ncheck(f)\n")
    assert "call:     f(1)" in result.message and "got:      9" in result.message
    assert "`9 < 5` is false" in result.message


@pytest.mark.e2e
def test_is_true(ex: Any) -> None:
    test = "def check(candidate):\n    assert candidate([3, 2, 3], 9) is True\ncheck(will_it_fly)\n"
    result = ex.run("def will_it_fly(q, w):\n    return 1\n", test)
    assert "call:     will_it_fly([3, 2, 3], 9)" in result.message
    assert "expected: True" in result.message and "got:      1" in result.message


@pytest.mark.e2e
def test_bare_and_negated_asserts(ex: Any) -> None:
    test = (
        "def check(candidate):\n    assert candidate('<>')\n    assert not candidate('<<')\ncheck(correct_bracketing)\n"
    )
    first = ex.run("def correct_bracketing(s):\n    return False\n", test)
    assert "expected: a true value" in first.message and "got:      False" in first.message
    second = ex.run("def correct_bracketing(s):\n    return True\n", test)
    assert "call:     correct_bracketing('<<')" in second.message
    assert "expected: a false value" in second.message and "got:      True" in second.message


@pytest.mark.e2e
def test_assert_message_and_a_variable_operand(ex: Any) -> None:
    test = "def check(f):\n    got = f(2)\n    assert got == 5, 'five expected'\ncheck(f)\n"
    result = ex.run("def f(x):\n    return 4\n", test)
    assert "expected: 5" in result.message and "got:      4" in result.message
    assert "assertion message: five expected" in result.message


@pytest.mark.e2e
def test_exception_reports_type_message_call_and_candidate_line(ex: Any) -> None:
    code = "def f(x):\n    items = []\n    return items[x]\n"
    result = ex.run(code, "def check(f):\n    assert f(1) == 2\ncheck(f)\n")
    assert result.message == (
        "IndexError: list index out of range\n"
        "  while calling f(1) (test line 2)\n"
        "  raised at candidate line 3: return items[x]"
    )


@pytest.mark.e2e
def test_exception_at_import_names_the_candidate_line(ex: Any) -> None:
    result = ex.run("x = 1 / 0\n\ndef f(x):\n    return 2\n", "def check(f):\n    assert f(1) == 2\ncheck(f)\n")
    assert result.message.startswith("ZeroDivisionError: division by zero")
    assert "raised at candidate line 1: x = 1 / 0" in result.message


@pytest.mark.e2e
def test_syntax_errors(ex: Any) -> None:
    bad_code = ex.run("def f(x)\n    return 2\n", "def check(f):\n    assert f(1) == 2\ncheck(f)\n")
    assert bad_code.status == "failed" and bad_code.message.startswith("SyntaxError in candidate line 1")
    bad_test = ex.run("def f(x):\n    return 2\n", "def check(f)\n    assert f(1) == 2\n")
    assert bad_test.status == "error" and "SyntaxError in test line 1" in bad_test.message


@pytest.mark.e2e
def test_huge_values_are_capped(ex: Any) -> None:
    result = ex.run(
        "def f(x):\n    return list(range(100000))\n", "def check(f):\n    assert f(1) == [2] * 50000\ncheck(f)\n"
    )
    assert result.status == "failed"
    assert len(result.message) <= MESSAGE_CAP
    assert "..." in result.message and "got:      [0, 1, 2" in result.message


@pytest.mark.e2e
def test_a_passing_test_still_passes_after_rewriting(ex: Any) -> None:
    test = (
        "def check(f):\n"
        "    assert f(1) == 2\n"
        "    assert all(f(x) == x + 1 for x in range(5))\n"
        "    assert 0 < f(1) < 3\n"
        "    assert (y := f(2)) == 3 and y == 3\n"
        "    assert f(*[4]) == f(x=4) == 5\n"
        "    assert [f(i) for i in range(2)][1:] == [2]\n"
        "    assert {'a': f(0)}['a'] == 1, f'bad {f(0)}'\n"
        "check(f)\n"
    )
    result = ex.run("def f(x):\n    return x + 1\n", test)
    assert result.status == "passed", result.message


@pytest.mark.e2e
def test_a_value_with_its_own_methods_gets_a_message_saying_why(ex: Any) -> None:
    code = "class Always:\n    def __eq__(self, other):\n        return True\n\ndef f(x):\n    return Always()\n"
    result = ex.run(code, "def check(f):\n    assert f(1) == 2\ncheck(f)\n")
    assert result.status == "failed"
    assert result.message.startswith("`f` returned an object of type `Always`: only plain data reaches the judge"), (
        result.message
    )


@pytest.mark.e2e
def test_builtin_subclass_is_named_as_such(ex: Any) -> None:
    code = (
        "class Num(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n\n"
        "def f(x):\n    return Num(7)\n"
    )
    result = ex.run(code, "def check(f):\n    assert f(1) == 2\ncheck(f)\n")
    assert "returned an object of type `Num`" in result.message


@pytest.mark.e2e
def test_tampering_with_a_module_the_tests_use_changes_nothing_for_the_test(ex: Any) -> None:
    """The candidate's `math` is its own process's: the test's `math.fabs` is the judge's."""
    code = "import math\nmath.fabs = lambda v: 0.0\n\ndef f(x):\n    return 7.0\n"
    result = ex.run(code, "import math\ndef check(f):\n    assert math.fabs(f(1) - 2.0) < 1e-6\ncheck(f)\n")
    assert result.status == "failed"
    assert "math.fabs(f(1) - 2.0) = 5.0" in result.message, result.message


@pytest.mark.e2e
def test_standard_library_containers_cross_as_what_they_equal(ex: Any) -> None:
    code = (
        "from collections import Counter, defaultdict, OrderedDict, namedtuple\n"
        "P = namedtuple('P', 'a b')\n"
        "def f(x):\n"
        "    d = defaultdict(int)\n"
        "    d['a'] += x\n"
        "    return [Counter(a=x), d, OrderedDict(a=x), P(x, x)]\n"
    )
    result = ex.run(code, "def check(f):\n    assert f(2) == [{'a': 2}, {'a': 2}, {'a': 2}, (2, 2)]\ncheck(f)\n")
    assert result.passed, result.message


@pytest.mark.e2e
def test_restricted_executor_says_what_is_not_allowed() -> None:
    executor = build_executor("restricted", Limits(timeout_s=10.0))
    test = "def check(f):\n    assert f(1) == 2\ncheck(f)\n"
    try:
        cases = {
            "import os\ndef f(x):\n    return 2\n": "import of module 'os'",
            "def f(x):\n    return __import__('os')\n": '"__import__" is an invalid variable name',
            "def f(x):\n    return open('/etc/passwd').read()\n": "the builtin `open`",
            "def f(x):\n    return (1).__class__\n": '"__class__" is an invalid attribute name',
            "import sys\ndef f(x):\n    return sys.modules\n": "sys.modules",
        }
        for code, what in cases.items():
            result = executor.run(code, test)
            assert result.status == "failed"
            assert result.message.startswith("not allowed in the restricted executor: "), result.message
            assert what in result.message, result.message
    finally:
        executor.close()


# ---------------------------------------------------------------------------------------------
# The rewriting, in-process


def run_inline(test: str, **names: Any) -> str | None:
    """Run an instrumented test here; the assertion's message, or None when it passed."""
    code, infos = rewriting.rewrite(test)
    namespace = dict(names)
    namespace[rewriting.HELPER] = assertions.Recorder(infos)
    try:
        exec(code, namespace)
    except AssertionError as exc:
        return str(exc)
    return None


def test_every_assert_shape_of_the_dataset_is_explained() -> None:
    f = lambda *a: 0.5  # noqa: E731
    shapes = {
        "assert f(1) == 2": "expected: 2",
        "assert abs(f(1) - 2) < 1e-6": "call:     <lambda>(1) returned 0.5",
        "assert f(1) is True": "expected: True",
        "assert not f(1)": "expected: a false value",
        "assert f(1) != 0.5": "expected: anything but 0.5",
        "assert f(1) > 2": "`0.5 > 2` is false",
    }
    for line, expected in shapes.items():
        message = run_inline(f"def check(f):\n    {line}\ncheck(f)\n", f=f)
        assert message is not None and expected in message, (line, message)
        assert message.splitlines()[0] == line
