"""From a preset to a live ChatModel: the built-in providers, each registered with `@provider`
(models/catalog.py), and `open_endpoint`, which opens whichever the preset names.

The OpenAI-compatible APIs share one opener (a key pool from the environment); the embedded model
runs llama.cpp as a child process; the oracle answers with the task's own code.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from humanevalfix.errors import ConfigError
from humanevalfix.models.catalog import COMPATIBLE, HF, LOCAL, OPENAI, ORACLE, PROVIDERS, TOGETHER, provider
from humanevalfix.models.client import ChatModel, OpenAIChatModel, RetryPolicy
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


@dataclass(frozen=True)
class OpenContext:
    """What an opener may need besides the preset; each takes what it uses."""

    answers: Mapping[str, Answer] = field(default_factory=dict)  # by task id: what an oracle answers
    retry: RetryPolicy = RetryPolicy()
    gguf: Path | None = None  # the embedded model's weights
    environ: Mapping[str, str] | None = None  # where keys are read (None: os.environ)
    server: ServerOptions | None = None  # the embedded model's server


def key_pool(preset: Preset, environ: Mapping[str, str] | None = None) -> KeyPool:
    env = environ if environ is not None else os.environ
    keys = split_keys(env.get(preset.key_env or "", ""))
    if not keys:
        # A provider whose key is not optional never gets the placeholder: a missed key stops here.
        if preset.provider not in PROVIDERS or PROVIDERS[preset.provider].needs_key:
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
    sdk = PROVIDERS.require(preset.provider).sdk
    if sdk is None:
        return None
    thread = threading.Thread(target=importlib.import_module, args=(sdk,), name=f"preload-{sdk}", daemon=True)
    thread.start()
    return thread


def open_endpoint(
    preset: Preset,
    answers: Mapping[str, Answer],  # by task id: what an oracle model answers (other models ignore them)
    retry: RetryPolicy,
    gguf: Path | None = None,
    environ: dict[str, str] | None = None,
    server: ServerOptions | None = None,  # the embedded model's server (provider local)
) -> contextlib.AbstractContextManager[Endpoint]:
    """The endpoint of the preset's provider, open for the `with` block."""
    context = OpenContext(answers=answers, retry=retry, gguf=gguf, environ=environ, server=server)
    return PROVIDERS.require(preset.provider).open(preset, context)


# Decorators apply from the bottom up: openai is registered first (the order of --provider's choices).
# Tasks in flight by default: a hosted API serves many at once (a 429 cools its key down, as always);
# a served model usually runs on one machine, which batches a few well.
HOSTED_WORKERS, SERVED_WORKERS = 8, 4


@provider(COMPATIBLE, key_env="LOCAL_API_KEY", key_optional=True, workers=SERVED_WORKERS)
@provider(HF, key_env="HF_TOKEN", base_url="https://router.huggingface.co/v1", workers=HOSTED_WORKERS)
@provider(TOGETHER, key_env="TOGETHER_API_KEY", sdk="together", workers=HOSTED_WORKERS)
@provider(OPENAI, key_env="OPENAI_API_KEY", workers=HOSTED_WORKERS)
@contextlib.contextmanager
def _open_api(preset: Preset, context: OpenContext) -> Iterator[Endpoint]:
    """An OpenAI-compatible API: keys from the environment, round-robin."""
    pool = key_pool(preset, context.environ)
    if not preset.model:
        preset = _with_served_model(preset, pool)
    # base_url is per slot (lease.base_url) when --base-url lists several servers.
    model = OpenAIChatModel(
        provider=preset.provider,
        model=preset.model,
        base_url=None,
        keys=pool,
        retry=context.retry,
        reasoning_effort=preset.reasoning_effort,
        thinking=preset.thinking,
    )
    yield Endpoint(model, preset, len(pool), pool)


@provider(LOCAL, priced=False, keyless_note="the embedded model runs")
@contextlib.contextmanager
def _open_embedded(preset: Preset, context: OpenContext) -> Iterator[Endpoint]:
    from humanevalfix.models.embedded import embedded_server

    with embedded_server(preset, context.gguf, context.server) as served:
        # One CPU server answers one request at a time, slowly when the machine is busy: a
        # client timeout would only queue the same request again behind the abandoned one.
        retry = replace(context.retry, timeout_s=max(context.retry.timeout_s, LOCAL_TIMEOUT_S))
        pool = KeyPool([PLACEHOLDER_KEY], secret=False)
        # llama-cpp-python's server takes no reasoning_effort (none is sent) and ignores the template's
        # arguments: --thinking reaches a hybrid model's weights (--gguf) through the switch in the text.
        model = OpenAIChatModel(
            provider=COMPATIBLE,
            model=served.model,
            base_url=served.base_url,
            keys=pool,
            retry=retry,
            thinking=preset.thinking,
        )
        yield Endpoint(model, served.preset, 1)


@provider(ORACLE, sdk=None, selectable=False, priced=False)
@contextlib.contextmanager
def _open_oracle(preset: Preset, context: OpenContext) -> Iterator[Endpoint]:
    yield Endpoint(OracleModel(preset.model.split(":", 1)[1], context.answers), preset, 0)


def _with_served_model(preset: Preset, pool: KeyPool) -> Preset:
    """--base-url without --model: use the first model the server lists."""
    import openai

    lease = pool.acquire()
    try:
        listed = openai.OpenAI(api_key=lease.key, base_url=lease.base_url, max_retries=1, timeout=15).models.list()
        first = next(iter(listed.data), None)
    except Exception as exc:
        raise ConfigError(
            f"--base-url {lease.base_url}: could not list models ({type(exc).__name__}); pass --model"
        ) from None
    if first is None:
        raise ConfigError(f"--base-url {lease.base_url}: the server lists no model; pass --model")
    return replace(preset, model=first.id, name=first.id)
