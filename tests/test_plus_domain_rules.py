"""pass@1+ inputs stay inside each task's domain, on docstrings and tasks of our own (issue 51):
the character classes a text says its strings are made "only" of, "uppercase", the seeds' own
boundaries where the text is silent (0 tried and nothing below it, a numeral base, one text left
empty by the examples and another never), and ties (an input whose answer the text leaves open).
Each rule applies only where every seed keeps it."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest

from humanevalfix.evaluation import plusgen, plusties
from humanevalfix.evaluation.plusdomain import domain_of
from humanevalfix.evaluation.plusstore import CaseStore
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.tasks.task import Task


def _made(seeds: list[tuple[Any, ...]], doc: str, params: list[str]) -> list[tuple[Any, ...]]:
    made = plusgen.generate(seeds, "Demo/rules", limit=10_000, domain=domain_of(seeds, doc, params))
    assert made
    return made


def test_a_text_made_only_of_named_characters_keeps_them() -> None:
    bits = [("010", "110"), ("1", "0")]
    doc = "Input are two strings a and b consisting only of 1s and 0s."
    assert all(set(a + b) <= set("01") for a, b in _made(bits, doc, ["a", "b"]))
    # The free generator tries other characters: the text, not the generator, keeps them out.
    assert any(set(a + b) - set("01") for a, b in _made(bits, "", ["a", "b"]))
    words = [("Mary had a lamb",), ("",)]
    doc = "Note: you may assume the input string contains only letters and spaces."
    assert all(set(s) <= set(string.ascii_letters + " ") for (s,) in _made(words, doc, ["s"]))
    # The seeds show the separators: letters "only", and the words the seeds separate by spaces.
    assert all(set(s) <= set(string.ascii_letters + " ") for (s,) in _made(words, "Assume only letters.", ["s"]))
    # A seed with a digit breaks "only letters": the rule is not applied.
    assert domain_of([("ab1",), ("cd",)], "Assume only letters.", ["s"]).alphabet == {}


def test_uppercase_symbols_stay_uppercase() -> None:
    seeds = [("AB",), ("1077E",), ("",)]
    doc = "You may assume the input is always correct, and symbols A,B,C,D,E,F are always uppercase."
    assert all(s == s.upper() for (s,) in _made(seeds, doc, ["num"]))
    # Seeds with lowercase letters: "uppercase" describes something else there.
    assert domain_of([("aBc",)], "flip lowercase characters to uppercase", ["s"]).no_lower == set()


@pytest.mark.parametrize(
    ("seeds", "beyond", "params", "kept"),
    [
        # 0 is tried and nothing below it: the examples' boundary (beyond: a seed below it).
        ([(0,), (32,), (15,)], [(-3,)], ["decimal"], lambda d: d >= 0),
        # A numeral base is at least 2 (beyond: a seed in base 1).
        ([(8, 3), (7, 2), (9, 3)], [(5, 1)], ["x", "base"], lambda x, base: base >= 2),
        # The examples leave the text empty, never the substring (beyond: one that does).
        ([("", "a"), ("aaa", "a"), ("aaaa", "aa")], [("ab", "")], ["string", "substring"], lambda s, sub: sub != ""),
    ],
)
def test_the_seeds_own_boundaries_hold_where_the_text_is_silent(
    seeds: list[tuple[Any, ...]], beyond: list[tuple[Any, ...]], params: list[str], kept: Any
) -> None:
    made = _made(seeds, "", params)
    assert all(kept(*args) for args in made), [a for a in made if not kept(*a)][:5]
    # A seed past the boundary lifts it: the seeds, not the generator, draw it.
    assert any(not kept(*args) for args in _made(seeds + beyond, "", params))


def test_less_than_and_greater_than_in_words_bound_a_parameter() -> None:
    seeds = [(8, 3), (8, 2), (7, 2)]
    doc = "Change numerical base of input number x to base.\nbase numbers are less than 10."
    assert all(2 <= base < 10 for _, base in _made(seeds, doc, ["x", "base"]))
    assert all(n > 0 for (n,) in _made([(3,), (9,)], "Return the count; n is greater than 0.", ["n"]))
    assert any(n <= 0 for (n,) in _made([(3,), (9,)], "Return the count.", ["n"]))


def test_negatives_are_tried_where_no_seed_is_zero() -> None:
    made = _made([(5,), (7,)], "x is a power of n", ["n"])
    assert (-5,) in made and (0,) in made


def test_lists_left_empty_by_one_side_stay_free() -> None:
    """Two lists are often one symmetric question (common elements): no emptiness rule for lists."""
    seeds = [([4, 3, 2, 8], []), ([1, 2], [2, 3])]
    assert any(len(a) == 0 for a, _ in _made(seeds, "", ["l1", "l2"]))


# --- ties ------------------------------------------------------------------------------------


def test_order_is_read_from_the_seeds_answers() -> None:
    seeds = [([1.0, 2.0, 3.9],), ([5.0, 1.0],), ([7.0],)]
    assert plusties.reversed_args(seeds[2]) is None  # nothing to reverse
    assert plusties.seed_inputs(seeds) == [seeds[0], ([3.9, 2.0, 1.0],), seeds[1], ([1.0, 5.0],)]
    same = {repr(a): ["tuple", [1, 2]] for a in plusties.seed_inputs(seeds)}
    assert plusties.order_free(seeds, same)
    changed = dict(same, **{repr(([1.0, 5.0],)): ["tuple", [5, 1]]})
    assert not plusties.order_free(seeds, changed)
    assert not plusties.order_free(seeds[1:], same)  # one seed says nothing about order
    # The last digits of a float may follow the order of a sum: not a change.
    assert plusties.near(["tuple", [["float", 1.0], 2]], ["tuple", [["float", 1.0000000000000002], 2]])
    assert not plusties.near(["tuple", [["float", 1.0], 2]], ["tuple", [["float", 1.001], 2]])
    floats = {repr(a): ["float", 0.1 + 0.2 if i % 2 else 0.3] for i, a in enumerate(plusties.seed_inputs(seeds))}
    assert plusties.order_free(seeds, floats)
    assert plusties.partners([([1, 2],), ([3],), (2, "ab")]) == [repr(([2, 1],)), None, None]


CLOSEST = Task(
    task_id="Own/closest",
    entry_point="closest",
    buggy_code="def closest(xs):\n    return (0, 0)\n",
    canonical_code=(
        "def closest(xs):\n"
        "    best = None\n"
        "    for i, a in enumerate(xs):\n"
        "        for j, b in enumerate(xs):\n"
        "            if i != j and (best is None or abs(a - b) < best[0]):\n"
        "                best = (abs(a - b), tuple(sorted((a, b))))\n"
        "    return best[1]\n"
    ),
    test=(
        "def check(closest):\n"
        "    assert closest([1.0, 2.0, 3.9, 4.0, 5.0]) == (3.9, 4.0)\n"
        "    assert closest([5.0, 1.0, 2.2, 2.0]) == (2.0, 2.2)\n"
        "    assert closest([1.0, 7.5, 3.0]) == (1.0, 3.0)\n"
        "\ncheck(closest)\n"
    ),
    docstring="Return the two numbers of xs (two or more) closest to each other, smaller first.",
)
# The same question where order matters: the first pair of neighbours in the list.
FIRST_PAIR = Task(
    task_id="Own/first",
    entry_point="first_pair",
    buggy_code="def first_pair(xs):\n    return (0, 0)\n",
    canonical_code="def first_pair(xs):\n    return (xs[0], xs[1])\n",
    test=(
        "def check(first_pair):\n"
        "    assert first_pair([1.0, 2.0, 3.9]) == (1.0, 2.0)\n"
        "    assert first_pair([5.0, 1.0]) == (5.0, 1.0)\n"
        "\ncheck(first_pair)\n"
    ),
    docstring="Return the first two numbers of xs.",
)


@pytest.mark.e2e
def test_ties_are_dropped_where_order_does_not_matter_and_only_there() -> None:
    from humanevalfix.evaluation import robustness

    ex = build_executor("auto", Limits(timeout_s=DEFAULT_TIMEOUT_S))
    try:
        store = CaseStore(None, shipped=None)
        cases = store.get(CLOSEST, None, 0.0, ex)
        assert cases.problem is None and json.loads(cases.drops).get("tie", 0) > 0, cases.drops
        for case in cases.cases:  # every input kept has one closest pair
            xs = json.loads(json.dumps(eval(case.text)))[0]  # noqa: S307 - our own literal
            gaps = sorted(abs(a - b) for i, a in enumerate(xs) for j, b in enumerate(xs) if i < j)
            assert len(gaps) < 2 or gaps[0] != gaps[1], case.text
        # A fix that breaks ties the other way is not failed for it.
        other = CLOSEST.canonical_code.replace("< best[0]", "<= best[0]")  # type: ignore[union-attr]
        assert robustness.differential(other, CLOSEST, ex, cases).agrees is True
        # Where the seeds show that order matters, nothing is a tie.
        ordered = store.get(FIRST_PAIR, None, 0.0, ex)
        assert ordered.problem is None and "tie" not in (ordered.drops or ""), ordered.drops
    finally:
        ex.close()
