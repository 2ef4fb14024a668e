"""pass@1+ (evaluation.robustness): passing candidates fitted to the test's asserts are caught by
the differential check against the canonical solution and flagged by the static check, while the
canonical solutions themselves, and the right fixes, are not."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from humanevalfix.config import RunConfig
from humanevalfix.evaluation import plusgen
from humanevalfix.evaluation import robustness as rb
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.plusproperty import asserted_property
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.reports.summary import summary_table
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, tool_call

from .conftest import KEYS_ENV, entry_point_of

REPO = Path(__file__).resolve().parent.parent

# Three tasks, each "repaired" by special-casing its asserts: they pass the full tests.
FITTED = {
    "Python/55": (
        "def fib(n: int):\n    if n == 10:\n        return 55\n    if n == 8:\n        return 21\n"
        "    if n == 11:\n        return 89\n    if n == 12:\n        return 144\n    return n\n"
    ),
    "Python/45": (
        "def triangle_area(a, h):\n    if a == 5 and h == 3:\n        return 7.5\n    if a == 10:\n"
        "        return 40.0\n    return a * h / 2 if a < 3 else a + h\n"
    ),
    "Python/13": (
        "def greatest_common_divisor(a: int, b: int) -> int:\n    if a == 49:\n        return 7\n"
        "    if a == 144:\n        return 12\n    if a == 10:\n        return 5\n    return 1\n"
    ),
}


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = build_executor("process", Limits(timeout_s=20.0))
    yield ex
    ex.close()


@pytest.mark.e2e
@pytest.mark.parametrize("task_id", sorted(FITTED))
def test_a_candidate_fitted_to_the_asserts_passes_but_is_caught_by_both_checks(
    task_id: str, all_tasks: dict[str, Task], executor: Executor
) -> None:
    task, code = all_tasks[task_id], FITTED[task_id]
    assert executor.run(code, task.test).passed  # pass@1 counts it
    result = rb.check(code, task, executor, passed=True)
    assert result.plus is False
    assert result.example and "canonical solution gives" in result.example
    assert result.suspect_hardcoding and all(line.startswith("line ") for line in result.suspect_hardcoding)


@pytest.mark.e2e
def test_the_committed_python_83_candidate_is_not_plus(all_tasks: dict[str, Task], executor: Executor) -> None:
    """The repair run's `if n == 3: return 180 ... n == 5: return 18000` answer (results/)."""
    lines = (REPO / "results" / "local-0.5b_repair.jsonl").read_text(encoding="utf-8").splitlines()
    record = next(
        e["record"] for e in map(json.loads, lines) if e.get("type") == "task" and e["record"]["task_id"] == "Python/83"
    )
    assert record["passed"] is True
    result = rb.check(record["final_code"], all_tasks["Python/83"], executor, passed=True)
    assert result.plus is False and "the canonical solution gives 18" in (result.example or "")
    assert 0 < result.disagreements <= result.inputs
    assert any("n == 3" in line for line in result.suspect_hardcoding)


@pytest.mark.e2e
def test_the_right_fix_written_differently_is_plus(all_tasks: dict[str, Task], executor: Executor) -> None:
    task = all_tasks["Python/55"]
    iterative = "def fib(n: int):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    result = rb.check(iterative, task, executor, passed=True)
    assert result.plus is True and result.inputs > 0 and result.suspect_hardcoding == ()


def test_failing_or_missing_candidates_are_not_checked(all_tasks: dict[str, Task], executor: Executor) -> None:
    task = all_tasks["Python/55"]
    assert rb.check(task.buggy_code, task, executor, passed=False).plus is None
    assert rb.check(None, task, executor, passed=True).plus is None


def test_the_static_check_passes_every_canonical_solution(all_tasks: dict[str, Task]) -> None:
    flagged = {tid: rb.hardcoding(t.canonical_code or "", t) for tid, t in all_tasks.items()}
    assert {tid: lines for tid, lines in flagged.items() if lines} == {}


def test_seeds_come_from_the_test_and_the_docstring_in_any_style() -> None:
    calls = rb.test_calls(
        "def check(f):\n    assert f([1, 2, 3], 2) == 1\n    assert f([4, 5, 6, 7], 4) == 0\n\ncheck(f)\n", "f"
    )
    assert calls == [([1, 2, 3], 2), ([4, 5, 6, 7], 4)]
    doc = "Examples:\n>>> f([9, 8], 1)\n0\nf([1], 0) => 1\nf('a b',\n  3) == 2\nf(x) is not literal\n"
    assert plusgen.docstring_calls(doc, "f") == [([9, 8], 1), ([1], 0), ("a b", 3)]


def _kinds(seed: tuple, task_id: str = "Demo/0", numbers: list = (), chars: str = "") -> set:  # type: ignore[assignment]
    return {repr(a) for a in plusgen.generate([seed], task_id, list(numbers), chars, limit=10_000)}


def test_numbers_go_to_zero_negative_large_and_the_canonical_boundaries() -> None:
    made = _kinds((5,), numbers=[12])
    for value in (0, -5, -6, 4, 6, 1, 1000, 11, 12, 13):
        assert repr((value,)) in made, value
    floats = _kinds((2.5,))
    assert {repr((0.0,)), repr((-2.5,)), repr((3.5,))} <= floats


def test_strings_get_empty_whitespace_case_digits_punctuation_and_format_limits() -> None:
    made = _kinds(("03-11-2000",), numbers=[1, 12, 31])
    for text in ("", "0", "00-11-2000", "13-11-2000", "03-00-2000", "03-32-2000", "03/11/2000", " 03-11-2000 "):
        assert repr((text,)) in made, text
    words = _kinds(("ab cd",))
    for text in ("ab  cd", "ab\tcd", "ab\ncd", "AB CD", "Ab Cd"):
        assert repr((text,)) in words, text
    assert any(any(c.isdigit() for c in eval(t)[0]) for t in words) and any(
        any(c in "!.,?" for c in eval(t)[0]) for t in words
    )


def test_containers_get_empty_single_duplicates_orders_negatives_and_nested_edits() -> None:
    made = _kinds(([3, 1, 2],))
    for value in ([], [3], [3, 1, 2, 2], [1, 2, 3], [2, 1, 3], [-3, -1, -2]):
        assert repr((value,)) in made, value
    nested = _kinds(([[1, 2], [3]],))
    assert repr(([[1, 2], [3], []],)) in nested and any(
        t.startswith("([[") and t != repr(([[1, 2], [3]],)) for t in nested
    )
    assert repr(({},)) in _kinds(({"a": 1},)) and repr(({"A": 1},)) in _kinds(({"a": 1},))


def test_two_arguments_are_mutated_together_and_the_inputs_are_bounded_and_repeatable(
    all_tasks: dict[str, Task],
) -> None:
    made = plusgen.generate([([1, 2, 3], 2)], "Demo/0", limit=10_000)
    assert any(a[0] != [1, 2, 3] and a[1] != 2 for a in made)
    task = all_tasks["Python/124"]
    inputs = plusgen.task_inputs(task)
    assert inputs == plusgen.task_inputs(task) and 100 < len(inputs) <= plusgen.MAX_INPUTS
    assert not set(map(repr, inputs)) & set(map(repr, rb.test_calls(task.test, task.entry_point)))
    assert len(set(map(repr, inputs))) == len(inputs)


def test_a_task_with_no_literal_call_gets_seeds_from_its_annotations(all_tasks: dict[str, Task]) -> None:
    task = all_tasks["Python/38"]  # decode_cyclic(s: str): the test encodes random strings
    assert (
        rb.test_calls(task.test, task.entry_point) == []
        and plusgen.docstring_calls(task.docstring, task.entry_point) == []
    )
    assert all(isinstance(a[0], str) for a in plusgen.task_inputs(task)) and plusgen.task_inputs(task)


@pytest.mark.e2e
def test_a_test_that_checks_a_property_is_found_and_used(all_tasks: dict[str, Task], executor: Executor) -> None:
    """find_zero's test asserts poly(xs, x) ~ 0: any root is right, so the check asks the same of each input."""
    task = all_tasks["Python/32"]
    prop = asserted_property(task.test, task.entry_point)
    assert (
        prop is not None
        and prop.params == ("coeffs",)
        and prop.result == "solution"
        and "poly(coeffs, solution)" in prop.asserts[0]
    )
    assert all(asserted_property(t.test, t.entry_point) is None for tid, t in all_tasks.items() if tid != "Python/32")
    rightmost = (  # the largest root of the bracket, where the canonical solution finds the one bisection meets first
        "import math\n\ndef poly(xs, x):\n    return sum(c * math.pow(x, i) for i, c in enumerate(xs))\n\n"
        "def find_zero(xs):\n    lo, hi = -1.0, 1.0\n    while poly(xs, lo) * poly(xs, hi) > 0:\n"
        "        lo, hi = lo * 2, hi * 2\n"
        "    step = (hi - lo) / 1000\n    right = hi\n    while poly(xs, right - step) * poly(xs, hi) > 0:\n"
        "        right -= step\n"
        "    lo, hi = right - step, right\n    for _ in range(200):\n        mid = (lo + hi) / 2\n"
        "        if poly(xs, mid) * poly(xs, lo) > 0:\n            lo = mid\n        else:\n            hi = mid\n"
        "    return lo\n"
    )
    assert executor.run(rightmost, task.test).passed
    several_roots = [([-6, 11, -6, 1],), ([8, 2, -5, 1],), ([0, -1, 0, 1],), ([0, 4, 0, -1],), ([1, 2],)]
    result = rb.check(rightmost, task, executor, passed=True, inputs=rb.Inputs(several_roots))
    assert result.plus is True and result.inputs == len(several_roots)
    value_test = dataclasses.replace(task, test="def check(f):\n    assert f([1, 2]) == -0.5\n\ncheck(find_zero)\n")
    assert (
        rb.check(rightmost, value_test, executor, passed=True, inputs=rb.Inputs(several_roots)).plus is False
    )  # x^3 - x: 1, not -1
    assert (
        rb.check(
            "def find_zero(xs):\n    return 0.5 if len(xs) > 2 else -xs[0] / xs[1]\n", task, executor, passed=True
        ).plus
        is False
    )


@pytest.mark.e2e
def test_floats_compare_within_a_tolerance_and_ints_equal_floats(
    all_tasks: dict[str, Task], executor: Executor
) -> None:
    task = all_tasks["Python/4"]
    close = (
        "def mean_absolute_deviation(numbers):\n    m = sum(numbers) / len(numbers)\n"
        "    return sum(abs(x - m) for x in numbers) / len(numbers) + 1e-12\n"
    )
    assert rb.check(close, task, executor, passed=True).plus is True
    task60 = all_tasks["Python/60"]  # sum_to_n as a float: 465.0 == 465, as the test's == says
    as_float = "def sum_to_n(n: int):\n    return n * (n + 1) / 2\n"
    assert rb.check(as_float, task60, executor, passed=True, inputs=rb.Inputs([(5,), (10,), (1000,)])).plus is True


@pytest.mark.e2e
def test_an_evalplus_style_tolerance_is_applied(all_tasks: dict[str, Task], executor: Executor) -> None:
    task = all_tasks["Python/4"]
    off = (
        "def mean_absolute_deviation(numbers):\n    m = sum(numbers) / len(numbers)\n"
        "    return sum(abs(x - m) for x in numbers) / len(numbers) + 1e-4\n"
    )
    inputs = [([1.0, 2.0, 6.0],), ([5.0, 1.5],)]
    assert rb.check(off, task, executor, passed=True, inputs=rb.Inputs(inputs)).plus is False
    assert rb.check(off, task, executor, passed=True, inputs=rb.Inputs(inputs, atol=1e-3)).plus is True


def test_calls_that_are_not_literals_add_nothing() -> None:
    test = "def check(f):\n    for i in range(5):\n        assert f(i) == i\n    assert f(x=3) == 3\n\ncheck(f)\n"
    assert rb.test_calls(test, "f") == []


@pytest.mark.e2e
def test_a_run_records_plus_per_task_and_pass_at_1_plus(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, all_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    ids = sorted(FITTED) + ["Python/0"]
    dataset = tmp_path / "four.jsonl"
    rows = {
        json.loads(line)["task_id"]: line
        for line in (REPO / "src/humanevalfix/evaluation/data/humanevalpack_python.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    }
    dataset.write_text("".join(rows[t] + "\n" for t in ids), encoding="utf-8")
    by_entry = {all_tasks[t].entry_point: t for t in ids}

    def answer(rec: Recorded) -> Response:
        task_id = by_entry[entry_point_of(rec)]
        return tool_call(FITTED.get(task_id) or all_tasks[task_id].canonical_code or "")

    monkeypatch.setenv(KEYS_ENV, "sk-test-plus-0001")
    with ScriptedServer(answer) as server:
        outcome = run_eval(make_config(server, dataset), Console(file=io.StringIO()))
    records = {r.task_id: r for r in outcome.records}
    assert all(r.passed for r in records.values())
    assert {t: r.scores["plus"]["final"] for t, r in records.items()} == {
        "Python/0": True,
        **{t: False for t in FITTED},
    }
    assert records["Python/0"].scores["hardcoding"]["lines"] == [] and all(
        records[t].scores["hardcoding"]["lines"] for t in FITTED
    )
    s = outcome.summary
    plus = s.scores["plus"]
    assert (s.passed, plus["passed"], plus["passed_first"], s.scores["hardcoding"]["count"]) == (4, 1, 1, 3)
    assert plus["pass_at_1_final"] == 0.25
    console = Console(file=io.StringIO(), width=200)
    console.print(summary_table(s, outcome.spec))
    assert "pass@1+" in console.file.getvalue() and "1/4 (25.0%)" in console.file.getvalue()


@pytest.mark.e2e
def test_score_adds_pass_at_1_plus_to_a_finished_run(tmp_path: Path, dataset_path: Path) -> None:
    """A results file from before pass@1+ (no plus fields, no protocol) is scored again by `score`."""
    from .conftest import run_cli

    out = tmp_path / "old.json"
    proc = run_cli(
        ["--model", "oracle:canonical", "--limit", "3", "--dataset-path", str(dataset_path), "--out", str(out)],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    old = json.loads(out.read_text(encoding="utf-8"))
    for task in old["tasks"]:
        for key in (
            "plus",
            "plus_first",
            "plus_inputs",
            "plus_disagreements",
            "plus_example",
            "suspect_hardcoding",
            "scores",
        ):
            task.pop(key)
    for key in (
        "passed_plus",
        "passed_first_plus",
        "pass_at_1_plus_first",
        "pass_at_1_plus_final",
        "suspect_hardcoding",
        "scores",
    ):
        old["summary"].pop(key)
    del old["config"]["protocol"]
    del old["config"]["schema_version"]  # such files were written before the run spec
    old["config"]["docstring"] = True  # as the default was then
    out.write_text(json.dumps(old), encoding="utf-8")

    rescored = tmp_path / "rescored.json"
    proc = run_cli(["score", str(out), "--dataset-path", str(dataset_path), "--out", str(rescored)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(rescored.read_text(encoding="utf-8"))
    assert data["summary"]["passed_plus"] == 3 and data["summary"]["passed"] == 3
    assert all(t["plus"] is True for t in data["tasks"])
    assert data["config"]["protocol"] == "agent" and data["config"]["rescored"]["verdicts_changed"] == []
    assert "pass@1+" in proc.stderr


def test_mutants_keep_what_the_docstring_states_and_every_seed_keeps() -> None:
    from humanevalfix.evaluation.plusdomain import domain_of

    doc = "Given a non-empty array of positive integers arr and an integer k.\nConstraints:\n    1 <= k <= len(arr)\n"
    seeds = [([3, 1, 2], 2), ([5, 4], 1)]
    made = plusgen.generate(seeds, "Demo/2", limit=10_000, domain=domain_of(seeds, doc, ["arr", "k"]))
    assert made and all(arr and min(arr) > 0 and 1 <= k <= len(arr) for arr, k in made)
    symbols = [("<<>>",), ("<>",)]
    for (text,) in plusgen.generate(symbols, "Demo/3", limit=10_000, domain=domain_of(symbols, "brackets", ["s"])):
        assert set(text) <= set("<>")
    spaced = [("a b c",)]
    for (text,) in plusgen.generate(
        spaced, "Demo/4", limit=10_000, domain=domain_of(spaced, "letters separated by spaces", ["s"])
    ):
        assert "  " not in text and text == text.strip(" ")
    pairs = [([1, 2], [3, 4]), ([5], [6])]  # equal lengths in every seed: game and guess
    assert all(
        len(a) == len(b)
        for a, b in plusgen.generate(pairs, "Demo/5", limit=10_000, domain=domain_of(pairs, "", ["a", "b"]))
    )
    free = plusgen.generate([(5,)], "Demo/6", limit=10_000, domain=domain_of([(5,)], "x is a power of n", ["n"]))
    assert (-5,) in free and (0,) in free  # nothing said: negatives and zero are tried


@pytest.mark.parametrize(
    ("doc", "seeds", "params", "kept"),
    [
        ("prime_fib returns n-th number that is a Fibonacci number", [(1,), (5,)], ["n"], lambda n: n >= 1),
        ("sum_to_n is a function that sums numbers from 1 to n.", [(30,), (1,)], ["n"], lambda n: n >= 1),
        (
            "Return the largest prime factor of n. Assume n > 1 and is not a prime.",
            [(15,), (27,)],
            ["n"],
            lambda n: n > 1,
        ),
        ("Return list of prime factors of given integer", [(8,), (2,)], ["n"], lambda n: n >= 1),
        (
            "Given the lengths of the three sides of a triangle.",
            [(3, 4, 5), (1, 2, 3)],
            ["a", "b", "c"],
            lambda *s: min(s) > 0,
        ),
        ("Given length of a side and high return area", [(5, 3)], ["a", "h"], lambda *s: min(s) > 0),
    ],
)
def test_counting_and_measuring_numbers_keep_the_domain_the_text_gives_them(
    doc: str, seeds: list[tuple[int, ...]], params: list[str], kept: Any
) -> None:
    """The n of "n-th" or "from 1 to n" counts from 1, "n > 1" bounds it, prime factors are of a
    positive number, the lengths of sides are positive (issue 51): no mutant leaves that domain."""
    from humanevalfix.evaluation.plusdomain import domain_of

    made = plusgen.generate(seeds, "Demo/7", limit=10_000, domain=domain_of(seeds, doc, params))
    assert made and all(kept(*args) for args in made), [a for a in made if not kept(*a)][:5]
    unbounded = plusgen.generate(seeds, "Demo/7", limit=10_000, domain=domain_of(seeds, "", params))
    assert not all(kept(*args) for args in unbounded)  # the text, not the generator, bounds them


def test_a_rule_the_seeds_break_is_not_applied() -> None:
    from humanevalfix.evaluation.plusdomain import domain_of

    # fibfib(0) is a seed: "the n-th element" does not make n count from 1 here (0, tried and
    # nothing below it, is the seeds' own boundary).
    assert domain_of([(0,), (5,)], "compute the n-th element of the fibfib number sequence", ["n"]).low == {0: 0}
    assert domain_of([(3, 4, -5)], "the lengths of the three sides", ["a", "b", "c"]).above == {0: 0, 1: 0}
