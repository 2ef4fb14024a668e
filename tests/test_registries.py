"""The registries (humanevalfix/registry.py): providers, executors, dataset formats, strategies, scorers.

What offers or checks a choice reads them: the CLI's choices, each provider's key variable (a
provider with a key is refused without one, never sent the placeholder), the error messages, and
the tables of docs/architecture.md, which must be what the registries render.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.agent.strategies import STRATEGIES
from humanevalfix.cli import build_parser
from humanevalfix.errors import ConfigError, DatasetError
from humanevalfix.evaluation.dataset import bundled_path
from humanevalfix.evaluation.scores import BUILTINS, SCORERS
from humanevalfix.models.catalog import COMPATIBLE, LOCAL, ORACLE, PROVIDERS, selectable_providers
from humanevalfix.models.presets import AUTO_ORDER, Preset, load_presets, resolve
from humanevalfix.models.providers import PLACEHOLDER_KEY, key_pool
from humanevalfix.registry import Registry
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, LEVEL_NAMES, SANDBOXES
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


# Each registry, with where an entry's code lives and the module that registers the built-in ones.
BUILT_IN: list[tuple[Registry[Any], Callable[[Any], str], str]] = [
    (PROVIDERS, lambda spec: spec.open.__module__, "humanevalfix.models.providers"),
    (SANDBOXES, lambda kind: kind.build.__module__, "humanevalfix.sandbox.factory"),
    (FORMATS, lambda fmt: fmt.read.__module__, "humanevalfix.tasks.formats"),
    (STRATEGIES, lambda spec: spec.next_exchange.__module__, "humanevalfix.agent.prompts"),
    (SCORERS, lambda entry: type(entry).__module__, BUILTINS),
]


@pytest.mark.parametrize(("registry", "module_of", "builtins"), BUILT_IN, ids=[r.kind for r, _, _ in BUILT_IN])
def test_the_built_in_kinds_are_registered_before_any_other(
    registry: Registry[Any], module_of: Callable[[Any], str], builtins: str
) -> None:
    """Whatever a plugin adds comes after the package's own entries (tests/test_plugin.py installs one)."""
    names = list(registry)
    own = [name for name in names if module_of(registry[name]) == builtins]
    assert own and names[: len(own)] == own, f"{registry.kind}: {names}, of which {builtins} registers {own}"


def test_auto_is_the_first_sandbox_and_each_jail_it_may_end_in_is_a_sandbox_of_its_own() -> None:
    assert list(SANDBOXES)[0] == DEFAULT_SANDBOX
    assert set(LEVEL_NAMES.values()) <= set(SANDBOXES) - {DEFAULT_SANDBOX}


def test_the_providers_the_code_names_are_registered_and_only_the_oracle_is_not_offered() -> None:
    """The fallback without a key is the embedded model (local), a key picks the first of AUTO_ORDER's
    providers, --base-url alone means compatible, and the oracle is chosen by --model oracle:..."""
    named = {LOCAL, COMPATIBLE, ORACLE} | {provider for provider, _ in AUTO_ORDER}
    assert named <= set(PROVIDERS)
    assert set(PROVIDERS) - set(selectable_providers()) == {ORACLE}
    assert resolve(None, presets=load_presets(), environ={}).provider == LOCAL and not PROVIDERS[LOCAL].needs_key
    assert all(PROVIDERS[provider].needs_key for provider, _ in AUTO_ORDER)


def test_the_bundled_dataset_is_of_a_registered_format() -> None:
    assert bundled_path().suffix in FORMATS
    assert all(suffix == fmt.suffix == suffix.lower() and suffix.startswith(".") for suffix, fmt in FORMATS.items())


def test_the_strategies_escalate_from_one_every_task_can_use_to_the_last_resort() -> None:
    """The first way of asking needs nothing but the task (no opening); the last, rewrite, starts a
    conversation of its own (agent/strategies.py)."""
    specs = list(STRATEGIES.values())
    assert specs[0].opening is None and specs[-1].opening is not None
    assert all(name == spec.name for name, spec in STRATEGIES.items())


def test_the_verdict_leads_the_scorers() -> None:
    """The summary's rows and the report's lines are in registration order: the test's verdict first."""
    assert list(SCORERS)[0] == "verdict"


def _choices(parser: argparse.ArgumentParser, command: str, option: str) -> list[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    action = next(a for a in sub._actions if option in a.option_strings)
    return list(action.choices or ())


def _default(parser: argparse.ArgumentParser, command: str, option: str) -> Any:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return next(a for a in sub._actions if option in a.option_strings).default


def test_the_cli_offers_what_is_registered() -> None:
    parser = build_parser()
    for command in ("eval", "fix"):
        assert _choices(parser, command, "--provider") == list(selectable_providers())
    for command in ("eval", "fix", "score", "validate-dataset"):
        assert _choices(parser, command, "--sandbox") == list(SANDBOXES)
        assert _default(parser, command, "--sandbox") == DEFAULT_SANDBOX


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
    *others, last = FORMATS
    assert others, "several formats: the message joins them"
    listed = f"{', '.join(others)} or {last}"
    with pytest.raises(DatasetError, match=re.escape(f"unsupported dataset format '.csv' (use {listed})")):
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
