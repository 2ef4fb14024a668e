"""fixer/command.py (`fix FILE --tests TESTS`) in-process: the sandbox it asks for, the --write
safeguards (the FILE.orig backup, atomic writes that keep the mode, BOM and CRLF, a file changed
during the run), the trace file, and run_fix's flow from the baseline to the exit status.

Three things that would start a process or a model are replaced: the executor factory (a stand-in
that answers the tests' verdict), `git rev-parse` (project_root: "no git work tree") and the repair
session (find_fix, tested end to end in tests/test_fix*.py); run_fix's own code around them is real.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.agent import AgentResult
from humanevalfix.agent._result import Attempt
from humanevalfix.cli import _fix
from humanevalfix.errors import UserError
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.fixer import command, patch, project, usertests
from humanevalfix.fixer.command import (
    EXIT_FIXED,
    EXIT_NOT_FIXED,
    apply_fix,
    backup_path,
    check_writable,
    fix_executor,
    run_fix,
    write_atomic_bytes,
    write_session_trace,
)
from humanevalfix.fixer.session import Outcome
from humanevalfix.fixer.userfile import load_user_file
from humanevalfix.models.presets import resolve
from humanevalfix.sandbox.executor import ExecResult, Limits

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef twice(x):\n    return add(x, x)\n"
FIXED = BUGGY.replace("a - b", "a + b")


class Built:
    """build_executor's stand-in: records each call; its executors answer `status`."""

    def __init__(self, status: str = "failed", message: str = "AssertionError: add(1, 2) == -1") -> None:
        self.calls: list[tuple[str, Limits, dict[str, Any]]] = []
        self.status, self.message = status, message
        self.programs: list[str] = []
        self.closed = 0

    def __call__(self, kind: str, limits: Limits, **kwargs: Any) -> Built:
        self.calls.append((kind, limits, kwargs))
        return self

    name = "stand-in"
    isolation = "none (a test's stand-in)"

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        self.programs.append(test)
        return ExecResult(self.status, self.message)

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Built:
    stand_in = Built()
    monkeypatch.setattr(command, "build_executor", stand_in)
    return stand_in


@pytest.fixture
def no_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """`git rev-parse` is a process: the project is taken to be no git work tree."""
    monkeypatch.setattr(usertests, "project_root", lambda folder: None)
    monkeypatch.setattr(project, "project_root", lambda folder: None)
    monkeypatch.setattr(patch, "project_root", lambda folder: None)


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "calc.py"
    path.write_text(BUGGY, encoding="utf-8")
    return path


# ---------------------------------------------------------------- the sandbox


def test_fix_executor_asks_for_the_sandbox_with_the_project_read_only(built: Built, tmp_path: Path) -> None:
    needs = (tmp_path / "proj",)
    limits = Limits(timeout_s=4.0)
    with pytest.raises(UserError, match="--sandbox restricted: fix runs pytest and imports your modules"):
        fix_executor("restricted", limits, needs)
    assert built.calls == []
    for kind in ("bwrap", "docker", "unshare", "process"):
        assert fix_executor(kind, limits, needs) is built
    binds = [(kind, kwargs["ro_binds"]) for kind, _, kwargs in built.calls]
    assert binds == [("bwrap", needs), ("docker", needs), ("unshare", needs), ("process", ())]
    assert all(lim is limits for _, lim, _ in built.calls)


def test_fix_executor_shows_auto_the_project_and_hands_every_level_the_warning(built: Built, tmp_path: Path) -> None:
    """`auto` is bwrap or a refusal (sandbox.factory), so it gets the project's binds; what an
    explicit weaker level says of its exposure goes to fix's `warn`, printed under the sandbox line."""
    warnings: list[str] = []
    for kind in ("auto", "unshare"):
        fix_executor(kind, Limits(), (tmp_path,), warnings.append)
    assert [(kind, kwargs["ro_binds"]) for kind, _, kwargs in built.calls] == [
        ("auto", (tmp_path,)),
        ("unshare", (tmp_path,)),
    ]
    assert all(kwargs["warn"] == warnings.append for _, _, kwargs in built.calls)


# ---------------------------------------------------------------- --write


def test_check_writable_refuses_a_backup_that_would_be_lost(module: Path) -> None:
    user_file = load_user_file(str(module))
    backup = backup_path(module)
    assert backup == module.with_name("calc.py.orig")
    check_writable(user_file)  # no backup yet
    backup.write_bytes(user_file.raw)
    check_writable(user_file)  # the same bytes: nothing lost by replacing it
    backup.write_text("something else", encoding="utf-8")
    with pytest.raises(UserError, match=r"calc\.py\.orig already exists and differs from .*calc\.py; move it away"):
        check_writable(user_file)
    backup.unlink()
    backup.mkdir()
    with pytest.raises(UserError, match="already exists and differs"):
        check_writable(user_file)


def test_check_writable_refuses_a_folder_it_cannot_write(module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_file = load_user_file(str(module))
    asked: list[tuple[Path, int]] = []

    def access(path: Path, mode: int) -> bool:
        asked.append((Path(path), mode))
        return False

    monkeypatch.setattr(command.os, "access", access)
    with pytest.raises(UserError, match=f"--write: cannot write in {module.parent}"):
        check_writable(user_file)
    assert asked == [(module.parent, os.W_OK)]


def test_write_atomic_bytes_replaces_the_file_with_the_mode_given(tmp_path: Path) -> None:
    target = tmp_path / "out.py"
    target.write_text("old", encoding="utf-8")
    write_atomic_bytes(target, b"new\r\n", 0o640)
    assert target.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.py"]  # no temporary file left


def test_write_atomic_bytes_that_fails_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.py"
    target.write_text("old", encoding="utf-8")

    def refuse(src: str, dst: Path) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(command.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_atomic_bytes(target, b"new", 0o644)
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.py"]


def test_apply_fix_keeps_the_original_its_mode_bom_and_newlines(tmp_path: Path) -> None:
    path = tmp_path / "crlf.py"
    raw = b"\xef\xbb\xbf" + BUGGY.replace("\n", "\r\n").encode()
    path.write_bytes(raw)
    path.chmod(0o750)
    user_file = load_user_file(str(path))
    assert (user_file.bom, user_file.newline, user_file.source) == (True, "\r\n", BUGGY)
    backup = apply_fix(user_file, FIXED)
    assert backup == tmp_path / "crlf.py.orig" and backup.read_bytes() == raw
    assert path.read_bytes() == b"\xef\xbb\xbf" + FIXED.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o750 == stat.S_IMODE(backup.stat().st_mode)


def test_apply_fix_refuses_a_file_changed_during_the_run(module: Path) -> None:
    user_file = load_user_file(str(module))
    module.write_text(BUGGY + "\n# edited meanwhile\n", encoding="utf-8")
    with pytest.raises(UserError, match="calc.py changed while the fix was being found; not written"):
        apply_fix(user_file, FIXED)
    assert module.read_text(encoding="utf-8").endswith("# edited meanwhile\n")
    assert not backup_path(module).exists()


# ---------------------------------------------------------------- --trace


def record_and_result(passed: bool = True, turns: int = 1) -> tuple[TaskRecord, AgentResult]:
    record = TaskRecord(
        task_id="calc.py",
        entry_point="add",
        bug_type="",
        failure_symptoms="",
        iterations=1,
        executions=1,
        stop_reason="passed" if passed else "budget",
        tool_mode="native",
        first_code=FIXED,
        final_code=FIXED,
        score_message="",
        tokens_in=10,
        tokens_out=5,
        model_latency_s=0.1,
        wall_s=0.2,
        scores={"verdict": {"passed": passed, "passed_first": passed}},
        attempts=[{"turn": 0, "outcome": "passed" if passed else "failed", "code": FIXED}],
    )
    messages = [{"role": "user", "content": "fix add"}, {"role": "assistant", "content": "done"}]
    attempts = [Attempt(turn, 0.0, "failed", code=BUGGY) for turn in range(turns - 1)]
    attempts.append(Attempt(turns - 1, 0.0, "passed" if passed else "failed", code=FIXED))
    return record, AgentResult(attempts, final_code=FIXED, stop_reason=record.stop_reason, messages=messages)


def test_write_session_trace_writes_the_eval_trace_at_the_path_given(tmp_path: Path) -> None:
    record, result = record_and_result()
    path = tmp_path / "traces" / "session.json"
    write_session_trace(path, record, result)
    trace = json.loads(path.read_text(encoding="utf-8"))
    assert trace["task_id"] == "calc.py" and trace["passed"] is True and trace["stop_reason"] == "passed"
    assert trace["messages"] == result.messages and trace["attempts"] == record.attempts
    assert [p.name for p in path.parent.iterdir()] == ["session.json"]  # the temporary folder is gone


# ---------------------------------------------------------------- run_fix


def fix_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    _fix.add_arguments(parser)
    return parser.parse_args(list(argv))


def finding(outcome: Callable[..., Outcome] | BaseException, seen: list[Any]) -> Callable[..., Outcome]:
    def find_fix(args: Any, preset: Any, where: Any, tests: Any, executor: Any, baseline: Any, console: Any) -> Outcome:
        seen.append((where, tests, executor, baseline))
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome(where)

    return find_fix


def outcome_of(fixed: bool, turns: int) -> Callable[[Any], Outcome]:
    def make(where: Any) -> Outcome:
        record, result = record_and_result(fixed, turns)
        user_file = next(iter(where.files.values()))
        return Outcome(
            fixed, FIXED if fixed else None, "AssertionError: add(1, 2) == -1", result, record, ("add",), user_file
        )

    return make


PRESET = resolve("oracle:canonical", presets={})


def test_run_fix_stops_when_the_tests_already_pass(
    built: Built, no_git: None, module: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    built.status, built.message = "passed", "all tests passed"
    monkeypatch.setattr(command, "find_fix", lambda *a: pytest.fail("no session for tests that pass"))
    args = fix_args("calc.py", "--tests", "from calc import add\nassert add(1, 2) == 3", "--sandbox", "process")
    with pytest.raises(UserError, match="already pass on calc.py: there is nothing to fix"):
        run_fix(args, PRESET)
    captured = capsys.readouterr()
    assert captured.out == "already passing\n"
    assert "fix calc.py (module calc, may change what the failing tests point to)" in captured.err
    assert "sandbox: none (a test's stand-in)" in captured.err
    assert "before the fix: passed (all tests passed)" in captured.err
    (kind, limits, kwargs) = built.calls[0]
    assert kind == "process" and limits.timeout_s == 6.0 and set(kwargs) == {"ro_binds", "docker", "warn"}
    assert kwargs["ro_binds"] == () and kwargs["docker"] is None  # its exposure line goes to fix's notes (warn)
    assert built.closed == 1  # the sandbox closed on the way out
    assert '"module": "calc"' in built.programs[0].replace('\\"', '"')  # the driver told to import calc


def test_run_fix_prints_the_diff_writes_the_fix_and_the_trace(
    built: Built,
    no_git: None,
    module: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(command, "find_fix", finding(outcome_of(True, 1), seen))
    trace = tmp_path / "t" / "trace.json"
    args = fix_args(
        "calc.py",
        "--tests",
        "assert True",
        "--function",
        "add",
        "--write",
        "--trace",
        str(trace),
        "--max-iters",
        "2",
        "--sandbox",
        "bwrap",
        "-v",
    )
    assert run_fix(args, PRESET) == EXIT_FIXED
    captured = capsys.readouterr()
    assert "-    return a - b\n+    return a + b\n" in captured.out and captured.out.startswith("--- a/")
    assert "fixed in 1 turn" in captured.err and "(the original is in" in captured.err
    assert f"trace: {trace}" in captured.err
    assert module.read_text(encoding="utf-8") == FIXED
    assert backup_path(module).read_text(encoding="utf-8") == BUGGY
    assert json.loads(trace.read_text(encoding="utf-8"))["passed"] is True
    (where, tests, executor, baseline) = seen[0]
    assert [(s.function, s.turns, s.reason, s.path) for s in where.stages] == [("add", 3, "--function", module)]
    assert tests.label and baseline.result.status == "failed"
    assert built.calls[0][0] == "bwrap" and built.calls[0][2]["ro_binds"] == (tmp_path,)  # the project, read-only
    assert "AssertionError: add(1, 2) == -1" in captured.err  # -v: the baseline's failure in full


def test_run_fix_without_a_fix_leaves_the_file_and_exits_1(
    built: Built, no_git: None, module: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command, "find_fix", finding(outcome_of(False, 3), []))
    args = fix_args("calc.py", "--tests", "assert True", "--function", "add", "--write", "--sandbox", "process")
    assert run_fix(args, PRESET) == EXIT_NOT_FIXED
    captured = capsys.readouterr()
    assert captured.out == "no fix found after 3 attempts\nlast failure:\nAssertionError: add(1, 2) == -1\n"
    assert "not fixed: calc.py is unchanged" in captured.err
    assert module.read_text(encoding="utf-8") == BUGGY and not backup_path(module).exists()


def test_run_fix_interrupted_leaves_the_file_and_closes_the_sandbox(
    built: Built, no_git: None, module: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command, "find_fix", finding(KeyboardInterrupt(), []))
    args = fix_args("calc.py", "--tests", "assert True", "--function", "add", "--sandbox", "process")
    assert run_fix(args, PRESET) == 130
    assert "interrupted: calc.py is unchanged" in capsys.readouterr().err
    assert built.closed == 1 and module.read_text(encoding="utf-8") == BUGGY


def test_run_fix_refuses_bad_input_before_the_sandbox(built: Built, no_git: None, module: Path) -> None:
    with pytest.raises(UserError, match="--function nope: calc.py has no top-level function `nope`"):
        run_fix(fix_args("calc.py", "--tests", "assert True", "--function", "nope"), PRESET)
    with pytest.raises(UserError, match="--tests: empty"):
        run_fix(fix_args("calc.py", "--tests", " "), PRESET)
    with pytest.raises(UserError, match="file not found: missing.py"):
        run_fix(fix_args("missing.py", "--tests", "assert True"), PRESET)
    with pytest.raises(UserError, match="--sandbox restricted"):
        run_fix(fix_args("calc.py", "--tests", "assert True", "--sandbox", "restricted"), PRESET)
    assert built.calls == []
