"""bench/baseline.py: from recorded sides (the ratio computed from both files, no model started), and
through the package's run engine against the scripted server (no loop of its own; the engine's stop)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runloop import WORKER_PREFIX
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, fenced, tool_call

from .conftest import clean_env, interrupt_when, scripted_preset

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import baseline  # noqa: E402

MODEL = "qwen2.5-coder-0.5b-instruct"  # the `local` preset's model
TASKS = ["Python/0", "Python/1", "Python/2"]


def _agent_results(path: Path, passed: list[bool], model: str = MODEL) -> Path:
    records = [
        {"task_id": t, "passed": p, "passed_first": False, "iterations": 3, "wall_s": 1.5, "sample": 0, "error": None}
        for t, p in zip(TASKS, passed, strict=True)
    ]
    path.write_text(json.dumps({"config": {"model": model, "protocol": "tests"}, "tasks": records}))
    return path


def _earlier_baseline(path: Path, passed: list[bool], model: str = MODEL) -> Path:
    rows = [
        {
            "task_id": t,
            "baseline_passed": p,
            "baseline_s": 2.0,
            "baseline_tokens_out": 10,
            "baseline_raw_passed": False,
            "baseline_reply": "...",
        }
        for t, p in zip(TASKS, passed, strict=True)
    ]
    path.write_text(json.dumps({"summary": {"model": model}, "rows": rows}))
    return path


@pytest.mark.e2e
def test_both_sides_from_files_give_the_ratio_without_a_model(
    tmp_path: Path, dataset_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _agent_results(tmp_path / "agent.json", [True, True, False])
    earlier = _earlier_baseline(tmp_path / "baseline.json", [True, False, False])
    out = tmp_path / "out.json"
    code = baseline.main(
        [
            "--dataset-path",
            str(dataset_path),
            "--limit",
            "3",
            "--agent-results",
            str(agent),
            "--baseline-from",
            str(earlier),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "ratio agent final / baseline: 2.0x" in printed
    summary = json.loads(out.read_text())["summary"]
    assert (summary["baseline_passed"], summary["agent_passed"], summary["baseline_from"]) == (1, 2, str(earlier))


def test_an_earlier_baseline_of_another_model_is_refused(
    tmp_path: Path, dataset_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _agent_results(tmp_path / "agent.json", [True, True, False])
    earlier = _earlier_baseline(tmp_path / "baseline.json", [True, False, False], model="some-other-model")
    code = baseline.main(
        [
            "--dataset-path",
            str(dataset_path),
            "--limit",
            "3",
            "--agent-results",
            str(agent),
            "--baseline-from",
            str(earlier),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "--baseline-from" in err and "some-other-model" in err


def test_an_agent_run_of_another_protocol_is_refused(
    tmp_path: Path, dataset_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _agent_results(tmp_path / "agent.json", [True, True, False])
    earlier = _earlier_baseline(tmp_path / "baseline.json", [True, False, False])
    code = baseline.main(
        [
            "--dataset-path",
            str(dataset_path),
            "--limit",
            "3",
            "--agent-results",
            str(agent),
            "--baseline-from",
            str(earlier),
            "--protocol",
            "hidden",
        ]
    )
    assert code == 2
    assert "--protocol tests" in capsys.readouterr().err


def test_the_plain_prompt_shows_what_the_protocol_shows(all_tasks: dict) -> None:
    task = all_tasks["Python/2"]
    prompts = {name: baseline.baseline_prompt(task, name) for name in ("tests", "docs", "hidden", "agent")}
    # The reference HumanEvalFixTests prompt, as before --protocol existed.
    assert (
        prompts["tests"]
        == f"Fix bugs in {task.entry_point}.\n\n```python\n{task.buggy_code.strip()}\n```\n\n```python\n"
        f"{task.test.strip()}\n```"
    )
    first_doc_line = task.docstring.strip().splitlines()[0]
    assert [first_doc_line in prompts[n] for n in ("tests", "docs", "hidden", "agent")] == [False, True, True, True]
    assert [task.test.strip() in prompts[n] for n in ("tests", "docs", "hidden", "agent")] == [True, False, False, True]
    assert task.example_test.strip() in prompts["hidden"]


# --- through the package's run engine ---------------------------------------------------------


def _answer_canonical_agent_and_plain(tasks: dict[str, Task], plain_fixed: set[str]) -> Callable[[Recorded], Response]:
    """The agent (a request with tools) gets each task's canonical fix as a tool call; the plain prompt
    ("Fix bugs in f.", no tools) a fenced block: the fix for the tasks in `plain_fixed`, else the buggy code."""

    def handle(request: Recorded) -> Response:
        prompt = next(str(m.get("content") or "") for m in request.body["messages"] if m["role"] == "user")
        task = next(
            t for t in tasks.values() if f"`{t.entry_point}`" in prompt or f"Fix bugs in {t.entry_point}." in prompt
        )
        if request.body.get("tools"):
            return tool_call(task.canonical_code or "")
        return fenced(task.canonical_code if task.task_id in plain_fixed else task.buggy_code)

    return handle


@pytest.mark.e2e
def test_both_sides_run_on_the_engines_workers_against_a_model(
    tmp_path: Path,
    dataset_path: Path,
    all_tasks: dict[str, Task],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No loop of the bench's own: each task's plain prompt runs on one of the engine's worker threads."""
    tasks = {t: all_tasks[t] for t in TASKS[:2]}
    threads: list[str] = []
    plain = baseline.run_baseline

    def recorded(*args: Any, **kwargs: Any) -> tuple[bool, bool, float, int, str]:
        threads.append(threading.current_thread().name)
        return plain(*args, **kwargs)

    out = tmp_path / "out.json"
    with ScriptedServer(_answer_canonical_agent_and_plain(tasks, {"Python/0"})) as server:
        monkeypatch.setattr(baseline, "load_presets", lambda: {"scripted": scripted_preset(server.base_url)})
        monkeypatch.setattr(baseline, "run_baseline", recorded)
        code = baseline.main(
            [
                "--dataset-path",
                str(dataset_path),
                "--limit",
                "2",
                "--model",
                "scripted",
                "--max-iters",
                "2",
                "--out",
                str(out),
            ]
        )
        plain_requests = [r.body for r in server.chat_requests() if not r.body.get("tools")]
    assert code == 0
    assert len(threads) == 2 and all(name.startswith(WORKER_PREFIX) for name in threads), threads
    assert [(r["temperature"], r["max_tokens"]) for r in plain_requests] == [(0.0, baseline.BASELINE_MAX_TOKENS)] * 2
    assert "ratio agent final / baseline: 2.0x" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert [(r["task_id"], r["baseline_passed"], r["agent_passed"], r["agent_iterations"]) for r in data["rows"]] == [
        ("Python/0", True, True, 1),
        ("Python/1", False, True, 1),
    ]
    assert not out.with_name(out.name + ".lock").exists()  # the run lock is let go at the end


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_while_waiting_for_a_live_agent_run_ends_at_once_with_the_tasks_both_sides_finished(
    sig: signal.Signals, tmp_path: Path, dataset_path: Path
) -> None:
    """The agent's stream has 2 of the 3 tasks: the bench waits (polling every 30 s) for the third
    until it is stopped; the engine's stop ends the wait at once and keeps the 2 tasks."""
    stream = tmp_path / "agent.jsonl"
    records = [
        {
            "task_id": t,
            "passed": True,
            "passed_first": False,
            "iterations": 2,
            "wall_s": 1.0,
            "sample": 0,
            "error": None,
        }
        for t in TASKS[:2]
    ]
    lines = [
        {"type": "config", "config": {"model": MODEL, "protocol": "tests"}},
        *({"type": "task", "record": r} for r in records),
    ]
    stream.write_text("".join(json.dumps(line) + "\n" for line in lines))
    earlier = _earlier_baseline(tmp_path / "baseline.json", [True, False, False])
    out = tmp_path / "out.json"
    args = [
        "--dataset-path",
        str(dataset_path),
        "--limit",
        "3",
        "--agent-results",
        str(stream),
        "--baseline-from",
        str(earlier),
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(
        [sys.executable, str(BENCH / "baseline.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    # settle_s: on to the third task, waiting for the agent run
    stdout, stderr, took = interrupt_when(
        proc, lambda: out.is_file() and len(json.loads(out.read_text())["rows"]) == 2, sig, 60, 30, settle_s=0.3
    )
    assert proc.returncode == 0, stderr
    assert took < 10, took  # not the 30 s poll
    assert "Python/2: waiting for the agent run to finish it" in stderr and "interrupted after 2 tasks" in stderr
    assert "Traceback" not in stderr
    assert "ratio agent final / baseline: 2.0x" in stdout
    summary = json.loads(out.read_text())["summary"]
    assert (summary["tasks"], summary["baseline_passed"], summary["agent_passed"]) == (2, 1, 2)
