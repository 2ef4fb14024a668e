"""Registries: the named kinds a run can choose (providers, executors, dataset formats, ...), and plugins.

Each registry is filled by a decorator where its kinds are written (`@provider` in
models/providers.py, `@executor_kind` in sandbox/factory.py, `@dataset_format` in tasks/formats.py,
`@strategy` in agent/prompts.py, `@scorer` in evaluation/scorers.py),
and read by everything that offers or checks a choice: the CLI's `choices`, the environment
variables, the error messages, the docs tables. A registry is a read-only mapping, name -> entry,
in the order the entries were registered.

Third-party packages add kinds through the entry-point group `humanevalfix.plugins`: each entry
point names a module, imported before the first registry is read, whose decorators register its
kinds like the built-in ones (tests/plugin_demo/ is one, with its test).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from humanevalfix.errors import ConfigError

PLUGIN_GROUP = "humanevalfix.plugins"
T = TypeVar("T")


class _Plugins:
    """The installed plugins, imported once per process: entry points do not change while it runs.
    Re-entrant: a plugin that reads a registry while it loads sees what is registered so far."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._started = False

    def load(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            for point in sorted(entry_points(group=PLUGIN_GROUP), key=lambda p: p.name):
                try:
                    point.load()
                except ConfigError as exc:
                    raise ConfigError(f"plugin {point.name} ({point.value}): {_bounded(exc)}") from None
                except Exception as exc:  # a broken plugin is named, not a traceback from inside it
                    raise ConfigError(
                        f"plugin {point.name} ({point.value}) failed to load: {type(exc).__name__}: {_bounded(exc)}"
                    ) from None


def _bounded(exc: Exception, limit: int = 300) -> str:
    """A plugin's own message, on one line and cut: it is the plugin's text, not ours."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "…"


_PLUGINS = _Plugins()


def load_plugins() -> None:
    """Import every module of the `humanevalfix.plugins` entry points (once)."""
    _PLUGINS.load()


class Registry(Mapping[str, T], Generic[T]):
    """Name -> entry for one kind. `builtins`: the module whose decorators register the built-in
    entries, imported on first read when the registry lives apart from them (so that reading
    the registry never depends on who imported what first)."""

    def __init__(self, kind: str, option: str, builtins: str | None = None) -> None:
        self.kind = kind  # "provider", "sandbox", ...: for messages
        self.option = option  # the option that chooses one (--provider): for messages
        self._builtins = builtins
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> None:
        if not name or name != name.strip() or "," in name:
            raise ConfigError(f"{self.kind} name {name!r}: a non-empty word without commas or spaces around it")
        if name in self._entries:
            raise ConfigError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry

    def _ready(self) -> dict[str, T]:
        if self._builtins is not None:
            importlib.import_module(self._builtins)
        load_plugins()
        return self._entries

    def __getitem__(self, name: str) -> T:
        return self._ready()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._ready()

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._ready()))

    def __len__(self) -> int:
        return len(self._ready())

    def require(self, name: str) -> T:
        """The entry, or one line naming the option, the unknown name and the choices."""
        entries = self._ready()
        if name not in entries:
            raise ConfigError(f"{self.option}: unknown {self.kind} {name!r} (choose from {', '.join(entries)})")
        return entries[name]
