"""validate-dataset: every defect a row can have is named with its row; good rows pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.cli import main

from .conftest import clean_env, run_cli

GOOD_WHOLE = {  # the single-field form: buggy_code / canonical_code
    "task_id": "Own/good-whole",
    "entry_point": "double",
    "buggy_code": "def double(x):\n    return x + 2\n",
    "canonical_code": "def double(x):\n    return x * 2\n",
    "test": "def check(candidate):\n    assert candidate(3) == 6\n    assert candidate(0) == 0\n\ncheck(double)\n",
    "example_test": "def check(candidate):\n    assert candidate(1) == 2\n\ncheck(double)\n",
    "bug_type": "operator misuse",
}
GOOD_SPLIT = {  # the HumanEvalPack form: declaration + buggy_solution / canonical_solution
    "task_id": "Own/good-split",
    "entry_point": "last",
    "declaration": "from typing import List\n\ndef last(xs: List[int]) -> int:\n",
    "buggy_solution": "    return xs[0]\n",
    "canonical_solution": "    return xs[-1]\n",
    "test": "assert last([1, 2, 3]) == 3\n",  # direct asserts are fine too
}
NO_CANONICAL = {
    "task_id": "Own/no-canonical",
    "entry_point": "neg",
    "buggy_code": "def neg(x):\n    return x\n",
    "test": "assert neg(2) == -2\n",
}


def bad(task_id: str, **changes: Any) -> dict[str, Any]:
    row = dict(GOOD_WHOLE, task_id=task_id)
    for key, value in changes.items():
        if value is None:
            row.pop(key, None)
        else:
            row[key] = value
    return row


# (row, the problem validate-dataset must name for it)
BAD_ROWS = [
    (bad("Own/no-test", test=None), "field 'test' is missing"),
    (bad("Own/no-entry", entry_point="triple"), "does not define `triple`"),
    (bad("Own/buggy-syntax", buggy_code="def double(x)\n    return x + 2\n"), "the buggy code does not parse"),
    (
        bad("Own/test-ignores-fn", test="def check(candidate):\n    assert candidate(3) == 6\n\ncheck(abs)\n"),
        "never refers to `double`",
    ),
    (
        bad("Own/check-never-called", test="def check(candidate):\n    assert candidate(3) == 6\n\ndouble\n"),
        "defines check() but never calls it",
    ),
    (
        bad("Own/bug-not-caught", test="def check(candidate):\n    assert candidate(0) != 5\n\ncheck(double)\n"),
        "the buggy code passes `test`",
    ),
    (
        bad("Own/canonical-wrong", canonical_code="def double(x):\n    return x * 3\n"),
        "the canonical solution fails `test`",
    ),
    (
        bad("Own/example-wrong", example_test="def check(candidate):\n    assert candidate(1) == 3\n\ncheck(double)\n"),
        "the canonical solution fails `example_test`",
    ),
    (
        bad("Own/canonical-misnamed", canonical_code="def twice(x):\n    return x * 2\n"),
        "the canonical solution does not define `double`",
    ),
]


def write_jsonl(path: Path, rows: list[Any], raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in rows]
    for index, text in (raw_lines or {}).items():
        lines.insert(index, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.e2e
def test_good_rows_in_both_forms_pass(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "good.jsonl", [GOOD_WHOLE, GOOD_SPLIT, NO_CANONICAL])
    proc = run_cli(["validate-dataset", str(path)], cwd=tmp_path, env=clean_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 3 row(s) hold" in proc.stdout


@pytest.mark.e2e
def test_every_bad_row_is_listed_with_its_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [GOOD_WHOLE] + [row for row, _ in BAD_ROWS] + [dict(GOOD_SPLIT, task_id="Own/good-whole")]
    path = write_jsonl(tmp_path / "mixed.jsonl", rows, raw_lines={3: "{not json"})
    assert main(["validate-dataset", str(path), "--workers", "2"]) == 1
    out = capsys.readouterr().out
    blocks = {b.split("\n", 1)[0]: b for b in out.split("✗ ")[1:]}
    listed = {header.split(" (task_id")[0].rsplit(":", 1)[1].strip() for header in blocks}
    # Line numbers: the good row is line 1, the raw bad line is line 4, a duplicate id at the end.
    expected_lines = {str(i) for i in range(2, len(rows) + 2)}
    assert listed == expected_lines, out
    text = " ".join(out.split())
    for row, problem in BAD_ROWS:
        assert problem in text, (row["task_id"], problem)
        block = next(b for h, b in blocks.items() if f"'{row['task_id']}'" in h)
        assert problem in " ".join(block.split())
    assert "not valid JSON" in text
    assert "duplicate task_id 'Own/good-whole' (first at" in text
    assert f"{len(BAD_ROWS) + 2} of {len(rows) + 1} row(s) do not hold" in text


@pytest.mark.e2e
def test_humanevalfix_rows_validate(tmp_path: Path, tiny_dataset: Path) -> None:
    assert main(["validate-dataset", str(tiny_dataset), "--workers", "2"]) == 0


def test_missing_file_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate-dataset", str(tmp_path / "nope.jsonl")]) == 2
    assert "dataset file not found" in capsys.readouterr().err


@pytest.mark.slow
def test_validate_dataset_runs_in_docker_too(tmp_path: Path, tiny_dataset: Path) -> None:
    """The rows' canonical and buggy code run in the container executor: the same verdicts."""
    proc = run_cli(["validate-dataset", str(tiny_dataset), "--sandbox", "docker"], cwd=tmp_path, env=clean_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "all 3 row(s) hold" in proc.stdout
    bad = tmp_path / "bad.jsonl"
    row = json.loads(tiny_dataset.read_text(encoding="utf-8").splitlines()[0])
    bad.write_text(json.dumps(dict(row, canonical_solution=row["buggy_solution"])) + "\n", encoding="utf-8")
    proc = run_cli(["validate-dataset", str(bad), "--sandbox", "docker"], cwd=tmp_path, env=clean_env())
    assert proc.returncode == 1 and row["task_id"] in proc.stdout, proc.stdout + proc.stderr[-2000:]
