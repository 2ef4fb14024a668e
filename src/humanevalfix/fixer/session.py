"""Finding the fix: the repair agent on one scope of the user's file after another.

Without --function the failing tests choose the first scope (fixer.localize): the function or
method they point to, then the next, then the whole file, each with its share of the turns. With
one function in scope the model is asked as on the benchmark: its name, signature and docstring,
the failing call with the expected and the actual value (fixer.failures), and the fix, explain,
rewrite strategies of the text protocol; with the whole file, pytest's full report, no rewrite.

Every turn says on stderr what came of it: the tests' result, a refusal, a repeat not run again,
no code in the reply. A fix counts once the final candidate of a scope has passed the user's tests.
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from humanevalfix.agent import AgentResult, Attempt, RepairRequest, ToolMode, repair
from humanevalfix.agent.codecheck import fingerprint
from humanevalfix.agent.engines import DEFAULT_ENGINE
from humanevalfix.agent.policies import FIX_REDRAWS
from humanevalfix.evaluation.records import TaskRecord, agent_fields
from humanevalfix.fixer.failures import describe
from humanevalfix.fixer.localize import Localizer, Stage, Suspect
from humanevalfix.fixer.project import as_seen_from, shown
from humanevalfix.fixer.request import request_for_fix
from humanevalfix.fixer.scope import Scope
from humanevalfix.fixer.suspects import (
    Progress,
    cause_context,
    context_for,
    suspects_line,
    workaround_note,
    worked_around,
)
from humanevalfix.fixer.tidy import one_line_versions
from humanevalfix.fixer.toolmodel import WorkspaceModel
from humanevalfix.fixer.userfile import UserFile
from humanevalfix.fixer.usertests import RunReport, UserTestExecutor, UserTests
from humanevalfix.fixer.workspace import Workspace
from humanevalfix.models.client import ChatModel, ChatReply, ChatRequest, RetryPolicy, request_timeout_for
from humanevalfix.models.oracle import Answer
from humanevalfix.models.presets import Preset
from humanevalfix.models.providers import open_endpoint
from humanevalfix.runspec import AgentSpec, ModelSpec, ProtocolSpec, agent_settings
from humanevalfix.sandbox.executor import ExecResult

EXECUTED = ("passed", "failed", "timeout", "error")  # attempt outcomes that ran the tests
# A fix that works around a helper's wrong value gets these turns more in the helper's scope, shown
# that fix; the workaround stays the fix if none passes (issue 53: the cause over the symptom).
CAUSE_TURNS = 2


@dataclass(frozen=True)
class Outcome:
    fixed: bool
    new_source: str | None  # the verified fix
    message: str  # the last failure when not fixed
    result: AgentResult  # all the scopes' turns, in order
    record: TaskRecord
    scopes: tuple[str, ...] = ()  # the scopes tried, in order
    user_file: UserFile | None = None  # the file the fix is in


class ProgressModel:
    """Says on stderr when the model is asked; the answer is the wrapped model's. The same messages
    again are the same turn drawn again (--redraws), said as such."""

    def __init__(self, inner: ChatModel, console: Console, label: str) -> None:
        self.inner = inner
        self.console = console
        self.label = label
        self.turns = 0
        self._last: list[dict[str, Any]] | None = None

    def chat(self, request: ChatRequest) -> ChatReply:
        if request.messages == self._last:
            self.console.print(f"  nothing new in the reply: drawn again (temperature {request.temperature:g})")
        else:
            self.turns += 1
            self.console.print(f"turn {self.turns}: asking {escape(self.label)} (temperature {request.temperature:g})")
        self._last = [dict(m) for m in request.messages]  # a native conversation grows in place
        return self.inner.chat(request)


def tests_line(report: RunReport, label: str = "  tests") -> str:
    message = report.result.message.strip()
    detail = report.summary or (message.splitlines()[0] if message else "")
    return f"{label}: {report.result.status}" + (f" ({escape(detail)})" if detail else "")


class TurnLog:
    """A line on stderr for each turn whose tests did not run (the executor's report says the rest),
    and the failures in order, for the user's last failure."""

    def __init__(self, console: Console, executor: UserTestExecutor, baseline: RunReport) -> None:
        self.console = console
        self.executor = executor
        self.failures: list[str] = [f"(no candidate was run; the original fails with)\n{baseline.result.message}"]
        self.ran: dict[str, int] = {}  # a candidate's fingerprint -> the turn that ran it
        self.offset = 0  # turns of the scopes before

    def __call__(self, attempt: Attempt) -> None:
        turn = self.offset + attempt.turn + 1
        first = attempt.feedback.strip().splitlines()[0] if attempt.feedback.strip() else ""
        if attempt.outcome in EXECUTED:
            self.ran.setdefault(fingerprint(attempt.code or ""), turn)
            report = self.executor.reports[-1]
            if not report.passed:
                self.failures.append(report.result.message)
        elif attempt.outcome == "repeat":
            earlier = self.ran.get(fingerprint(attempt.code or ""))
            self.console.print(
                f"  repeat of turn {earlier}: not run" if earlier else "  the original code, unchanged: not run"
            )
        elif attempt.outcome == "invalid":
            self.console.print(f"  refused: {escape(first)}")
            self.failures.append(attempt.feedback)
        elif attempt.outcome == "malformed":
            self.console.print(f"  unreadable call: {escape(first)}")
            self.failures.append(attempt.feedback)
        elif attempt.outcome == "no_code":
            self.console.print("  no code in the reply")
        # not_run (one turn, no feedback): the final candidate's check below says how it did


class ScopedExecutor:
    """The user's tests as the agent runs them in one scope: with one function in scope a failure
    is told as the eval tells it (the call, expected, got), else as pytest reports it."""

    def __init__(self, inner: UserTestExecutor, localizer: Localizer, function: str | None) -> None:
        self.inner = inner
        self.localizer = localizer
        self.function = function

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def isolation(self) -> str:
        return self.inner.isolation

    def tell(self, report: RunReport, code: str) -> str:
        failure = self.localizer.failure_for(report, self.function, code) if self.function else None
        told = None
        if failure is not None:
            user_file = self.inner.user_file
            assert user_file is not None, "a scope's candidate is served as a file"  # None: the project-wide baseline
            told = describe(failure, self.inner.tests, code, user_file.path.name)
        if told is None:
            return report.result.message
        if len(report.failures) > 1 and self.inner.tests.kind == "pytest":
            told += f"\n\npytest: {report.summary}"
        return told

    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        result = self.inner.run(code, test, support)
        if result.status != "failed" or not test.strip():
            return result
        return replace(result, message=self.tell(self.inner.reports[-1], code))

    def close(self) -> None:
        pass  # the command closes the user's executor


def _scope_line(stage: Stage, user_file: UserFile, root: Path) -> str:
    """The scope, its file and why: `square in shapes/geometry.py (...)`."""
    where = escape(shown(user_file.path, root))
    what = f"{stage.function} in {where}" if stage.function else f"the whole file {where}"
    return what + (f" ({escape(stage.reason)})" if stage.reason else "")


def _merged(results: list[AgentResult], chosen: AgentResult | None = None) -> AgentResult:
    """The scopes' turns as one session, numbered on: the trace and the record. Its final candidate
    is `chosen`'s (default: the last scope's); a cause that was tried after a workaround and failed
    leaves the workaround as the fix."""
    out = AgentResult(tool_mode=results[-1].tool_mode, first_code=results[0].first_code)
    for result in results:
        out.attempts += [replace(a, turn=len(out.attempts) + i) for i, a in enumerate(result.attempts)]
        out.messages += result.messages
    last = chosen or results[-1]
    out.final_code, out.stop_reason, out.error = last.final_code, last.stop_reason, last.error
    return out


def _record(
    user_file: UserFile, result: AgentResult, scopes: list[str], fixed: bool, message: str, wall_s: float
) -> TaskRecord:
    """The eval's record of the session; each attempt also names the scope it was made in."""
    fields = agent_fields(result)
    fields["attempts"] = [dict(a, scope=scope) for a, scope in zip(fields["attempts"], scopes, strict=True)]
    return TaskRecord(
        task_id=user_file.display,
        entry_point=scopes[-1] if scopes else "",
        bug_type="",
        failure_symptoms="",
        # The verdict scorer's entry, from the user's tests (fix has no full test to score against).
        scores={
            "verdict": {
                "passed_first": bool(result.attempts) and result.attempts[0].outcome == "passed" and fixed,
                "passed": fixed,
            }
        },
        score_message=message,
        wall_s=round(wall_s, 3),
        error=result.error,
        **fields,
    )


def _verdict(
    args: argparse.Namespace,
    result: AgentResult,
    source: str,
    executor: UserTestExecutor,
    console: Console,
    log: TurnLog,
) -> bool:
    """Whether the scope's final candidate passed the user's tests. In the loop it ran against them
    already unless --feedback showed it other tests (or none), or it had one turn: then it runs here."""
    final = result.final_code
    ran = {a.code: a.outcome for a in result.attempts if a.outcome in EXECUTED}
    if args.feedback == "tests" and final in ran:
        return ran[final] == "passed" and final != source
    if final is None or final == source or result.error:
        return False
    console.print("running the tests on the final candidate…")
    verdict = executor.check(final)
    console.print(tests_line(verdict))
    if not verdict.passed:
        log.failures.append(verdict.result.message)
    return verdict.passed


def _request(
    user_file: UserFile,
    tests: UserTests,
    scope: Scope,
    feedback: str,
    baseline: RunReport,
    told: ScopedExecutor,
    context: str = "",
) -> RepairRequest:
    """The scope's request; with one function in scope, the original's failure told as the eval tells it."""
    shown = baseline.result
    if scope.function and baseline.result.status == "failed":
        shown = replace(shown, message=told.tell(baseline, user_file.source))
    return request_for_fix(user_file, tests, scope, feedback, shown, context=context)


@dataclass(frozen=True)
class Plan:
    """Where to look: the scopes in turn, the files they are in, and the project's root."""

    stages: list[Stage]
    files: dict[Path, UserFile]
    root: Path
    suspects: list[Suspect] = field(default_factory=list)  # ranked; shown to the model beside its scope


def find_fix(
    args: argparse.Namespace,
    preset: Preset,
    where: Plan,
    tests: UserTests,
    executor: UserTestExecutor,
    baseline: RunReport,
    console: Console,
) -> Outcome:
    """Each stage's scope in its own file: the candidate served as that file, the baseline's failure
    as seen from it. `executor` runs the tests as the project's baseline did."""
    stages, served = where.stages, executor.user_file.path if executor.user_file is not None else None
    first = where.files[stages[0].path] if stages[0].path else executor.user_file
    assert first is not None  # a stage without a path is in the served FILE
    if len(where.suspects) > 1:
        console.print(f"suspects: {escape(suspects_line(where.suspects, where.root))}")
    console.print(f"scope: {_scope_line(stages[0], first, where.root)}")
    log = TurnLog(console, executor, baseline)
    # An oracle model answers by the request's id: oracle:buggy gives the file as it is.
    answers = {first.display: Answer(buggy=first.source)}
    retry = RetryPolicy(attempts=args.retries, timeout_s=request_timeout_for(preset.model, args.request_timeout))
    start = time.monotonic()
    results: list[AgentResult] = []
    scopes: list[str] = []
    fixed = False
    user_file = first
    with open_endpoint(preset, answers, retry, gguf=args.gguf) as endpoint:
        used = endpoint.preset
        # With native tool calls the model may also read, list, grep and edit a scratch copy of the project.
        tools = WorkspaceModel(
            endpoint.model,
            Workspace(where.root),
            lambda name, answer: console.print(f"  {name}: {escape(answer.partition(chr(10))[0][:200])}"),
        )
        model = ProgressModel(tools, console, used.model or used.name)
        mode = ToolMode(used.native_tools)  # one for the session: an endpoint found to need text keeps it

        def attempt(stage: Stage, last: bool, extra: str = "") -> tuple[AgentResult, bool, UserTestExecutor, str]:
            """One scope's turns: its result, whether it fixed, its runner, and the scope's name when it
            moved on early for want of progress ("" otherwise)."""
            user_file = where.files[stage.path] if stage.path else first
            runner = executor if user_file.path == served else executor.for_file(user_file)
            tools.target = user_file.path
            log.executor = runner
            seen = as_seen_from(baseline, user_file.path, served)
            scope = Scope(user_file.source, user_file.path.name, user_file.module, stage.function)
            told = ScopedExecutor(runner, Localizer(user_file, tests), stage.function)
            settings = agent_settings(
                ModelSpec.of(used),
                ProtocolSpec("fix", True, args.feedback),
                AgentSpec(
                    max_iters=stage.turns - 1,
                    engine=getattr(args, "engine", DEFAULT_ENGINE),
                    redraws=getattr(args, "redraws", FIX_REDRAWS),
                    redraw_turns=1,
                ),
            )
            log.offset = len(scopes)
            context = context_for(stage, where.suspects, where.files, where.root, baseline.values)
            context = "\n\n".join(part for part in (context, extra) if part)
            progress = Progress(baseline, threading.Event())

            def on_attempt(attempt: Attempt) -> None:
                log(attempt)
                if attempt.outcome in EXECUTED and runner.reports:
                    progress.see(runner.reports[-1])

            result = repair(
                _request(user_file, tests, scope, args.feedback, seen, told, context),
                model,
                told,
                settings,
                mode,
                stop=None if last else progress.stop,
                on_attempt=on_attempt,
            )
            label = scope.label if user_file is first else f"{shown(user_file.path, where.root)}: {scope.label}"
            scopes.extend([label] * len(result.attempts))
            fixed = _verdict(args, result, user_file.source, runner, console, log)
            moved = progress.moved_on and result.stop_reason == "interrupted"
            return result, fixed, runner, scope.label if moved else ""

        carried = 0  # turns a suspect without progress left to the next
        for number, stage in enumerate(stages):
            stage = replace(stage, turns=stage.turns + carried)
            user_file = where.files[stage.path] if stage.path else first
            if number:
                turns = len(scopes)
                console.print(
                    f"widening the scope to {_scope_line(stage, user_file, where.root)} after {turns} "
                    f"turn{'s' if turns != 1 else ''}"
                )
            result, fixed, runner, moved = attempt(stage, last=number == len(stages) - 1)
            results.append(result)
            if fixed or result.error or (result.stop_reason == "interrupted" and not moved):
                break
            carried = stage.turns - len(result.attempts) if moved else 0
            if moved:
                console.print(
                    f"  no progress in {escape(moved)}: its candidates fail as the original does; "
                    f"{carried} turn{'s' if carried != 1 else ''} left for the next scope"
                )
        tried = [s.function or "the whole file" for s in stages[: len(results)]]
        function = stages[len(results) - 1].function
        # --function said which function may change: the helper is not tried behind the user's back.
        helper = worked_around(function, user_file.path, baseline.values) if fixed and not args.function else None
        chosen, cause_fixed = results[-1], False  # the result whose final candidate is the fix
        if helper is not None and function is not None and results[-1].final_code and helper.path in where.files:
            cause = Stage(helper.function.split(".<locals>.")[0], CAUSE_TURNS, "the workaround's cause", helper.path)
            where_made = _scope_line(cause, where.files[helper.path], where.root)
            console.print(
                f"the fix works around a wrong value made in {where_made}: {CAUSE_TURNS} more turns in its scope, "
                "shown that fix"
            )
            extra = cause_context(function, results[-1].final_code, helper, where.root)
            result, cause_fixed, cause_runner, _ = attempt(cause, last=True, extra=extra)
            results.append(result)
            tried.append(cause.function or "")
            if cause_fixed:
                chosen, runner, user_file = result, cause_runner, where.files[helper.path]
                console.print(f"fixed in `{escape(cause.function or '')}` instead: the workaround is left out")
    note = None if cause_fixed else workaround_note(function, user_file.path, baseline.values, where.root)
    if fixed and note:
        console.print(f"[yellow]note[/]: {escape(note)}")
    session = _merged(results, chosen)
    message = "" if fixed else (session.error or log.failures[-1])
    record = _record(first, session, scopes, fixed, message, time.monotonic() - start)
    final = _smallest(user_file.source, session.final_code, runner, console) if fixed and session.final_code else None
    return Outcome(fixed, final, message, session, record, tuple(dict.fromkeys(tried)), user_file)


def _smallest(original: str, fix: str, runner: UserTestExecutor, console: Console) -> str:
    """A fix that rewrote more than its wrong line: that one line alone, when it passes the tests too
    (a small model asked for the smallest change still rewrites the body: issue 53)."""
    for trial in one_line_versions(original, fix):
        if runner.check(trial).passed:
            console.print("smallest change: one line of the fix passes the tests alone; the rest is left out")
            return trial
    return fix
