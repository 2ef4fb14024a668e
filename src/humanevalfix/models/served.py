"""`--base-url` without `--model`: what the server serves, and how to talk to it comparably.

Pointed at `humanevalfix serve`, a run used to take the generic preset: native tool calls (which
the 0.5B model writes malformed: 0/3 where the embedded run had 1/3), other temperatures, other
max_tokens and no seed, so its numbers were neither good nor comparable, and nothing said so.
Here, before anything is spent:

- the served model is read from `/v1/models`;
- a model that a local preset names (the embedded model, served by `serve` or any llama.cpp) gets
  that preset's sampling and tool protocol, so that its numbers equal the embedded run's;
- any other model is probed once with a tiny request offering `run_code`: a well-formed native call
  keeps native tool calling, anything else (the call written as text, `tools` refused) means the
  text protocol, said in one line.

Options given explicitly (--temperatures, --max-tokens, --seed, --text-tools) still win. The
choice and its reason go into the results (`config.preset_reason`, `config.tool_mode_reason`).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from typing import Any

from humanevalfix.errors import ConfigError
from humanevalfix.models.catalog import LOCAL
from humanevalfix.models.presets import Preset

PROBE_TIMEOUT_S = 120.0  # one short reply; a CPU server under load takes a while
LIST_TIMEOUT_S = 15.0
PLACEHOLDER_KEY = "not-needed"  # servers that check no key still want a non-empty one
PROBE_CODE = "def add_one(x):\n    return x + 1\n"
PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "run_code",
        "description": "Run a complete Python function.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
    },
}
LOCAL_WORKERS = 1  # a server of the embedded model's: one request at a time (see ServedChoice.workers)
# The sampling fields a local preset lends to a server of its model (unless given explicitly).
LENT = ("temperatures", "max_tokens", "seed", "native_tools")


@dataclass(frozen=True)
class ServedChoice:
    preset: Preset
    preset_reason: str  # which preset's sampling, and why ("" when the preset is as named)
    tools_reason: str | None  # why the text protocol; None: native tool calls
    probe: bool = False  # native tool calls still to be probed (after the run's input checks)
    # Tasks in flight by default, where the server says more than its provider does: a server of the
    # embedded model is a CPU server answering one request at a time, as the embedded run does.
    workers: int | None = None

    def line(self) -> str:
        tools = "native tool calls" if self.preset.native_tools else f"the text protocol ({self.tools_reason})"
        return f"server: {self.preset_reason}; {tools}"


def _request(url: str, key: str, body: dict[str, Any] | None, timeout: float) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=timeout) as response:
        return json.loads(response.read())


def listed_models(base_url: str, key: str) -> list[str]:
    try:
        listing = _request(f"{base_url.rstrip('/')}/models", key, None, LIST_TIMEOUT_S)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"--base-url {base_url}: could not list its models ({type(exc).__name__}: {str(exc)[:120]}); pass --model"
        ) from None
    ids = [m.get("id") for m in (listing.get("data") or []) if isinstance(m, dict)] if isinstance(listing, dict) else []
    return [i for i in ids if isinstance(i, str) and i]


def probe_tools(base_url: str, key: str, model: str) -> str | None:
    """One request offering `run_code`. None when the reply is a well-formed native call to it;
    else why not, in words (the reason the run then gives for the text protocol)."""
    body = {
        "model": model,
        "messages": [
            {
                "role": "user",
                "content": f"Call the run_code tool with this code as its `code` argument:\n\n{PROBE_CODE}",
            }
        ],
        "tools": [PROBE_TOOL],
        "temperature": 0.0,
        "max_tokens": 128,
    }
    try:
        reply = _request(f"{base_url.rstrip('/')}/chat/completions", key, body, PROBE_TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        return f"it refused a request with `tools` (HTTP {exc.code})"
    except (OSError, ValueError) as exc:
        return f"the tool-call probe failed ({type(exc).__name__})"
    try:
        calls = reply["choices"][0]["message"].get("tool_calls") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        return "the tool-call probe got no chat completion back"
    if not calls:
        return "it answered the tool-call probe without a native call (in text)"
    function = calls[0].get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "")
    except (TypeError, ValueError):
        return "its native tool call had arguments that are not valid JSON"
    if (
        function.get("name") != "run_code"
        or not isinstance(arguments, dict)
        or not isinstance(arguments.get("code"), str)
    ):
        return "its native tool call did not name run_code with a `code` string"
    return None


def local_preset_for(model: str, presets: dict[str, Preset]) -> Preset | None:
    return next((p for p in presets.values() if p.provider == LOCAL and p.model == model), None)


def choose(
    preset: Preset, presets: dict[str, Preset], explicit: frozenset[str], key: str | None = None
) -> ServedChoice:
    """The preset for the server at `preset.base_url` (its first URL): the served model, and the
    sampling and tool protocol that make it comparable. `explicit` names the fields given as
    options. A model given by --model that no local preset names stays as it was."""
    base_url = first_url(preset)
    model, among = preset.model, ""
    if not model:
        listed = listed_models(base_url, key or PLACEHOLDER_KEY)
        if not listed:
            raise ConfigError(f"--base-url {base_url}: the server lists no model; pass --model")
        model = listed[0]
        if len(listed) > 1:  # LoRA adapters, several Ollama models: say which one, and that there is a choice
            among = f" (the first of the {len(listed)} models it lists; --model picks another)"
    local = local_preset_for(model, presets)
    if local is not None:
        lent = {f: getattr(local, f) for f in LENT if f not in explicit}
        chosen = replace(preset, model=model, name=local.name, **lent)
        sampling = ", ".join(f"{f} {_shown(getattr(chosen, f))}" for f in ("temperatures", "max_tokens", "seed"))
        reason = (
            f"{base_url} serves {model}{among}, the model of preset '{local.name}': its sampling ({sampling}) so that "
            "runs compare"
        )
        text_why = "--text-tools" if "native_tools" in explicit else f"preset '{local.name}' uses the text protocol"
        return ServedChoice(chosen, reason, None if chosen.native_tools else text_why, workers=LOCAL_WORKERS)
    if preset.model:
        return ServedChoice(preset, "", None if preset.native_tools else "--text-tools")
    chosen = replace(preset, model=model, name=model)
    reason = f"{base_url} serves {model}{among}; no preset names it: generic sampling"
    if "native_tools" in explicit:
        return ServedChoice(chosen, reason, None if chosen.native_tools else "--text-tools")
    return ServedChoice(chosen, reason, None, probe=True)


def with_probed_tools(choice: ServedChoice, key: str | None = None) -> ServedChoice:
    """The probe, once, for a choice that needs it: native tool calls, or the text protocol and why."""
    why_not = probe_tools(first_url(choice.preset), key or PLACEHOLDER_KEY, choice.preset.model)
    tools_reason = f"{why_not}: the text protocol" if why_not else None
    return replace(
        choice, preset=replace(choice.preset, native_tools=why_not is None), tools_reason=tools_reason, probe=False
    )


def first_key(preset: Preset, environ: dict[str, str] | None = None) -> str | None:
    """The key the probe sends: the first of the preset's variable, if any (LOCAL_API_KEY)."""
    from humanevalfix.models.keys import split_keys

    keys = split_keys((os.environ if environ is None else environ).get(preset.key_env or "", ""))
    return keys[0] if keys else None


def first_url(preset: Preset) -> str:
    return (preset.base_url or "").split(",")[0].strip()


def _shown(value: Any) -> str:
    return ",".join(f"{v:g}" for v in value) if isinstance(value, tuple) else str(value)
