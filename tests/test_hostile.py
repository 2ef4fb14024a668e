"""Hostile servers and hostile text, end to end through the real command line: no fragment of a key
anywhere the run writes or prints, no text that crashes a run or reaches the terminal raw, and no
stalled server that holds a run for hours."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from humanevalfix import redaction
from humanevalfix.evaluation.dataset import Task
from humanevalfix.safetext import SafeLogFilter, shown, visible
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, completion, error, tool_call

from .conftest import clean_env, entry_point_of, results_of, run_cli, turn_of

KEY = "sk-proj-Zq81Hv0LmT5xRw2Yp6NcA4bE9uKd3Fj7"  # 40 characters, a made-up key


def fragments(key: str, n: int = redaction.FRAGMENT) -> set[str]:
    return {key[i : i + n] for i in range(len(key) - n + 1)}


def leaks(text: str, key: str = KEY) -> list[str]:
    return sorted(f for f in fragments(key) if f in text)


def scan_outputs(folder: Path, *console: str) -> list[str]:
    """Every 8-character run of the key found in any file under `folder` or in the console text."""
    found: list[str] = []
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    assert len(files) >= 5, files  # results, stream, generations, traces, reports: all of them are read
    for path in files:
        found += [f"{path.name}: {f}" for f in leaks(path.read_bytes().decode("utf-8", errors="replace"))]
    for text in console:
        found += [f"console: {f}" for f in leaks(text)]
    return found


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


# --- secrets -----------------------------------------------------------------------------------


def test_redaction_catches_fragments_masked_forms_and_keeps_the_pool_mask() -> None:
    redaction.register([KEY, "short"])
    assert redaction.redact(f"bad key {KEY}") == f"bad key …{KEY[-4:]}"
    assert leaks(redaction.redact(f"provided: {KEY[:-1]}.")) == []  # 39 of 40 characters
    assert leaks(redaction.redact(f"x{KEY[9:17]}y{KEY[20:36]}")) == []
    assert redaction.redact("sk-proj-Zq8****************Fj7 rejected") == "…(redacted) rejected"
    assert redaction.redact("key …Fj7 and a short one and foo...bar") == "key …Fj7 and a short one and foo...bar"
    big = "a" * 1_000_000
    started = time.monotonic()
    assert redaction.redact(big) == big
    assert time.monotonic() - started < 2


@pytest.mark.e2e
def test_an_echoed_key_never_reaches_console_results_stream_or_traces(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    good = canonical_for(tiny_tasks)

    def echoing(rec: Recorded) -> Response:
        # Cut at 300 characters, the echoed key straddles the cut: redaction must come first.
        if entry_point_of(rec) == "truncate_number":
            return error(500, "x" * 200 + f" upstream rejected {KEY[:-1]} (sk-proj-Zq8***Fj7)")
        return good(rec)

    out = tmp_path / "run" / "r.json"
    with ScriptedServer(echoing) as server:
        proc = run_cli(
            cli_args(
                server.base_url,
                tiny_dataset,
                out,
                "--traces",
                str(tmp_path / "run" / "traces"),
                "-v",
                "--debug",
                "--visualize",
            ),
            cwd=tmp_path,
            env=clean_env(LOCAL_API_KEY=KEY),
        )
        assert all(r.api_key == KEY for r in server.chat_requests())  # the key was really in use
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "upstream rejected" in json.dumps(results_of(out))  # the error itself is kept
    assert scan_outputs(tmp_path / "run", proc.stdout, proc.stderr) == []


@pytest.mark.e2e
def test_a_key_that_cannot_go_in_a_header_is_refused_at_load_masked(tmp_path: Path, tiny_dataset: Path) -> None:
    bad = KEY[:20] + "\n" + KEY[20:]
    proc = run_cli(
        cli_args("http://127.0.0.1:9/v1", tiny_dataset, tmp_path / "r.json", "--debug"),
        cwd=tmp_path,
        env=clean_env(LOCAL_API_KEY=bad),
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "LOCAL_API_KEY" in lines[0] and "line break" in lines[0], proc.stderr
    assert leaks(proc.stderr + proc.stdout, KEY[:20]) == [] and leaks(proc.stderr, KEY[20:]) == []


def test_third_party_log_records_are_redacted_at_the_handler() -> None:
    redaction.register([KEY])
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(self.format(record))

    handler = Collect()
    handler.addFilter(SafeLogFilter())
    logger = logging.getLogger("httpx.test_hostile")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("Request headers: %s", {"authorization": f"Bearer {KEY}\x1b[2J"})
        try:
            raise ValueError(f"bad header {KEY[3:30]}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    assert len(seen) == 2 and leaks("\n".join(seen)) == []
    assert "\x1b" not in seen[0] and "\\x1b" in seen[0]


# --- text is data --------------------------------------------------------------------------------


def test_shown_text_is_neither_markup_nor_raw_control_characters() -> None:
    from rich.console import Console

    console = Console(record=True, width=200, file=open("/dev/null", "w"))
    console.print(f"task {shown('Python/[/bold]x' + chr(27) + '[31m' + chr(0) + chr(0xD800))}")
    text = console.export_text()
    assert "[/bold]" in text and "\\x1b" in text and "\\x00" in text and "\\ud800" in text
    assert visible("a\nb") == "a\\nb" and visible("a\nb", keep_lines=True) == "a\nb"


@pytest.mark.e2e
def test_markup_in_a_server_error_ends_in_exit_4_with_the_resume_hint(tmp_path: Path, tiny_dataset: Path) -> None:
    with ScriptedServer(lambda rec: error(401, "Incorrect key [/bold] [red]x\x1b[0m")) as server:
        proc = run_cli(cli_args(server.base_url, tiny_dataset, tmp_path / "r.json", "-v"), cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr and "[/bold]" in proc.stderr and "Continue with:" in proc.stderr
    assert "\x1b[0m" not in proc.stderr


@pytest.mark.e2e
def test_hostile_task_ids_surrogates_and_markup_in_candidates_never_crash_a_run(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    rows = [json.loads(line) for line in tiny_dataset.read_text().splitlines()]
    rows[0]["task_id"] = "Python/[/bold]\x1b[31m\x00"
    dataset = tmp_path / "hostile.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    by_entry = {t.entry_point: t for t in tiny_tasks.values()}

    def hostile(rec: Recorded) -> Response:
        task = by_entry[entry_point_of(rec)]
        turn = turn_of(rec)
        if task.entry_point == "has_close_elements":  # a candidate whose failure message is markup
            return tool_call(
                task.canonical_code if turn else f"def {task.entry_point}(*a):\n    raise ValueError('[/bold] [red]')\n"
            )
        if task.entry_point == "truncate_number":  # a lone surrogate in the code, then in the prose
            if turn == 0:
                return tool_call(
                    "", arguments=json.dumps({"code": f"def {task.entry_point}(x):\n    return '\ud800'\n"})
                )
            return completion(
                {
                    "role": "assistant",
                    "content": "prose \ud800 here",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "run_code", "arguments": json.dumps({"code": task.canonical_code})},
                        }
                    ],
                }
            )
        return tool_call(task.canonical_code or "")

    out = tmp_path / "r.json"
    with ScriptedServer(hostile) as server:
        proc = run_cli(
            cli_args(server.base_url, dataset, out, "-v", "--traces", str(tmp_path / "traces")), cwd=tmp_path
        )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "\x1b[31m" not in proc.stderr and "\x00" not in proc.stderr
    tasks = {t["task_id"]: t for t in results_of(out)["tasks"]}
    assert tasks["Python/2"]["attempts"][0]["outcome"] == "unencodable" and tasks["Python/2"]["passed"]
    assert tasks["Python/[/bold]\x1b[31m\x00"]["passed"] and results_of(out)["summary"]["errors"] == 0


# --- stalls --------------------------------------------------------------------------------------


def stalled(rec: Recorded) -> Response:
    return Response(stall_s=30.0)  # headers, then nothing


@pytest.mark.e2e
def test_a_stalled_server_stops_the_run_like_an_unreachable_one(tmp_path: Path, tiny_dataset: Path) -> None:
    started = time.monotonic()
    with ScriptedServer(stalled) as server:
        proc = run_cli(
            cli_args(server.base_url, tiny_dataset, tmp_path / "r.json", "--request-timeout", "0.5"), cwd=tmp_path
        )
        calls = len(server.chat_requests())
    took = time.monotonic() - started
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr and took < 25, took
    assert "run stopped: the server stalled" in proc.stderr and "Continue with:" in proc.stderr
    assert calls == 3  # 3 in a row (the default), across tasks: no more
    assert results_of(tmp_path / "r.json")["status"] == "aborted"


@pytest.mark.e2e
def test_with_several_servers_the_stalled_one_cools_down_and_the_others_finish(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    with ScriptedServer(stalled) as slow, ScriptedServer(canonical_for(tiny_tasks)) as good:
        proc = run_cli(
            cli_args(f"{slow.base_url},{good.base_url}", tiny_dataset, tmp_path / "r.json", "--request-timeout", "0.5"),
            cwd=tmp_path,
        )
        slow_calls = len(slow.chat_requests())
    assert proc.returncode == 0, proc.stderr
    data = results_of(tmp_path / "r.json")
    assert data["summary"]["passed"] == 3 and data["summary"]["errors"] == 0
    assert slow_calls == 1  # cooled down after its first stall


# --- traces --------------------------------------------------------------------------------------


@pytest.mark.e2e
def test_task_ids_that_sanitize_alike_get_their_own_trace_files(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task], make_config: Callable[..., Any]
) -> None:
    from humanevalfix.evaluation.runner import run_eval
    from humanevalfix.evaluation.traces import trace_name

    assert len({trace_name("x/1", 0), trace_name("x_1", 0), trace_name("x_1__s1", 0), trace_name("x_1", 1)}) == 4
    rows = [json.loads(line) for line in tiny_dataset.read_text().splitlines()]
    rows[0]["task_id"], rows[1]["task_id"] = "x/1", "x_1"
    dataset = tmp_path / "alike.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    traces = tmp_path / "traces"
    with ScriptedServer(canonical_for(tiny_tasks)) as server:
        run_eval(make_config(server, dataset, traces=traces))
    inside = sorted(json.loads(p.read_text())["task_id"] for p in traces.glob("*.json"))
    assert inside == ["Python/3", "x/1", "x_1"]


@pytest.mark.e2e
def test_a_dataset_field_with_a_lone_surrogate_is_refused_at_load_naming_its_line(
    tmp_path: Path, tiny_dataset: Path
) -> None:
    lines = tiny_dataset.read_text().splitlines()
    row = json.loads(lines[2])
    row["task_id"] = "Python/[/bold]"
    row["test"] += "\n# \ud800\n"  # written as the JSON escape \ud800
    lines[2] = json.dumps(row)
    dataset = tmp_path / "surrogate.jsonl"
    dataset.write_text("\n".join(lines) + "\n")
    proc = run_cli(cli_args("http://127.0.0.1:9/v1", dataset, tmp_path / "r.json"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert f"{dataset}:3" in line and "lone surrogate" in line and "[/bold]" in line and "Traceback" not in proc.stderr
    proc = run_cli(["validate-dataset", str(dataset), "--sandbox", "process"], cwd=tmp_path)
    assert proc.returncode == 1 and "[/bold]" in proc.stdout and "lone surrogate" in proc.stdout, (
        proc.stdout + proc.stderr
    )


@pytest.mark.e2e
def test_a_reply_trickled_byte_by_byte_still_meets_the_whole_reply_deadline() -> None:
    """Each byte resets a per-read timeout; the deadline is for the whole reply."""
    from humanevalfix.errors import ModelCallError
    from humanevalfix.models.client import ChatRequest, OpenAIChatModel, RetryPolicy
    from humanevalfix.models.keys import KeyPool

    slow = tool_call("def f():\n    return 1\n")
    slow.trickle_s = 0.05  # some 300 bytes: 15 s in all, never 0.05 s without a byte
    with ScriptedServer([slow]) as server:
        model = OpenAIChatModel(
            provider="compatible",
            model="scripted-model",
            base_url=server.base_url,
            keys=KeyPool(["x"]),
            retry=RetryPolicy(attempts=1, timeout_s=1.0),
        )
        started = time.monotonic()
        with pytest.raises(ModelCallError) as caught:
            model.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=10))
    assert caught.value.kind == "timeout" and "no complete reply within 1 s" in str(caught.value)
    assert time.monotonic() - started < 5
