"""One run per candidate: the task's test and the pass@1+ check together, with the test's own verdict.

The scorer appends the check to the test once the task's canonical answers are kept
(evaluation/pluscases.py). The verdict must be exactly the test's alone: the same status and
message for a candidate that fails, "all tests passed" for one that passes, whatever the check
after it does. The answers are computed once and kept on disk only where the executor keeps
candidates off the host's files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from humanevalfix.evaluation import robustness
from humanevalfix.evaluation.pluscases import CASES_STEPS, Cases
from humanevalfix.evaluation.plusstore import CaseStore, default_directory
from humanevalfix.evaluation.scorer import PASSED_MESSAGE, score, score_task
from humanevalfix.sandbox.child.execution import LIBRARY_MARK
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, JUDGE, ExecResult, Executor, Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.sandbox.jail import FS
from humanevalfix.tasks.task import Task

SAMPLE = ("Python/0", "Python/2", "Python/32", "Python/55", "Python/100", "Python/129")


@pytest.fixture(scope="module")
def bwrap() -> Iterator[Executor]:
    ex = build_executor("bwrap", Limits(timeout_s=DEFAULT_TIMEOUT_S))
    yield ex
    ex.close()


@pytest.fixture
def warm(bwrap: Executor, all_tasks: dict[str, Task], tmp_path: Path) -> CaseStore:
    """A store that knows the sample's answers: the scorer takes the one-run path."""
    store = CaseStore(tmp_path / "cases")
    for tid in SAMPLE:
        store.get(all_tasks[tid], None, 0.0, bwrap)
    return store


@pytest.mark.e2e
def test_a_failing_candidate_gets_the_tests_own_status_and_message(
    bwrap: Executor, all_tasks: dict[str, Task], warm: CaseStore
) -> None:
    for tid in SAMPLE:
        task = all_tasks[tid]
        alone = score(task.buggy_code, task.buggy_code, task, bwrap)
        together = score_task(task.buggy_code, task.buggy_code, task, bwrap, warm)
        assert not alone.passed and together.score == alone, tid
        assert together.scores["plus"]["final"] is None


@pytest.mark.e2e
def test_a_passing_candidate_passes_with_its_check_in_the_same_run(
    bwrap: Executor, all_tasks: dict[str, Task], warm: CaseStore
) -> None:
    runs: list[tuple[str, str]] = []

    class Counting:
        guarantees = bwrap.guarantees

        def run(self, code: str, test: str, support: str = "") -> ExecResult:
            runs.append((test, support))
            return bwrap.run(code, test, support)

    for tid in SAMPLE:
        task = all_tasks[tid]
        scored = score_task(task.canonical_code, task.canonical_code, task, Counting(), warm)  # type: ignore[arg-type]
        assert scored.score.passed and scored.score.message == PASSED_MESSAGE, tid
        assert scored.scores["plus"]["final"] is True and scored.scores["plus"]["inputs"] > 0, tid
    assert len(runs) == len(SAMPLE)  # one run each: test and check together
    assert all(
        test.rstrip().endswith(f"_hefix_plus({all_tasks[tid].entry_point}, *_hefix_plus_data)")
        for (test, _), tid in zip(runs, SAMPLE, strict=True)
    )
    # The check's function is one text for every task, after the mark: a fork server compiles it once.
    libraries = {support.rpartition(LIBRARY_MARK)[2] for _, support in runs}
    assert len(libraries) == 1 and "def _hefix_plus(" in libraries.pop()


@pytest.mark.e2e
def test_a_candidate_fitted_to_the_asserts_passes_and_is_not_plus_in_one_run(
    bwrap: Executor, all_tasks: dict[str, Task], warm: CaseStore
) -> None:
    fitted = "def fib(n: int):\n    return {10: 55, 1: 1, 8: 21, 11: 89, 12: 144}.get(n, n)\n"
    scored = score_task(fitted, fitted, all_tasks["Python/55"], bwrap, warm)
    assert scored.score.passed and scored.score.message == PASSED_MESSAGE
    assert scored.scores["plus"]["final"] is False and "the canonical solution gives" in (
        scored.scores["plus"]["example"] or ""
    )
    assert scored.scores["plus"]["disagreements"] >= 1


@pytest.mark.e2e
def test_a_candidate_that_hangs_in_the_check_still_passes_the_test(
    bwrap: Executor, all_tasks: dict[str, Task], warm: CaseStore
) -> None:
    """Right on the test's inputs, an endless loop on every other: the test's verdict is a pass,
    reported before the check began; the check fails it (no answer in time) and the run reports."""
    task = all_tasks["Python/55"]
    code = (
        "def fib(n: int):\n    known = {10: 55, 1: 1, 8: 21, 11: 89, 12: 144}\n    while n not in known:\n"
        "        pass\n    return known[n]\n"
    )
    scored = score_task(code, code, task, bwrap, warm)
    assert scored.score.passed and scored.scores["plus"]["final"] is False


@pytest.mark.e2e
def test_a_fault_inside_the_test_fails_it_even_when_the_test_swallows_it(
    bwrap: Executor, all_tasks: dict[str, Task], tmp_path: Path
) -> None:
    """A test with a bare `except:` around a call that times out: the mark says the test did not
    pass there, so the one-run path gives the same failure as the test alone."""
    task = all_tasks["Python/0"]
    swallowing = Task(
        **{
            **task.__dict__,
            "test": (
                "def check(f):\n    try:\n        f([1.0, 2.0], 0.5)\n    except BaseException:\n        pass\n\n"
                "check(has_close_elements)\n"
            ),
        }
    )
    store = CaseStore(tmp_path / "cases")
    store.get(swallowing, None, 0.0, bwrap)
    hang = "def has_close_elements(numbers, threshold):\n    while True:\n        pass\n"
    alone = score(hang, hang, swallowing, bwrap)
    together = score_task(hang, hang, swallowing, bwrap, store)
    assert not alone.passed and together.score == alone


@pytest.mark.e2e
def test_answers_are_kept_on_disk_only_where_candidates_cannot_write_the_hosts_files(
    all_tasks: dict[str, Task], bwrap: Executor, tmp_path: Path
) -> None:
    task = all_tasks["Python/2"]
    process = build_executor("process", Limits(timeout_s=DEFAULT_TIMEOUT_S))
    try:
        assert FS not in process.guarantees and JUDGE in process.guarantees
        unsafe = CaseStore(tmp_path / "process", shipped=None)
        assert unsafe.get(task, None, 0.0, process).cases
        assert not (tmp_path / "process").exists()
    finally:
        process.close()
    assert FS in bwrap.guarantees
    first = CaseStore(tmp_path / "bwrap", shipped=None).get(task, None, 0.0, bwrap)
    files = list((tmp_path / "bwrap").glob("*.json"))
    assert len(files) == 1 and first.cases
    # A later store (a later run) finds them without a run; a damaged file is computed again.
    assert CaseStore(tmp_path / "bwrap", shipped=None).cached(task, None, 0.0, bwrap) == first
    kept = json.loads(files[0].read_text(encoding="utf-8"))
    files[0].write_text(json.dumps({**kept, "payload": kept["payload"][:-8] + "AAAAAAAA"}), encoding="utf-8")
    assert (
        CaseStore(tmp_path / "bwrap", shipped=None).cached(task, None, 0.0, bwrap) is None
    )  # its digest no longer matches
    files[0].write_text("{not json", encoding="utf-8")
    assert CaseStore(tmp_path / "bwrap", shipped=None).cached(task, None, 0.0, bwrap) is None
    assert CaseStore(tmp_path / "bwrap", shipped=None).get(task, None, 0.0, bwrap) == first


def test_the_key_follows_the_tasks_test_and_the_inputs(all_tasks: dict[str, Task], tmp_path: Path) -> None:
    store = CaseStore(tmp_path)
    task = all_tasks["Python/2"]
    other = Task(**{**task.__dict__, "test": task.test + "\n"})
    assert store.key(task, None, 0.0) != store.key(other, None, 0.0)
    assert store.key(task, None, 0.0) != store.key(task, [(1.5,)], 0.0) != store.key(task, [(1.5,)], 1e-3)
    assert store.key(task, None, 0.0) == CaseStore(tmp_path).key(task, None, 0.0)


@pytest.mark.e2e
def test_a_slow_canonical_solution_gets_fewer_inputs_within_the_budget(
    bwrap: Executor, all_tasks: dict[str, Task], tmp_path: Path
) -> None:
    """The budget is in steps (issue 51): a canonical solution of a little more than an eighth of
    the budget a call keeps 8 inputs of 40 (the one that passes the budget included), whatever the
    machine's speed; the rest are dropped, by reason "budget". (A smaller budget than CASES_STEPS,
    to be quick.)"""
    task = all_tasks["Python/2"]
    budget = CASES_STEPS // 10
    per_call = budget // 8 // 2  # a loop line and its `for` line: two steps a round
    slow = Task(
        **{
            **task.__dict__,
            "canonical_code": (
                f"def truncate_number(number: float) -> float:\n    for _ in range({per_call}):\n        pass\n"
                "    return number % 1.0\n"
            ),
        }
    )
    cases = CaseStore(None, budget).get(slow, [(float(i) + 0.5,) for i in range(40)], 0.0, bwrap)
    assert len(cases.cases) == 8 and cases.dropped == 32 and json.loads(cases.drops) == {"budget": 32}, cases
    assert all(c.expected == ["float", 0.5] for c in cases.cases)


@pytest.mark.e2e
def test_answers_travel_in_the_normal_form_and_large_ones_are_left_out(
    bwrap: Executor, all_tasks: dict[str, Task]
) -> None:
    task = all_tasks["Python/15"]  # string_sequence(n): a string of about 6n characters
    cases = CaseStore(None).get(task, [(3,), (10**6,)], 0.0, bwrap)  # about 6.9 MB: past TASK_BYTES
    assert [c.text for c in cases.cases] == ["(3,)"] and cases.dropped == 1
    assert cases.cases[0].expected == "0 1 2 3"
    assert Cases.of(cases.cases).cases[0].expected == "0 1 2 3"


def test_an_executor_failure_leaves_pass_at_1_plus_unchecked(all_tasks: dict[str, Task], tmp_path: Path) -> None:
    class Broken:
        guarantees = frozenset({JUDGE, FS})

        def run(self, code: str, test: str, support: str = "") -> ExecResult:
            return ExecResult("passed", PASSED_MESSAGE) if code else ExecResult("error", "the sandbox is gone")

    task = all_tasks["Python/2"]
    store = CaseStore(tmp_path, shipped=None)  # a dataset of its own: the answers are computed
    scored = score_task(task.canonical_code, task.canonical_code, task, Broken(), store)  # type: ignore[arg-type]
    assert scored.score.passed and scored.scores["plus"]["final"] is None
    assert "the sandbox is gone" in (scored.scores["plus"]["example"] or "")
    assert not list(tmp_path.glob("*.json"))  # nothing kept: the next run tries again


def test_the_default_cache_is_the_users_and_can_be_turned_off() -> None:
    assert default_directory({"HOME": "/h", "XDG_CACHE_HOME": "/c"}) == Path("/c/humanevalfix/plus-cases")
    assert default_directory({"HUMANEVALFIX_PLUS_CACHE": "off"}) is None
    assert default_directory({"HUMANEVALFIX_PLUS_CACHE": "/x"}) == Path("/x")


@pytest.mark.e2e
def test_robustness_check_alone_uses_the_same_cases(
    bwrap: Executor, all_tasks: dict[str, Task], warm: CaseStore
) -> None:
    task = all_tasks["Python/55"]
    alone = robustness.check(task.canonical_code, task, bwrap, passed=True, store=warm)
    together = score_task(task.canonical_code, task.canonical_code, task, bwrap, warm)
    assert alone.plus is True and alone.inputs == together.scores["plus"]["inputs"]
