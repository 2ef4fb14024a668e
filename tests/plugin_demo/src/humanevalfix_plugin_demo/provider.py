"""The `demo` provider: a keyed provider whose model answers with the task's own code."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from humanevalfix.models.catalog import provider
from humanevalfix.models.oracle import OracleModel
from humanevalfix.models.presets import Preset
from humanevalfix.models.providers import Endpoint, OpenContext, key_pool

KEY_ENV = "DEMO_PLUGIN_KEY"


@provider("demo", key_env=KEY_ENV, sdk=None, priced=False)
@contextlib.contextmanager
def open_demo(preset: Preset, context: OpenContext) -> Iterator[Endpoint]:
    pool = key_pool(preset, context.environ)  # refused without DEMO_PLUGIN_KEY, as every keyed provider
    yield Endpoint(OracleModel(preset.model, context.answers), preset, len(pool), pool)
