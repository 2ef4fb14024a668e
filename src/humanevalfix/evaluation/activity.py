"""Signs of life during a run: what each task in flight is doing, and when the run should end.

A task on the embedded model can take minutes; a bar that sits at 2/10 with only the clock moving
looks hung. The model and the executor a task uses are wrapped so that each call says what the
task is doing (its turn, waiting for the model or running the tests) and since when; the live
display prints a line per task in flight under the bar. Rich's own time-remaining column averages
over the last 30 s, which never holds two finished tasks on a slow model, so the estimate here is
from the whole run: the time per finished task so far, times the tasks left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType
from rich.progress import Progress, ProgressColumn, Task
from rich.text import Text

from humanevalfix.models.client import ChatModel, ChatReply, ChatRequest
from humanevalfix.sandbox.executor import ExecResult

ETA_AFTER = 3  # tasks finished in this run before an estimate is shown
WAITING, TESTING = "waiting for the model", "running the tests"


@dataclass(frozen=True)
class Doing:
    """One task in flight: its turn (model calls so far), what it does now, since when."""

    task_id: str
    turn: int
    phase: str
    since: float


class Activity:
    """Thread-safe: workers report, the display reads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._now: dict[int, Doing] = {}
        self.clock = clock

    def set(self, slot: int, task_id: str, phase: str, next_turn: bool = False) -> None:
        with self._lock:
            turn = self._now[slot].turn if slot in self._now else 0
            self._now[slot] = Doing(task_id, turn + 1 if next_turn else turn, phase, self.clock())

    def clear(self, slot: int) -> None:
        with self._lock:
            self._now.pop(slot, None)

    def lines(self) -> list[str]:
        now = self.clock()
        with self._lock:
            doing = sorted(self._now.values(), key=lambda d: d.task_id)
        return [describe(d, now) for d in doing]


def describe(doing: Doing, now: float) -> str:
    turn = f"turn {doing.turn}" if doing.turn else "starting"
    return f"  {doing.task_id}: {turn}, {doing.phase} for {format_span(now - doing.since)}"


def format_span(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class TrackedModel:
    """The task's model: each call is a new turn, spent waiting for the model."""

    def __init__(self, inner: ChatModel, activity: Activity, slot: int, task_id: str) -> None:
        self.inner, self.activity, self.slot, self.task_id = inner, activity, slot, task_id

    def chat(self, request: ChatRequest) -> ChatReply:
        self.activity.set(self.slot, self.task_id, WAITING, next_turn=True)
        return self.inner.chat(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class TrackedExecutor:
    """The task's executor: each run is time spent running the tests (the repair's or the scorer's)."""

    def __init__(self, inner: Any, activity: Activity, slot: int, task_id: str) -> None:
        self.inner, self.activity, self.slot, self.task_id = inner, activity, slot, task_id

    @property
    def wrapped(self) -> Any:
        return self.inner

    def run(self, code: str, test: str, support: str = "", timeout_s: float | None = None) -> ExecResult:
        self.activity.set(self.slot, self.task_id, TESTING)
        if timeout_s is None:
            return self.inner.run(code, test, support)
        return self.inner.run(code, test, support, timeout_s=timeout_s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def eta_text(elapsed: float | None, finished: int, left: int) -> str:
    """`ETA 12m30s` from the mean time per task finished in this run; nothing to go on yet says so."""
    if left <= 0:
        return ""
    if elapsed is None or finished < ETA_AFTER:
        return f"ETA after {ETA_AFTER} tasks"
    return f"ETA {format_span(elapsed / finished * left)}"


class EtaColumn(ProgressColumn):
    """The whole run's estimate (the task's `fresh` field: tasks finished in this run, not resumed)."""

    def render(self, task: Task) -> RenderableType:
        left = int((task.total or 0) - task.completed)
        return Text(eta_text(task.elapsed, int(task.fields.get("fresh", 0)), left), style="progress.remaining")


class LiveProgress(Progress):
    """The bar, and under it a line per task in flight (refreshed with the bar, so the times move)."""

    def __init__(self, activity: Activity, *columns: Any, **kwargs: Any) -> None:
        self.activity = activity  # first: the parent's __init__ may already render
        super().__init__(*columns, **kwargs)

    def get_renderables(self) -> Iterator[RenderableType]:
        yield from super().get_renderables()
        for line in self.activity.lines():
            yield Text(line, style="dim")
