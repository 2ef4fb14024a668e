"""The HTTP request bodies each model setting sends, pinned: the JSON body of one fixed first-turn
request, as the real client (`OpenAIChatModel`, opened by `open_endpoint` as a run opens it, through
the provider's own SDK) sends it to the scripted loopback server, for every preset of models.yaml and
for the reasoning options (`--model o3-mini`, with `--reasoning-effort high`; a Qwen3 model with
`--thinking off`).

What a preset sends is part of what its results mean: a parameter renamed, dropped or added (a
`reasoning_effort`, the thinking switch, an SDK upgrade that sends a new default) must not pass
silently. The expected bodies are in golden/request_bodies.json; regenerate them
(`PYTHONPATH=src python -m tests.test_golden_bodies`) only for a change that is meant (a preset added
or changed, an option that sends something new), and say so in the commit. The messages and the tool
are fixed here (the agent's own are pinned by tests/test_repair_requests.py); the sampling
(temperature, max_tokens, seed) is the preset's, as the agent's settings make it for turn 0 of
Python/0. The embedded model's server is replaced by the scripted one; its client is the real one.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.cli import build_parser
from humanevalfix.cli._options import preset_from_args
from humanevalfix.models import embedded
from humanevalfix.models.client import ChatRequest, RetryPolicy
from humanevalfix.models.presets import Preset, load_presets
from humanevalfix.models.providers import open_endpoint
from humanevalfix.runspec import AgentSpec, ModelSpec, ProtocolSpec, agent_settings
from humanevalfix.testing.scripted_server import ScriptedServer, text

pytestmark = pytest.mark.e2e

GOLDEN = Path(__file__).resolve().parent / "golden" / "request_bodies.json"
SOME_URL = "http://127.0.0.1:1/v1"  # in the options of a case; the request goes to the scripted server
MESSAGES = [
    {"role": "system", "content": "You repair buggy Python functions."},
    {"role": "user", "content": "Fix the bug in `add`:\n\n```python\ndef add(a, b):\n    return a - b\n```"},
]
TOOL = {
    "type": "function",
    "function": {
        "name": "run_code",
        "description": "Run a complete Python function against the tests.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
    },
}
# The options of each case beyond the presets: the reasoning parameters and options.
OPTION_CASES: dict[str, list[str]] = {
    "--model o3-mini": ["--model", "o3-mini"],
    "--model o3-mini --reasoning-effort high": ["--model", "o3-mini", "--reasoning-effort", "high"],
    "Qwen3 --thinking off": ["--base-url", SOME_URL, "--model", "Qwen/Qwen3-8B", "--thinking", "off"],
}


def cases() -> dict[str, list[str]]:
    """Each case's options: every preset by name (as models.yaml has them now), then OPTION_CASES."""
    return {**{f"preset {name}": ["--model", name] for name in load_presets()}, **OPTION_CASES}


def request_for(preset: Preset) -> ChatRequest:
    """Turn 0 of Python/0 with the preset's sampling, as a run's agent settings make it."""
    settings = agent_settings(ModelSpec.of(preset), ProtocolSpec(), AgentSpec())
    return ChatRequest(
        [dict(m) for m in MESSAGES],
        temperature=settings.temperature(0, 0),
        max_tokens=settings.max_tokens,
        tools=[TOOL] if preset.native_tools else None,
        task_id="Python/0",
        seed=settings.request_seed("Python/0", 0),
    )


@contextlib.contextmanager
def scripted_embedded(server: ScriptedServer) -> Iterator[None]:
    """The embedded model's server replaced by the scripted one (providers opens the real client)."""

    @contextlib.contextmanager
    def served(preset: Preset, gguf: Any, options: Any = None) -> Iterator[embedded.Served]:
        yield embedded.Served(
            server.base_url, preset.model, replace(preset, base_url=server.base_url), 0, Path("log"), Path("w")
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embedded, "embedded_server", served)
        yield


def body_sent(argv: list[str]) -> dict[str, Any]:
    """The JSON body the client sends for one request of the run these options make."""
    preset = preset_from_args(build_parser().parse_args(["eval", *argv]))
    with ScriptedServer(lambda rec: text("ok")) as server, scripted_embedded(server):
        at_server = replace(preset, base_url=server.base_url)
        environ = {preset.key_env: "sk-test"} if preset.key_env else {}
        retry = RetryPolicy(attempts=1, timeout_s=20.0)
        with open_endpoint(at_server, {}, retry, environ=environ) as endpoint:
            endpoint.model.chat(request_for(preset))
        [sent] = server.chat_requests()
    return sent.body


def capture() -> dict[str, dict[str, Any]]:
    return {name: body_sent(argv) for name, argv in cases().items()}


@pytest.mark.parametrize("name", list(cases()))
def test_the_body_sent_is_unchanged(name: str) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert name in golden, f"no pinned body for {name!r}: regenerate (python -m tests.test_golden_bodies)"
    assert body_sent(cases()[name]) == golden[name]


def test_the_pinned_bodies_say_what_the_options_send() -> None:
    """What the golden file must hold, whatever regenerated it: the reasoning options, only when given."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert set(golden) == set(cases()), "a case added or removed: regenerate (python -m tests.test_golden_bodies)"
    plain = golden["--model o3-mini"]
    assert plain["max_completion_tokens"] > 0 and "max_tokens" not in plain and "temperature" not in plain
    assert "reasoning_effort" not in plain
    assert golden["--model o3-mini --reasoning-effort high"] == {**plain, "reasoning_effort": "high"}
    qwen3 = golden["Qwen3 --thinking off"]
    assert qwen3["chat_template_kwargs"] == {"enable_thinking": False}
    assert qwen3["messages"] == [MESSAGES[0], {**MESSAGES[1], "content": MESSAGES[1]["content"] + "\n\n/no_think"}]
    for name, preset in load_presets().items():  # a preset sends them only when it sets them
        body = golden[f"preset {name}"]
        assert ("reasoning_effort" in body) == (preset.reasoning_effort is not None), name
        assert ("chat_template_kwargs" in body) == (preset.thinking is not None), name
        assert (body["messages"] == MESSAGES) == (preset.thinking is None), name


if __name__ == "__main__":  # regenerate the golden file (only for a change of what is sent that is meant)
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(capture(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
