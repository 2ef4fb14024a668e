"""The helper-module task set of bench/fix_bench.py (`--set helper`), and what a diff holds.

Each HumanEvalFix task becomes a small package in which the bug sits in a helper module that the
tested function calls, built mechanically (the "wrap" construction; no task is edited by hand):

- `tasklib/core.py`: the task's buggy code as the dataset has it (the helper module: the bug is in
  its entry point);
- `tasklib/api.py`: the entry point again, with the same parameters, calling `core`'s (the caller);
- `tasklib/__init__.py`, empty; `test_<entry_point>.py`: the task's whole test as one pytest test
  (fix_tasks.test_file_source), importing the entry point from `tasklib.api` (and any other name
  the test takes from the code, such as encode_cyclic, from `tasklib.core`).

`--set deep` builds the same with the bug two calls deep and asserted through an attribute (the
shape `r = f(x); assert r.attr == ...`, where no failing line calls the helper and no traceback
reaches it): `tasklib/mid.py` is the caller above, `tasklib/api.py` calls mid's and returns a
`Result(value)`, and the test file reads `.value` of what `tasklib.api`'s entry point returns.

Nothing of this is told to the model; `--mode` says how fix is run on it:
`project` (no FILE: the new project-wide localisation), `file` (FILE = tasklib/api.py, the module
the test imports: what a user did before, and what fix did with it), `told` (FILE = tasklib/core.py
and --function <entry_point>: the ceiling).

The result is scored as the single-module set is: the package after the run as one program (core
and api executed in their own module namespaces), the task's full test in the sandbox.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from fix_diffs import changed_lines, dataset_changed_lines, quality, touched  # bench/, beside this module
from fix_tasks import Children, Row, Scorer, child_env, test_file_source, trace_counts

from humanevalfix.evaluation.dataset import Task

PACKAGE = "tasklib"
MODES = ("project", "file", "told")
SETS = ("helper", "deep")  # the sets built here (bench/fix_bench.py's --set)


def _entry(task: Task) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in ast.parse(task.buggy_code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == task.entry_point:
            return node
    raise ValueError(f"{task.task_id}: no top-level `{task.entry_point}` in its buggy code")


def caller_source(task: Task) -> str:
    """tasklib/api.py: the entry point's parameters (annotations left out), passed on to core's."""
    fn = _entry(task)
    args = fn.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            arg.annotation = None
    passed = [a.arg for a in [*args.posonlyargs, *args.args]]
    passed += [f"*{args.vararg.arg}"] if args.vararg else []
    passed += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    passed += [f"**{args.kwarg.arg}"] if args.kwarg else []
    name = task.entry_point
    return (
        f"from {PACKAGE} import core\n\n\ndef {name}({ast.unparse(args)}):\n"
        f"    return core.{name}({', '.join(passed)})\n"
    )


def deep_api_source(task: Task) -> str:
    """--set deep's tasklib/api.py: mid's entry point, its value returned in a Result."""
    caller = caller_source(task)
    header, _, call = caller.partition("\n\n\ndef ")
    signature, _, body = call.partition("\n")
    return (
        f"from dataclasses import dataclass\n\nfrom {PACKAGE} import mid\n\n\n@dataclass\nclass Result:\n"
        f"    value: object\n\n\ndef {signature}\n"
        + body.replace("    return core.", "    return Result(mid.", 1).rstrip("\n")
        + ")\n"
    )


def helper_test_source(task: Task, deep: bool = False) -> str:
    """The task's test as a pytest file, the entry point imported from the caller's module (deep:
    api's, its Result's `.value` read in the test file)."""
    source = test_file_source(task, f"{PACKAGE}.core")
    match = re.search(rf"^from {PACKAGE}\.core import (.+)$", source, re.MULTILINE)
    assert match is not None
    others = [n.strip() for n in match.group(1).split(",") if n.strip() != task.entry_point]
    name = task.entry_point
    header = (
        f"from {PACKAGE}.api import {name} as _{name}\n\n\ndef {name}(*args, **kwargs):\n"
        f"    r = _{name}(*args, **kwargs)\n    return r.value\n"
        if deep
        else f"from {PACKAGE}.api import {name}"
    ) + (f"\nfrom {PACKAGE}.core import {', '.join(others)}" if others else "")
    return source[: match.start()] + header + source[match.end() :]


@dataclass(frozen=True)
class HelperProject:
    root: Path
    core: Path
    api: Path
    tests: Path
    mid: Path | None = None  # --set deep

    def files(self) -> dict[str, str]:
        modules = [p for p in (self.core, self.mid, self.api) if p is not None]
        return {p.relative_to(self.root).as_posix(): p.read_text(encoding="utf-8") for p in modules}


def write_helper_project(task: Task, root: Path, deep: bool = False) -> HelperProject:
    package = root / PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    project = HelperProject(
        root, package / "core.py", package / "api.py", root / f"test_{task.entry_point}.py", package / "mid.py"
    )
    if not deep:
        project = replace(project, mid=None)
    project.core.write_text(task.buggy_code, encoding="utf-8")
    if project.mid is not None:
        project.mid.write_text(caller_source(task), encoding="utf-8")
    project.api.write_text(deep_api_source(task) if deep else caller_source(task), encoding="utf-8")
    project.tests.write_text(helper_test_source(task, deep), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)  # the project's root for fix and its diff
    return project


def fix_arguments(task: Task, project: HelperProject, mode: str) -> list[str]:
    tests = ["--tests", project.tests.name]
    if mode == "project":
        return tests
    if mode == "file":
        return [f"{PACKAGE}/api.py", *tests]
    return [f"{PACKAGE}/core.py", "--function", task.entry_point, *tests]


def combined_program(core: str, api: str, mid: str | None = None, entry_point: str = "") -> str:
    """The package as one program for the scorer: core and api each run in a module of their own,
    and the api's names (the entry point the test calls) are this program's. With `mid` (--set
    deep) api runs in a module too, and the entry point is the `.value` of what api's returns, as
    the test file reads it."""
    program = (
        "import sys as _sys, types as _types\n"
        f"_pkg = _types.ModuleType({PACKAGE!r}); _pkg.__path__ = []\n"
        f"_core = _types.ModuleType({PACKAGE + '.core'!r}); _pkg.core = _core\n"
        f"_sys.modules[{PACKAGE!r}] = _pkg; _sys.modules[{PACKAGE + '.core'!r}] = _core\n"
        f"exec(compile({core!r}, 'core.py', 'exec'), _core.__dict__)\n"
        "globals().update({k: v for k, v in _core.__dict__.items() if not k.startswith('__')})\n"
    )
    if mid is None:
        return program + f"exec(compile({api!r}, 'api.py', 'exec'), globals())\n"
    for name, source in (("mid", mid), ("api", api)):
        program += (
            f"_{name} = _types.ModuleType({PACKAGE + '.' + name!r}); _pkg.{name} = _{name}\n"
            f"_sys.modules[{PACKAGE + '.' + name!r}] = _{name}\n"
            f"exec(compile({source!r}, '{name}.py', 'exec'), _{name}.__dict__)\n"
        )
    return program + f"def {entry_point}(*args, **kwargs):\n    return _api.{entry_point}(*args, **kwargs).value\n"


def right_function(diff: str, task: Task, before: str, after: str) -> bool:
    """The diff changes tasklib/core.py only, and there nothing but the entry point's definition."""
    if touched(diff) != {f"{PACKAGE}/core.py"}:
        return False
    try:
        old, new = ast.parse(before), ast.parse(after)
    except SyntaxError:
        return False
    others = lambda tree: [ast.dump(n) for n in tree.body if getattr(n, "name", None) != task.entry_point]  # noqa: E731
    return others(old) == others(new)


def helper_task(
    task: Task,
    mode: str,
    fix_args: list[str],
    work: Path,
    traces: Path,
    scorer: Scorer,
    children: Children,
    timeout_s: float,
    deep: bool = False,
) -> Row:
    """fix on the task's helper-module project in `mode` (deep: --set deep's), the package read back and scored."""
    safe = re.sub(r"[^\w.-]", "_", task.task_id)
    project = write_helper_project(task, work / safe, deep)
    before = project.files()
    trace = traces / f"{safe}.{mode}.json"
    trace.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "humanevalfix",
        "fix",
        *fix_arguments(task, project, mode),
        "--write",
        "--trace",
        str(trace.resolve()),
        *fix_args,
    ]
    start = time.monotonic()
    code, out, err = children.run(cmd, project.root, child_env(), timeout_s)
    wall = round(time.monotonic() - start, 2)
    after = project.files()
    core, api, mid = after[f"{PACKAGE}/core.py"], after[f"{PACKAGE}/api.py"], after.get(f"{PACKAGE}/mid.py")
    passed, reference = scorer.passes(combined_program(core, api, mid, task.entry_point), task)
    turns, attempts = trace_counts(trace)
    diff = out if code == 0 else ""
    ok, extras = quality(diff, before)
    return Row(
        task_id=task.task_id,
        fix_exit=code,
        fix_verdict=code == 0,
        fix_passed=passed,
        fix_passed_reference=reference,
        turns=turns,
        attempts=attempts,
        wall_s=wall,
        changed=after != before,
        diff=diff,
        note="" if code in (0, 1) else err[-2000:],
        mode=mode,
        right_function=right_function(diff, task, before[f"{PACKAGE}/core.py"], core) if diff else None,
        applies=ok,
        extras=extras,
        changed_lines=changed_lines(diff) if diff else None,
        dataset_lines=dataset_changed_lines(task.buggy_code, task.canonical_code or "") if diff else None,
    )
