"""The data of `humanevalfix view`: one run, or two compared, as plain JSON for the viewer page.

Everything the page shows is computed here (the diffs with difflib, the won and lost tasks with
`compare_runs`, so the counts are `report A B`'s); the page only lays it out. A field a results
file does not hold (an older schema, a run without traces) is None here and "absent" on the page.
Text from a model, the dataset or a candidate stays text: the page never reads it as HTML.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from humanevalfix.agent.protocols import describe
from humanevalfix.errors import DatasetError, UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.reports.comparison import compare_runs
from humanevalfix.reports.runs import Run, sandbox_text, status_of, summary_lines

# Outcomes of a turn that brought no new candidate (the README's "turns without new code").
NO_NEW_CODE = ("repeat", "no_code")
TRACE_MAX_BYTES = 20 * 1024 * 1024  # a trace file larger than this is left out, not read


def _text(value: Any) -> str | None:
    """A value shown as text: strings as they are, None as absent, anything else as its JSON."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        return str(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def diff(before: str | None, after: str | None, old: str, new: str) -> str | None:
    """A unified diff (headers left out), "" when the two are the same; None without both."""
    if not isinstance(before, str) or not isinstance(after, str):
        return None
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), old, new, lineterm="", n=3)
    return "\n".join(list(lines)[2:])


def _plus(record: TaskRecord) -> bool | None:
    """pass@1+ of the final candidate: None where the run was not scored so."""
    final = (record.scores.get("plus") or {}).get("final")
    return final if isinstance(final, bool) else None


def _turns(record: TaskRecord, buggy: str | None, reasoning: dict[int, list[str]]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    previous: str | None = None
    for i, attempt in enumerate(record.attempts):
        a = attempt if isinstance(attempt, dict) else {"feedback": _text(attempt)}
        code = a.get("code") if isinstance(a.get("code"), str) else None
        recorded_turn = a.get("turn")
        turn: int = recorded_turn if isinstance(recorded_turn, int) else i
        listed = a.get("redrawn")
        redrawn: list[Any] = listed if isinstance(listed, list) else []
        turns.append(
            {
                "turn": turn,
                "outcome": _text(a.get("outcome")),
                "temperature": _number(a.get("temperature")),
                "strategy": _text(a.get("strategy")),
                "via": _text(a.get("via")),
                "redrawn": [_text(x) for x in redrawn if x is not None],
                "feedback": _text(a.get("feedback")),
                "code": code,
                "diff_buggy": diff(buggy, code, "buggy", f"turn {turn}"),
                "diff_previous": diff(previous, code, "previous", f"turn {turn}"),
                "tokens_in": _number(a.get("tokens_in")),
                "tokens_out": _number(a.get("tokens_out")),
                "latency_s": _number(a.get("latency_s")),
                "reply": _text(a.get("reply")),
                "reasoning": reasoning.get(turn, []),
            }
        )
        previous = code if code is not None else previous
    return turns


def read_trace(directory: Path | None, record: TaskRecord) -> dict[str, Any]:
    """The task's `--traces` file (its conversation and reasoning), or {} where there is none."""
    if directory is None:
        return {}
    from humanevalfix.evaluation.traces import trace_name

    path = directory / trace_name(record.task_id, record.sample)
    try:
        if not path.is_file() or path.stat().st_size > TRACE_MAX_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _messages(trace: dict[str, Any]) -> list[dict[str, str | None]] | None:
    messages = trace.get("messages")
    if not isinstance(messages, list):
        return None
    out = []
    for m in messages:
        if isinstance(m, dict):
            content = m.get("content")
            calls = m.get("tool_calls")
            text = _text(content) if content is not None or calls is None else None
            if calls:
                text = ((text + "\n") if text else "") + (_text(calls) or "")
            out.append({"role": _text(m.get("role")) or "?", "content": text})
    return out


def _reasoning(trace: dict[str, Any]) -> dict[int, list[str]]:
    by_turn: dict[int, list[str]] = {}
    for item in trace.get("reasoning") or []:
        if isinstance(item, dict) and isinstance(item.get("turn"), int) and item.get("text"):
            by_turn.setdefault(item["turn"], []).append(_text(item["text"]) or "")
    return by_turn


def task_row(
    record: TaskRecord, buggy: str | None, trace: dict[str, Any] | None = None, plus_scored: bool = False
) -> dict[str, Any]:
    """One task run of a run: the table's cells and the transcript's turns. `plus_scored`: the run
    was scored for pass@1+, so a final candidate that failed the tests failed pass@1+ too."""
    trace = trace or {}
    turns = _turns(record, buggy, _reasoning(trace))
    plus = _plus(record)
    if plus is None and plus_scored and not record.passed:
        plus = False
    return {
        "id": record.task_id,
        "sample": record.sample,
        "verdict": status_of(record),
        "passed": record.passed,
        "passed_first": record.passed_first,
        "plus": plus,
        "turns": _number(record.iterations),
        "executions": _number(record.executions),
        "outcomes": [t["outcome"] or "?" for t in turns],
        "tokens_in": _number(record.tokens_in),
        "tokens_out": _number(record.tokens_out),
        "wall_s": _number(record.wall_s),
        "bug_type": record.bug_type or None,
        "symptoms": record.failure_symptoms or None,
        "stop_reason": _text(record.stop_reason),
        "tool_mode": _text(record.tool_mode),
        "error": _text(record.error),
        "score_message": _text(record.score_message),
        "final_code": _text(record.final_code),
        "final_diff": diff(buggy, record.final_code, "buggy", "final"),
        "attempts": turns,
        "messages": _messages(trace),
    }


def _shown_tests(run: Run) -> dict[str, dict[str, str | None]]:
    """The tests (and docstring) as the run's protocol showed them, from its dataset where it is
    here offline (the bundled copy, or its file): results files do not hold them."""
    try:
        data = ds.recorded(run.spec.dataset.source)
    except (DatasetError, OSError, ValueError):
        return {}
    if data is None:
        return {}
    feedback, docstring = run.spec.protocol.feedback, run.spec.protocol.docstring
    shown: dict[str, dict[str, str | None]] = {}
    for task in data.tasks:
        tests = task.test if feedback == "tests" else task.example_test if feedback == "example" else None
        shown[task.task_id] = {"tests": tests, "docstring": task.docstring if docstring else None}
    return shown


def settings(run: Run) -> list[list[str]]:
    """What the run was: the config's settings a reader compares runs on."""
    c = run.spec
    pairs = [
        ("file", run.path.name),
        ("status", run.status or None),
        ("model", f"{c.model.model or '?'} ({c.model.provider or '?'})"),
        ("protocol", describe(c.protocol.name)),
        ("max iterations", str(c.agent.max_iters)),
        ("repair policy", run.policy),
        ("engine", c.agent.engine),
        ("samples", str(c.agent.samples)),
        ("temperatures", ", ".join(str(t) for t in c.model.temperatures) or None),
        ("sandbox", sandbox_text(c)),
        ("timeout", f"{c.sandbox.timeout_s:g} s"),
        ("dataset", c.dataset.source or None),
        ("schema version", str(c.schema_version)),
        ("project version", c.host.project_version or None),
        ("python", c.host.python or None),
        ("started at", c.host.started_at or None),
    ]
    return [[k, v if v is not None else "absent"] for k, v in pairs]


def headline(run: Run) -> dict[str, Any]:
    records = run.records
    n = len(records)
    plus = [_plus(r) for r in records]
    return {
        "tasks": n,
        "passed_first": sum(r.passed_first for r in records),
        "passed": sum(r.passed for r in records),
        "plus": sum(1 for p in plus if p) if any(p is not None for p in plus) else None,
        "errors": sum(1 for r in records if r.error),
        "turns": int(sum(_number(r.iterations) or 0 for r in records)),
        "tokens_in": int(sum(_number(r.tokens_in) or 0 for r in records)),
        "tokens_out": int(sum(_number(r.tokens_out) or 0 for r in records)),
        "wall_s": _number(run.summary.get("wall_s")),
    }


def run_data(run: Run, traces: Path | None = None) -> dict[str, Any]:
    shown = _shown_tests(run)
    plus_scored = any(_plus(r) is not None for r in run.records)
    tasks: dict[str, dict[str, Any]] = {}
    for record in run.records:
        buggy = run.buggy.get(record.task_id) or None
        row = task_row(record, buggy, read_trace(traces, record), plus_scored)
        key = record.task_id if record.sample == 0 else f"{record.task_id}#{record.sample}"
        row["key"] = key
        row["buggy_code"] = buggy
        row["tests"] = (shown.get(record.task_id) or {}).get("tests")
        row["docstring"] = (shown.get(record.task_id) or {}).get("docstring")
        tasks[key] = row
    return {
        "label": run.label,
        "settings": settings(run),
        "headline": headline(run),
        "summary": summary_lines(run),
        "traces": str(traces) if traces else None,
        "tasks": tasks,
    }


def default_traces(path: Path) -> Path | None:
    """A `--traces` folder kept beside the results as RUN.traces, if there is one."""
    candidate = path.with_suffix(".traces")
    return candidate if candidate.is_dir() else None


def view_data(runs: Sequence[Run], traces: Sequence[Path | None] = ()) -> dict[str, Any]:
    """The page's data: each run, the tasks in the first run's order (then the second's own), and,
    for two runs, the tasks each won: B's wins and A's wins as `compare_runs` counts them."""
    if not 1 <= len(runs) <= 2:
        raise UserError("view: give one results file, or two to compare")
    found = list(traces) + [None] * (len(runs) - len(traces))
    datas = [run_data(run, found[i] or default_traces(run.path)) for i, run in enumerate(runs)]
    order: list[str] = []
    for data in datas:
        order += [key for key in data["tasks"] if key not in order]
    compare: dict[str, Any] | None = None
    if len(runs) == 2:
        try:
            cmp = compare_runs(runs[0], runs[1])
        except UserError as exc:
            compare = {"common": 0, "b_wins": [], "a_wins": [], "p_value": None, "notes": [str(exc)]}
        else:
            compare = {
                "common": len(cmp.common),
                "b_wins": list(cmp.b_wins),
                "a_wins": list(cmp.a_wins),
                "p_value": cmp.p_value,
                "notes": list(cmp.notes),
            }
    return {"version": 1, "runs": datas, "order": order, "compare": compare, "no_new_code": list(NO_NEW_CODE)}
