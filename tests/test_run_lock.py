"""One run per output: a second run on the same --out is refused at once naming the first; a
stale lock (its process gone) is taken over with a warning; --resume counts only the records of its
own task list; the temporary file of a killed write is removed by the next run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from humanevalfix.config import RunConfig
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runlock import lock_path
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, tool_call

from .conftest import CLI, clean_env, entry_point_of, results_of, run_cli, stream_records


def cli_args(url: str, dataset: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--model",
        "scripted-model",
        "--base-url",
        url,
        "--dataset-path",
        str(dataset),
        "--max-iters",
        "1",
        "--sandbox",
        "process",
        "--retries",
        "2",
        "--out",
        str(out),
        *extra,
    ]


def canonical_for(tasks: dict[str, Task]) -> Callable[[Recorded], Response]:
    return lambda rec: tool_call(tasks[entry_point_of(rec)].canonical_code or "")


def test_a_second_run_on_the_same_out_is_refused_at_once_naming_the_first(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    good = canonical_for(tiny_tasks)
    out = tmp_path / "r.json"

    def slow_after_first(rec: Recorded) -> Response:
        return good(rec) if entry_point_of(rec) == "has_close_elements" else Response(delay_s=60.0)

    with ScriptedServer(slow_after_first) as server:
        first = subprocess.Popen(
            [sys.executable, str(CLI), *cli_args(server.base_url, tiny_dataset, out)],
            cwd=tmp_path,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (
                out.with_suffix(".jsonl").is_file() and stream_records(out.with_suffix(".jsonl"))
            ):
                assert first.poll() is None, first.communicate()
                time.sleep(0.05)
            started = time.monotonic()
            second = run_cli(cli_args(server.base_url, tiny_dataset, out), cwd=tmp_path)
            took = time.monotonic() - started
            assert second.returncode == 2, second.stderr
            assert f"PID {first.pid}" in second.stderr and "another run is writing it" in second.stderr
            assert "Traceback" not in second.stderr and took < 30
            assert len(stream_records(out.with_suffix(".jsonl"))) == 1  # the first run's stream is intact
        finally:
            first.kill()
            first.communicate(timeout=30)


def test_a_stale_lock_is_taken_over_with_a_warning_and_leftover_tmp_files_go(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    out = tmp_path / "r.json"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    lock_path(out).write_text(json.dumps({"pid": int(dead), "host": "elsewhere", "started": "2026-01-01T00:00:00"}))
    leftover = tmp_path / "r.json.abc123.tmp"
    leftover.write_text("{half a file")
    with ScriptedServer(canonical_for(tiny_tasks)) as server:
        proc = run_cli(cli_args(server.base_url, tiny_dataset, out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"PID {dead} on elsewhere" in proc.stderr and "did not end cleanly" in proc.stderr
    assert not leftover.exists() and not lock_path(out).exists()
    assert results_of(out)["summary"]["passed"] == 3


def test_resume_never_counts_a_record_outside_its_task_list(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    with ScriptedServer(canonical_for(tiny_tasks)) as server:
        first = run_eval(make_config(server, tiny_dataset, task_ids=("Python/0", "Python/2")))
        lines = first.stream_path.read_text().splitlines()
        stray = json.loads(lines[-1])
        stray["record"]["task_id"] = "Other/99"  # another run's record under this config line
        first.stream_path.write_text("\n".join([*lines, json.dumps(stray)]) + "\n")
        resumed = run_eval(make_config(server, tiny_dataset, resume=first.stream_path))
    assert resumed.summary.tasks == 2 and sorted(r.task_id for r in resumed.records) == ["Python/0", "Python/2"]
    assert os.path.exists(first.results_path) and not lock_path(first.results_path).exists()
