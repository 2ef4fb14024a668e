#!/usr/bin/env python3
"""Where `fix` looks first, without a model: the fault localisation alone on the bench's task sets.

For each task, the project is built as bench/fix_bench.py builds it (`--set helper`: the bug in
tasklib/core.py, called by tasklib/api.py, the test importing the api; `--set deep`: two calls deep,
the value asserted through an attribute; `--set single`: one module),
the tests run once on it as `fix` runs them before any model call (the same sandbox, the call
tracer on), and the scopes `fix` would try are recorded: is the first the function with the bug?
No model is called, so this is exact and quick where the repair itself is slow and noisy.

    python bench/fix_scope_bench.py --set helper --limit 40 --out results/fix_scope_helper.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from fix_helpers import PACKAGE, SETS, write_helper_project  # bench/, beside this script
from fix_tasks import write_project

from humanevalfix.evaluation import dataset as ds
from humanevalfix.fixer.command import fix_executor, where_to_look
from humanevalfix.fixer.project import project_of
from humanevalfix.fixer.userfile import load_user_file
from humanevalfix.fixer.usertests import UserTestExecutor, load_tests, read_only_paths
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, Limits


def scopes_of(task: ds.Task, root: Path, task_set: str, timeout: float) -> list[str]:
    """The scopes `fix` would try, as `file: function` (the whole file: `file: *`)."""
    if task_set in SETS:
        project = write_helper_project(task, root, deep=task_set == "deep")
        user_file, tests = None, load_tests(str(project.tests))
    else:
        single = write_project(task, root)
        user_file, tests = load_user_file(str(single.module)), load_tests(str(single.tests))
    top = project_of(tests, user_file)
    executor = UserTestExecutor(
        fix_executor("auto", Limits(timeout_s=timeout), read_only_paths(user_file, tests, top)),
        user_file,
        tests,
        project=top,
        timeout_s=timeout,  # as `fix` gives it (--timeout)
    )
    try:
        baseline = executor.check(user_file.source if user_file else "", trace=True)
    finally:
        executor.close()
    args = SimpleNamespace(max_iters=5, function=None)
    plan = where_to_look(args, user_file, tests, top, baseline)  # type: ignore[arg-type]
    return [f"{s.path.relative_to(top).as_posix() if s.path else '?'}: {s.function or '*'}" for s in plan.stages]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", choices=("single", *SETS), default="helper")
    p.add_argument("--limit", type=int)
    p.add_argument("--tasks")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    data = ds.load(ds.resolve_path(None))
    tasks = ds.select(data.tasks, args.tasks.split(",") if args.tasks else None, args.limit)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fixscope-") as tmp:
        for task in tasks:
            root = Path(tmp) / task.task_id.replace("/", "_")
            try:
                scopes = scopes_of(task, root, args.set, args.timeout)
            except Exception as exc:  # a task whose tests cannot drive fix: recorded, not fatal
                scopes = [f"error: {type(exc).__name__}: {str(exc)[:200]}"]
            right = (
                f"{PACKAGE}/core.py: {task.entry_point}"
                if args.set in SETS
                else f"{write_name(task)}: {task.entry_point}"
            )
            rows.append(
                {
                    "task_id": task.task_id,
                    "scopes": scopes,
                    "right": right,
                    "first_right": scopes[0] == right,
                    "tried_right": right in scopes,
                }
            )
            print(f"{task.task_id:12} {'OK ' if scopes[0] == right else '-- '} {' -> '.join(scopes)}", flush=True)
    n = len(rows)
    summary = {
        "tasks": n,
        "first_scope_right": sum(r["first_right"] for r in rows),
        "right_among_scopes": sum(r["tried_right"] for r in rows),
    }
    command = " ".join(["python", "bench/fix_scope_bench.py", *(sys.argv[1:] if argv is None else argv)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"command": command, "set": args.set, "summary": summary, "rows": rows}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(
        f"\n{args.set}: the first scope is the function with the bug in {summary['first_scope_right']}/{n}; among "
        f"the scopes tried in {summary['right_among_scopes']}/{n}"
    )
    return 0


def write_name(task: ds.Task) -> str:
    from fix_tasks import module_name

    return f"{module_name(task)}.py"


if __name__ == "__main__":
    sys.exit(main())
