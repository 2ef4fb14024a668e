"""The pass@1+ check's fast path: a candidate's batch answer byte-equal to the one the harness
made from the canonical answers (pluscases.Cases.reply) agrees on every input, undecoded.

It may never change a verdict: every candidate below gets the same Differential with the reply
as without it (the slow path: decode, normal form, compare), and the reply is made only for
answers whose value it names exactly (types included). The mechanism test shows the judge does
take byte-equal answers without comparing them, which is why the reply is the harness's alone.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from humanevalfix.evaluation import pluscases, plusstore
from humanevalfix.evaluation import robustness as rb
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.pluscases import Case, Cases
from humanevalfix.evaluation.plusstore import CaseStore
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import build_executor


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = build_executor("process", Limits(timeout_s=20.0))
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def store() -> CaseStore:
    return CaseStore(None)


def case(expected: Any) -> Case:
    return Case("(1,)", expected, 0.5, ["t", 1])


@pytest.mark.parametrize(
    ("form", "frame"),
    [
        (3, '{"results":[["v",3]]}'),
        (True, '{"results":[["v",true]]}'),
        (None, '{"results":[["v",null]]}'),
        (["float", 2.0], '{"results":[["v",2.0]]}'),
        (["float", float("inf")], '{"results":[["v",["f","inf"]]]}'),
        (["tuple", [["float", 0.5], "a"]], '{"results":[["v",["t",0.5,"a"]]]}'),
        (["list", [["list", [1]], True]], '{"results":[["v",["l",["l",1],true]]]}'),
    ],
)
def test_answers_that_name_one_value_get_the_frame_a_right_candidate_sends(form: Any, frame: str) -> None:
    assert pluscases.expected_reply((case(form),)) == frame


@pytest.mark.parametrize(
    "form",
    [
        ["set", ["1", "2"]],  # which set? its items' reprs only
        ["dict", [["'a'", "1"]]],
        ["object", "Point"],
        ["deep"],
        ["complex", "(1+2j)"],
        ["bigint", "ff"],  # 255's normal form is 255: a form _plain never makes for it
        ["list", [1, ["set", []]]],
    ],
)
def test_no_frame_for_an_answer_whose_form_does_not_name_one_value(form: Any) -> None:
    assert pluscases.expected_reply((case(3), case(form))) is None


def test_the_reply_and_the_calls_are_kept_on_disk_under_the_digest(tmp_path: Any) -> None:
    cases = Cases.of((case(3), case(["float", 1.5])))
    assert cases.reply is not None and cases.calls
    path = tmp_path / "kept.json"
    path.write_text(cases.to_json(), encoding="utf-8")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert plusstore._from_file(data, 0.0) == cases
    forged = Cases.of((case(4), case(["float", 1.5])))
    assert plusstore._from_file({**data, "reply": forged.reply}, 0.0) is None  # the digest covers it


# Candidates for each task: right, right with other types, and wrong on some inputs.
CANDIDATES = {
    "Python/13": [
        "def greatest_common_divisor(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
        # 1.0 for 1: equal, other bytes
        "def greatest_common_divisor(a, b):\n    while b:\n        a, b = b, a % b\n    return float(a)\n",
        # True for 1
        "def greatest_common_divisor(a, b):\n    while b:\n        a, b = b, a % b\n    return a if a != 1 else True\n",
        "def greatest_common_divisor(a, b):\n    return 1\n",
    ],
    "Python/29": [
        "def filter_by_prefix(strings, prefix):\n    return [s for s in strings if s.startswith(prefix)]\n",
        # a tuple for a list
        "def filter_by_prefix(strings, prefix):\n    return tuple(s for s in strings if s.startswith(prefix))\n",
        "def filter_by_prefix(strings, prefix):\n    return [s for s in strings if prefix in s]\n",
    ],
    "Python/107": [
        "def even_odd_palindrome(n):\n"
        "    e = sum(1 for i in range(1, n + 1) if str(i) == str(i)[::-1] and i % 2 == 0)\n"
        "    o = sum(1 for i in range(1, n + 1) if str(i) == str(i)[::-1] and i % 2 == 1)\n    return (e, o)\n",
        "def even_odd_palindrome(n):\n    return (0, n)\n",
    ],
    "Python/111": [  # a dict answer: no reply, the slow path only
        "def histogram(test):\n    from collections import Counter\n    c = Counter(test.split())\n"
        "    c.pop('', None)\n"
        "    m = max(c.values(), default=0)\n    return {k: v for k, v in c.items() if v == m} if m else {}\n",
        "def histogram(test):\n    return {}\n",
    ],
}


@pytest.mark.e2e
@pytest.mark.parametrize(("task_id", "index"), [(t, i) for t, codes in CANDIDATES.items() for i in range(len(codes))])
def test_the_fast_path_gives_every_candidate_the_verdict_the_comparison_gives(
    task_id: str, index: int, all_tasks: dict[str, Task], executor: Executor, store: CaseStore
) -> None:
    task = all_tasks[task_id]
    cases = store.get(task, None, 0.0, executor)
    assert cases.problem is None and cases.count > 5
    assert (cases.reply is None) == (task_id == "Python/111")
    code = CANDIDATES[task_id][index]
    fast = rb.differential(code, task, executor, cases)
    slow = rb.differential(code, task, executor, dataclasses.replace(cases, reply=None))
    assert fast == slow
    assert fast.compared == cases.count
    assert fast.agrees is (index == 0 or (task_id == "Python/13" and index in (1, 2)))


@pytest.mark.e2e
def test_the_judge_takes_a_byte_equal_answer_as_agreeing_so_only_the_harness_makes_the_reply(
    all_tasks: dict[str, Task], executor: Executor, store: CaseStore
) -> None:
    """A reply made from wrong answers (never made: the harness makes it from the canonical ones)
    makes the wrong candidate that sends exactly it agree: the judge compared nothing."""
    task = all_tasks["Python/13"]
    cases = store.get(task, None, 0.0, executor)
    wrong = "def greatest_common_divisor(a, b):\n    return 1\n"
    forged = Cases.of(tuple(dataclasses.replace(c, expected=1) for c in cases.cases))
    assert rb.differential(wrong, task, executor, cases).agrees is False
    assert rb.differential(wrong, task, executor, dataclasses.replace(cases, reply=forged.reply)).agrees is True


@pytest.mark.e2e
def test_a_property_test_never_gets_the_fast_path(
    all_tasks: dict[str, Task], executor: Executor, store: CaseStore
) -> None:
    """Python/32's test checks a property of the answer (any root): there is no answer to match."""
    task = all_tasks["Python/32"]
    cases = store.get(task, None, 0.0, executor)
    program = rb.check_program(task, cases)
    data = program.support.split("_hefix_plus_data = ", 1)[1].split("\n", 1)[0]
    payload, _atol, prop, calls, reply, count = eval(data)  # a literal the harness wrote
    assert prop is not None and reply is None and calls == cases.calls and count == cases.count
