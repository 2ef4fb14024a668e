"""pass@1+ catches wrong fixes that pass the full tests, and never flags a canonical solution.

tests/plus_wrong_fixes.py holds 29 plausible wrong repairs, one per task, each passing its task's
whole test and each wrong on an input of the docstring's domain (its witness). The generated
inputs (evaluation/plusgen.py) must catch at least 90% of them, while the canonical solution of
every one of the 164 tasks agrees with itself on all of its inputs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from humanevalfix.evaluation import robustness as rb
from humanevalfix.evaluation.dataset import Task
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import build_executor

from .plus_wrong_fixes import WRONG_FIXES

CATCH_RATE = 0.9

# The witness run: canonical and candidate called on the witness, each answer (or the exception's
# type) compared; it fails when they agree, so a wrong fix that is not wrong there is noticed.
_WITNESS = """
def check(candidate):
    ns = dict(globals())
    exec(compile({canonical!r}, "<canonical>", "exec"), ns)
    def answer(f):
        try:
            return f(*{args!r})
        except Exception as exc:
            return ("raised", type(exc).__name__)
    expected, got = answer(ns[{entry!r}]), answer(candidate)
    assert expected != got, ("the fix agrees with the canonical solution on its witness", expected)

check({entry})
"""


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = build_executor("process", Limits(timeout_s=20.0))
    yield ex
    ex.close()


def test_the_set_is_large_and_varied() -> None:
    assert len(WRONG_FIXES) >= 25
    assert len({fix.kind.split(":")[0] for fix in WRONG_FIXES.values()}) >= 10


@pytest.mark.e2e
def test_every_wrong_fix_passes_the_full_test_and_is_wrong_on_its_witness(
    all_tasks: dict[str, Task], executor: Executor
) -> None:
    problems = []
    for task_id, fix in WRONG_FIXES.items():
        task = all_tasks[task_id]
        run = executor.run(fix.code, task.test)
        if not run.passed:
            problems.append(f"{task_id} fails its test: {run.message[:200]}")
        witness = executor.run(
            fix.code, _WITNESS.format(canonical=task.canonical_code, args=fix.witness, entry=task.entry_point)
        )
        if not witness.passed:
            problems.append(f"{task_id} is right on its witness {fix.witness!r}: {witness.message[:200]}")
    assert problems == []


@pytest.mark.e2e
def test_the_generated_inputs_catch_at_least_90_percent_of_the_wrong_fixes(
    all_tasks: dict[str, Task], executor: Executor
) -> None:
    results = {
        task_id: rb.check(fix.code, all_tasks[task_id], executor, passed=True) for task_id, fix in WRONG_FIXES.items()
    }
    missed = sorted(t for t, r in results.items() if r.plus is not False)
    assert len(WRONG_FIXES) - len(missed) >= CATCH_RATE * len(WRONG_FIXES), f"missed: {missed}"
    for task_id, r in results.items():
        if r.plus is False:  # the record says why: inputs tried, how many disagree, the first
            assert r.inputs > 0 and 1 <= r.disagreements <= r.inputs, task_id
            assert r.example and " the candidate " in r.example and "inputs disagree" in r.example, task_id


@pytest.mark.e2e
def test_no_canonical_solution_is_flagged_on_any_of_the_164_tasks(
    all_tasks: dict[str, Task], executor: Executor
) -> None:
    assert len(all_tasks) == 164
    flagged, tried = {}, []
    for task_id, task in all_tasks.items():
        r = rb.check(task.canonical_code, task, executor, passed=True)
        tried.append(r.inputs)
        if r.plus is not True:
            flagged[task_id] = r.example
    assert flagged == {}
    assert min(tried) > 0 and sum(tried) / len(tried) > 100  # well above the 50 of the first generator
