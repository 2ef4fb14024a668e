"""`score --plus-inputs FILE`: pass@1+ on EvalPlus's own HumanEval+ inputs, in EvalPlus's file format.

No EvalPlus file is bundled or downloaded; these tests write small files in its format (JSONL rows
with task_id HumanEval/N, plus_input as a list of argument lists, atol), plain and gzipped."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from humanevalfix.errors import UserError
from humanevalfix.evaluation import plusfile
from humanevalfix.reports.visualize import write_reports

from .conftest import run_cli
from .plus_wrong_fixes import WRONG_FIXES

ROWS = [
    # The fields EvalPlus's rows carry besides these (prompt, canonical_solution, base_input, ...) are ignored.
    {
        "task_id": "HumanEval/0",
        "prompt": "...",
        "entry_point": "has_close_elements",
        "base_input": [[[1.0, 2.0], 0.5]],
        "plus_input": [[[1.0, 5.0], 0.5], [[1.0, 2.0, 2.0], 0.0], [[3.5, 1.25, 9.0], 3.0]],
        "atol": 0,
    },
    {"task_id": "HumanEval/2", "plus_input": [[3.5], [10.125], [0.001]], "atol": 1e-6},
]


def _write(path: Path, rows: list[dict], gz: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


@pytest.mark.parametrize("gz", [False, True], ids=["jsonl", "jsonl.gz"])
def test_an_evalplus_file_is_read_task_by_task(tmp_path: Path, gz: bool) -> None:
    path = _write(tmp_path / ("plus.jsonl.gz" if gz else "plus.jsonl"), ROWS, gz)
    plus = plusfile.load(path)
    assert sorted(plus.inputs) == ["Python/0", "Python/2"]
    assert plus.inputs["Python/0"].args[1] == ([1.0, 2.0, 2.0], 0.0) and plus.inputs["Python/0"].atol == 0.0
    assert plus.inputs["Python/2"].atol == 1e-6 and len(plus.inputs["Python/2"].args) == 3
    assert plus.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert plus.source() == {
        "inputs": "evalplus-file",
        "path": str(path),
        "sha256": plus.sha256,
        "tasks": 2,
        "inputs_total": 6,
        "inputs_left_out": 0,
    }


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "not valid JSON"),
        ('{"task_id": "Python/0", "plus_input": []}', "is not HumanEval/N"),
        ('{"task_id": "HumanEval/0", "plus_input": [1, 2]}', "a list of argument lists"),
        ('{"task_id": "HumanEval/0", "plus_input": [], "atol": -1}', "atol"),
        ("[1]", "expected a JSON object"),
    ],
)
def test_a_bad_file_is_refused_in_one_line_naming_the_row(tmp_path: Path, line: str, says: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROWS[1]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(UserError) as err:
        plusfile.load(path)
    assert says in str(err.value) and f"{path}:2" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.e2e
def test_score_with_plus_inputs_uses_evalplus_inputs_records_the_file_and_shows_why(
    tmp_path: Path, dataset_path: Path
) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(
        ["--model", "oracle:canonical", "--limit", "3", "--dataset-path", str(dataset_path), "--out", str(out)],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    task0 = next(t for t in data["tasks"] if t["task_id"] == "Python/0")
    task0["final_code"] = task0["first_code"] = WRONG_FIXES["Python/0"].code  # passes the tests, wrong on a tie
    out.write_text(json.dumps(data), encoding="utf-8")
    plus = _write(tmp_path / "HumanEvalPlus.jsonl", ROWS)

    rescored = tmp_path / "rescored.json"
    proc = run_cli(
        ["score", str(out), "--dataset-path", str(dataset_path), "--plus-inputs", str(plus), "--out", str(rescored)],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(rescored.read_text(encoding="utf-8"))
    tasks = {t["task_id"]: t for t in result["tasks"]}
    assert result["config"]["plus_source"]["sha256"] == hashlib.sha256(plus.read_bytes()).hexdigest()
    assert result["config"]["plus_source"]["inputs"] == "evalplus-file"
    assert tasks["Python/0"]["passed"] is True and tasks["Python/0"]["plus"] is False
    assert (tasks["Python/0"]["plus_inputs"], tasks["Python/0"]["plus_disagreements"]) == (3, 1)
    assert (
        "([1.0, 2.0, 2.0], 0.0)" in tasks["Python/0"]["plus_example"]
        and "gives False, the candidate True" in tasks["Python/0"]["plus_example"]
    )
    assert tasks["Python/2"]["plus"] is True and tasks["Python/2"]["plus_inputs"] == 3  # EvalPlus's three inputs
    assert tasks["Python/1"]["plus"] is True and tasks["Python/1"]["plus_inputs"] > 10  # not in the file: generated
    assert result["summary"]["passed_plus"] == 2 and "EvalPlus's inputs" in proc.stderr

    page = write_reports(rescored, tmp_path / "report")[1].read_text(encoding="utf-8")
    assert "pass@1+" in page and "1 of 3 input(s) disagree" in page and "([1.0, 2.0, 2.0], 0.0)" in page
    assert "EvalPlus&#x27;s file HumanEvalPlus.jsonl" in page


@pytest.mark.e2e
def test_plus_inputs_is_refused_for_a_generations_file(tmp_path: Path, dataset_path: Path) -> None:
    generations = tmp_path / "gen.json"
    generations.write_text(json.dumps([["def f(): pass"]]), encoding="utf-8")
    plus = _write(tmp_path / "plus.jsonl", ROWS)
    proc = run_cli(
        ["score", str(generations), "--dataset-path", str(dataset_path), "--plus-inputs", str(plus)], cwd=tmp_path
    )
    assert proc.returncode == 2 and "--plus-inputs" in proc.stderr
