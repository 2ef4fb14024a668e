"""bench/baseline.py from recorded sides: the ratio is computed from both files, no model started."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import baseline  # noqa: E402

MODEL = "qwen2.5-coder-0.5b-instruct"  # the `local` preset's model
TASKS = ["Python/0", "Python/1", "Python/2"]


def _agent_results(path: Path, passed: list[bool], model: str = MODEL) -> Path:
    records = [
        {"task_id": t, "passed": p, "passed_first": False, "iterations": 3, "wall_s": 1.5, "sample": 0, "error": None}
        for t, p in zip(TASKS, passed)
    ]
    path.write_text(json.dumps({"config": {"model": model, "protocol": "tests"}, "tasks": records}))
    return path


def _earlier_baseline(path: Path, passed: list[bool], model: str = MODEL) -> Path:
    rows = [
        {"task_id": t, "baseline_passed": p, "baseline_s": 2.0, "baseline_tokens_out": 10, "baseline_raw_passed": False, "baseline_reply": "..."}
        for t, p in zip(TASKS, passed)
    ]
    path.write_text(json.dumps({"summary": {"model": model}, "rows": rows}))
    return path


def test_both_sides_from_files_give_the_ratio_without_a_model(tmp_path: Path, dataset_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = _agent_results(tmp_path / "agent.json", [True, True, False])
    earlier = _earlier_baseline(tmp_path / "baseline.json", [True, False, False])
    out = tmp_path / "out.json"
    code = baseline.main(["--dataset-path", str(dataset_path), "--limit", "3", "--agent-results", str(agent), "--baseline-from", str(earlier), "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "ratio agent final / baseline: 2.0x" in printed
    summary = json.loads(out.read_text())["summary"]
    assert (summary["baseline_passed"], summary["agent_passed"], summary["baseline_from"]) == (1, 2, str(earlier))


def test_an_earlier_baseline_of_another_model_is_refused(tmp_path: Path, dataset_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = _agent_results(tmp_path / "agent.json", [True, True, False])
    earlier = _earlier_baseline(tmp_path / "baseline.json", [True, False, False], model="some-other-model")
    code = baseline.main(["--dataset-path", str(dataset_path), "--limit", "3", "--agent-results", str(agent), "--baseline-from", str(earlier)])
    assert code == 2
    err = capsys.readouterr().err
    assert "--baseline-from" in err and "some-other-model" in err


def test_an_agent_run_of_another_protocol_is_refused(tmp_path: Path, dataset_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = _agent_results(tmp_path / "agent.json", [True, True, False])
    earlier = _earlier_baseline(tmp_path / "baseline.json", [True, False, False])
    code = baseline.main(["--dataset-path", str(dataset_path), "--limit", "3", "--agent-results", str(agent), "--baseline-from", str(earlier), "--protocol", "hidden"])
    assert code == 2
    assert "--protocol tests" in capsys.readouterr().err


def test_the_plain_prompt_shows_what_the_protocol_shows(all_tasks: dict) -> None:
    task = all_tasks["Python/2"]
    prompts = {name: baseline.baseline_prompt(task, name) for name in ("tests", "docs", "hidden", "agent")}
    # The reference HumanEvalFixTests prompt, as before --protocol existed.
    assert prompts["tests"] == f"Fix bugs in {task.entry_point}.\n\n```python\n{task.buggy_code.strip()}\n```\n\n```python\n{task.test.strip()}\n```"
    first_doc_line = task.docstring.strip().splitlines()[0]
    assert [first_doc_line in prompts[n] for n in ("tests", "docs", "hidden", "agent")] == [False, True, True, True]
    assert [task.test.strip() in prompts[n] for n in ("tests", "docs", "hidden", "agent")] == [True, False, False, True]
    assert task.example_test.strip() in prompts["hidden"]
