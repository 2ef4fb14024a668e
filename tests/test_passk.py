"""pass@k: the estimator against exact combinatorics, and --samples n through the real pipeline."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from humanevalfix.cli import main
from humanevalfix.errors import UserError
from humanevalfix.evaluation.passk import counts_by_task, mean_pass_at_k, pass_at_k, pass_at_ks
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.results import summarize
from humanevalfix.testing.oracle import Lookup, model_turn
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, tool_call

from .conftest import KEYS_ENV, TINY_TASK_IDS, results_of


def exact(n: int, c: int, k: int) -> Fraction:
    """1 - C(n-c, k) / C(n, k), in exact arithmetic (math.comb is 0 when n-c < k)."""
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def test_estimator_matches_exact_combinatorics_for_every_small_case() -> None:
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(float(exact(n, c, k)), abs=1e-12), (n, c, k)


def test_estimator_edge_values() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)  # pass@1 is the plain pass share
    assert pass_at_k(5, 2, 4) == 1.0  # 3 failures cannot fill 4 draws
    values = [pass_at_k(20, 4, k) for k in range(1, 21)]
    assert values == sorted(values)  # more draws never hurt


def test_estimator_is_stable_where_the_binomials_are_astronomical() -> None:
    # C(1000, 500) has about 300 digits: the product form must still agree with exact arithmetic.
    for n, c, k in [(1000, 10, 100), (1000, 1, 500), (2000, 1990, 5), (500, 37, 250)]:
        assert pass_at_k(n, c, k) == pytest.approx(float(exact(n, c, k)), rel=1e-9)


@pytest.mark.parametrize("n,c,k", [(3, 1, 4), (3, 1, 0), (0, 0, 1), (3, 4, 1), (3, -1, 1)])
def test_estimator_rejects_impossible_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(UserError):
        pass_at_k(n, c, k)


def test_mean_over_tasks_and_the_supported_ks() -> None:
    outcomes = [
        ("a", True),
        ("a", False),
        ("a", False),
        ("b", False),
        ("b", False),
        ("b", False),
        ("c", True),
        ("c", True),
        ("c", True),
    ]
    counts = counts_by_task(outcomes)
    assert counts == {"a": (3, 1), "b": (3, 0), "c": (3, 3)}
    assert mean_pass_at_k(counts, 2) == pytest.approx((float(exact(3, 1, 2)) + 0 + 1) / 3)
    assert pass_at_ks(outcomes) == {"1": round(4 / 9, 4), "2": round((2 / 3 + 1) / 3, 4), "3": round(2 / 3, 4)}
    # A task with fewer samples (an interrupted run) limits k for all.
    assert list(pass_at_ks(outcomes[:-1])) == ["1", "2"]
    with pytest.raises(UserError):
        mean_pass_at_k(counts_by_task(outcomes[:-1]), 3)


def _record(task_id: str, sample: int, passed: bool, first: bool) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        entry_point="f",
        bug_type="",
        failure_symptoms="",
        scores={"verdict": {"passed": passed, "passed_first": first}},
        iterations=1,
        executions=1,
        stop_reason="passed" if passed else "budget",
        tool_mode="native",
        first_code="",
        final_code="",
        score_message="",
        tokens_in=0,
        tokens_out=0,
        model_latency_s=0.0,
        wall_s=0.0,
        sample=sample,
    )


def test_summary_keeps_its_fields_and_adds_pass_at_k() -> None:
    records = [
        _record("a", 0, True, False),
        _record("a", 1, False, False),
        _record("b", 0, True, True),
        _record("b", 1, True, True),
    ]
    summary = summarize(records, wall_s=1.0)
    assert (summary.tasks, summary.passed, summary.passed_first) == (4, 3, 2)
    assert summary.pass_at_1_final == 0.75 and summary.pass_at_1_first == 0.5
    assert summary.samples == 2
    assert summary.pass_at_k_final == {"1": 0.75, "2": 1.0}
    assert summary.pass_at_k_first == {"1": 0.5, "2": 0.5}
    single = summarize([_record("a", 0, True, True)], wall_s=1.0)
    assert single.samples == 1 and single.pass_at_k_final == {"1": 1.0}


@pytest.mark.e2e
def test_samples_through_the_real_pipeline(
    tmp_path: Path,
    tiny_dataset: Path,
    all_tasks: dict,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--samples 3: each task's conversations are fixed on a set schedule; pass@k must follow it."""
    tasks = [all_tasks[t] for t in TINY_TASK_IDS]
    lookup = Lookup.of(tasks)
    # Per task, which of its three conversations (in arrival order, one worker) send the fix.
    schedule = {
        TINY_TASK_IDS[0]: (True, False, False),
        TINY_TASK_IDS[1]: (False, False, False),
        TINY_TASK_IDS[2]: (True, True, True),
    }
    seen: dict[str, int] = {}

    def handle(request: Recorded) -> Response:
        task = lookup.task_of(request)
        assert model_turn(request) == 0  # --max-iters 0: one turn per conversation
        index = seen.get(task.task_id, 0)
        seen[task.task_id] = index + 1
        return tool_call(task.canonical_code if schedule[task.task_id][index] else task.buggy_code)

    out = tmp_path / "samples.json"
    monkeypatch.setenv(KEYS_ENV, "sk-scripted")
    monkeypatch.setenv("COLUMNS", "200")  # the summary table on one line per row
    monkeypatch.chdir(tmp_path)  # no stray .env
    with ScriptedServer(handle) as server:
        code = main(
            [
                "--model",
                "scripted-model",
                "--base-url",
                server.base_url,
                "--api-key-env",
                KEYS_ENV,
                "--dataset-path",
                str(tiny_dataset),
                "--samples",
                "3",
                "--temperatures",
                "0.8",
                "--max-iters",
                "0",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    summary = results_of(out)["summary"]
    assert summary["samples"] == 3 and summary["tasks"] == 9 and summary["passed"] == 4
    expected = {str(k): round((float(exact(3, 1, k)) + 0.0 + 1.0) / 3, 4) for k in (1, 2, 3)}
    assert summary["pass_at_k_final"] == expected
    assert summary["pass_at_k_first"] == expected  # one turn: first attempt = final
    table = " ".join(capsys.readouterr().err.split())
    assert "3 independent repair runs per task" in table
    assert f"pass@2 {100 * expected['2']:.1f}%" in table
    records = json.loads(out.read_text())["tasks"]
    assert sorted((r["task_id"], r["sample"]) for r in records) == sorted(
        (t, s) for t in TINY_TASK_IDS for s in range(3)
    )
