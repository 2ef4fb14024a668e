"""bench/minimal_fix.py against the scripted server: which passes it takes (the committed default
run's rewrite passes), what it scores (tests, then pass@1+, in the default sandbox), and its refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from humanevalfix.evaluation.dataset import Task
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, fenced, text

from .conftest import scripted_preset

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import minimal_fix  # noqa: E402

RUN = ROOT / "results" / "local-0.5b_tests_repair_rewrite-now_fresh.json"


def run_of(tmp_path: Path, task_ids: tuple[str, ...]) -> Path:
    """The committed run with only these tasks: its rewrite passes Python/12 and 14, which hold on
    pass@1+, and Python/83, which does not (the run's one answer to every input is None)."""
    document = json.loads(RUN.read_text(encoding="utf-8"))
    small = tmp_path / RUN.name
    small.write_text(json.dumps({**document, "tasks": [t for t in document["tasks"] if t["task_id"] in task_ids]}))
    return small


def test_it_takes_the_rewrite_passes_of_a_run() -> None:
    from humanevalfix.reports.runs import load_run

    chosen = minimal_fix.rewrite_passes(list(load_run(RUN).records))
    # docs/results.md: 25 of the default run's 50 passes were written by rewrite, 23 of them hold on pass@1+.
    assert len(chosen) == 25 and sum((r.scores.get("plus") or {}).get("final") is True for r in chosen) == 23
    assert [r.task_id for r in chosen[:3]] == ["Python/11", "Python/12", "Python/14"]


@pytest.mark.e2e
def test_small_fixes_are_scored_on_the_tests_then_pass_at_1_plus(
    tmp_path: Path,
    dataset_path: Path,
    all_tasks: dict[str, Task],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Python/83 answered with its canonical solution, Python/12 with its buggy code, Python/14 with prose."""
    prompts: list[str] = []

    def handle(request: Recorded) -> Response:
        prompt = str(request.body["messages"][-1]["content"])
        prompts.append(prompt)
        task = next(
            all_tasks[t]
            for t in ("Python/83", "Python/12", "Python/14")
            if f"def {all_tasks[t].entry_point}(" in prompt
        )
        if task.task_id == "Python/83":
            return fenced(task.canonical_code or "")
        if task.task_id == "Python/12":
            return fenced(task.buggy_code)
        return text("I would keep it as it is.")

    out = tmp_path / "minimal.json"
    with ScriptedServer(handle) as server:
        monkeypatch.setattr(minimal_fix, "load_presets", lambda: {"scripted": scripted_preset(server.base_url)})
        code = minimal_fix.main(
            [str(run_of(tmp_path, ("Python/12", "Python/14", "Python/83"))), "--model", "scripted"]
            + ["--dataset-path", str(dataset_path), "--limit", "3", "--out", str(out)]
        )
    assert code == 0
    assert len(prompts) == 3 and all("smallest change" in p for p in prompts)
    data = json.loads(out.read_text())
    rows = {r["task_id"]: r for r in data["rows"]}
    assert (rows["Python/83"]["minimal_passed"], rows["Python/83"]["minimal_plus"]) == (True, True)
    assert (
        rows["Python/12"]["minimal_passed"],
        rows["Python/12"]["minimal_plus"],
        rows["Python/12"]["minimal_is_buggy"],
    ) == (False, None, True)
    assert (rows["Python/14"]["minimal_passed"], rows["Python/14"]["minimal_code"]) == (False, None)
    # The run's own verdicts for these three rewrites: Python/83 fails pass@1+, 12 and 14 hold.
    assert [rows[t]["rewrite_plus"] for t in ("Python/83", "Python/12", "Python/14")] == [False, True, True]
    assert data["totals"] == {
        "rewrite_passes": 3,
        "rewrite_plus": 2,
        "minimal_passed": 1,
        "minimal_plus": 1,
        "minimal_is_buggy": 1,
        "plus_if_replaced": 3,
    }
    assert "pass@1+ of these tasks if a passing small fix replaced its rewrite: 3" in capsys.readouterr().out


def test_a_run_of_another_protocol_or_no_results_file_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert minimal_fix.main([str(ROOT / "results" / "local-0.5b_hidden_repair.json")]) == 2
    assert "--protocol hidden" in capsys.readouterr().err
    missing = tmp_path / "nope.json"
    assert minimal_fix.main([str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
