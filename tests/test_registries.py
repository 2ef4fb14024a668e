"""The registries (humanevalfix/registry.py): providers, executors, dataset formats, strategies, scorers.

What offers or checks a choice reads them: the CLI's choices, each provider's key variable (a
provider with a key is refused without one, never sent the placeholder), the error messages, and
the tables of docs/architecture.md, which must be what the registries render.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from humanevalfix.agent.strategies import STRATEGIES
from humanevalfix.cli import build_parser
from humanevalfix.errors import ConfigError, DatasetError
from humanevalfix.evaluation.scores import SCORERS
from humanevalfix.models.catalog import PROVIDERS, selectable_providers
from humanevalfix.models.presets import Preset, resolve
from humanevalfix.models.providers import PLACEHOLDER_KEY, key_pool
from humanevalfix.registry import Registry
from humanevalfix.sandbox.factory import SANDBOXES
from humanevalfix.tasks.formats import FORMATS, read_rows

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def provider_table() -> str:
    rows = ["| provider | key variable | without a key | default server | SDK |", "|---|---|---|---|---|"]
    for name, spec in PROVIDERS.items():
        key = f"`{spec.key_env}`" if spec.key_env else "none"
        without = "—" if spec.key_env is None else ("a placeholder" if spec.key_optional else "refused (exit 2)")
        server = f"`{spec.base_url}`" if spec.base_url else "the SDK's, or `--base-url`" if spec.sdk else "none"
        rows.append(f"| `{name}` | {key} | {without} | {server} | {f'`{spec.sdk}`' if spec.sdk else 'none'} |")
    return "\n".join(rows)


def sandbox_table() -> str:
    rows = ["| `--sandbox` | what runs the candidate |", "|---|---|"]
    rows += [f"| `{name}` | {kind.summary} |" for name, kind in SANDBOXES.items()]
    return "\n".join(rows)


def strategy_table() -> str:
    rows = ["| strategy | what it sends after a turn | a fresh conversation of its own |", "|---|---|---|"]
    for name, spec in STRATEGIES.items():
        doc = (spec.next_exchange.__doc__ or "").strip().splitlines()
        rows.append(f"| `{name}` | {doc[0] if doc else '—'} | {'yes' if spec.opening is not None else 'no'} |")
    return "\n".join(rows)


def format_table() -> str:
    rows = ["| file | rows |", "|---|---|"]
    rows += [f"| `*{suffix}` | {fmt.summary} |" for suffix, fmt in FORMATS.items()]
    return "\n".join(rows)


def scorer_table() -> str:
    rows = ["| scorer | what it scores |", "|---|---|"]
    for name, entry in SCORERS.items():
        doc = (type(entry).__doc__ or "").strip().splitlines()
        rows.append(f"| `{name}` | {doc[0] if doc else '—'} |")
    return "\n".join(rows)


@pytest.mark.parametrize("render", [provider_table, sandbox_table, strategy_table, format_table, scorer_table])
def test_the_architecture_tables_are_what_the_registries_hold(render: object) -> None:
    table = render()  # type: ignore[operator]
    assert table in ARCHITECTURE.read_text(encoding="utf-8"), f"docs/architecture.md should hold, as rendered:\n{table}"


def test_the_built_in_kinds_are_registered_in_their_order() -> None:
    assert list(PROVIDERS) == ["openai", "together", "hf", "compatible", "local", "oracle"]
    assert selectable_providers() == ("openai", "together", "hf", "compatible", "local")
    assert list(SANDBOXES) == ["auto", "bwrap", "unshare", "process", "restricted", "docker"]
    assert list(FORMATS) == [".jsonl", ".json", ".parquet"]
    assert list(STRATEGIES) == ["fix", "explain", "rewrite"]
    assert list(SCORERS) == ["verdict", "plus", "hardcoding"]


def _choices(parser: argparse.ArgumentParser, command: str, option: str) -> list[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    action = next(a for a in sub._actions if option in a.option_strings)
    return list(action.choices or ())


def test_the_cli_offers_what_is_registered() -> None:
    parser = build_parser()
    for command in ("eval", "fix"):
        assert _choices(parser, command, "--provider") == list(selectable_providers())
        assert _choices(parser, command, "--sandbox") == list(SANDBOXES)


@pytest.mark.parametrize("name", [n for n, s in PROVIDERS.items() if s.needs_key])
def test_a_keyed_provider_without_its_key_is_refused_never_sent_the_placeholder(name: str) -> None:
    spec = PROVIDERS[name]
    preset = resolve("some-model", provider=name, presets={}, environ={})
    assert preset.key_env == spec.key_env
    with pytest.raises(ConfigError, match=f"no API key for provider '{name}': set {spec.key_env}"):
        key_pool(preset, environ={})
    pool = key_pool(preset, environ={spec.key_env or "": "sk-test-0123456789"})
    assert pool.acquire().key == "sk-test-0123456789"


def test_only_a_key_optional_provider_gets_the_placeholder() -> None:
    optional = [n for n, s in PROVIDERS.items() if s.key_optional]
    assert optional == ["compatible"]
    preset = resolve(None, base_url="http://127.0.0.1:9/v1", presets={}, environ={})
    assert preset.provider == "compatible"
    assert key_pool(preset, environ={}).acquire().key == PLACEHOLDER_KEY
    # A provider that is not registered (a plugin not installed here) is treated as keyed.
    with pytest.raises(ConfigError, match="no API key"):
        key_pool(Preset(name="x", provider="not-installed", model="x", key_env="X_KEY"), environ={})


def test_a_registry_refuses_a_second_entry_and_names_the_choices_for_an_unknown_one() -> None:
    reg: Registry[int] = Registry("widget", "--widget")
    reg.register("a", 1)
    reg.register("b", 2)
    with pytest.raises(ConfigError, match="widget 'a' is registered twice"):
        reg.register("a", 3)
    with pytest.raises(ConfigError, match="non-empty word"):
        reg.register("c,d", 4)
    with pytest.raises(ConfigError) as exc:
        reg.require("z")
    assert str(exc.value) == "--widget: unknown widget 'z' (choose from a, b)"
    assert list(reg) == ["a", "b"] and reg["b"] == 2 and "z" not in reg


def test_an_unknown_dataset_suffix_names_the_registered_ones(tmp_path: Path) -> None:
    path = tmp_path / "tasks.csv"
    path.write_text("task_id\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"unsupported dataset format '\.csv' \(use \.jsonl, \.json or \.parquet\)"):
        list(read_rows(path))


def test_the_sandbox_page_lists_every_registered_sandbox() -> None:
    """docs/sandbox.md's table and its `--sandbox {...}` line name the built-in kinds, in order."""
    text = (ARCHITECTURE.parent / "sandbox.md").read_text(encoding="utf-8")
    rows = [
        line.split("|")[1].strip()
        for line in text.splitlines()
        if line.startswith("| `") and not line.startswith("| `--")
    ]
    listed = [row.split("`")[1] for row in rows[: len(SANDBOXES)]]
    assert listed == list(SANDBOXES)
    assert f"`--sandbox {{{','.join(SANDBOXES)}}}`" in text
