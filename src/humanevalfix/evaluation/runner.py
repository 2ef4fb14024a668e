"""An eval run: tasks through the agent and the scorer, concurrently, streamed, resumable."""

from __future__ import annotations

import json
import logging
import re
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from humanevalfix.evaluation import dataset as ds
from humanevalfix.agent import AgentResult, AgentSettings, ToolMode, repair, request_for_task
from humanevalfix.agent.engines import require_engine
from humanevalfix.agent.protocols import protocol_of
from humanevalfix.models.client import ChatModel, RetryPolicy
from humanevalfix.config import RESUME_DEFAULTS, RESUME_KEYS, RESUME_OPTIONS, RunConfig, default_out, public_config, results_path_for_stream, stream_path
from humanevalfix.errors import UserError
from humanevalfix.jsonio import read_json
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.models.embedded import ServerOptions
from humanevalfix.models.providers import open_endpoint, preload_sdk
from humanevalfix.evaluation.generations import write_generations_beside
from humanevalfix.evaluation.records import Stream, TaskRecord, read_stream
from humanevalfix.evaluation.results import Summary, results_document, summarize, write_atomic
from humanevalfix.sandbox.factory import executor_factory
from humanevalfix.sandbox.pool import ExecutorPool, executor_slots
from humanevalfix.evaluation import robustness
from humanevalfix.evaluation.scorer import score

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    results_path: Path
    stream_path: Path
    summary: Summary
    config: dict[str, Any]
    records: list[TaskRecord]
    status: str
    loop_s: float = 0.0  # from the first task submitted to the last one finished (no start-up, no writing)


def run_task(
    task: ds.Task,
    model: ChatModel,
    executor: Executor,
    settings: AgentSettings,
    mode: ToolMode,
    stop: threading.Event,
    sample: int = 0,
) -> tuple[TaskRecord, AgentResult]:
    start = time.monotonic()
    result = repair(request_for_task(task, settings), model, executor, settings, mode, stop)
    verdict = score(result.first_code, result.final_code, task, executor)
    record = TaskRecord(
        task_id=task.task_id,
        entry_point=task.entry_point,
        bug_type=task.bug_type,
        failure_symptoms=task.failure_symptoms,
        passed=verdict.passed,
        passed_first=verdict.passed_first,
        score_message=verdict.message,
        wall_s=round(time.monotonic() - start, 3),
        error=result.error or verdict.error,
        sample=sample,
        buggy_code=task.buggy_code,
        **robustness.record_fields(result.first_code, result.final_code, task, executor, verdict.passed_first, verdict.passed),
        **agent_fields(result),
    )
    return record, result


def agent_fields(result: AgentResult) -> dict[str, Any]:
    """The TaskRecord fields that come from the agent's run alone (the eval's and `fix`'s records)."""
    attempts = result.attempts
    return dict(
        iterations=len(attempts),
        executions=sum(1 for a in attempts if a.outcome in ("passed", "failed", "timeout")),
        stop_reason=result.stop_reason,
        tool_mode=result.tool_mode,
        first_code=result.first_code,
        final_code=result.final_code,
        tokens_in=sum(a.tokens_in for a in attempts),
        tokens_out=sum(a.tokens_out for a in attempts),
        model_latency_s=round(sum(a.latency_s for a in attempts), 3),
        attempts=result.attempts_dicts(),
    )


def _safe_name(task_id: str, sample: int) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)
    return f"{name}__s{sample}.json" if sample else f"{name}.json"


def write_trace(directory: Path, record: TaskRecord, result: AgentResult) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    trace = {
        "task_id": record.task_id,
        "sample": record.sample,
        "passed": record.passed,
        "passed_first": record.passed_first,
        "stop_reason": record.stop_reason,
        "tool_mode": record.tool_mode,
        "error": record.error,
        "attempts": record.attempts,
        "messages": result.messages,
    }
    write_atomic(directory / _safe_name(record.task_id, record.sample), trace)


def _prior_wall(out: Path, old_records: list[TaskRecord]) -> float:
    """The interrupted run's wall time. Ctrl-C and SIGTERM leave a results file that has it; after
    a crash only the tasks' own times are left, and their sum overstates it when workers > 1."""
    if not old_records:
        return 0.0
    try:
        return float(read_json(out)["summary"]["wall_s"])
    except (UserError, ValueError, KeyError, TypeError):
        return sum(r.wall_s for r in old_records)


def _check_resume(old: dict[str, Any], new: dict[str, Any], path: Path) -> None:
    for key in RESUME_KEYS:
        if key == "task_ids":
            continue  # taken from the stream
        before, now = old.get(key, RESUME_DEFAULTS.get(key)), new.get(key)
        if key == "protocol":
            before = protocol_of(old)  # runs from before --protocol: from their docstring and feedback
        if before != now:
            raise UserError(
                f"--resume {path}: option {RESUME_OPTIONS.get(key, key)} differs from the interrupted run "
                f"({before!r} there, {now!r} now); rerun with the same options"
            )


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("passed [green]{task.fields[passed]}[/]  errors [red]{task.fields[errors]}[/]"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


class _SigtermAsInterrupt:
    """SIGTERM (a scheduler, a `kill`) stops like Ctrl-C: finished tasks are kept."""

    def __enter__(self) -> None:
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGTERM, self._handler)

    @staticmethod
    def _handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)


def _resumed_dataset(explicit: Path | None, old_config: dict[str, Any]) -> ds.Dataset:
    """The source the interrupted run used, when no path is given and it is still here: the Hub and
    the bundled copy hold the same tasks under different sha256s, and whether the Hub answers
    may have changed since the run started."""
    if explicit is None:
        same = ds.recorded(str(old_config.get("dataset_source", "")))
        if same is not None:
            return same
    return ds.load(explicit)


def run_eval(config: RunConfig, console: Console | None = None) -> RunOutcome:
    console = console or Console(stderr=True)
    require_engine(config.engine)  # before a model server or a sandbox starts
    preload_sdk(config.preset)
    old_records: list[TaskRecord] = []
    old_config: dict[str, Any] | None = None
    if config.resume:
        if config.task_ids or config.limit:
            raise UserError("--resume continues the interrupted run's own task list: drop --tasks/--limit")
        stream_file = config.resume if config.resume.suffix == ".jsonl" else stream_path(config.resume)
        old_config, old_records = read_stream(stream_file)
        data = _resumed_dataset(config.dataset_path, old_config)
        tasks = ds.select(data.tasks, old_config["task_ids"], None)
        out = config.out or results_path_for_stream(stream_file)
    else:
        data = ds.load(config.dataset_path)
        tasks = ds.select(data.tasks, list(config.task_ids) if config.task_ids else None, config.limit)
        out = config.out or default_out(config.preset)
        stream_file = stream_path(out)
    if not tasks:
        raise UserError("no tasks selected (check --tasks and --limit)")

    limits = Limits(timeout_s=config.timeout_s)
    retry = RetryPolicy(attempts=config.retry_attempts, initial_s=config.retry_initial_s, timeout_s=config.request_timeout_s)
    pool = ExecutorPool(executor_factory(config.sandbox, limits), executor_slots(config.workers))
    try:
        with open_endpoint(config.preset, tasks, retry, gguf=config.gguf, server=ServerOptions(prompt_lookup=config.prompt_lookup)) as endpoint:
            preset = endpoint.preset
            run_cfg = replace(config, preset=preset)
            public = public_config(
                run_cfg,
                dataset_source=data.source,
                dataset_sha256=data.sha256,
                task_ids=[t.task_id for t in tasks],
                executor_name=pool.sample.name,
                isolation=pool.sample.isolation,
            )
            stream = Stream(stream_file)
            if old_config is not None:
                _check_resume(old_config, public, stream_file)
                public["started_at"] = old_config.get("started_at", public["started_at"])
            else:
                stream.start(public)
            settings = AgentSettings(
                max_iters=config.max_iters,
                feedback=config.feedback,
                temperatures=preset.temperatures,
                max_tokens=preset.max_tokens,
                docstring=config.docstring,
                engine=config.engine,
            )
            mode = ToolMode(preset.native_tools)
            outcome = _execute(
                config, console, tasks, endpoint.model, pool, settings, mode, stream, public, old_records, out, preset,
                _prior_wall(out, old_records),
            )
            if outcome.status == "complete":
                write_generations_beside(outcome.results_path, [t.task_id for t in data.tasks])
            return outcome
    finally:
        pool.close()


def _execute(
    config: RunConfig,
    console: Console,
    tasks: list[ds.Task],
    model: ChatModel,
    pool: ExecutorPool,
    settings: AgentSettings,
    mode: ToolMode,
    stream: Stream,
    public: dict[str, Any],
    old_records: list[TaskRecord],
    out: Path,
    preset: Any,
    prior_wall: float = 0.0,
) -> RunOutcome:
    done: dict[tuple[str, int], TaskRecord] = {r.key: r for r in old_records if not r.error}
    jobs = [(t, s) for t in tasks for s in range(config.samples) if (t.task_id, s) not in done]
    if old_records:
        console.print(f"Resuming: {len(done)} finished task runs kept, {len(jobs)} to run.")
    stop = threading.Event()
    started = time.monotonic()
    status = "complete"
    lock = threading.Lock()

    def work(task: ds.Task, sample: int) -> tuple[TaskRecord, AgentResult]:
        return run_task(task, model, pool, settings, mode, stop, sample)

    total = len(tasks) * config.samples
    with _SigtermAsInterrupt(), _progress(console) as progress:
        bar = progress.add_task(
            "repairing",
            total=total,
            completed=len(done),
            passed=sum(r.passed for r in done.values()),
            errors=0,
        )
        executor = ThreadPoolExecutor(max_workers=max(1, config.workers), thread_name_prefix="task")
        futures: dict[Future[tuple[TaskRecord, AgentResult]], tuple[str, int]] = {
            executor.submit(work, t, s): (t.task_id, s) for t, s in jobs
        }
        pending = set(futures)
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in finished:
                    if fut.cancelled():
                        continue
                    exc = fut.exception()
                    if exc is not None:
                        raise exc
                    record, result = fut.result()
                    if record.stop_reason == "interrupted":
                        continue  # not finished: it will run again on --resume
                    stream.append(record)
                    if config.traces:
                        write_trace(config.traces, record, result)
                    with lock:
                        done[record.key] = record
                    errors = sum(1 for r in done.values() if r.error)
                    progress.update(bar, advance=1, passed=sum(r.passed for r in done.values()), errors=errors)
                    if config.verbose or config.debug:
                        _print_task(progress.console, record)
                    if config.debug:
                        progress.console.print_json(json.dumps(result.messages, ensure_ascii=False))
        except KeyboardInterrupt:
            status = "interrupted"
            stop.set()
            progress.console.print("[yellow]Interrupted: finishing the calls in flight, keeping finished tasks…[/]")
            for fut in pending:
                fut.cancel()
            for fut in pending:
                if not fut.cancelled():
                    try:
                        record, result = fut.result()
                    except Exception:
                        continue
                    if record.stop_reason != "interrupted":
                        stream.append(record)
                        done[record.key] = record
        finally:
            executor.shutdown(wait=True, cancel_futures=True)

    loop_s = time.monotonic() - started
    order = {(t.task_id, s): i for i, (t, s) in enumerate((t, s) for t in tasks for s in range(config.samples))}
    records = sorted(done.values(), key=lambda r: order.get(r.key, 1 << 30))
    wall = time.monotonic() - started + prior_wall
    public = dict(public, tool_mode=mode.name, tool_mode_reason=mode.reason)
    summary = summarize(records, wall, preset.price_in, preset.price_out)
    document = results_document(public, summary, records, "complete" if len(records) == total else status)
    write_atomic(out, document)
    return RunOutcome(out, stream.path, summary, public, records, document["status"], loop_s)


def _print_task(console: Console, record: TaskRecord) -> None:
    mark = "[green]PASS[/]" if record.passed else ("[red]ERROR[/]" if record.error else "[red]FAIL[/]")
    first = "first-try" if record.passed_first else ""
    detail = record.error or ("" if record.passed else record.score_message.splitlines()[0][:100])
    console.print(f"{mark} {record.task_id} iters={record.iterations} {first} {detail}")
