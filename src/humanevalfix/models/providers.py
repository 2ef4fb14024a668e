"""From a preset to a live ChatModel: API keys from the environment, the oracle, the embedded server."""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping

from humanevalfix.models.client import ChatModel, OpenAIChatModel, RetryPolicy
from humanevalfix.errors import ConfigError
from humanevalfix.models.keys import KeyPool, header_problem, shown_mask, split_keys, split_urls
from humanevalfix.models.oracle import Answer, OracleModel
from humanevalfix.models.presets import Preset

if TYPE_CHECKING:
    from humanevalfix.models.embedded import ServerOptions

# Servers that take any key (vLLM, llama.cpp, Ollama) still need a non-empty string for the SDK.
PLACEHOLDER_KEY = "not-needed"
LOCAL_TIMEOUT_S = 900.0  # per request to the embedded server


@dataclass(frozen=True)
class Endpoint:
    model: ChatModel
    preset: Preset  # as used (the embedded server fills in its base URL)
    keys: int  # how many keys the pool holds
    pool: KeyPool | None = None  # the keys' pool, for the summary's dropped keys (None: no keys)


def key_pool(preset: Preset, environ: dict[str, str] | None = None) -> KeyPool:
    env = environ if environ is not None else os.environ
    keys = split_keys(env.get(preset.key_env or "", ""))
    if not keys:
        if preset.provider in ("openai", "together", "hf"):
            raise ConfigError(
                f"no API key for provider '{preset.provider}': set {preset.key_env} in .env "
                f"(several keys may be given, separated by commas)"
            )
        return KeyPool([PLACEHOLDER_KEY], urls=split_urls(preset.base_url), secret=False)
    for index, key in enumerate(keys):
        problem = header_problem(key)
        if problem:
            raise ConfigError(
                f"{preset.key_env}: key #{index} ({shown_mask(key)}) contains {problem}, which cannot go in an "
                f"HTTP header; check the value in .env or the environment"
            )
    return KeyPool(keys, urls=split_urls(preset.base_url))


def preload_sdk(preset: Preset) -> threading.Thread | None:
    """Import the provider's SDK in the background: `import openai` alone takes about a second,
    which would otherwise hold every worker at its first call; started first, it overlaps loading
    the dataset and starting the sandboxes."""
    if preset.provider == "oracle":
        return None
    name = "together" if preset.provider == "together" else "openai"
    thread = threading.Thread(target=importlib.import_module, args=(name,), name=f"preload-{name}", daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def open_endpoint(
    preset: Preset,
    answers: Mapping[str, Answer],  # by task id: what an oracle model answers (other models ignore them)
    retry: RetryPolicy,
    gguf: Path | None = None,
    environ: dict[str, str] | None = None,
    server: ServerOptions | None = None,  # the embedded model's server (provider local)
) -> Iterator[Endpoint]:
    if preset.provider == "oracle":
        yield Endpoint(OracleModel(preset.model.split(":", 1)[1], answers), preset, 0)
        return
    if preset.provider == "local":
        from humanevalfix.models.embedded import embedded_server

        with embedded_server(preset, gguf, server) as served:
            # One CPU server answers one request at a time, slowly when the machine is busy: a
            # client timeout would only queue the same request again behind the abandoned one.
            retry = replace(retry, timeout_s=max(retry.timeout_s, LOCAL_TIMEOUT_S))
            pool = KeyPool([PLACEHOLDER_KEY], secret=False)
            model = OpenAIChatModel(provider="compatible", model=served.model, base_url=served.base_url, keys=pool, retry=retry)
            yield Endpoint(model, served.preset, 1)
        return
    pool = key_pool(preset, environ)
    if not preset.model:
        preset = _with_served_model(preset, pool)
    # base_url is per slot (lease.base_url) when --base-url lists several servers.
    model = OpenAIChatModel(provider=preset.provider, model=preset.model, base_url=None, keys=pool, retry=retry)
    yield Endpoint(model, preset, len(pool), pool)


def _with_served_model(preset: Preset, pool: KeyPool) -> Preset:
    """--base-url without --model: use the first model the server lists."""
    import openai

    lease = pool.acquire()
    try:
        listed = openai.OpenAI(api_key=lease.key, base_url=lease.base_url, max_retries=1, timeout=15).models.list()
        first = next(iter(listed.data), None)
    except Exception as exc:
        raise ConfigError(f"--base-url {lease.base_url}: could not list models ({type(exc).__name__}); pass --model") from None
    if first is None:
        raise ConfigError(f"--base-url {lease.base_url}: the server lists no model; pass --model")
    return replace(preset, model=first.id, name=first.id)
