"""One HumanEvalFix task through `fix` as a user would meet it, and the independent score of the result.

The project: `<entry_point>.py` holds the task's buggy code as the dataset has it (declaration +
buggy solution: imports and helpers, without the entry point's docstring); `test_<entry_point>.py`
is the task's whole `test` as a user's pytest file: imports of what it takes from the code under
test (the entry point, helpers such as encode_cyclic) and from the harness's prelude (only the
names it uses; no HumanEvalFix test needs one, a dataset of one's own may), `check` as the task
defines it, and one test function making the call the task's test ends with. On the bundled tasks
pytest passes every canonical solution and fails (or times out on) every buggy one.

The real CLI runs in a child process with --write on that copy and --trace; the module is read
back and scored with the project's scorer (the task's full test in the sandbox) and by the
independent reference check, whatever fix said.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import humanevalfix
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.scorer import score_code
from humanevalfix.sandbox.executor import Executor
from humanevalfix.testing.reference import reference_passes

# The names the harness's prelude gives a test (testing.reference.HARNESS_IMPORTS), as imports.
PRELUDE_MODULES = {
    "math",
    "re",
    "sys",
    "copy",
    "datetime",
    "itertools",
    "collections",
    "heapq",
    "statistics",
    "functools",
    "hashlib",
    "numpy",
    "string",
}
PRELUDE_FROM = ("typing", "collections")
SRC = Path(humanevalfix.__file__).resolve().parents[1]  # children run the package this script imports
STDERR_TAIL = 2000


# --- the project --------------------------------------------------------------------------


def module_name(task: Task) -> str:
    """The entry point's name, unless a module of that name exists (it would shadow it or be shadowed)."""
    name = task.entry_point
    if name in sys.stdlib_module_names or importlib.util.find_spec(name) is not None:
        return f"{name}_module"
    return name


def _bound_and_loaded(tree: ast.AST) -> tuple[set[str], set[str]]:
    bound: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, loaded


def top_level_names(tree: ast.Module) -> set[str]:
    """What `from module import name` can take: the module's own definitions and imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _prelude_import(name: str) -> str:
    if name == "np":
        return "import numpy as np"
    if name in PRELUDE_MODULES:
        return f"import {name}"
    for module in PRELUDE_FROM:
        if hasattr(importlib.import_module(module), name):
            return f"from {module} import {name}"
    raise ValueError(f"the test uses `{name}`, which neither the module nor the harness's prelude defines")


def test_file_source(task: Task, module: str) -> str:
    """The task's test as a user's pytest file (see the module's docstring)."""
    test_tree = ast.parse(task.test)
    calls = [
        n
        for n in test_tree.body
        if isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name)
        and n.value.func.id == "check"
    ]
    lines = task.test.splitlines()
    for node in reversed(calls):  # the trailing `check(entry_point)`: the test function makes that call
        del lines[node.lineno - 1 : node.end_lineno]
    body = "\n".join(lines).strip()
    module_bound = top_level_names(ast.parse(task.buggy_code))
    test_bound, test_loaded = _bound_and_loaded(ast.parse(body))
    free = test_loaded - test_bound - set(dir(builtins))
    from_module = sorted(free & module_bound - {task.entry_point})
    prelude = sorted(_prelude_import(n) for n in free - module_bound)
    header = [*prelude, f"from {module} import {', '.join([task.entry_point, *from_module])}"]
    return "\n".join(header) + f"\n\n\n{body}\n\n\ndef test_{task.entry_point}():\n    check({task.entry_point})\n"


@dataclass(frozen=True)
class Project:
    root: Path
    module: Path
    tests: Path


def write_project(task: Task, root: Path) -> Project:
    name = module_name(task)
    root.mkdir(parents=True, exist_ok=True)
    module, tests = root / f"{name}.py", root / f"test_{name}.py"
    module.write_text(task.buggy_code, encoding="utf-8")
    tests.write_text(test_file_source(task, name), encoding="utf-8")
    return Project(root, module, tests)


# --- fix on it, and the independent score -----------------------------------------------------


@dataclass(frozen=True)
class Row:
    task_id: str
    fix_exit: int | None  # 0 fixed, 1 not fixed, 2 bad input; None: stopped at --task-timeout
    fix_verdict: bool  # fix's own: exit 0
    fix_passed: bool  # the module after the run, scored on the task's full test (the verdict that counts)
    fix_passed_reference: bool  # the same code, by the independent reference check
    turns: int | None  # model calls, from the trace (None: no trace written)
    attempts: int | None
    wall_s: float  # the fix command, start to exit, as a user waits for it
    changed: bool  # fix wrote the module
    diff: str = ""  # fix's stdout when it fixed
    note: str = ""  # the end of stderr when fix did not finish with 0 or 1
    eval_passed: bool | None = None  # filled in at the end, from the eval side
    mode: str = ""  # --set helper: how fix was run (fix_helpers.MODES)
    right_function: bool | None = None  # --set helper: the diff changes only the entry point in tasklib/core.py
    applies: bool | None = None  # the diff (when fixed) applies with `git apply --check` to the files as they were
    extras: str = ""  # what the diff holds besides the fix (fix_diffs.diff_extras), "; "-joined
    changed_lines: int | None = None  # lines the diff removes or adds (when fixed)
    dataset_lines: int | None = None  # the same for the dataset's buggy -> canonical change

    @classmethod
    def of(cls, data: dict[str, Any]) -> Row:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class Children:
    """The fix processes running now, so that Ctrl-C or SIGTERM ends them with the bench (each has
    its own session, so that a timeout can end its sandboxed runs too, and gets no Ctrl-C itself)."""

    def __init__(self) -> None:
        self._procs: set[subprocess.Popen[str]] = set()
        self._lock = threading.Lock()
        self.stopped = False

    def run(self, cmd: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> tuple[int | None, str, str]:
        with self._lock:
            if self.stopped:
                raise InterruptedError("the bench is stopping")
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
            )
            self._procs.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout_s)
            return proc.returncode, out, err
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            return None, out, err + f"\n(stopped by the bench after {timeout_s:g} s)"
        finally:
            with self._lock:
                self._procs.discard(proc)

    def kill_all(self) -> None:
        with self._lock:
            self.stopped = True
            for proc in list(self._procs):
                _kill_group(proc)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    return env


def trace_counts(path: Path) -> tuple[int | None, int | None]:
    """Model calls (assistant messages) and attempts in fix's --trace file."""
    try:
        trace = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    turns = sum(1 for m in trace.get("messages", []) if m.get("role") == "assistant")
    return turns, len(trace.get("attempts", []))


class Scorer:
    """The project's scorer and the reference check; one sandboxed run at a time."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self._lock = threading.Lock()

    def passes(self, code: str, task: Task) -> tuple[bool, bool]:
        with self._lock:
            ours = score_code(code, task, self.executor).passed
        return ours, reference_passes(code, task.test)


def fix_task(
    task: Task, fix_args: list[str], work: Path, traces: Path, scorer: Scorer, children: Children, timeout_s: float
) -> Row:
    safe = re.sub(r"[^\w.-]", "_", task.task_id)
    project = write_project(task, work / safe)
    trace = traces / f"{safe}.json"
    trace.unlink(missing_ok=True)  # a resumed task's old trace must not count
    cmd = [
        sys.executable,
        "-m",
        "humanevalfix",
        "fix",
        project.module.name,
        "--tests",
        project.tests.name,
        "--write",
        "--trace",
        str(trace.resolve()),
        *fix_args,
    ]
    start = time.monotonic()
    code, out, err = children.run(cmd, project.root, child_env(), timeout_s)
    wall = round(time.monotonic() - start, 2)
    patched = project.module.read_text(encoding="utf-8")
    passed, reference = scorer.passes(patched, task)
    turns, attempts = trace_counts(trace)
    from fix_diffs import changed_lines, dataset_changed_lines, quality  # bench/, beside this module

    diff = out if code == 0 else ""
    ok, extras = quality(diff, {project.module.name: task.buggy_code})
    return Row(
        task_id=task.task_id,
        fix_exit=code,
        fix_verdict=code == 0,
        fix_passed=passed,
        fix_passed_reference=reference,
        turns=turns,
        attempts=attempts,
        wall_s=wall,
        changed=patched != task.buggy_code,
        diff=diff,
        note="" if code in (0, 1) else err[-STDERR_TAIL:],
        applies=ok,
        extras=extras,
        changed_lines=changed_lines(diff) if diff else None,
        dataset_lines=dataset_changed_lines(task.buggy_code, task.canonical_code or "") if diff else None,
    )
