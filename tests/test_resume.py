"""--resume: an interrupted run continues where it stopped and ends with the same records as a
run that was never interrupted; a torn last line is tolerated; other options are refused."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.config import RunConfig
from humanevalfix.errors import UserError
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.records import read_stream
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, error, tool_call

from .conftest import CLI, KEYS_ENV, clean_env, entry_point_of, results_of, run_cli, stream_records

TASK_COUNT = 5
COMPARED = ("task_id", "passed", "passed_first", "first_code", "final_code", "iterations", "executions", "stop_reason")


def fixed_answers(tasks: dict[str, Task]) -> Callable[[Recorded], Response]:
    """Deterministic per task: even task numbers get the fix, odd ones their buggy code (which fails)."""

    def handler(rec: Recorded) -> Response:
        task = tasks[entry_point_of(rec)]
        number = int(task.task_id.split("/")[1])
        return tool_call(task.canonical_code if number % 2 == 0 else task.buggy_code)  # type: ignore[arg-type]

    return handler


def compared(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(r[k] for k in COMPARED) for r in records]


@pytest.mark.e2e
def test_interrupted_cli_run_resumes_to_the_same_records(
    tmp_path: Path, dataset_path: Path, all_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    task_ids = [f"Python/{i}" for i in range(TASK_COUNT)]
    tasks = {all_tasks[t].entry_point: all_tasks[t] for t in task_ids}
    handler = fixed_answers(tasks)

    with ScriptedServer(handler) as server:
        baseline = run_eval(
            make_config(
                server, dataset_path, task_ids=tuple(task_ids), max_iters=1, workers=2, out=tmp_path / "baseline.json"
            )
        )
    assert baseline.status == "complete" and len(baseline.records) == TASK_COUNT
    expected = compared([r.to_dict() for r in baseline.records])

    out = tmp_path / "interrupted.json"
    stream = out.with_suffix(".jsonl")
    # Slow replies, so the run is still going when it is interrupted.
    with ScriptedServer(handler, latency_s=0.15) as server:
        common = [
            "--model",
            "scripted-model",
            "--base-url",
            server.base_url,
            "--dataset-path",
            str(dataset_path),
            "--workers",
            "1",  # one at a time, slowly: still going when interrupted (the default here would be 4)
            "--max-iters",
            "1",  # the last: changed below, to be refused
        ]
        proc = subprocess.Popen(
            [sys.executable, str(CLI), *common, "--limit", str(TASK_COUNT), "--out", str(out)],
            cwd=tmp_path,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                if stream.is_file() and len(stream_records(stream)) >= 2:
                    break
                time.sleep(0.05)
            assert proc.poll() is None, f"the run ended before it could be interrupted: {proc.communicate()}"
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, stderr
        assert "--resume" in stderr
        before = stream_records(stream)
        assert 2 <= len(before) < TASK_COUNT
        interrupted = results_of(out)
        assert interrupted["status"] == "interrupted"
        # A signal landing between the stream write and the in-memory update can leave the last
        # streamed task out of the interrupted results file; the stream is what --resume trusts.
        kept = [t["task_id"] for t in interrupted["tasks"]]
        assert set(kept) <= {r["task_id"] for r in before} and len(kept) >= len(before) - 1
        finished_before = {all_tasks[r["task_id"]].entry_point for r in before}

        # A crash mid-write leaves half a line at the end of the stream.
        with stream.open("a", encoding="utf-8") as fh:
            fh.write('{"type": "task", "record": {"task_id": "Python/5", "pass')
        server.requests.clear()
        resumed = run_cli([*common, "--resume", str(stream)], cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        asked_again = {entry_point_of(r) for r in server.chat_requests()}

    assert asked_again and not (asked_again & finished_before)  # finished tasks were not run again
    final = results_of(out)
    assert final["status"] == "complete"
    assert compared(final["tasks"]) == expected
    assert compared(stream_records(stream)[: len(before)]) == compared(before)
    assert sorted(r["task_id"] for r in stream_records(stream)) == sorted(task_ids)  # the torn line is gone
    assert final["summary"]["passed"] == baseline.summary.passed == 3

    # Other options than the interrupted run's: refused, naming the option.
    other = run_cli([*common[:-1], "2", "--resume", str(stream)], cwd=tmp_path)
    assert other.returncode == 2
    [line] = [ln for ln in other.stderr.splitlines() if "error:" in ln]
    assert "--max-iters" in line and "differs" in line


@pytest.mark.e2e
def test_resume_reruns_tasks_that_ended_in_an_infrastructure_error(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, "sk-test-resume-0001")
    good = lambda rec: tool_call(tiny_tasks[entry_point_of(rec)].canonical_code or "")  # noqa: E731

    def flaky(rec: Recorded) -> Response:
        return error(502, "bad gateway") if entry_point_of(rec) == "truncate_number" else good(rec)

    with ScriptedServer(flaky) as server:
        first = run_eval(make_config(server, tiny_dataset))
    assert [r.error is not None for r in first.records] == [False, True, False]

    with ScriptedServer(good) as server:
        second = run_eval(make_config(server, tiny_dataset, resume=first.stream_path))
        assert [entry_point_of(r) for r in server.chat_requests()] == ["truncate_number"]
    assert second.status == "complete"
    assert [(r.task_id, r.passed, r.error) for r in second.records] == [
        ("Python/0", True, None),
        ("Python/2", True, None),
        ("Python/3", True, None),
    ]
    _, records = read_stream(first.stream_path)
    assert len(records) == 3 and all(r.error is None for r in records)  # the rerun replaced the errored record


@pytest.mark.e2e
def test_resume_of_a_missing_or_foreign_stream_is_a_clear_error(tmp_path: Path, dataset_path: Path) -> None:
    with pytest.raises(UserError, match="file not found"):
        read_stream(tmp_path / "none.jsonl")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text(
        json.dumps({"type": "config", "config": {}}) + "\n" + json.dumps({"type": "task", "record": {"x": 1}}) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(UserError, match=rf"{foreign}:2: not a task record"):
        read_stream(foreign)
    foreign.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(UserError, match=rf"{foreign}:1: expected a JSON object"):
        read_stream(foreign)
    foreign.write_text('{"type": "config", "config": {}}\nnot json\n{"type": "task"}\n', encoding="utf-8")
    with pytest.raises(UserError, match=rf"{foreign}:2: not valid JSON; the stream is damaged"):
        read_stream(foreign)
    # Through the command line: exit 2 and one line, no traceback.
    foreign.write_text(json.dumps({"type": "task", "record": {}}) + "\n", encoding="utf-8")
    proc = run_cli(
        ["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--resume", str(foreign)], cwd=tmp_path
    )
    assert proc.returncode == 2 and "no config line" in proc.stderr
    assert "Traceback" not in proc.stderr


def _cut_to_first_task(stream: Path) -> None:
    lines = stream.read_text(encoding="utf-8").splitlines(keepends=True)
    stream.write_text("".join(lines[:2]), encoding="utf-8")  # the config line and one task


@pytest.mark.e2e
def test_resume_keeps_the_interrupted_runs_wall_time_and_refuses_a_new_task_selection(
    tmp_path: Path, dataset_path: Path
) -> None:
    from humanevalfix.models.presets import resolve

    oracle = resolve("oracle:canonical", presets={})
    out = tmp_path / "run.json"
    first = run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, limit=3, out=out))
    assert first.status == "complete"
    stream = first.stream_path

    # Interrupted (Ctrl-C, SIGTERM): its results file holds the wall time so far.
    _cut_to_first_task(stream)
    document = json.loads(out.read_text(encoding="utf-8"))
    document["summary"]["wall_s"] = 1234.5
    out.write_text(json.dumps(document), encoding="utf-8")
    resumed = run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, resume=stream))
    assert resumed.status == "complete" and len(resumed.records) == 3
    assert 1234.5 <= resumed.summary.wall_s < 1234.5 + 60

    # Crashed: no results file, so the kept tasks' own times stand in for it.
    _cut_to_first_task(stream)
    out.unlink()
    _, kept = read_stream(stream)
    resumed = run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, resume=stream))
    assert kept[0].wall_s <= resumed.summary.wall_s < 60

    with pytest.raises(UserError, match="drop --tasks/--limit"):
        run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, resume=stream, limit=2))


@pytest.mark.e2e
def test_resume_without_a_path_uses_the_interrupted_runs_own_source(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make_config: Callable[..., RunConfig]
) -> None:
    """A run started offline on the bundled copy resumes on it even when the default source would
    now be the Hub (same tasks, another sha256): whether the Hub answers must not break --resume."""
    from humanevalfix.evaluation import dataset as ds

    monkeypatch.delenv(ds.DATASET_ENV, raising=False)
    monkeypatch.setenv(KEYS_ENV, "sk-test-resume-0002")
    bundled = ds.load_bundled()
    by_entry = {t.entry_point: t for t in bundled.tasks}
    good = lambda rec: tool_call(by_entry[entry_point_of(rec)].canonical_code or "")  # noqa: E731
    ids = ("Python/0", "Python/1")

    def flaky(rec: Recorded) -> Response:
        return error(502, "bad gateway") if entry_point_of(rec) == bundled.tasks[1].entry_point else good(rec)

    with ScriptedServer(flaky) as server:
        first = run_eval(make_config(server, None, task_ids=ids))
    assert [r.error is not None for r in first.records] == [False, True]

    hub_copy = ds.Dataset(tasks=bundled.tasks, source="hub:bigcode/humanevalpack/python/test", sha256="0" * 64)
    monkeypatch.setattr(ds, "load_default", lambda **_: hub_copy)
    with ScriptedServer(good) as server:
        second = run_eval(make_config(server, None, resume=first.stream_path))
    assert second.status == "complete" and [r.passed for r in second.records] == [True, True]
    assert second.config["dataset_source"] == ds.BUNDLED_SOURCE


def test_resume_refuses_another_prompt_lookup_since_it_can_flip_a_greedy_near_tie(
    tmp_path: Path, dataset_path: Path
) -> None:
    from dataclasses import replace

    from humanevalfix.config import run_spec
    from humanevalfix.evaluation import resume
    from humanevalfix.models.presets import load_presets, resolve
    from humanevalfix.runspec import RunSpec, from_dict

    config = RunConfig(preset=resolve("local", presets=load_presets()), dataset_path=dataset_path)

    def public(prompt_lookup: int) -> RunSpec:
        return run_spec(
            replace(config, prompt_lookup=prompt_lookup),
            dataset_source="s",
            dataset_sha256="abc",
            task_ids=["Python/0"],
            executor_name="process",
            isolation="none",
        )

    resume.check(public(10), public(10), tmp_path / "r.jsonl")
    with pytest.raises(UserError, match=r"option --prompt-lookup differs from the interrupted run \(10 there, 0 now\)"):
        resume.check(public(10), public(0), tmp_path / "r.jsonl")
    exact = run_spec(
        replace(config, prompt_lookup=6, exact_lookup=True),
        dataset_source="s",
        dataset_sha256="abc",
        task_ids=["Python/0"],
        executor_name="process",
        isolation="none",
    )
    with pytest.raises(
        UserError, match=r"option --exact-lookup differs from the interrupted run \(False there, True now\)"
    ):
        resume.check(public(6), exact, tmp_path / "r.jsonl")
    stored = public(10).to_dict()
    del stored["embedded_server"]  # a stream from before it was recorded: it cannot say
    resume.check(from_dict(stored), public(0), tmp_path / "r.jsonl")


def test_resume_compares_the_reasoning_options_and_an_older_run_set_neither(tmp_path: Path, dataset_path: Path) -> None:
    """--reasoning-effort and --thinking are result-affecting; a run from before they were recorded
    sent neither, so it resumes without them and refuses them."""
    from dataclasses import replace

    from humanevalfix.config import run_spec
    from humanevalfix.evaluation import resume
    from humanevalfix.models.presets import resolve
    from humanevalfix.runspec import RunSpec, from_dict

    def spec(effort: str | None = None, thinking: str | None = None) -> RunSpec:
        preset = replace(resolve("o3-mini", provider="openai"), reasoning_effort=effort, thinking=thinking)
        config = RunConfig(preset=preset, dataset_path=dataset_path)
        return run_spec(
            config, dataset_source="s", dataset_sha256="abc", task_ids=["Python/0"], executor_name="p", isolation="n"
        )

    stored = spec().to_dict()
    assert (stored["sampling"]["reasoning_effort"], stored["sampling"]["thinking"]) == (None, None)
    for key in ("reasoning_effort", "thinking"):
        del stored["sampling"][key]  # a stream written before they were recorded
    older = from_dict(stored)
    assert (older.model.reasoning_effort, older.model.thinking) == (None, None) and not older.unrecorded
    resume.check(older, spec(), tmp_path / "r.jsonl")
    with pytest.raises(
        UserError, match=r"option --thinking differs from the interrupted run \(not set there, 'off' now\)"
    ):
        resume.check(older, spec(thinking="off"), tmp_path / "r.jsonl")
    with pytest.raises(UserError, match=r"option --reasoning-effort differs .*\('low' there, 'high' now\)"):
        resume.check(spec("low"), spec("high"), tmp_path / "r.jsonl")
    resume.check(spec("high", "on"), spec("high", "on"), tmp_path / "r.jsonl")
