"""Model presets from models.yaml, and how `--model`/`--base-url` resolve to one endpoint."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from types import EllipsisType
from typing import Any

import yaml

from humanevalfix.errors import ConfigError
from humanevalfix.models.catalog import COMPATIBLE, HF, LOCAL, OPENAI, ORACLE, PROVIDERS, TOGETHER
from humanevalfix.models.oracle import KINDS as ORACLE_KINDS
from humanevalfix.models.parameters import EFFORTS, THINKING

PRESETS_FILE = Path(__file__).with_name("models.yaml")
# Which preset a configured key selects when --model is not given; no key at all means local.
AUTO_ORDER = (
    (OPENAI, "gpt-4o-mini"),
    (TOGETHER, "qwen-coder-32b-together"),
    (HF, "qwen-coder-32b-hf"),
)  # provider, preset


@dataclass(frozen=True)
class Preset:
    name: str
    provider: str
    model: str
    base_url: str | None = None
    key_env: str | None = None
    temperatures: tuple[float, ...] = (0.0, 0.3, 0.5, 0.7)
    max_tokens: int = 1024
    native_tools: bool = True
    price_in: float | None = None  # USD per 1M input tokens
    price_out: float | None = None
    gguf: str | None = None  # local models: which weights
    # Local models: the weights of a smaller model of the same tokenizer that drafts tokens for
    # them (models/drafting.py); not with --gguf (the user's own weights may tokenize otherwise).
    draft: str | None = None
    # Base of the per-request `seed` (agent._settings.request_seed), so that sampled turns repeat
    # between runs; None sends none (not every OpenAI-compatible server takes the field).
    seed: int | None = None
    # Reasoning models (models.parameters): `reasoning_effort` low|medium|high, `thinking` on|off;
    # None sends nothing (the model's own default).
    reasoning_effort: str | None = None
    thinking: str | None = None

    def public(self) -> dict[str, Any]:
        """For the results' config: everything but secrets (a preset holds none, only variable names)."""
        return {
            "name": self.name,
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "key_env": self.key_env,
            "temperatures": list(self.temperatures),
            "max_tokens": self.max_tokens,
            "native_tools": self.native_tools,
            "price_per_1m": {"input": self.price_in, "output": self.price_out},
            "seed": self.seed,
            # Only when set: the preset of a run without them reads as it always did.
            **({"reasoning_effort": self.reasoning_effort} if self.reasoning_effort is not None else {}),
            **({"thinking": self.thinking} if self.thinking is not None else {}),
            **({"draft": self.draft} if self.draft is not None else {}),
        }


FIELDS = (
    "provider",
    "model",
    "base_url",
    "key_env",
    "temperatures",
    "max_tokens",
    "native_tools",
    "price_per_1m",
    "gguf",
    "draft",
    "seed",
    "reasoning_effort",
    "thinking",
)
MAX_SEED = 2**31 - 1  # what every server takes (llama.cpp's is 32-bit, OpenAI's a 64-bit int)


def _field_error(source: Path, name: str, field: str, expected: str, raw: dict[str, Any]) -> ConfigError:
    return ConfigError(f"{source}: preset '{name}': field '{field}' must be {expected}, got {raw.get(field)!r}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_seed(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEED


def _checked_fields(name: str, raw: dict[str, Any], source: Path) -> None:
    """Each field's type and range, so a typo is one line naming it, not a traceback at the first call."""
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{source}: preset '{name}': unknown field '{unknown[0]}' (fields: {', '.join(FIELDS)})")
    if not isinstance(raw.get("provider"), str) or raw["provider"] not in PROVIDERS:
        raise _field_error(source, name, "provider", f"one of {', '.join(PROVIDERS)}", raw)
    if not isinstance(raw.get("model"), str) or not raw["model"]:
        raise _field_error(source, name, "model", "a model id (text)", raw)
    for field in ("base_url", "key_env", "gguf", "draft"):
        if field in raw and raw[field] is not None and not isinstance(raw[field], str):
            raise _field_error(source, name, field, "text", raw)
    temps = raw.get("temperatures", [0.0])
    if not isinstance(temps, list) or not temps or not all(_number(t) and 0 <= t <= 2 for t in temps):
        raise _field_error(source, name, "temperatures", "a list of numbers between 0 and 2", raw)
    tokens = raw.get("max_tokens", 1)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise _field_error(source, name, "max_tokens", "a whole number of at least 1", raw)
    seed = raw.get("seed")
    if seed is not None and not _is_seed(seed):
        raise _field_error(source, name, "seed", f"a whole number from 0 to {MAX_SEED}, or null", raw)
    effort = raw.get("reasoning_effort")
    if effort is not None and effort not in EFFORTS:
        raise _field_error(source, name, "reasoning_effort", f"one of {', '.join(EFFORTS)}, or null", raw)
    if raw.get("thinking") is not None and _thinking(raw["thinking"]) is None:
        raise _field_error(source, name, "thinking", "on or off (true or false), or null", raw)
    if not isinstance(raw.get("native_tools", True), bool):
        raise _field_error(source, name, "native_tools", "true or false", raw)
    price = raw.get("price_per_1m", {})
    if price is not None and (
        not isinstance(price, dict)
        or set(price) - {"input", "output"}
        or not all(v is None or (_number(v) and v >= 0) for v in price.values())
    ):
        raise _field_error(source, name, "price_per_1m", "a mapping {input: USD, output: USD} of numbers >= 0", raw)


def _thinking(value: Any) -> str | None:
    """A preset's `thinking`: on or off; YAML reads an unquoted on/off as true/false."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return value if isinstance(value, str) and value in THINKING else None


def _preset(name: str, raw: Any, source: Path) -> Preset:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: preset '{name}' must be a mapping of fields ({', '.join(FIELDS)})")
    _checked_fields(name, raw, source)
    price = raw.get("price_per_1m") or {}
    return Preset(
        name=name,
        provider=raw["provider"],
        model=raw["model"],
        base_url=raw.get("base_url", PROVIDERS[raw["provider"]].base_url),
        key_env=raw.get("key_env", PROVIDERS[raw["provider"]].key_env),
        temperatures=tuple(float(t) for t in raw.get("temperatures", [0.0, 0.3, 0.5, 0.7])),
        max_tokens=int(raw.get("max_tokens", 1024)),
        native_tools=bool(raw.get("native_tools", True)),
        price_in=price.get("input"),
        price_out=price.get("output"),
        gguf=raw.get("gguf"),
        draft=raw.get("draft"),
        seed=raw.get("seed"),
        reasoning_effort=raw.get("reasoning_effort"),
        thinking=_thinking(raw.get("thinking")),
    )


MAX_MODELS_FILE_BYTES = 1 << 20  # presets are a few lines each; anything larger is a mistake or an attack


class _NoAliases(yaml.SafeLoader):
    """YAML without aliases (`*name`, `<<: *name`): 415 bytes of nested aliases expand to
    gigabytes once anything walks or formats the value; presets are written out in full instead."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not supported in a models file; write each preset out", mark
            )
        return super().compose_node(parent, index)


def _read_models_file(path: Path) -> str:
    with path.open("rb") as fh:
        raw = fh.read(MAX_MODELS_FILE_BYTES + 1)
    if len(raw) > MAX_MODELS_FILE_BYTES:
        raise ConfigError(
            f"--models-file {path}: larger than {MAX_MODELS_FILE_BYTES >> 20} MiB; a models file holds a few presets"
        )
    return raw.decode("utf-8")


def load_presets(path: Path = PRESETS_FILE) -> dict[str, Preset]:
    try:
        data = yaml.load(_read_models_file(path), Loader=_NoAliases) or {}  # noqa: S506 (a SafeLoader)
    except FileNotFoundError:
        raise ConfigError(f"--models-file {path}: file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"--models-file {path}: is a directory; give a models.yaml file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--models-file {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"--models-file {path}: cannot read it ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of preset names")
    return {name: _preset(name, raw, path) for name, raw in data.items()}


def parse_temperatures(text: str) -> tuple[float, ...]:
    try:
        temps = tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise ConfigError(f"--temperatures: expected numbers separated by commas, got {text!r}") from None
    if not temps or not all(0 <= t <= 2 for t in temps):  # written so that nan fails too
        raise ConfigError(f"--temperatures: each value must be between 0 and 2, got {text!r}")
    return temps


def parse_seed(text: str) -> int | None:
    """--seed: a whole number, or `none` to send no seed."""
    if text.strip().lower() == "none":
        return None
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if not _is_seed(seed):
        raise ConfigError(f"--seed: expected a whole number from 0 to {MAX_SEED}, or none, got {text!r}")
    return seed


def resolve(
    model: str | None,
    *,
    provider: str | None = None,
    base_url: str | None = None,
    key_env: str | None = None,
    temperatures: tuple[float, ...] | None = None,
    max_tokens: int | None = None,
    native_tools: bool | None = None,
    seed: int | None | EllipsisType = ...,
    reasoning_effort: str | None = None,
    thinking: str | None = None,
    presets: dict[str, Preset] | None = None,
    environ: dict[str, str] | None = None,
) -> Preset:
    """--model NAME (preset) or raw id, overridden by the explicit options (seed: ... keeps the preset's)."""
    presets = presets if presets is not None else load_presets()
    env = environ if environ is not None else dict(os.environ)
    if model and model.startswith(f"{ORACLE}:"):
        kind = model.split(":", 1)[1]
        if kind not in ORACLE_KINDS:
            raise ConfigError(f"--model {model}: oracle models are oracle:canonical and oracle:buggy")
        chosen = Preset(name=model, provider=ORACLE, model=model, native_tools=True, temperatures=(0.0,))
    elif model in presets:
        chosen = presets[model]
    elif model is None and base_url is None and provider is None:
        name = next(
            (preset for prov, preset in AUTO_ORDER if env.get(PROVIDERS[prov].key_env or "", "").strip()), LOCAL
        )
        chosen = presets[name]
    else:
        prov = provider or (COMPATIBLE if base_url else OPENAI)
        if prov not in PROVIDERS:
            raise ConfigError(f"--provider: must be one of {', '.join(PROVIDERS)}, got {prov!r}")
        spec = PROVIDERS[prov]
        chosen = Preset(
            name=model or "(served model)",
            provider=prov,
            model=model or "",
            base_url=base_url or spec.base_url,
            key_env=spec.key_env,
        )
    changes: dict[str, Any] = {}
    if provider and chosen.provider != ORACLE:
        changes["provider"] = provider
    if base_url and base_url != chosen.base_url:
        changes["base_url"] = base_url
        # The preset's prices are its provider's; another server has its own (or none), and may
        # not take a `seed` field: --seed sends one there.
        changes["price_in"] = changes["price_out"] = None
        changes["seed"] = None
        if not provider and chosen.provider in (OPENAI, LOCAL):
            changes["provider"] = COMPATIBLE
    if key_env:
        changes["key_env"] = key_env
    if temperatures:
        changes["temperatures"] = temperatures
    if max_tokens:
        changes["max_tokens"] = max_tokens
    if native_tools is not None:
        changes["native_tools"] = native_tools
    if seed is not ...:
        changes["seed"] = seed
    if reasoning_effort is not None:  # the option wins over the preset's
        changes["reasoning_effort"] = reasoning_effort
    if thinking is not None:
        changes["thinking"] = thinking
    return replace(chosen, **changes) if changes else chosen
