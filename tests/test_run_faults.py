"""Fault injection on whole runs: a fake OpenAI-compatible server on 127.0.0.1 that rejects keys,
fails for one task, hangs or overflows its context; outputs that cannot be written; signals. Each
case ends with one clear line and the right exit code, never a traceback, and nothing finished is
lost: the printed --resume command continues to the verdicts of an uninterrupted run."""

from __future__ import annotations

import errno
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from humanevalfix.config import RunConfig
from humanevalfix.evaluation import records as records_module
from humanevalfix.evaluation import runner as runner_module
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.records import read_stream
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.evaluation.stopping import GRACE_S
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, error, tool_call

from .conftest import CLI, clean_env, entry_point_of, results_of, run_cli, stream_records

VERDICT = ("task_id", "passed", "passed_first", "final_code", "stop_reason", "error")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def canonical_for(tasks: dict[str, Task]) -> Callable[[Recorded], Response]:
    return lambda rec: tool_call(tasks[entry_point_of(rec)].canonical_code or "")


def cli_args(server_url: str, dataset: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--model",
        "scripted-model",
        "--base-url",
        server_url,
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


def assert_clean(proc: subprocess.CompletedProcess[str] | tuple[int, str], code: int) -> str:
    rc, stderr = (proc.returncode, proc.stderr) if isinstance(proc, subprocess.CompletedProcess) else proc
    assert rc == code, stderr
    assert "Traceback" not in stderr, stderr
    return stderr


def resume_line(stderr: str) -> list[str]:
    """The printed `Continue with:` command, as arguments for this interpreter and checkout."""
    [line] = [ln for ln in stderr.splitlines() if "Continue with:" in ln]
    words = shlex.split(line.split("Continue with:", 1)[1])
    assert words[:2] == ["python", "eval_humanevalfix.py"], line
    return words[2:]


# --- the endpoint cannot work: stop at once, say why -------------------------------------------


def test_a_rejected_key_stops_the_run_at_once_with_the_cause(tmp_path: Path, tiny_dataset: Path) -> None:
    out = tmp_path / "r.json"
    with ScriptedServer(lambda rec: error(401, "Incorrect API key provided")) as server:
        proc = run_cli(cli_args(server.base_url, tiny_dataset, out), cwd=tmp_path)
        calls = len(server.chat_requests())
    stderr = assert_clean(proc, 4)
    assert calls == 1  # one rejection ends it: no retry per task, no second task
    assert "run stopped: every API key was rejected" in stderr and "Continue with:" in stderr
    assert results_of(out)["status"] == "aborted"


def test_a_dead_base_url_stops_the_run_after_its_first_task(tmp_path: Path, tiny_dataset: Path) -> None:
    out = tmp_path / "r.json"
    dead = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    proc = run_cli(cli_args(dead, tiny_dataset, out), cwd=tmp_path)
    stderr = assert_clean(proc, 4)
    assert time.monotonic() - started < 60
    assert "run stopped: the server could not be reached" in stderr and dead in stderr
    data = results_of(out)
    assert data["status"] == "aborted" and len(data["tasks"]) < 3
    assert all(t["error_kind"] == "connection" for t in data["tasks"])


NO_MODEL = "The model `nosuch` does not exist or you do not have access to it."
NO_PARAMETER = "Unsupported parameter: 'max_tokens' is not supported with this model."


def refusal(status: int, message: str, code: str) -> Response:
    """An error as OpenAI and vLLM word it: the code names what was wrong with the request."""
    return Response(status, {"error": {"message": message, "type": "invalid_request_error", "code": code}})


@pytest.mark.parametrize(
    ("status", "message", "code"),
    [(404, NO_MODEL, "model_not_found"), (400, NO_PARAMETER, "unsupported_parameter")],
    ids=["wrong model", "refused parameter"],
)
def test_a_request_refused_as_wrong_on_the_first_call_stops_the_run_quoting_the_server(
    tmp_path: Path, tiny_dataset: Path, status: int, message: str, code: str
) -> None:
    out = tmp_path / "r.json"
    started = time.monotonic()
    with ScriptedServer(lambda rec: refusal(status, message, code)) as server:
        proc = run_cli(cli_args(server.base_url, tiny_dataset, out, "--limit", "3"), cwd=tmp_path)
        calls = len(server.chat_requests())
    stderr = assert_clean(proc, 4)
    assert time.monotonic() - started < 30 and calls <= 3  # not a round of calls per task
    [line] = [ln for ln in stderr.splitlines() if "run stopped: the server refused the request" in ln]
    assert message in line and f"HTTP {status}" in line
    data = results_of(out)
    assert data["status"] == "aborted" and [t["error_kind"] for t in data["tasks"]] == ["request"]


def test_a_request_refused_after_replies_stays_that_tasks_error(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    good = canonical_for(tiny_tasks)
    out = tmp_path / "r.json"

    def later_refusal(rec: Recorded) -> Response:
        if entry_point_of(rec) == "truncate_number":
            return refusal(400, NO_PARAMETER, "unsupported_parameter")
        return good(rec)

    with ScriptedServer(later_refusal) as server:
        proc = run_cli(cli_args(server.base_url, tiny_dataset, out, "--limit", "3"), cwd=tmp_path)
    assert_clean(proc, 3)
    data = results_of(out)
    assert data["status"] == "complete_with_errors"
    assert [t["error_kind"] for t in data["tasks"]] == [None, "request", None]


# --- one task fails: the run finishes, says so, and the printed command repairs it -------------


def test_infrastructure_errors_end_in_exit_3_with_the_list_and_a_working_resume_command(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    good = canonical_for(tiny_tasks)
    out = tmp_path / "r.json"

    def one_task_fails(rec: Recorded) -> Response:
        return error(500, "upstream crashed") if entry_point_of(rec) == "truncate_number" else good(rec)

    with ScriptedServer(one_task_fails) as server:
        first = run_cli(cli_args(server.base_url, tiny_dataset, out, "--limit", "3"), cwd=tmp_path)
    stderr = assert_clean(first, 3)
    assert "Infrastructure errors (1" in stderr
    assert any(ln.strip().startswith("Python/2: HTTP 500") for ln in stderr.splitlines()), stderr
    assert results_of(out)["status"] == "complete_with_errors"
    again = resume_line(stderr)
    assert "--limit" not in again and "--out" not in again

    with ScriptedServer(good) as server:
        again = [server.base_url if a.startswith("http://127.0.0.1") else a for a in again]
        second = subprocess.run(
            [sys.executable, str(CLI), *again],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert [entry_point_of(r) for r in server.chat_requests()] == ["truncate_number"]
    assert_clean(second, 0)
    final = results_of(out)
    assert final["status"] == "complete" and final["summary"]["passed"] == 3 and final["summary"]["errors"] == 0


def test_several_base_urls_share_the_run_and_a_dead_one_is_passed_over(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    good = canonical_for(tiny_tasks)
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with ScriptedServer(good) as a, ScriptedServer(good) as b:
        both = run_cli(cli_args(f"{a.base_url},{b.base_url}", tiny_dataset, tmp_path / "ab.json"), cwd=tmp_path)
        served = (len(a.chat_requests()), len(b.chat_requests()))
        one_dead = run_cli(cli_args(f"{dead},{a.base_url}", tiny_dataset, tmp_path / "dead.json"), cwd=tmp_path)
    assert_clean(both, 0)
    assert served[0] >= 1 and served[1] >= 1 and sum(served) == 3
    assert_clean(one_dead, 0)
    data = results_of(tmp_path / "dead.json")
    assert data["summary"]["passed"] == 3 and data["summary"]["errors"] == 0
    assert data["config"]["base_url"] == f"{dead},{a.base_url}"


# --- the model's context is full: the model's limit, not an infrastructure error ---------------


def test_a_context_overflow_ends_the_repair_as_context_exceeded(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    def overflow_after_first(rec: Recorded) -> Response:
        if any(m.get("role") == "assistant" for m in rec.body["messages"]):
            return error(400, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.")
        return tool_call(tiny_tasks[entry_point_of(rec)].buggy_code)

    with ScriptedServer(overflow_after_first) as server:
        outcome = run_eval(make_config(server, tiny_dataset))
    assert outcome.status == "complete" and outcome.summary.errors == 0
    assert all(r.stop_reason == "context_exceeded" and r.error is None and r.iterations == 1 for r in outcome.records)


# --- outputs that cannot be written ------------------------------------------------------------


def test_disk_full_while_streaming_keeps_a_valid_stream_and_resume_finishes_the_run(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    good = canonical_for(tiny_tasks)
    with ScriptedServer(good) as server:
        baseline = run_eval(
            make_config(server, tiny_dataset, out=make_config(server, tiny_dataset).out.with_name("base.json"))
        )
    real_append = records_module.Stream.append
    appended: list[str] = []

    def append_then_full(self: records_module.Stream, record: records_module.TaskRecord) -> None:
        if len(appended) == 1:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
        appended.append(record.task_id)
        real_append(self, record)

    monkeypatch.setattr(records_module.Stream, "append", append_then_full)
    with ScriptedServer(good) as server:
        full = run_eval(make_config(server, tiny_dataset))
    assert full.status == "aborted" and full.problem and "No space left on device" in full.problem
    _, kept = read_stream(full.stream_path)  # valid JSONL: every line parses
    assert [r.task_id for r in kept] == ["Python/0"]

    monkeypatch.setattr(records_module.Stream, "append", real_append)
    with ScriptedServer(good) as server:
        resumed = run_eval(make_config(server, tiny_dataset, resume=full.stream_path))
    assert resumed.status == "complete"
    assert [tuple(getattr(r, k) for k in VERDICT) for r in resumed.records] == [
        tuple(getattr(r, k) for k in VERDICT) for r in baseline.records
    ]


def test_disk_full_at_the_results_file_is_one_line_and_resume_writes_it(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    def full(path: Path, data: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(runner_module, "write_atomic", full)
    with ScriptedServer(canonical_for(tiny_tasks)) as server:
        outcome = run_eval(make_config(server, tiny_dataset))
        assert outcome.status == "aborted" and "No space left on device" in (outcome.problem or "")
        assert not outcome.results_path.exists() and len(stream_records(outcome.stream_path)) == 3
        monkeypatch.undo()
        server.requests.clear()
        resumed = run_eval(make_config(server, tiny_dataset, resume=outcome.stream_path))
        assert server.chat_requests() == []  # every task was kept: only the file is written
    assert resumed.status == "complete" and results_of(resumed.results_path)["summary"]["passed"] == 3


def test_results_files_get_the_modes_the_umask_gives(
    tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., RunConfig]
) -> None:
    old = os.umask(0o027)
    try:
        with ScriptedServer(canonical_for(tiny_tasks)) as server:
            outcome = run_eval(make_config(server, tiny_dataset))
    finally:
        os.umask(old)
    generations = outcome.results_path.with_name(outcome.results_path.stem + ".generations.json")
    for path in (outcome.results_path, outcome.stream_path, generations):
        assert (path.stat().st_mode & 0o777) == 0o640, path


# --- signals: a hung endpoint, a second Ctrl-C, kill -9 ---------------------------------------


def _start_hanging_run(tmp_path: Path, dataset: Path, server: ScriptedServer, out: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(CLI), *cli_args(server.base_url, dataset, out)],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stream = out.with_suffix(".jsonl")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (stream.is_file() and stream_records(stream)):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.3)  # the second task's call is now hanging
    return proc


def hang_after_first(tasks: dict[str, Task]) -> Callable[[Recorded], Response]:
    good = canonical_for(tasks)
    return lambda rec: Response(delay_s=120.0) if entry_point_of(rec) != "has_close_elements" else good(rec)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("interrupts", [1, 2])
def test_a_hung_endpoint_cannot_hold_the_exit_and_a_second_ctrl_c_ends_it_at_once(
    interrupts: int, sig: signal.Signals, tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    out = tmp_path / "r.json"
    with ScriptedServer(hang_after_first(tiny_tasks)) as server:
        proc = _start_hanging_run(tmp_path, tiny_dataset, server, out)
        try:
            started = time.monotonic()
            proc.send_signal(sig)
            if interrupts == 2:
                time.sleep(0.5)
                proc.send_signal(sig)
            _, stderr = proc.communicate(timeout=GRACE_S + 30)
            took = time.monotonic() - started
        finally:
            if proc.poll() is None:
                proc.kill()
    assert_clean((proc.returncode, stderr), 130)
    assert took < (GRACE_S + 15 if interrupts == 1 else GRACE_S - 2), took  # not the 120 s the call would hang
    assert "Continue with:" in stderr
    data = results_of(out)
    assert data["status"] == "interrupted" and [t["task_id"] for t in data["tasks"]] == ["Python/0"]


def test_kill_9_then_resume_gives_the_verdicts_of_an_uninterrupted_run(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    good = canonical_for(tiny_tasks)
    with ScriptedServer(good) as server:
        baseline = run_cli(cli_args(server.base_url, tiny_dataset, tmp_path / "base.json"), cwd=tmp_path)
    assert_clean(baseline, 0)
    out = tmp_path / "killed.json"
    with ScriptedServer(hang_after_first(tiny_tasks)) as server:
        proc = _start_hanging_run(tmp_path, tiny_dataset, server, out)
        proc.kill()  # SIGKILL: no handler runs, no results file
        proc.communicate(timeout=30)
    assert not out.exists() and len(stream_records(out.with_suffix(".jsonl"))) == 1
    with ScriptedServer(good) as server:
        resumed = run_cli(
            [*cli_args(server.base_url, tiny_dataset, out)[:-2], "--resume", str(out.with_suffix(".jsonl"))],
            cwd=tmp_path,
        )
    assert_clean(resumed, 0)
    verdicts = lambda path: [tuple(t[k] for k in VERDICT) for t in results_of(path)["tasks"]]  # noqa: E731
    assert verdicts(out) == verdicts(tmp_path / "base.json")
