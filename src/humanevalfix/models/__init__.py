"""The models the agent talks to: presets, the chat client, API keys, and local or oracle models.

    preset = resolve("gpt-4o-mini")                      # models.yaml, or a raw model id
    with open_endpoint(preset, answers, RetryPolicy()) as endpoint:   # answers: an oracle's, by task id
        reply = endpoint.model.chat(ChatRequest(messages, temperature=0.0, max_tokens=1024))

presets.py reads models.yaml and resolves --model/--provider/--base-url to a `Preset`;
client.py is the OpenAI-compatible chat client (retries, key rotation from keys.py);
providers.py opens the endpoint a preset names; embedded.py runs the local llama.cpp server
(weights.py finds its weights); oracle.py answers with the canonical or the buggy code. A new
model of a known provider is a preset in models.yaml. A new provider is an opener registered with
`@provider` (catalog.py: its key variable, default URL and SDK; the CLI's --provider choices and
the key checks follow), in providers.py or in a plugin; anything that is not OpenAI-compatible
implements `ChatModel` (a `chat(request)` method).

Names below resolve on first use (see humanevalfix/exports.py).
"""

from humanevalfix.exports import lazy_exports

_MODULES = {
    "ChatModel": "client",
    "ChatReply": "client",
    "ChatRequest": "client",
    "OpenAIChatModel": "client",
    "RetryPolicy": "client",
    "ToolCall": "client",
    "Usage": "client",
    "is_tools_rejected": "failures",
    "FirstReplyGate": "gate",
    "KeyPool": "keys",
    "mask": "keys",
    "split_keys": "keys",
    "PROVIDERS": "catalog",
    "ProviderSpec": "catalog",
    "provider": "catalog",
    "selectable_providers": "catalog",
    "Preset": "presets",
    "load_presets": "presets",
    "parse_temperatures": "presets",
    "resolve": "presets",
    "open_endpoint": "providers",
    "preload_sdk": "providers",
    "OracleModel": "oracle",
    "ServerOptions": "embedded",
    "embedded_server": "embedded",
    "run_server": "embedded",
    "locate": "weights",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_exports(__name__, _MODULES)
