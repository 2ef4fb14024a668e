"""bench/fix_bench.py's helper-module set (bench/fix_helpers.py) and its diff checks
(bench/fix_diffs.py): projects built mechanically from the tasks, scored as one program, and `fix`
run on them end to end against the scripted server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from humanevalfix.evaluation.dataset import Task
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.testing.scripted_server import ScriptedServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import fix_bench  # noqa: E402
import fix_diffs  # noqa: E402
import fix_helpers  # noqa: E402
import fix_tasks  # noqa: E402

from .test_bench_fix import TASKS, answering, bench_args  # noqa: E402

FIRST = [f"Python/{n}" for n in range(12)]


def test_the_package_fails_with_the_buggy_helper_and_passes_with_the_canonical_one(all_tasks: dict[str, Task]) -> None:
    executor = build_executor("process", Limits(timeout_s=10))
    scorer = fix_tasks.Scorer(executor)
    try:
        for task_id in FIRST:
            task = all_tasks[task_id]
            api = fix_helpers.caller_source(task)
            assert (
                f"return core.{task.entry_point}(" in api and ":" not in api.split("(", 1)[1].split(")")[0]
            )  # no annotations
            assert scorer.passes(fix_helpers.combined_program(task.buggy_code, api), task) == (False, False), task_id
            assert scorer.passes(fix_helpers.combined_program(task.canonical_code or "", api), task) == (True, True), (
                task_id
            )
            tests = fix_helpers.helper_test_source(task)
            assert (
                f"from tasklib.api import {task.entry_point}\n" in tests
                and "from tasklib.core import " + task.entry_point not in tests
            )
    finally:
        executor.close()


def test_the_deep_package_is_scored_through_mid_and_the_results_attribute(
    all_tasks: dict[str, Task], tmp_path: Path
) -> None:
    """--set deep: core's buggy entry point two calls below the test, its value read from a Result;
    the package fails with the buggy core and passes with the canonical one, as one program and as
    a pytest project."""
    executor = build_executor("process", Limits(timeout_s=10))
    scorer = fix_tasks.Scorer(executor)
    try:
        for task_id in ("Python/0", "Python/38"):  # Python/38's test also takes a helper from core
            task = all_tasks[task_id]
            project = fix_helpers.write_helper_project(task, tmp_path / task_id.replace("/", "_"), deep=True)
            files = project.files()
            api, mid = files["tasklib/api.py"], files["tasklib/mid.py"]
            name = task.entry_point
            assert mid == fix_helpers.caller_source(task) and f"return Result(mid.{name}(" in api
            tests = project.tests.read_text(encoding="utf-8")
            assert f"from tasklib.api import {name} as _{name}\n" in tests
            assert f"    r = _{name}(*args, **kwargs)\n    return r.value\n" in tests
            for core, passes in ((task.buggy_code, False), (task.canonical_code or "", True)):
                program = fix_helpers.combined_program(core, api, mid, name)
                assert scorer.passes(program, task) == (passes, passes), (task_id, passes)
            project.core.write_text(task.canonical_code or "", encoding="utf-8")
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", project.tests.name],
                cwd=project.root,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert run.returncode == 0, run.stdout
    finally:
        executor.close()


def test_diff_checks_name_what_is_not_the_fix() -> None:
    before = {"m.py": 'import re\n\n\ndef f(x):\n    """Doc."""\n    # why\n    return x\n'}
    clean = '--- a/m.py\n+++ b/m.py\n@@ -5,3 +5,3 @@\n     """Doc."""\n     # why\n-    return x\n+    return x + 1\n'
    assert fix_diffs.quality(clean, before) == (True, "")
    sloppy = (
        "--- a/m.py\n+++ b/m.py\n@@ -1,7 +1,6 @@\n import re\n+from typing import *\n \n \n def f(x):\n"
        '-    """Doc."""\n-    # why\n-    return x\n+    return x + 1\n+    \n'
    )
    ok, extras = fix_diffs.quality(sloppy, before)
    assert ok and extras.split("; ") == ["m.py: blank line", "m.py: comment", "m.py: import", "m.py: docstring"]
    assert fix_diffs.quality(clean.replace("return x\n+", "return y\n+"), before) == (False, "does not apply")


# --set deep: tasks whose values are not booleans, which say nothing of where they were made
# (fixer.values.NOT_A_VALUE): the helper two calls down is found by the values alone.
@pytest.mark.parametrize(
    ("task_set", "mode", "ids"),
    [("helper", "project", TASKS), ("helper", "told", TASKS), ("deep", "project", ["Python/1", "Python/2"])],
)
def test_fix_finds_and_fixes_the_helper_without_file_or_function(
    task_set: str,
    mode: str,
    ids: list[str],
    all_tasks: dict[str, Task],
    dataset_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = [all_tasks[t] for t in ids]
    out = tmp_path / "helper.json"
    with ScriptedServer(answering(tasks, lambda t: t.canonical_code or "")) as server:
        code = fix_bench.main(
            bench_args(server, dataset_path, out, "--tasks", ",".join(ids), "--set", task_set, "--mode", mode)
        )
    assert code == 0
    doc = json.loads(out.read_text())
    for row in doc["rows"]:
        assert (row["fix_exit"], row["fix_passed"], row["fix_passed_reference"], row["mode"]) == (0, True, True, mode)
        assert (row["right_function"], row["applies"], row["extras"]) == (True, True, "")
        assert row["diff"].startswith("--- a/tasklib/core.py\n+++ b/tasklib/core.py\n")
    assert doc["settings"]["set"] == task_set and doc["summary"]["right_function"] == 2
    assert (
        "diffs: 2, 2 apply with git apply, 0 hold more than the fix; 2 change only the helper's function"
        in capsys.readouterr().out
    )


def test_where_the_values_cannot_tell_the_deepest_function_that_ran_comes_first(
    all_tasks: dict[str, Task], tmp_path: Path
) -> None:
    """--set deep on Python/0, whose values are booleans (too common to follow: fixer.values): api,
    mid and core all only ran, and on that tie the deepest, core, is the first scope."""
    import fix_scope_bench

    task = all_tasks["Python/0"]
    scopes = fix_scope_bench.scopes_of(task, tmp_path / "deep", "deep", 30.0)
    assert scopes[0] == "tasklib/core.py: has_close_elements", scopes
