"""`--base-url` with no other option: the served model from /v1/models; the embedded model's
preset (sampling, text protocol) when the server serves that model, so that its numbers compare
with the embedded run's; otherwise one probe decides native tool calls or the text protocol. The
choice and why are said in one line and recorded in the results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from humanevalfix.models.presets import Preset, load_presets
from humanevalfix.models.served import PROBE_CODE, choose
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, error, fenced, text, tool_call

from .conftest import clean_env, results_of, run_cli

LOCAL = load_presets()["local"]
FIX = (
    "def has_close_elements(numbers, threshold):\n    return any(abs(a - b) < threshold for i, a in "
    "enumerate(numbers) for b in numbers[i + 1:])\n"
)


def is_probe(rec: Recorded) -> bool:
    return any(PROBE_CODE in (m.get("content") or "") for m in rec.body.get("messages", []))


def eval_against(server: ScriptedServer, tmp_path: Path, dataset_path: Path, *extra: str) -> tuple[Any, dict[str, Any]]:
    out = tmp_path / "run" / "r.json"
    proc = run_cli(
        [
            "--base-url",
            server.base_url,
            "--dataset-path",
            str(dataset_path),
            "--tasks",
            "Python/0",
            "--max-iters",
            "0",
            "--sandbox",
            "process",
            "--out",
            str(out),
            *extra,
        ],
        cwd=tmp_path,
        env=clean_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, results_of(out)


def test_a_server_of_the_embedded_model_gets_the_embedded_presets_sampling_and_protocol(
    tmp_path: Path, dataset_path: Path
) -> None:
    with ScriptedServer(lambda rec: fenced(FIX), model=LOCAL.model) as server:
        proc, results = eval_against(server, tmp_path, dataset_path)
        requests = server.chat_requests()
    assert not any(is_probe(r) for r in requests)  # the preset decides: no probe
    [request] = requests
    assert "tools" not in request.body  # the text protocol, as the embedded run
    assert request.body["max_tokens"] == LOCAL.max_tokens and request.body["temperature"] == LOCAL.temperatures[0]
    assert isinstance(request.body.get("seed"), int)  # the embedded preset seeds its requests
    config = results["config"]
    assert config["sampling"] == {
        "temperatures": list(LOCAL.temperatures),
        "max_tokens": LOCAL.max_tokens,
        "seed": LOCAL.seed,
        "reasoning_effort": None,
        "thinking": None,
    }
    assert config["preset"]["name"] == "local" and config["native_tools"] is False
    assert "the model of preset 'local'" in config["preset_reason"]
    assert (config["tool_mode"], config["tool_mode_reason"]) == ("text", "preset 'local' uses the text protocol")
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("server: ")]
    assert f"serves {LOCAL.model}" in line and "temperatures 0,0.6,0.8" in line and "the text protocol" in line
    assert "preset" in proc.stderr and "tool calling" in proc.stderr  # the summary's rows
    # A CPU server answering one request at a time: one worker, as the embedded run, not a server's 4.
    assert (config["workers"], config["workers_reason"]) == (
        1,
        "a server of the embedded model answers one request at a time; --workers sets it",
    )
    assert results["summary"]["passed"] == 1


def test_options_given_explicitly_win_over_the_lent_preset(tmp_path: Path, dataset_path: Path) -> None:
    with ScriptedServer(lambda rec: fenced(FIX), model=LOCAL.model) as server:
        _proc, results = eval_against(
            server, tmp_path, dataset_path, "--temperatures", "0.1", "--max-tokens", "200", "--seed", "none"
        )
        [request] = server.chat_requests()
    assert results["config"]["sampling"] == {
        "temperatures": [0.1],
        "max_tokens": 200,
        "seed": None,
        "reasoning_effort": None,
        "thinking": None,
    }
    assert request.body["max_tokens"] == 200 and "seed" not in request.body


def scripted(probe: Response) -> Any:
    def answer(rec: Recorded) -> Response:
        if is_probe(rec):
            return probe
        return tool_call(FIX) if "tools" in rec.body else fenced(FIX)

    return answer


def test_a_server_listing_several_models_says_which_it_took_and_how_many_there_were(
    tmp_path: Path, dataset_path: Path
) -> None:
    adapters = ("scripted-model-lora-a", "scripted-model-lora-b")
    with ScriptedServer(lambda rec: fenced(FIX), also_lists=adapters) as server:
        proc, results = eval_against(server, tmp_path, dataset_path, "--text-tools")
        [request] = server.chat_requests()
    assert request.body["model"] == "scripted-model"
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("server: ")]
    assert "serves scripted-model (the first of the 3 models it lists; --model picks another)" in line
    assert "the first of the 3 models" in results["config"]["preset_reason"]


@pytest.mark.parametrize(
    ("probe", "native", "reason"),
    [
        (tool_call(PROBE_CODE), True, None),
        (text('run_code({"code": "def add_one(x): ..."})'), False, "without a native call"),
        (error(400, "tools not supported"), False, "refused a request with `tools` (HTTP 400)"),
        (tool_call("x", arguments='{"code": "def add_one(x'), False, "not valid JSON"),
    ],
    ids=["native call", "call as text", "tools refused", "malformed arguments"],
)
def test_another_model_is_probed_once_for_native_tool_calls(
    probe: Response, native: bool, reason: str | None, tmp_path: Path, dataset_path: Path
) -> None:
    with ScriptedServer(scripted(probe)) as server:
        proc, results = eval_against(server, tmp_path, dataset_path)
        requests = server.chat_requests()
    assert sum(is_probe(r) for r in requests) == 1 and is_probe(requests[0])
    config = results["config"]
    assert config["native_tools"] is native and config["tool_mode"] == ("native" if native else "text")
    assert config["preset"]["name"] == "scripted-model" and "no preset names it" in config["preset_reason"]
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("server: ")]
    if native:
        assert line.endswith("native tool calls") and not config["tool_mode_reason"]
    else:
        assert reason in line and "the text protocol" in line and reason in config["tool_mode_reason"]
        assert "tools" not in requests[1].body
    assert results["summary"]["passed"] == 1


def test_text_tools_given_means_no_probe() -> None:
    with ScriptedServer([error(500, "must not be called")]) as server:
        preset = Preset(name="x", provider="compatible", model="", base_url=server.base_url, native_tools=False)
        choice = choose(preset, load_presets(), frozenset({"native_tools"}))
        assert server.chat_requests() == []
    assert (choice.preset.model, choice.preset.native_tools, choice.tools_reason) == (
        "scripted-model",
        False,
        "--text-tools",
    )


def test_a_server_that_lists_nothing_is_one_line(tmp_path: Path, dataset_path: Path) -> None:
    with ScriptedServer([], model="") as server:
        proc = run_cli(
            ["--base-url", server.base_url, "--dataset-path", str(dataset_path), "--limit", "1"],
            cwd=tmp_path,
            env=clean_env(),
        )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "the server lists no model; pass --model" in proc.stderr


def test_bad_input_spends_no_probe(tmp_path: Path, dataset_path: Path) -> None:
    """The probe is a model call: it comes after the run's input checks, like every other call."""
    with ScriptedServer(scripted(tool_call(PROBE_CODE))) as server:
        proc = run_cli(
            [
                "--base-url",
                server.base_url,
                "--dataset-path",
                str(dataset_path),
                "--limit",
                "1",
                "--out",
                "/proc/x.json",
            ],
            cwd=tmp_path,
            env=clean_env(),
        )
        calls = server.chat_requests()
    assert proc.returncode == 2 and "--out /proc/x.json" in proc.stderr
    assert calls == []


def test_thinking_off_sends_the_switch_and_the_run_records_it(tmp_path: Path, dataset_path: Path) -> None:
    """`eval --thinking off`: each request carries chat_template_kwargs and the /no_think switch,
    the results' run spec records it, and the summary says it."""
    out = tmp_path / "run" / "r.json"
    with ScriptedServer(lambda rec: fenced(FIX)) as server:
        argv = ["--base-url", server.base_url, "--model", "Qwen/Qwen3-8B", "--thinking", "off", "--max-iters", "0"]
        proc = run_cli(
            [*argv, "--limit", "1", "--dataset-path", str(dataset_path), "--sandbox", "process", "--out", str(out)],
            cwd=tmp_path,
            env=clean_env(),
        )
        requests = server.chat_requests()
    assert proc.returncode == 0, proc.stderr[-3000:]
    [request] = [r for r in requests if not is_probe(r)]
    assert request.body["chat_template_kwargs"] == {"enable_thinking": False}
    last_user = [m for m in request.body["messages"] if m["role"] == "user"][-1]
    assert last_user["content"].endswith("\n\n/no_think")
    assert "reasoning_effort" not in request.body
    config = results_of(out)["config"]
    assert (config["sampling"]["thinking"], config["sampling"]["reasoning_effort"]) == ("off", None)
    assert config["preset"]["thinking"] == "off"
    assert [ln for ln in proc.stderr.splitlines() if "│ thinking " in ln and "│ off " in ln]  # the summary's row
    assert "reasoning effort" not in proc.stderr  # not set: not said
