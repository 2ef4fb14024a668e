"""`validate-dataset FILE`: check every row of a dataset of your own before you run it.

Dataset schema (JSONL, one JSON object per line; .json lists of the same objects and .parquet
work too; the loader is evaluation/dataset.py `task_from_row`):

  task_id            required  unique string, e.g. "Mine/0"
  entry_point        required  the name of the function to repair
  buggy code         required  either `buggy_code` (the whole buggy program: imports, helpers,
                               the function) or `declaration` (imports + signature + docstring)
                               plus `buggy_solution` (the body), concatenated, as in HumanEvalPack
  test               required  Python that tests the function: defines `check(candidate)` and
                               calls `check(<entry_point>)`, or asserts on `<entry_point>` directly;
                               it runs after the prelude and the candidate in one namespace
  canonical_solution optional  the correct body (appended to `declaration`), or
  canonical_code     optional  the whole correct program; needed for `--model oracle:canonical`
  example_test       optional  a smaller test, the feedback of eval's `--protocol hidden` (same rules as `test`)
  docstring          optional  what the function should do, shown to the model
  bug_type           optional  a category for the reports, e.g. "operator misuse"
  failure_symptoms   optional  a second category, e.g. "incorrect output", "infinite loop"

Checks per row: the fields load; the buggy code parses and defines `entry_point` at top level;
`test` parses, refers to `entry_point`, and calls `check` when it defines it (a test that never
runs passes everything); the buggy code fails `test`; where a canonical solution is given, it
parses, defines `entry_point`, passes `test` (and `example_test`, when given).
"""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from humanevalfix import pyast
from humanevalfix.errors import DatasetError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.sandbox.docker import DockerSettings
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, executor_factory
from humanevalfix.sandbox.pool import DEFAULT_WORKERS, ExecutorPool
from humanevalfix.tasks.support import support_code


@dataclass
class RowReport:
    where: str  # file:line
    task_id: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _parse(source: str, what: str, problems: list[str]) -> ast.Module | None:
    try:
        return pyast.parse(source)
    except SyntaxError as exc:
        problems.append(f"{what} does not parse: line {exc.lineno}: {exc.msg}")
        return None


def _defines(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in tree.body)


def _names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _calls_at_top(tree: ast.Module, name: str) -> bool:
    """A call of `name` that runs when the module runs (top level, not inside a def)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == name:
                return True
    return False


def _test_problems(name: str, source: str, entry_point: str) -> list[str]:
    problems: list[str] = []
    if not source.strip():
        return problems
    tree = _parse(source, name, problems)
    if tree is None:
        return problems
    if entry_point not in _names(tree):
        problems.append(f"{name} never refers to `{entry_point}`, so it cannot test it")
    if _defines(tree, "check") and not _calls_at_top(tree, "check"):
        problems.append(f"{name} defines check() but never calls it: it would pass any code")
    return problems


def scoring_problems(task: ds.Task) -> list[str]:
    """Why a row's `test` cannot score anything (it does not parse, never reaches the function, or
    never runs its check): such a row would pass the buggy code or fail every candidate, so an eval
    refuses it at load time, before any model call (the cheap part of validate-dataset)."""
    return _test_problems("test", task.test, task.entry_point)


def refuse_bad_rows(data: ds.Dataset, tasks: list[ds.Task], skip: bool) -> tuple[list[ds.Task], list[str]]:
    """`tasks` without the rows that cannot be scored, and one line per such row. Unless `skip`,
    any such row is a DatasetError naming its place in the file."""
    kept: list[ds.Task] = []
    bad: list[str] = []
    places: list[str] = []
    for task in tasks:
        problems = scoring_problems(task)
        if problems:
            places.append(data.where.get(task.task_id, task.task_id))
            bad.append(f"{data.where.get(task.task_id, data.source)}: {task.task_id}: {problems[0]}")
        else:
            kept.append(task)
    if bad and not skip:
        # Still one line: the first row's problem in full, then where every other bad row is.
        more = f" (and {len(bad) - 1} more row(s): {', '.join(_shown(places[1:]))})" if len(bad) > 1 else ""
        raise DatasetError(f"{bad[0]}{more}; fix the row(s) (see validate-dataset) or pass --skip-bad-rows")
    return kept, bad


def _shown(places: list[str], most: int = 20) -> list[str]:
    return places[:most] + ([f"… {len(places) - most} more"] if len(places) > most else [])


def static_problems(task: ds.Task) -> list[str]:
    problems: list[str] = []
    buggy = _parse(task.buggy_code, "the buggy code", problems)
    if buggy is not None and not _defines(buggy, task.entry_point):
        problems.append(f"the buggy code does not define `{task.entry_point}` at top level")
    for name, source in (("test", task.test), ("example_test", task.example_test)):
        problems.extend(_test_problems(name, source, task.entry_point))
    if task.canonical_code is not None:
        canonical = _parse(task.canonical_code, "the canonical solution", problems)
        if canonical is not None and not _defines(canonical, task.entry_point):
            problems.append(f"the canonical solution does not define `{task.entry_point}` at top level")
    return problems


def run_problems(task: ds.Task, executor: Executor) -> list[str]:
    """Execution checks: the tests catch the bug, and accept the canonical solution."""
    problems: list[str] = []
    support = support_code(task)
    buggy = executor.run(task.buggy_code, task.test, support)
    if buggy.status == "error":
        problems.append(f"could not run the buggy code: {buggy.message}")
    elif buggy.passed:
        problems.append("the buggy code passes `test`: the tests do not catch the bug")
    if task.canonical_code is not None:
        runs = [("test", task.test)] + ([("example_test", task.example_test)] if task.example_test.strip() else [])
        for name, source in runs:
            result = executor.run(task.canonical_code, source, support)
            if not result.passed:
                first = result.message.splitlines()[0] if result.message else result.status
                problems.append(f"the canonical solution fails `{name}` ({result.status}): {first}")
    return problems


@dataclass(frozen=True)
class _BadLine:
    message: str


def validate_file(
    path: Path,
    sandbox: str = DEFAULT_SANDBOX,
    limits: Limits | None = None,
    workers: int = DEFAULT_WORKERS,
    docker: DockerSettings | None = None,
    max_field: int = ds.DEFAULT_MAX_FIELD,
) -> list[RowReport]:
    """Every row, in file order; rows that cannot load are reported, not raised."""
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}")
    reports: list[RowReport] = []
    tasks: list[tuple[RowReport, ds.Task]] = []
    seen: dict[str, str] = {}
    for where, row in ds.read_rows(path, _BadLine):
        if isinstance(row, _BadLine):
            reports.append(RowReport(where, "?", [row.message]))
            continue
        task_id = row.get("task_id") if isinstance(row, dict) else None
        report = RowReport(where, str(task_id) if task_id is not None else "?")
        reports.append(report)
        try:
            task = ds.task_from_row(row, where, max_field)
        except DatasetError as exc:
            report.problems.append(str(exc).removeprefix(f"{where}: ").removeprefix(f"{where} (task_id {task_id!r}): "))
            continue
        if task.task_id in seen:
            report.problems.append(f"duplicate task_id {task.task_id!r} (first at {seen[task.task_id]})")
            continue
        seen[task.task_id] = where
        report.problems.extend(static_problems(task))
        if report.ok:
            tasks.append((report, task))
    if not reports:
        raise DatasetError(f"{path}: no rows in file")

    factory = executor_factory(sandbox, limits or Limits(), docker=docker, hidden=(path,))  # its canonical solutions
    pool = ExecutorPool(factory, max(1, workers))

    def check(item: tuple[RowReport, ds.Task]) -> None:
        report, task = item
        executor = pool.borrow()
        try:
            report.problems.extend(run_problems(task, executor))
        finally:
            pool.give_back(executor)

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
            list(threads.map(check, tasks))
    finally:
        pool.close()
    return reports
