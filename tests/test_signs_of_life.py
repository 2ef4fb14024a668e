"""Signs of life on a slow run: each task in flight shows its turn, what it waits for and since
when; the bar gives an estimate once a few tasks finished; the results path is said once; a
model without a price shows no "$0.0000"."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from humanevalfix.cli import main
from humanevalfix.evaluation.activity import (
    ETA_AFTER,
    Activity,
    LiveProgress,
    TrackedExecutor,
    TrackedModel,
    eta_text,
    format_span,
)
from humanevalfix.evaluation.results import summarize
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.reports.summary import cost_text, summary_table
from humanevalfix.runspec import from_dict
from humanevalfix.sandbox.executor import ExecResult
from humanevalfix.testing.scripted_server import ScriptedServer, tool_call

from .conftest import TINY_TASK_IDS


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_task_shows_its_turn_what_it_waits_for_and_how_long() -> None:
    clock = Clock()
    activity = Activity(clock)
    seen: list[list[str]] = []

    class SlowModel:
        def chat(self, request: Any) -> str:
            clock.now += 75  # the model takes its time
            seen.append(activity.lines())
            return "reply"

    class SlowExecutor:
        name = "process"

        def run(self, code: str, test: str, support: str = "") -> ExecResult:
            clock.now += 3
            seen.append(activity.lines())
            return ExecResult(status="passed", message="", duration_s=3.0)

    model, executor = (
        TrackedModel(SlowModel(), activity, 1, "Python/7"),
        TrackedExecutor(SlowExecutor(), activity, 1, "Python/7"),
    )
    model.chat(None)  # type: ignore[arg-type]
    executor.run("code", "test")
    model.chat(None)  # type: ignore[arg-type]
    assert seen == [
        ["  Python/7: turn 1, waiting for the model for 1m15s"],
        ["  Python/7: turn 1, running the tests for 3s"],
        ["  Python/7: turn 2, waiting for the model for 1m15s"],
    ]
    assert executor.name == "process"  # the rest of the executor is the real one's
    activity.clear(1)
    assert activity.lines() == []


@pytest.mark.parametrize(
    ("elapsed", "finished", "left", "text"),
    [
        (50.0, ETA_AFTER - 1, 5, f"ETA after {ETA_AFTER} tasks"),
        (None, 0, 5, f"ETA after {ETA_AFTER} tasks"),
        (30.0, 3, 7, "ETA 1m10s"),
        (3 * 3600.0, 3, 2, "ETA 2h00m"),
        (30.0, 3, 0, ""),
    ],
)
def test_the_estimate_is_the_runs_mean_time_per_task_times_the_tasks_left(
    elapsed: float | None, finished: int, left: int, text: str
) -> None:
    assert eta_text(elapsed, finished, left) == text


def test_spans_read_as_seconds_minutes_hours() -> None:
    assert [format_span(s) for s in (0, 59.9, 60, 3599, 3600 * 25)] == ["0s", "59s", "1m00s", "59m59s", "25h00m"]


def test_the_live_display_has_a_line_per_task_in_flight() -> None:
    activity = Activity()
    activity.set(1, "Python/3", "running the tests")
    console = Console(file=io.StringIO(), width=120)
    progress = LiveProgress(activity, console=console)
    progress.add_task("repairing", total=3)
    console.print(*progress.get_renderables())
    assert "Python/3: starting, running the tests for 0s" in console.file.getvalue()


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


@pytest.mark.e2e
def test_a_real_run_shows_the_task_waiting_and_then_an_estimate(
    tiny_dataset: Path, make_config: Callable[..., Any], dataset_rows: list[dict[str, Any]]
) -> None:
    """A scripted model that answers in 1.2 s: the terminal shows each task waiting for it, with the
    seconds counting, and once 3 tasks finished, an estimate."""
    rows = {r["task_id"]: r for r in dataset_rows}
    four = tiny_dataset.parent / "four.jsonl"
    ids = [*TINY_TASK_IDS, "Python/4"]
    four.write_text("".join(json.dumps(rows[t]) + "\n" for t in ids), encoding="utf-8")
    slow = dataclasses.replace(tool_call("def f(x):\n    return x\n"), delay_s=1.2)
    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    with ScriptedServer([slow] * 4) as server:
        run_eval(make_config(server, four, max_iters=0), console)
    frames = plain(console.file.getvalue())
    assert re.search(r"Python/0: turn 1, waiting for the model for 1s", frames), frames[-3000:]
    assert "ETA after 3 tasks" in frames
    assert re.search(r"3/4 .*ETA \d+s", frames), frames[-3000:]


def test_cost_is_local_or_a_dash_without_a_price() -> None:
    assert cost_text(0.0, "local") == "local (no per-token price)"
    assert cost_text(None, "compatible").startswith("— ")
    assert cost_text(0.000081, "openai") == "$0.0001"
    console = Console(file=io.StringIO(), width=200)
    console.print(summary_table(summarize([], 1.0, 0.0, 0.0), from_dict({"provider": "local", "model": "qwen"})))
    assert "$0.0000" not in console.file.getvalue() and "local (no per-token price)" in console.file.getvalue()


@pytest.mark.e2e
@pytest.mark.parametrize("terminal", [True, False], ids=["stdout a terminal", "stdout a pipe"])
def test_the_results_path_is_said_once_on_a_terminal_and_given_bare_to_a_pipe(
    terminal: bool,
    tmp_path: Path,
    tiny_dataset: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Longer than the console and with brackets: one line, as written, never rich markup.
    out = tmp_path / ("r[bold]" + "x" * 200 + ".json")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: terminal)
    code = main(
        [
            "--model",
            "oracle:canonical",
            "--sandbox",
            "process",
            "--dataset-path",
            str(tiny_dataset),
            "--limit",
            "1",
            "--out",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    shown = (captured.out + captured.err).count(str(out))
    assert captured.err.count(f"results: {out}") == 1
    assert (shown, captured.out.strip()) == ((1, "") if terminal else (2, str(out)))
