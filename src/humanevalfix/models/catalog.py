"""The providers: each one's name, key variable, default server and how it opens, in one registry.

A provider is registered where its endpoint is opened, by decorating that function:

    @provider("myapi", key_env="MYAPI_KEY", base_url="https://api.example.com/v1")
    @contextlib.contextmanager
    def open_myapi(preset: Preset, context: OpenContext) -> Iterator[Endpoint]: ...

The built-in ones are in models/providers.py; a plugin's in its own module (humanevalfix/registry.py).
Everything else reads PROVIDERS: models.yaml's `provider` field and `--provider` (their choices),
the key a run needs (`key_env`: a provider with one and no `key_optional` refuses to start without
it, never sending a placeholder), the key line at a run's start, the SDK imported early, the price.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from humanevalfix.registry import Registry

# (preset, context) -> a context manager yielding the open Endpoint (models/providers.py has both
# types; named loosely here because presets.py reads this registry and providers.py imports presets).
Opener = Callable[[Any, Any], AbstractContextManager[Any]]


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    open: Opener
    key_env: str | None = None  # the variable holding its keys by default; None: it takes no key
    key_optional: bool = False  # True: without a key the server gets a placeholder (it checks none)
    base_url: str | None = None  # its default server (None: the SDK's default, or none needed)
    sdk: str | None = "openai"  # imported in the background at a run's start (None: none needed)
    selectable: bool = True  # offered by --provider (an oracle is chosen by --model instead)
    priced: bool = True  # False: no per-token price (the model runs here)
    keyless_note: str | None = None  # said at the run's start instead of a key, for a provider with none
    # Tasks in flight by default (eval --workers): an endpoint serving many requests at once (a hosted
    # API, a served model) is waited on, not worked; the embedded model's one server takes one at a time.
    workers: int = 1

    @property
    def needs_key(self) -> bool:
        """A run refuses to start without this provider's key (never sends a placeholder)."""
        return self.key_env is not None and not self.key_optional


PROVIDERS: Registry[ProviderSpec] = Registry("provider", "--provider", builtins="humanevalfix.models.providers")


def provider(
    name: str,
    *,
    key_env: str | None = None,
    key_optional: bool = False,
    base_url: str | None = None,
    sdk: str | None = "openai",
    selectable: bool = True,
    priced: bool = True,
    keyless_note: str | None = None,
    workers: int = 1,
) -> Callable[[Opener], Opener]:
    """Register the decorated opener as provider `name` (stack several for one opener)."""

    def register(opener: Opener) -> Opener:
        PROVIDERS.register(
            name,
            ProviderSpec(name, opener, key_env, key_optional, base_url, sdk, selectable, priced, keyless_note, workers),
        )
        return opener

    return register


def selectable_providers() -> tuple[str, ...]:
    """What --provider may name."""
    return tuple(name for name, spec in PROVIDERS.items() if spec.selectable)


# The built-in providers (registered in models/providers.py), by name for the few places that treat
# one of them as itself: the embedded model's server options, `serve`, `--base-url`'s default.
OPENAI, TOGETHER, HF, COMPATIBLE, LOCAL, ORACLE = "openai", "together", "hf", "compatible", "local", "oracle"
