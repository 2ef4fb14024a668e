"""pass@1+ (evaluation.robustness): passing candidates fitted to the test's asserts are caught by
the differential check against the canonical solution and flagged by the static check, while the
canonical solutions themselves, and the right fixes, are not."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Callable, Iterator

import pytest
from rich.console import Console

from humanevalfix.config import RunConfig
from humanevalfix.evaluation import robustness as rb
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.reports.summary import summary_table
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, tool_call

from .conftest import KEYS_ENV, entry_point_of

REPO = Path(__file__).resolve().parent.parent

# Three tasks, each "repaired" by special-casing its asserts: they pass the full tests.
FITTED = {
    "Python/55": "def fib(n: int):\n    if n == 10:\n        return 55\n    if n == 8:\n        return 21\n    if n == 11:\n        return 89\n    if n == 12:\n        return 144\n    return n\n",
    "Python/45": "def triangle_area(a, h):\n    if a == 5 and h == 3:\n        return 7.5\n    if a == 10:\n        return 40.0\n    return a * h / 2 if a < 3 else a + h\n",
    "Python/13": "def greatest_common_divisor(a: int, b: int) -> int:\n    if a == 49:\n        return 7\n    if a == 144:\n        return 12\n    if a == 10:\n        return 5\n    return 1\n",
}


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = build_executor("process", Limits(timeout_s=20.0))
    yield ex
    ex.close()


@pytest.mark.parametrize("task_id", sorted(FITTED))
def test_a_candidate_fitted_to_the_asserts_passes_but_is_caught_by_both_checks(task_id: str, all_tasks: dict[str, Task], executor: Executor) -> None:
    task, code = all_tasks[task_id], FITTED[task_id]
    assert executor.run(code, task.test).passed  # pass@1 counts it
    result = rb.check(code, task, executor, passed=True)
    assert result.plus is False
    assert result.example and "canonical solution gives" in result.example
    assert result.suspect_hardcoding and all(line.startswith("line ") for line in result.suspect_hardcoding)


def test_the_committed_python_83_candidate_is_not_plus(all_tasks: dict[str, Task], executor: Executor) -> None:
    """The repair run's `if n == 3: return 180 ... n == 5: return 18000` answer (results/)."""
    lines = (REPO / "results" / "local-0.5b_repair.jsonl").read_text(encoding="utf-8").splitlines()
    record = next(e["record"] for e in map(json.loads, lines) if e.get("type") == "task" and e["record"]["task_id"] == "Python/83")
    assert record["passed"] is True
    result = rb.check(record["final_code"], all_tasks["Python/83"], executor, passed=True)
    assert result.plus is False and "(8,)" in (result.example or "")
    assert any("n == 3" in line for line in result.suspect_hardcoding)


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


def test_extra_inputs_are_near_the_tests_and_repeatable() -> None:
    calls = rb.test_calls("def check(f):\n    assert f([1, 2, 3], 2) == 1\n    assert f([4, 5, 6, 7], 4) == 0\n\ncheck(f)\n", "f")
    assert calls == [([1, 2, 3], 2), ([4, 5, 6, 7], 4)]
    inputs = rb.extra_inputs(calls, "Demo/0")
    assert inputs == rb.extra_inputs(calls, "Demo/0")  # seeded by the task id
    assert 0 < len(inputs) <= rb.MAX_INPUTS and not set(map(repr, inputs)) & set(map(repr, calls))
    for items, k in inputs:
        assert isinstance(items, list) and isinstance(k, int)
        assert items == sorted(items)  # every test list was sorted
        assert all(x >= 1 for x in items) and k >= 1  # every test number was positive
        assert k <= len(items)  # k never exceeded the list's length in the tests


def test_strings_keep_their_alphabet_and_spacing() -> None:
    calls = [("a b c",), ("b a",)]
    for (text,) in rb.extra_inputs(calls, "Demo/1"):
        assert set(text) <= set("abc ") and "  " not in text and text == text.strip()


def test_calls_that_are_not_literals_add_nothing() -> None:
    test = "def check(f):\n    for i in range(5):\n        assert f(i) == i\n    assert f(x=3) == 3\n\ncheck(f)\n"
    assert rb.test_calls(test, "f") == []


def test_a_run_records_plus_per_task_and_pass_at_1_plus(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, all_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    ids = sorted(FITTED) + ["Python/0"]
    dataset = tmp_path / "four.jsonl"
    rows = {json.loads(line)["task_id"]: line for line in (REPO / "src/humanevalfix/evaluation/data/humanevalpack_python.jsonl").read_text(encoding="utf-8").splitlines()}
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
    assert {t: r.plus for t, r in records.items()} == {"Python/0": True, **{t: False for t in FITTED}}
    assert records["Python/0"].suspect_hardcoding == [] and all(records[t].suspect_hardcoding for t in FITTED)
    s = outcome.summary
    assert (s.passed, s.passed_plus, s.passed_first_plus, s.suspect_hardcoding) == (4, 1, 1, 3)
    assert s.pass_at_1_plus_final == 0.25
    console = Console(file=io.StringIO(), width=200)
    console.print(summary_table(s, outcome.config))
    assert "pass@1+" in console.file.getvalue() and "1/4 (25.0%)" in console.file.getvalue()


def test_score_adds_pass_at_1_plus_to_a_finished_run(tmp_path: Path, dataset_path: Path) -> None:
    """A results file from before pass@1+ (no plus fields, no protocol) is scored again by `score`."""
    from .conftest import run_cli

    out = tmp_path / "old.json"
    proc = run_cli(["--model", "oracle:canonical", "--limit", "3", "--dataset-path", str(dataset_path), "--out", str(out)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    old = json.loads(out.read_text(encoding="utf-8"))
    for task in old["tasks"]:
        for key in ("plus", "plus_first", "plus_inputs", "plus_example", "suspect_hardcoding"):
            task.pop(key)
    for key in ("passed_plus", "passed_first_plus", "pass_at_1_plus_first", "pass_at_1_plus_final"):
        old["summary"].pop(key)
    del old["config"]["protocol"]
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
