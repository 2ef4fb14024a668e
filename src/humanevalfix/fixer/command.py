"""`fix FILE --tests TESTS`: the repair agent on the user's own Python file, with a reviewable patch.

    humanevalfix fix path/to/module.py --tests path/to/test_module.py            # prints a unified diff
    humanevalfix fix path/to/module.py --tests path/to/test_module.py --write    # applies it, keeps FILE.orig
    humanevalfix fix path/to/module.py --function parse_date --tests "assert parse_date('2024-01-02') == (2024, 1, 2)"

Same agent, providers, keys, loop detection, adaptive temperature and budget as the eval; the
failing tests choose the scope (fixer.localize) unless --function does, the session tries one
scope after another (fixer.session), what the model is asked comes from the file and the scope
(fixer.request), what it may change from the scope (fixer.scope). Progress goes to stderr; the
result to stdout, a patch relative to the project's top (fixer.patch). Exit 0: fixed; 1: not
fixed; 2: bad input.
"""

from __future__ import annotations

import argparse
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from humanevalfix.agent import AgentResult
from humanevalfix.errors import UserError
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.traces import write_trace
from humanevalfix.fixer.localize import Stage
from humanevalfix.fixer.patch import change_of, project_diff
from humanevalfix.fixer.project import ProjectLocalizer, project_of, project_stages
from humanevalfix.fixer.session import Plan, find_fix, tests_line
from humanevalfix.fixer.userfile import UserFile, load_user_file, require_function
from humanevalfix.fixer.usertests import (
    RunReport,
    UserTestExecutor,
    UserTests,
    baseline_problem,
    load_tests,
    read_only_paths,
)
from humanevalfix.models.presets import Preset
from humanevalfix.sandbox.docker import DockerSettings
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import build_executor

EXIT_FIXED, EXIT_NOT_FIXED = 0, 1


def fix_executor(
    kind: str,
    limits: Limits,
    needs: tuple[Path, ...],
    warn: Callable[[str], None] | None = None,
    docker: DockerSettings | None = None,
) -> Executor:
    """The sandbox for `fix`: bwrap showing `needs` (the user's project) read-only at their own paths.

    `auto` is chosen as for eval (sandbox.factory): bwrap where it works with those binds, else a
    refusal naming the ways on. An explicit `unshare` or `process` shares the host's file system:
    `warn` is told what a candidate can then reach (by default a line on stderr). RestrictedPython
    cannot run pytest or import the user's modules, so `restricted` is refused.
    `docker` binds `needs` read-only into the container at their own paths (the image must have what
    your tests import: the default one has the standard library, numpy and pytest).
    """
    if kind == "restricted":
        raise UserError(
            "--sandbox restricted: fix runs pytest and imports your modules, which RestrictedPython does not allow; "
            "use --sandbox auto, bwrap, unshare, process or docker"
        )
    # `process` sees the host's files anyway; unshare does too, but told of the project it keeps a
    # root harness's candidates root to read it (Jail.candidate_uid), as a project is often its owner's alone.
    binds = needs if kind in ("auto", "bwrap", "docker", "unshare") else ()
    return build_executor(kind, limits, ro_binds=binds, docker=docker, warn=warn)


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + ".orig")


def check_writable(user_file: UserFile) -> None:
    """--write: refuse up front, before any model call, what would fail or lose data at the end."""
    backup = backup_path(user_file.path)
    if backup.exists() and (not backup.is_file() or backup.read_bytes() != user_file.raw):
        raise UserError(
            f"--write: {backup} already exists and differs from {user_file.display}; move it away first (it would be "
            "replaced by the backup)"
        )
    if not os.access(user_file.path.parent, os.W_OK):
        raise UserError(f"--write: cannot write in {user_file.path.parent}")


def write_atomic_bytes(path: Path, data: bytes, mode: int) -> None:
    """Write beside the target and rename over it: readers see the old file or the new, never half."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".fix-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply_fix(user_file: UserFile, new_source: str) -> Path:
    """Keep FILE.orig, then replace FILE; nothing happens if FILE changed during the run."""
    if user_file.path.read_bytes() != user_file.raw:
        raise UserError(
            f"--write: {user_file.display} changed while the fix was being found; not written (the diff is above)"
        )
    mode = stat.S_IMODE(user_file.path.stat().st_mode)
    backup = backup_path(user_file.path)
    write_atomic_bytes(backup, user_file.raw, mode)
    write_atomic_bytes(user_file.path, user_file.encode(new_source), mode)
    return backup


def write_session_trace(path: Path, record: TaskRecord, result: AgentResult) -> None:
    """The eval's trace document (evaluation.traces.write_trace), at the path the user chose."""
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".fix-trace-") as tmp:
        write_trace(Path(tmp), record, result)
        written = next(Path(tmp).iterdir())
        os.replace(written, path)


def where_to_look(
    args: argparse.Namespace, user_file: UserFile | None, tests: UserTests, root: Path, baseline: RunReport
) -> Plan:
    """The scopes in turn: --function in FILE, else the suspects of FILE, else of the whole project."""
    budget = 1 + max(0, args.max_iters)
    localizer = ProjectLocalizer(tests, root, user_file, only=user_file.path if user_file else None)
    if args.function and user_file is not None:
        stages = [Stage(args.function, budget, "--function", user_file.path)]
    else:
        stages = project_stages(localizer, baseline, budget, args.function)
    suspects = localizer.rank(baseline) if not args.function else []
    files = dict(localizer.files)
    if user_file is not None:
        files[user_file.path] = user_file
        stages = [s if s.path else replace(s, path=user_file.path) for s in stages]
        suspects = [s if s.path else replace(s, path=user_file.path) for s in suspects]
    return Plan(stages, files, root, suspects)


def run_fix(
    args: argparse.Namespace, preset: Preset, sandbox: str | None = None, docker: DockerSettings | None = None
) -> int:
    """`fix` as the CLI parsed it; `sandbox` and `docker`: the sandbox as resolved from the options
    and the environment (default: args.sandbox as given). Without FILE, the whole project of the
    tests is searched for the function at fault."""
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    user_file = load_user_file(args.file) if args.file else None
    if args.function and user_file is not None:
        require_function(user_file, args.function)
    tests = load_tests(args.tests)
    if args.write and user_file is not None:
        check_writable(user_file)
    root = project_of(tests, user_file)

    def on_report(report: RunReport) -> None:
        console.print(tests_line(report))
        if args.verbose and not report.passed:
            console.print(escape(report.result.message))

    notes: list[str] = []
    inner = fix_executor(
        sandbox or args.sandbox,
        Limits(timeout_s=args.timeout),
        read_only_paths(user_file, tests, root),
        notes.append,
        docker,
    )
    executor = UserTestExecutor(inner, user_file, tests, on_report, project=root, timeout_s=args.timeout)
    try:
        target = f"`{args.function}`" if args.function else "what the failing tests point to"
        what = (
            f"{escape(user_file.display)} (module {user_file.module}"
            if user_file
            else f"the project {escape(str(root))} (any module"
        )
        console.print(f"fix {what}, may change {target}); {escape(tests.label)} ({tests.kind})")
        console.print(f"sandbox: {escape(executor.isolation)}")
        for line in notes:  # a weaker level chosen explicitly: the user's files are not protected
            console.print(f"[bold yellow]warning[/]: {escape(line)}")
        baseline = executor.check(user_file.source if user_file else "", trace=True)
        console.print(tests_line(baseline, "before the fix"))
        problem = baseline_problem(baseline, user_file, tests)
        if problem:
            if baseline.passed:
                print("already passing")
            raise UserError(problem)
        if args.verbose:
            console.print(escape(baseline.result.message))
        where = where_to_look(args, user_file, tests, root, baseline)
        if args.write and user_file is None:
            for path in dict.fromkeys(s.path for s in where.stages if s.path):
                check_writable(where.files[path])
        try:
            outcome = find_fix(args, preset, where, tests, executor, baseline, console)
        except KeyboardInterrupt:
            console.print(
                f"[yellow]interrupted[/]: {escape(user_file.display) if user_file else 'the project'} is unchanged"
            )
            return 130
    finally:
        executor.close()
    if args.trace:
        write_session_trace(args.trace, outcome.record, outcome.result)
        console.print(f"trace: {escape(str(args.trace))}")
    turns = outcome.result.iterations
    if not outcome.fixed or outcome.new_source is None or outcome.user_file is None:
        print(f"no fix found after {turns} attempt{'s' if turns != 1 else ''}")
        print(f"last failure:\n{outcome.message.rstrip()}")
        unchanged = escape(user_file.display) if user_file else "the project"
        console.print(f"[red]not fixed[/]: {unchanged} is unchanged")
        return EXIT_NOT_FIXED
    user_file = outcome.user_file
    print(project_diff([change_of(user_file, outcome.new_source)]), end="")
    console.print(f"[green]fixed[/] in {turns} turn{'s' if turns != 1 else ''}")
    if args.write:
        backup = apply_fix(user_file, outcome.new_source)
        console.print(f"wrote {escape(user_file.display)} (the original is in {escape(str(backup))})")
    return EXIT_FIXED
