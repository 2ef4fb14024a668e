"""bench/fix_bench.py end to end: tasks as projects, the real `fix` CLI in a child process against the
scripted server on loopback, the patched module scored independently, the eval side, --resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from humanevalfix.evaluation.dataset import Task
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, error, tool_call

from .conftest import interrupt_when

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import fix_bench  # noqa: E402
import fix_tasks  # noqa: E402

TASKS = ["Python/0", "Python/1"]  # has_close_elements, separate_paren_groups: the first two (--limit 2), quick tests


def prompt_of(request: Recorded) -> str:
    return "\n".join(str(m.get("content") or "") for m in request.body["messages"] if m["role"] == "user")


def answering(tasks: list[Task], code_of: Callable[[Task], str]) -> Callable[[Recorded], Response]:
    """A model that recognises the task by its function in the prompt (fix names the module, eval
    the function, so the oracle's own lookup by the "Fix the bug in `name`" line does not serve both)."""

    def handle(request: Recorded) -> Response:
        prompt = prompt_of(request)
        task = next((t for t in tasks if f"def {t.entry_point}(" in prompt), None)
        return (
            tool_call(code_of(task)) if task else error(400, "no known task in the prompt")
        )  # not retried: fails fast

    return handle


def bench_args(server: ScriptedServer, dataset: Path, out: Path, *more: str) -> list[str]:
    return [
        "--dataset-path",
        str(dataset),
        "--out",
        str(out),
        "--model",
        "scripted-model",
        "--base-url",
        server.base_url,
        "--sandbox",
        "process",
        "--timeout",
        "30",
        "--task-timeout",
        "300",
        *more,
    ]


def stream_tasks(out: Path) -> list[str]:
    lines = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "settings"
    return [entry["row"]["task_id"] for entry in lines[1:]]


@pytest.fixture
def tasks(all_tasks: dict[str, Task]) -> list[Task]:
    return [all_tasks[t] for t in TASKS]


@pytest.mark.e2e
def test_the_canonical_fix_passes_through_fix_and_eval(
    tasks: list[Task],
    dataset_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    out = Path("results") / "bench.json"  # relative, as in the documented command: the traces must still be found
    out.parent.mkdir()
    with ScriptedServer(answering(tasks, lambda t: t.canonical_code or "")) as server:
        code = fix_bench.main(bench_args(server, dataset_path, out, "--tasks", ",".join(TASKS), "--run-eval"))
        prompts = [prompt_of(r) for r in server.chat_requests()]
    assert code == 0
    doc = json.loads(out.read_text())
    rows = {r["task_id"]: r for r in doc["rows"]}
    for task in tasks:
        row = rows[task.task_id]
        assert (row["fix_exit"], row["fix_verdict"], row["fix_passed"], row["fix_passed_reference"]) == (
            0,
            True,
            True,
            True,
        )
        assert (row["turns"], row["changed"], row["eval_passed"]) == (1, True, True)
        assert row["diff"].startswith("---") and "+" in row["diff"]
    # What fix was shown: the code and the pytest file (eval shows the task's test as it is), no docstring.
    fix_prompt = next(p for p in prompts if "def test_has_close_elements():\n    check(has_close_elements)" in p)
    assert "from has_close_elements import has_close_elements" in fix_prompt
    assert tasks[0].docstring.strip().splitlines()[0] not in fix_prompt
    assert len(prompts) == 4  # one fix call and one eval call per task
    summary = doc["summary"]
    assert (
        summary["fix_passed"],
        summary["eval_passed"],
        summary["both"],
        summary["only_fix"],
        summary["only_eval"],
    ) == (2, 2, 2, [], [])
    assert doc["settings"]["eval_docstring"] is False and "--function" not in doc["settings"]["model_options"]
    assert stream_tasks(out) == TASKS
    assert (out.parent / "bench.eval.json").is_file() and len(list((out.parent / "bench.traces").iterdir())) == 2
    printed = capsys.readouterr().out
    assert "fix (independent score):    2/2" in printed and "both 2, only fix 0, only eval 0, neither 0" in printed


@pytest.mark.e2e
def test_a_model_sending_the_buggy_code_fixes_nothing(tasks: list[Task], dataset_path: Path, tmp_path: Path) -> None:
    eval_results = tmp_path / "eval.json"
    records = [
        {"task_id": t, "passed": p, "sample": 0, "error": None} for t, p in zip(TASKS, [True, False], strict=True)
    ]
    eval_results.write_text(
        json.dumps({"config": {"model": "scripted-model", "docstring": True, "max_iters": 5}, "tasks": records})
    )
    out = tmp_path / "bench.json"
    with ScriptedServer(answering(tasks, lambda t: t.buggy_code)) as server:
        code = fix_bench.main(
            bench_args(
                server, dataset_path, out, "--limit", "2", "--max-iters", "1", "--eval-results", str(eval_results)
            )
        )
    assert code == 0
    doc = json.loads(out.read_text())
    for row in doc["rows"]:
        assert (row["fix_exit"], row["fix_passed"], row["fix_passed_reference"], row["changed"], row["diff"]) == (
            1,
            False,
            False,
            False,
            "",
        )
    assert [r["eval_passed"] for r in doc["rows"]] == [True, False]
    summary = doc["summary"]
    assert (summary["fix_passed"], summary["fix_verdict"], summary["only_eval"], summary["neither"]) == (
        0,
        0,
        ["Python/0"],
        1,
    )
    assert doc["settings"]["eval_from"] == str(eval_results) and doc["settings"]["eval_docstring"] is True


@pytest.mark.e2e
def test_resume_runs_only_the_tasks_not_recorded(tasks: list[Task], dataset_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    with ScriptedServer(answering(tasks, lambda t: t.canonical_code or "")) as server:
        assert fix_bench.main(bench_args(server, dataset_path, out, "--limit", "1")) == 0
        first = len(server.chat_requests())
        assert fix_bench.main(bench_args(server, dataset_path, out, "--limit", "2", "--resume")) == 0
        later = [prompt_of(r) for r in server.chat_requests()[first:]]
    assert first == 1 and len(later) == 1 and "def separate_paren_groups(" in later[0]
    assert stream_tasks(out) == TASKS
    assert [r["fix_passed"] for r in json.loads(out.read_text())["rows"]] == [True, True]


@pytest.mark.e2e
def test_resume_with_other_settings_and_eval_results_of_another_model_are_refused(
    tasks: list[Task], dataset_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    out.with_suffix(".jsonl").write_text(
        json.dumps({"type": "settings", "settings": {"model": "scripted-model", "max_iters": 3, "text_tools": False}})
        + "\n"
    )
    other = tmp_path / "eval.json"
    other.write_text(json.dumps({"config": {"model": "another-model"}, "tasks": []}))
    with ScriptedServer(answering(tasks, lambda t: t.canonical_code or "")) as server:
        assert fix_bench.main(bench_args(server, dataset_path, out, "--limit", "1", "--resume")) == 2
        assert "max_iters was 3 there, 5 now" in capsys.readouterr().err
        assert fix_bench.main(bench_args(server, dataset_path, out, "--limit", "1", "--eval-results", str(other))) == 2
        assert "another-model" in capsys.readouterr().err
        assert server.chat_requests() == []


def test_the_pytest_file_imports_what_the_task_test_takes_from_the_code_and_the_prelude(
    all_tasks: dict[str, Task],
) -> None:
    cyclic = all_tasks["Python/38"]  # its check calls encode_cyclic, a helper defined beside the entry point
    source = fix_tasks.test_file_source(cyclic, "decode_cyclic")
    assert "from decode_cyclic import decode_cyclic, encode_cyclic\n" in source
    assert "\ncheck(decode_cyclic)" not in source and source.endswith(
        "def test_decode_cyclic():\n    check(decode_cyclic)\n"
    )
    # No HumanEvalFix test leans on the harness's prelude, but a dataset of one's own may: only what it uses.
    own = Task(
        "X/0",
        "f",
        "def f(x):\n    return x\n",
        "def check(candidate):\n    assert candidate(math.sqrt(4)) == 2\n    xs: List[int] = [candidate(1)]\n\n"
        "check(f)\n",
    )
    assert (
        fix_tasks.test_file_source(own, "f").split("\n\n\n")[0]
        == "from typing import List\nimport math\nfrom f import f"
    )
    # A name that neither the code nor the prelude defines is an error here, not a NameError in fix.
    broken = Task(
        "X/1",
        "f",
        "def f():\n    return 1\n",
        "def check(candidate):\n    assert candidate() == undefined_thing\n\ncheck(f)\n",
    )
    with pytest.raises(ValueError, match="undefined_thing"):
        fix_tasks.test_file_source(broken, "f")


@pytest.mark.e2e
def test_a_fix_past_the_task_timeout_is_stopped_and_recorded_as_not_passed(
    tasks: list[Task], dataset_path: Path, tmp_path: Path
) -> None:
    def slow(request: Recorded) -> Response:
        reply = answering(tasks, lambda t: t.canonical_code or "")(request)
        reply.delay_s = 60.0
        return reply

    out = tmp_path / "bench.json"
    with ScriptedServer(slow) as server:
        started = time.monotonic()
        args = bench_args(server, dataset_path, out, "--limit", "1")
        args[args.index("--task-timeout") + 1] = "4"
        assert fix_bench.main(args) == 0
    assert time.monotonic() - started < 40  # not the model's 60 s: the fix command was stopped
    row = json.loads(out.read_text())["rows"][0]
    assert (row["fix_exit"], row["fix_passed"], row["changed"], row["turns"]) == (None, False, False, None)
    assert "stopped by the bench after 4 s" in row["note"]


@pytest.mark.e2e
def test_ctrl_c_ends_the_fix_in_flight_and_keeps_the_tasks_finished(
    tasks: list[Task], dataset_path: Path, tmp_path: Path
) -> None:
    """The tasks run through the package's run engine: a Ctrl-C kills the running fix process (its
    model call would take 60 s), the task it was on counts nowhere, the finished one is kept."""
    fast = answering(tasks, lambda t: t.canonical_code or "")

    def second_hangs(request: Recorded) -> Response:
        reply = fast(request)
        if "def separate_paren_groups(" in prompt_of(request):
            reply.delay_s = 60.0
        return reply

    out = tmp_path / "bench.json"
    with ScriptedServer(second_hangs) as server:
        cmd = [sys.executable, str(Path(fix_bench.__file__)), *bench_args(server, dataset_path, out, "--limit", "2")]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, stderr, took = interrupt_when(
            proc,
            lambda: any("def separate_paren_groups(" in prompt_of(r) for r in server.chat_requests()),
            signal.SIGINT,
            90,
            45,
        )
    assert proc.returncode == 0, stderr
    assert took < 30, took  # not the 60 s model call: the fix process was ended
    assert "interrupted; the summary covers the 1 tasks finished" in stderr and "Traceback" not in stderr
    assert stream_tasks(out) == ["Python/0"]
    assert [r["task_id"] for r in json.loads(out.read_text())["rows"]] == ["Python/0"]
