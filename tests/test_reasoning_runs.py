"""Reasoning models end to end, as a new user meets them: a loopback server that answers the way each
API documents, the real CLI, `--max-iters 0` (the first candidate is the one scored) and no extra
option. The reasoning is never the answer: a wrong draft inside it must not be what is scored; the
reasoning is kept in the trace and its tokens counted in the results.

- OpenAI's reasoning models (o1/o3/o4-mini/gpt-5): they refuse `max_tokens` and any temperature
  but their own with HTTP 400, and count reasoning tokens in `completion_tokens_details`;
- a `<think>` block in the content (Qwen3, QwQ, DeepSeek-R1 served raw), also one opened by the
  chat template, and one still open when the reply was cut at its token limit;
- a `reasoning_content` field (vLLM's reasoning parsers, llama.cpp, DeepSeek);
- `OPENAI_BASE_URL` and `OPENAI_API_KEY`, the OpenAI SDK's own variables, alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.evaluation.dataset import Task
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, completion, tool_call

from .conftest import clean_env, entry_point_of, results_of, run_cli

pytestmark = pytest.mark.e2e

REASONING_TOKENS = 700


def fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def eval_args(server: ScriptedServer, dataset: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--base-url",
        server.base_url,
        "--dataset-path",
        str(dataset),
        "--max-iters",
        "0",
        "--sandbox",
        "process",
        "--out",
        str(out),
        *extra,
    ]


def refusal(message: str, code: str, param: str) -> Response:
    """A 400 as OpenAI words it for a reasoning model."""
    return Response(400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})


def openai_reasoning(tasks: dict[str, Task]) -> Callable[[Recorded], Response]:
    """An o-series model as OpenAI serves it: the parameters it refuses, and a canonical fix whose
    usage counts reasoning tokens (the reasoning itself is hidden)."""

    def answer(rec: Recorded) -> Response:
        body = rec.body
        if "max_tokens" in body:
            return refusal(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                "'max_completion_tokens' instead.",
                "unsupported_parameter",
                "max_tokens",
            )
        if body.get("temperature", 1) != 1:
            return refusal(
                "Unsupported value: 'temperature' does not support 0.0 with this model. Only the default (1) "
                "value is supported.",
                "unsupported_value",
                "temperature",
            )
        reply = tool_call(tasks[entry_point_of(rec)].canonical_code or "")
        reply.body["usage"]["completion_tokens"] = REASONING_TOKENS + 60
        reply.body["usage"]["completion_tokens_details"] = {"reasoning_tokens": REASONING_TOKENS}
        return reply

    return answer


def test_an_o_series_model_runs_with_its_own_parameters_and_counts_its_reasoning_tokens(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    out = tmp_path / "r.json"
    with ScriptedServer(openai_reasoning(tiny_tasks)) as server:
        proc = run_cli(eval_args(server, tiny_dataset, out, "--model", "o3-mini"), cwd=tmp_path)
        bodies = [r.body for r in server.chat_requests()]
    assert proc.returncode == 0, proc.stderr[-3000:]
    # No call was spent on a refusal: the family's rules were known before the first request.
    assert len(bodies) == 3
    assert all("max_completion_tokens" in b and "max_tokens" not in b and "temperature" not in b for b in bodies)
    data = results_of(out)
    summary = data["summary"]
    assert summary["passed"] == 3 and summary["tokens_reasoning"] == 3 * REASONING_TOKENS
    assert all(t["tokens_reasoning"] == REASONING_TOKENS for t in data["tasks"])
    assert "of them reasoning" in proc.stderr  # the summary's tokens row says it
    # The preset's price counts them as output tokens, as OpenAI bills them.
    preset = data["config"]["preset"]
    assert preset["name"] == "o3-mini"


def test_a_model_the_rules_do_not_know_is_adapted_once_when_it_refuses_a_parameter_by_name(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    """Another endpoint with the same refusals (a proxy naming the model otherwise): two refusals,
    one adaptation each, said once, and every later request is sent the adapted way."""
    out = tmp_path / "r.json"
    with ScriptedServer(openai_reasoning(tiny_tasks)) as server:
        proc = run_cli(eval_args(server, tiny_dataset, out, "--model", "my-reasoner", "--workers", "1"), cwd=tmp_path)
        bodies = [r.body for r in server.chat_requests()]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(bodies) == 3 + 2  # two refusals on the first task, then none
    assert proc.stderr.count("refused a parameter") == 2
    assert results_of(out)["summary"]["passed"] == 3
    assert all("max_completion_tokens" in b and "temperature" not in b for b in bodies[2:])
    assert results_of(out)["config"]["request_parameters"] == "max_completion_tokens for max_tokens, no temperature"


def think_draft(buggy: str, canonical: str) -> dict[str, Any]:
    """Qwen3 served raw: the reasoning, with a wrong draft, inline before the answer."""
    return {
        "role": "assistant",
        "content": f"<think>\nLet me draft it first:\n{fenced(buggy)}\nHmm, that is still wrong.\n</think>\n\n"
        f"Here is the fix:\n{fenced(canonical)}",
    }


def template_opened(buggy: str, canonical: str) -> dict[str, Any]:
    """The chat template opened the block in the prompt: the reply starts inside it."""
    return {"role": "assistant", "content": f"Draft:\n{fenced(buggy)}\nNo.\n</think>\n{fenced(canonical)}"}


def reasoning_content(buggy: str, canonical: str) -> dict[str, Any]:
    """vLLM with --reasoning-parser: the reasoning (and its wrong draft) in a field of its own."""
    return {"role": "assistant", "content": fenced(canonical), "reasoning_content": f"Draft:\n{fenced(buggy)}"}


def draft_tool_call(buggy: str, canonical: str) -> dict[str, Any]:
    """A text-protocol tool call written inside the reasoning is a draft too."""
    call = json.dumps({"name": "run_code", "arguments": {"code": buggy}})
    return {"role": "assistant", "content": f"<think><tool_call>{call}</tool_call></think>{fenced(canonical)}"}


@pytest.mark.parametrize("shape", [think_draft, template_opened, reasoning_content, draft_tool_call])
def test_a_wrong_draft_in_the_reasoning_is_never_the_answer_and_the_trace_keeps_it(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task], shape: Callable[[str, str], dict[str, Any]]
) -> None:
    def answer(rec: Recorded) -> Response:
        task = tiny_tasks[entry_point_of(rec)]
        return completion(shape(task.buggy_code, task.canonical_code or ""))

    out, traces = tmp_path / "r.json", tmp_path / "traces"
    with ScriptedServer(answer) as server:
        proc = run_cli(
            eval_args(server, tiny_dataset, out, "--model", "qwen3-8b", "--traces", str(traces)), cwd=tmp_path
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = results_of(out)
    assert data["summary"]["passed"] == 3, [t["final_code"] for t in data["tasks"]]
    for path in sorted(traces.glob("*.json")):
        trace = json.loads(path.read_text(encoding="utf-8"))
        [kept] = trace["reasoning"]
        assert kept["turn"] == 0 and kept["unclosed"] is False and "run_code" in kept["text"] or "```" in kept["text"]
        # What the conversation holds (and would send back) is the answer alone.
        assert not any("<think>" in str(m.get("content")) for m in trace["messages"])


def test_a_reply_cut_inside_its_reasoning_has_no_code_and_says_so(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    """Cut at its token limit while still thinking: the canonical code in the reasoning is a draft,
    not an answer; the turn has no code, and the trace and the next prompt say why."""

    def answer(rec: Recorded) -> Response:
        task = tiny_tasks[entry_point_of(rec)]
        return completion(
            {"role": "assistant", "content": f"<think>\nMaybe:\n{fenced(task.canonical_code or '')}\nBut"},
            finish_reason="length",
        )

    out, traces = tmp_path / "r.json", tmp_path / "traces"
    with ScriptedServer(answer) as server:
        args = eval_args(server, tiny_dataset, out, "--model", "qwen3-8b", "--traces", str(traces), "--limit", "1")
        args[args.index("--max-iters") + 1] = "1"
        proc = run_cli(args, cwd=tmp_path)
        requests = server.chat_requests()
    assert proc.returncode == 0, proc.stderr[-3000:]
    [task] = results_of(out)["tasks"]
    assert task["final_code"] is None and not task["passed"]
    assert [a["outcome"] for a in task["attempts"]] == ["no_code", "no_code"]
    assert "ended inside your reasoning" in task["attempts"][0]["feedback"]
    assert len(requests) == 2  # not taken as the model's answer: asked again
    [trace] = [json.loads(p.read_text(encoding="utf-8")) for p in traces.glob("*.json")]
    assert [r["unclosed"] for r in trace["reasoning"]] == [True, True]


def test_openai_base_url_and_key_alone_run_against_that_server_and_record_it(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    out = tmp_path / "r.json"
    with ScriptedServer(lambda rec: tool_call(tiny_tasks[entry_point_of(rec)].canonical_code or "")) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-sdk-variable-0123456789")
        args = eval_args(server, tiny_dataset, out)
        proc = run_cli(args[2:], cwd=tmp_path, env=env)  # without --base-url
        requests = server.chat_requests()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"OPENAI_BASE_URL={server.base_url}: used as --base-url (key: OPENAI_API_KEY)" in proc.stderr
    assert "sk-sdk-variable-0123456789" not in proc.stderr
    assert requests and all(r.api_key == "sk-sdk-variable-0123456789" for r in requests)
    data = results_of(out)
    assert data["config"]["base_url"] == server.base_url and data["config"]["model"] == server.model
    assert data["summary"]["passed"] == 3


@pytest.mark.parametrize(
    ("value", "said"),
    [("localhost:8000/v1", "OPENAI_BASE_URL: not an http(s) URL"), ("https://api.openai.com/v1", None)],
)
def test_openai_base_url_is_checked_and_openais_own_is_the_default(
    tmp_path: Path, tiny_dataset: Path, value: str, said: str | None
) -> None:
    env = clean_env(OPENAI_BASE_URL=value)
    proc = run_cli(["--dataset-path", str(tiny_dataset), "--model", "o3-mini", "--limit", "1"], cwd=tmp_path, env=env)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    if said:
        assert said in proc.stderr and proc.returncode == 2, proc.stderr
    else:  # OpenAI itself: the preset as it is, which wants its key
        assert "used as --base-url" not in proc.stderr and "OPENAI_API_KEY" in proc.stderr, proc.stderr


def test_a_run_made_now_shows_each_turns_reply_and_reasoning_in_the_viewer(
    tmp_path: Path, tiny_dataset: Path, tiny_tasks: dict[str, Task]
) -> None:
    """What `humanevalfix view` needs is kept by default: each turn's reply as it came (its
    reasoning apart, from the trace), read back from the page's data as the browser gets it."""
    import re

    from humanevalfix.reports.viewer import DATA_ELEMENT

    def answer(rec: Recorded) -> Response:
        task = tiny_tasks[entry_point_of(rec)]
        return completion(think_draft(task.buggy_code, task.canonical_code or ""))

    out, traces, page = tmp_path / "r.json", tmp_path / "traces", tmp_path / "page.html"
    with ScriptedServer(answer) as server:
        args = eval_args(server, tiny_dataset, out, "--model", "qwen3-8b", "--traces", str(traces), "--limit", "1")
        assert run_cli(args, cwd=tmp_path).returncode == 0
    proc = run_cli(["view", str(out), "--traces", str(traces), "--out", str(page)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    html = page.read_text(encoding="utf-8")
    match = re.search(rf'<script type="application/json" id="{DATA_ELEMENT}">(.*?)</script>', html, re.S)
    assert match is not None
    [row] = json.loads(match.group(1).replace("<\\/", "</"))["runs"][0]["tasks"].values()
    [turn] = row["attempts"]
    assert turn["reply"].startswith("Here is the fix:\n```python") and "<think>" not in turn["reply"]
    assert turn["reasoning"] and "Let me draft it first" in turn["reasoning"][0]
