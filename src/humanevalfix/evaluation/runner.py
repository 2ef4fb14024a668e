"""An eval run: tasks through the agent and the scorer, concurrently (the engine's loop:
evaluation/runloop.py), streamed, resumable."""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from humanevalfix.agent import AgentResult, AgentSettings, ToolMode, repair, request_for_task
from humanevalfix.agent.engines import require_engine
from humanevalfix.config import RunConfig, default_out, results_path_for_stream, run_spec, stream_path
from humanevalfix.errors import UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation import outputs, resume
from humanevalfix.evaluation.activity import Activity, EtaColumn, LiveProgress, TrackedExecutor, TrackedModel
from humanevalfix.evaluation.generations import write_generations_beside
from humanevalfix.evaluation.health import EndpointHealth
from humanevalfix.evaluation.plusstore import CaseStore, default_directory
from humanevalfix.evaluation.records import Stream, TaskRecord, agent_fields, read_stream
from humanevalfix.evaluation.results import Summary, results_document, summarize, write_atomic
from humanevalfix.evaluation.runlock import run_lock
from humanevalfix.evaluation.runloop import Abort, TaskLoop, run_loop
from humanevalfix.evaluation.scorer import score_task
from humanevalfix.evaluation.stopping import GRACE_S, signals_held
from humanevalfix.evaluation.traces import write_trace
from humanevalfix.evaluation.validate import refuse_bad_rows
from humanevalfix.models import served
from humanevalfix.models.client import ChatModel, RetryPolicy
from humanevalfix.models.embedded import ServerOptions, with_lookup
from humanevalfix.models.gate import FirstReplyGate
from humanevalfix.models.keys import KeyPool
from humanevalfix.models.parameters import ParameterRules
from humanevalfix.models.providers import open_endpoint, preload_sdk
from humanevalfix.redaction import redact_data
from humanevalfix.runspec import RunSpec, from_dict
from humanevalfix.safetext import shown
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import executor_factory
from humanevalfix.sandbox.pool import ExecutorPool, executor_slots

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    results_path: Path
    stream_path: Path
    summary: Summary
    spec: RunSpec  # as written to the results file
    records: list[TaskRecord]
    status: str  # complete | complete_with_errors | interrupted | aborted
    loop_s: float = 0.0  # from the first task submitted to the last one finished (no start-up, no writing)
    problem: str | None = None  # why an aborted run stopped (one line)

    @property
    def config(self) -> dict[str, Any]:
        return self.spec.to_dict()


def run_task(
    task: ds.Task,
    model: ChatModel,
    executor: Executor,
    settings: AgentSettings,
    mode: ToolMode,
    stop: threading.Event,
    sample: int = 0,
    store: CaseStore | None = None,  # the run's pass@1+ cases, shared by its workers
) -> tuple[TaskRecord, AgentResult]:
    start = time.monotonic()
    settings = settings.for_sample(sample)
    result = repair(request_for_task(task, settings), model, executor, settings, mode, stop)
    scored = score_task(result.first_code, result.final_code, task, executor, store or CaseStore(None))
    record = TaskRecord(
        task_id=task.task_id,
        entry_point=task.entry_point,
        bug_type=task.bug_type,
        failure_symptoms=task.failure_symptoms,
        score_message=scored.score.message,
        scores=scored.scores,
        wall_s=round(time.monotonic() - start, 3),
        error=result.error or scored.score.error,
        error_kind=result.error_kind if result.error else ("executor" if scored.score.error else None),
        sample=sample,
        buggy_code=task.buggy_code,
        **agent_fields(result),
    )
    return record, result


def _progress(console: Console, activity: Activity) -> Progress:
    return LiveProgress(
        activity,
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("passed [green]{task.fields[passed]}[/]  errors [red]{task.fields[errors]}[/]"),
        TimeElapsedColumn(),
        EtaColumn(),
        console=console,
        transient=False,
    )


def run_eval(
    config: RunConfig, console: Console | None = None, started: Callable[[], None] | None = None
) -> RunOutcome:
    console = console or Console(stderr=True)
    require_engine(config.engine)  # before a model server or a sandbox starts
    preload = preload_sdk(config.preset)
    try:
        return _run(config, console, started)
    finally:
        # An early error must not leave the interpreter exiting under a half-done import in
        # another thread (it aborts with "FATAL: exception not rethrown").
        if preload is not None:
            preload.join()


def _run(config: RunConfig, console: Console, started: Callable[[], None] | None) -> RunOutcome:
    if config.resume:
        if config.task_ids or config.limit:
            raise UserError("--resume continues the interrupted run's own task list: drop --tasks/--limit")
        outputs.check_resume(config.resume)
        stream_file = (
            config.resume if config.resume.suffix == ".jsonl" or config.resume.is_dir() else stream_path(config.resume)
        )
        out = config.out or results_path_for_stream(stream_file)
    else:
        out = config.out or default_out(config.preset)
        outputs.check_file(out, "--out")  # before its stream's name is made from it (`/` has none)
        stream_file = stream_path(out)
    if config.resume and not stream_file.exists():
        raise UserError(f"--resume: file not found: {stream_file}")
    if out.is_dir() or stream_file.is_dir():
        outputs.check_file(out, "--out")  # the one-line error, before a lock file is made beside it
    # Held from before the stream is read (a torn tail is cut) until the results file is written.
    with run_lock(out, stream_file):
        return _run_locked(config, console, out, stream_file, started)


def _run_locked(
    config: RunConfig, console: Console, out: Path, stream_file: Path, started: Callable[[], None] | None
) -> RunOutcome:
    old_records: list[TaskRecord] = []
    old_spec: RunSpec | None = None
    if config.resume:
        old_config, old_records = read_stream(stream_file)
        old_spec = from_dict(old_config, f"{stream_file}: config")
        data = resume.dataset_for(config.dataset_path, old_spec, config.max_field_chars)
        tasks = resume.tasks_of(data, old_spec, stream_file)
        listed = {t.task_id for t in tasks}
        strays = [r.task_id for r in old_records if r.task_id not in listed]
        if strays:
            # Another run's records (two runs on one --out before the lock existed): never counted.
            console.print(
                f"[yellow]warning:[/] {len(strays)} record(s) in {shown(stream_file)} are not in its task list and "
                f"are ignored: {shown(', '.join(strays[:5]))}",
                highlight=False,
                soft_wrap=True,
            )
            old_records = [r for r in old_records if r.task_id in listed]
    else:
        data = ds.load(config.dataset_path, config.max_field_chars)
        tasks = ds.select(data.tasks, list(config.task_ids) if config.task_ids else None, config.limit)
    tasks, skipped = refuse_bad_rows(data, tasks, config.skip_bad_rows)
    for line in skipped:
        console.print(f"[yellow]skipped (--skip-bad-rows):[/] {shown(line)}", highlight=False, soft_wrap=True)
    if not tasks:
        raise UserError("no tasks selected (check --tasks and --limit)")
    # Before anything is spent: the outputs can be written.
    outputs.check_results_out(out, stream_file)
    if config.traces:
        outputs.check_folder(config.traces, "--traces")
    if config.probe_tools:  # after every input check: bad input spends nothing (models.served)
        config = _probed(config, console)

    limits = Limits(timeout_s=config.timeout_s)
    retry = RetryPolicy(
        attempts=config.retry_attempts,
        initial_s=config.retry_initial_s,
        timeout_s=config.request_timeout_s,
        max_reply_chars=config.max_reply_chars,
    )
    # What the sandbox says of itself (a weaker level's exposure) is said when the run starts, after
    # every input and the key are known good: bad input stays one line.
    sandbox_notes: list[str] = []
    # The run's own dataset file holds every canonical solution and hidden test: kept from candidates
    # where the level shows the host's files (unshare), as the bundled one is.
    hidden = (config.dataset_path,) if config.dataset_path is not None else ()
    factory = executor_factory(config.sandbox, limits, docker=config.docker, warn=sandbox_notes.append, hidden=hidden)
    pool = ExecutorPool(factory, executor_slots(config.workers))
    try:
        with open_endpoint(
            config.preset,
            ds.oracle_answers(tasks),
            retry,
            gguf=config.gguf,
            server=with_lookup(
                ServerOptions(stop_after_code=config.stop_after_code), config.prompt_lookup, config.exact_lookup
            ),
        ) as endpoint:
            for note in sandbox_notes:
                console.print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)
            if started is not None:
                started()  # every input checked and the endpoint open (its keys too): the run starts
            preset = endpoint.preset
            run_cfg = replace(config, preset=preset)
            spec = run_spec(
                run_cfg,
                dataset_source=data.source,
                dataset_sha256=data.sha256,
                task_ids=[t.task_id for t in tasks],
                executor_name=pool.sample.name,
                isolation=pool.sample.isolation,
                isolation_warning=pool.isolation_warning,
                skipped_rows=skipped,  # listed and counted, never scored
            )
            stream = Stream(stream_file)
            if old_spec is not None:
                resume.check(old_spec, spec, stream_file)
                spec = replace(
                    spec, host=replace(spec.host, started_at=old_spec.host.started_at or spec.host.started_at)
                )
            else:
                _start(stream, spec)
            settings = spec.agent_settings()
            mode = ToolMode(preset.native_tools, config.tools_reason)
            outcome = _execute(
                config,
                console,
                tasks,
                endpoint.model,
                pool,
                settings,
                mode,
                stream,
                spec,
                old_records,
                out,
                preset,
                resume.prior_wall(out, old_records),
                endpoint.pool,
            )
            if outcome.status in ("complete", "complete_with_errors"):
                try:
                    write_generations_beside(outcome.results_path, [t.task_id for t in data.tasks])
                except OSError as exc:  # secondary: `export` writes it again from the results file
                    console.print(
                        f"[yellow]warning:[/] the generations file was not written ({exc.strerror or exc}); "
                        "`humanevalfix export` writes it from the results"
                    )
            return outcome
    finally:
        pool.close()


def _probed(config: RunConfig, console: Console) -> RunConfig:
    choice = served.with_probed_tools(
        served.ServedChoice(config.preset, config.preset_reason or "", None, True), served.first_key(config.preset)
    )
    console.print(choice.line(), highlight=False, soft_wrap=True, markup=False)
    return replace(config, preset=choice.preset, tools_reason=choice.tools_reason, probe_tools=False)


def _start(stream: Stream, spec: RunSpec) -> None:
    try:
        stream.start(spec.to_dict())
    except OSError as exc:
        raise UserError(f"--out: cannot write the stream {stream.path} ({exc.strerror or exc})") from None


def _execute(
    config: RunConfig,
    console: Console,
    tasks: list[ds.Task],
    model: ChatModel,
    pool: ExecutorPool,
    settings: AgentSettings,
    mode: ToolMode,
    stream: Stream,
    spec: RunSpec,
    old_records: list[TaskRecord],
    out: Path,
    preset: Any,
    prior_wall: float = 0.0,
    keys: KeyPool | None = None,
) -> RunOutcome:
    done: dict[tuple[str, int], TaskRecord] = {r.key: r for r in old_records if not r.error}
    stop = threading.Event()
    if config.workers > 1:  # one request until the endpoint has answered once (models.gate)
        model = FirstReplyGate(model, stop)
    jobs = [(t, s) for t in tasks for s in range(config.samples) if (t.task_id, s) not in done]
    if old_records:
        console.print(f"Resuming: {len(done)} finished task runs kept, {len(jobs)} to run.")
    resumed = len(done)
    started = time.monotonic()
    health = EndpointHealth()

    activity, slots = Activity(), itertools.count(1)
    store = CaseStore(default_directory())

    def work(job: tuple[ds.Task, int]) -> tuple[TaskRecord, AgentResult]:
        task, sample = job
        slot = next(slots)  # the task's line under the bar: its turn, what it waits for, how long
        try:
            tracked = (
                TrackedModel(model, activity, slot, task.task_id),
                TrackedExecutor(pool, activity, slot, task.task_id),
            )
            return run_task(task, *tracked, settings, mode, stop, sample, store)
        finally:
            activity.clear(slot)

    def keep(finished: tuple[TaskRecord, AgentResult]) -> bool:
        record, result = finished
        if record.stop_reason == "interrupted":
            return False  # not finished: it will run again on --resume
        try:
            stream.append(record)
            if config.traces:
                write_trace(config.traces, record, result)
        except OSError as exc:
            raise Abort(f"cannot write {exc.filename or stream.path}: {exc.strerror or exc}") from None
        done[record.key] = record
        if config.debug:
            # \u escapes for whatever cannot be printed as it is; keys redacted like every output.
            console.print_json(json.dumps(redact_data(result.messages), ensure_ascii=True))
        return True

    total = len(tasks) * config.samples
    with _progress(console, activity) as progress:
        bar = progress.add_task(
            "repairing",
            total=total,
            completed=len(done),
            passed=sum(r.passed for r in done.values()),
            errors=0,
            fresh=0,
        )

        def look(finished: tuple[TaskRecord, AgentResult]) -> None:
            record = finished[0]
            errors = sum(1 for r in done.values() if r.error)
            # fresh: finished in this run (not resumed), what the estimate goes by
            progress.update(
                bar, advance=1, passed=sum(r.passed for r in done.values()), errors=errors, fresh=len(done) - resumed
            )
            if config.verbose or config.debug:
                _print_task(progress.console, record)
            reason = health.observe(record)
            if reason:
                raise Abort(reason)

        def interrupted() -> None:
            progress.console.print(
                f"[yellow]Interrupted: finishing the calls in flight (at most {GRACE_S:g} s; Ctrl-C again to stop "
                "now), keeping finished tasks…[/]"
            )

        end = run_loop(jobs, TaskLoop(work, keep, look, interrupted), stop, config.workers)
    status, problem = end.status, end.problem

    loop_s = time.monotonic() - started
    order = {(t.task_id, s): i for i, (t, s) in enumerate((t, s) for t in tasks for s in range(config.samples))}
    records = sorted(done.values(), key=lambda r: order.get(r.key, 1 << 30))
    wall = time.monotonic() - started + prior_wall
    spec = replace(spec, agent=replace(spec.agent, tool_mode=mode.name, tool_mode_reason=mode.reason))
    rules = getattr(model, "rules", None)  # an API model's parameters, as adapted (models.parameters)
    if isinstance(rules, ParameterRules) and rules != ParameterRules():
        spec = replace(spec, model=replace(spec.model, request_parameters=rules.describe()))
    summary = summarize(records, wall, preset.price_in, preset.price_out)
    if keys is not None and keys.dropped():
        summary = replace(summary, dropped_keys=keys.dropped())
    # Every task recorded is complete, unless the run was stopped for a cause that holds for all of
    # them (a rejected key, a refused request): with several workers, the tasks in flight when it
    # was seen may all end in the same error, and the run is still the stopped one (exit 4).
    if len(records) == total and status != "aborted":
        status = "complete_with_errors" if summary.errors else "complete"
    document = results_document(spec.to_dict(), summary, records, status)
    try:
        with signals_held():
            write_atomic(out, document)
    except OSError as exc:
        status = "aborted"
        problem = f"cannot write the results file {out}: {exc.strerror or exc}; every finished task is in {stream.path}"
    return RunOutcome(out, stream.path, summary, spec, records, status, loop_s, problem)


def _print_task(console: Console, record: TaskRecord) -> None:
    mark = "[green]PASS[/]" if record.passed else ("[red]ERROR[/]" if record.error else "[red]FAIL[/]")
    first = "first-try" if record.passed_first else ""
    detail = record.error or ("" if record.passed else (record.score_message.splitlines() or [""])[0][:100])
    # Task ids, errors and a candidate's exception are data: `[/bold]` or ESC there is shown as it is.
    console.print(f"{mark} {shown(record.task_id)} iters={record.iterations} {first} {shown(detail)}", highlight=False)
