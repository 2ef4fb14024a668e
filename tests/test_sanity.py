"""The sanity set: src/humanevalfix/evaluation/data/unwinnable.jsonl has tests no function can pass. A pipeline that
reports a pass on it is broken; one that passes nothing anywhere would pass this check too, so
the same command must also pass real tasks (the positive control)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from humanevalfix.cli import main
from humanevalfix.evaluation.dataset import load_file
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor

from .conftest import clean_env, run_cli

UNWINNABLE = (
    Path(__file__).resolve().parent.parent / "src" / "humanevalfix" / "evaluation" / "data" / "unwinnable.jsonl"
)

# Functions that try to pass any test: an object equal to everything, one that is every bool.
CHEATS = [
    "class _Any:\n"
    "    def __eq__(self, other): return True\n"
    "    def __ne__(self, other): return False\n"
    "    def __lt__(self, other): return True\n"
    "    def __gt__(self, other): return True\n"
    "    def __bool__(self): return True\n"
    "    def __len__(self): return 3\n"
    "    def __mod__(self, other): return 1\n"
    "\n"
    "def {name}(*args, **kwargs):\n"
    "    return _Any()\n",
    "def {name}(*args, **kwargs):\n    return None\n",
]


def test_the_sanity_set_is_what_it_claims() -> None:
    tasks = load_file(UNWINNABLE).tasks
    assert 5 <= len(tasks) <= 10
    assert all(t.canonical_code for t in tasks), "oracle:canonical needs a canonical solution per task"
    assert len({t.bug_type for t in tasks}) >= 3  # the reports have categories to show


@pytest.mark.e2e
def test_oracle_canonical_passes_nothing_on_the_unwinnable_set(tmp_path: Path) -> None:
    out = tmp_path / "unwinnable.json"
    proc = run_cli(
        [
            "--model",
            "oracle:canonical",
            "--dataset-path",
            str(UNWINNABLE),
            "--max-iters",
            "1",
            "--workers",
            "2",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        env=clean_env(),
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    records = data["tasks"]
    assert data["status"] == "complete" and len(records) == len(load_file(UNWINNABLE).tasks)
    passed = [r["task_id"] for r in records if r["passed"] or r["passed_first"]]
    assert not passed, f"the pipeline reports a pass on unwinnable tasks: {passed}"
    assert data["summary"]["passed"] == 0 and data["summary"]["pass_at_1_final"] == 0.0
    # A zero that means something: no infrastructure error, every test ran and failed an assert.
    assert [r["error"] for r in records] == [None] * len(records)
    for r in records:
        assert "AssertionError" in r["score_message"] or "assert" in r["score_message"], r["score_message"]
        assert r["final_code"] and r["executions"] >= 1


@pytest.mark.e2e
def test_oracle_buggy_passes_nothing_either(tmp_path: Path) -> None:
    out = tmp_path / "buggy.json"
    assert (
        main(
            [
                "--model",
                "oracle:buggy",
                "--dataset-path",
                str(UNWINNABLE),
                "--max-iters",
                "0",
                "--workers",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["summary"]["passed"] == 0 and data["summary"]["errors"] == 0


@pytest.mark.e2e
def test_functions_built_to_cheat_still_fail() -> None:
    executor = build_executor("auto", Limits(timeout_s=5.0))
    try:
        for task in load_file(UNWINNABLE).tasks:
            for cheat in CHEATS:
                result = executor.run(cheat.replace("{name}", task.entry_point), task.test)
                assert result.status == "failed", (task.task_id, result)
    finally:
        executor.close()


@pytest.mark.e2e
def test_positive_control_the_same_command_passes_real_tasks(tmp_path: Path, tiny_dataset: Path) -> None:
    out = tmp_path / "control.json"
    assert (
        main(
            [
                "--model",
                "oracle:canonical",
                "--dataset-path",
                str(tiny_dataset),
                "--max-iters",
                "0",
                "--workers",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["summary"]["passed"] == data["summary"]["tasks"] == 3


@pytest.mark.e2e
def test_validate_dataset_flags_every_unwinnable_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate-dataset", str(UNWINNABLE), "--workers", "2"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    count = len(load_file(UNWINNABLE).tasks)
    assert out.count("the canonical solution fails `test`") == count
    assert f"{count} of {count} row(s) do not hold" in out
