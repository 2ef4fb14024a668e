"""Each default is one constant, in the module that owns it: the options and their help, the run's
configuration, its specification and the library's own defaults all read it, so a changed default
cannot leave a copy behind."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from humanevalfix.agent import DEFAULT_MAX_ITERS, DEFAULT_RUNTIME_VALUES, DEFAULT_SAMPLES, AgentSettings
from humanevalfix.cli._argv import subparsers_of
from humanevalfix.cli._eval import config_from_args
from humanevalfix.cli._main import build_parser
from humanevalfix.config import RunConfig, parse_size, run_spec, size_text
from humanevalfix.evaluation import robustness
from humanevalfix.models.client import (
    DEFAULT_MAX_REPLY_CHARS,
    DEFAULT_REQUEST_TIMEOUT_S,
    DEFAULT_RETRY_ATTEMPTS,
    DEFAULT_STALLS_IN_A_ROW,
    REASONING_REQUEST_TIMEOUT_S,
    RetryPolicy,
)
from humanevalfix.models.embedded import DEFAULT_PROMPT_LOOKUP, ServerOptions
from humanevalfix.models.presets import resolve
from humanevalfix.models.providers import HOSTED_WORKERS, SERVED_WORKERS
from humanevalfix.runspec import RunSpec
from humanevalfix.sandbox.docker import DockerSettings
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, Limits
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX
from humanevalfix.sandbox.pool import DEFAULT_WORKERS
from humanevalfix.tasks.task import DEFAULT_MAX_FIELD

# option -> (its default, how --help names it; None: the help does not), on every command that has it.
OPTIONS: dict[str, tuple[Any, str | None]] = {
    "--timeout": (DEFAULT_TIMEOUT_S, f"(default {DEFAULT_TIMEOUT_S:g})"),
    "--sandbox": (DEFAULT_SANDBOX, f"(default {DEFAULT_SANDBOX}:"),
    "--workers": (DEFAULT_WORKERS, None),
    "--max-iters": (DEFAULT_MAX_ITERS, f"default {DEFAULT_MAX_ITERS})"),
    "--samples": (DEFAULT_SAMPLES, None),
    "--runtime-values": (DEFAULT_RUNTIME_VALUES, f"(default {DEFAULT_RUNTIME_VALUES})"),
    "--retries": (DEFAULT_RETRY_ATTEMPTS, f"(default {DEFAULT_RETRY_ATTEMPTS})"),
    # None: by model, the reasoning models' longer (test_the_defaults_that_depend_on_the_endpoint)
    "--request-timeout": (None, f"(default {DEFAULT_REQUEST_TIMEOUT_S:g};"),
    "--max-field-size": (DEFAULT_MAX_FIELD, f"(default {size_text(DEFAULT_MAX_FIELD)})"),
    "--max-reply-size": (DEFAULT_MAX_REPLY_CHARS, f"(default {size_text(DEFAULT_MAX_REPLY_CHARS)})"),
}


def _actions() -> list[tuple[str, argparse.Action]]:
    return [
        (command, action)
        for command, parser in subparsers_of(build_parser()).items()
        for action in parser._actions
        if set(action.option_strings) & set(OPTIONS)
    ]


@pytest.mark.parametrize("option", list(OPTIONS))
def test_each_option_defaults_to_its_constant_and_its_help_says_so(option: str) -> None:
    default, shown = OPTIONS[option]
    found = [(command, action) for command, action in _actions() if option in action.option_strings]
    assert found, f"no command has {option}"
    for command, action in found:
        if (command, option) == ("eval", "--workers"):  # by endpoint (test_the_defaults_that_depend_on_the_endpoint)
            assert action.default is None and "by endpoint" in (action.help or ""), action.help
            continue
        assert action.default == default, (command, option, action.default)
        assert shown is None or shown in (action.help or ""), (command, option, action.help)


def test_the_help_names_the_defaults_it_gives_in_words() -> None:
    docker = DockerSettings()
    said = {
        "--request-timeout": f"on {DEFAULT_STALLS_IN_A_ROW} requests in a row",
        "--docker-cpus": f"else {docker.cpus:g})",
        "--docker-memory": f"else {size_text(docker.memory)})",
        "--docker-pids": f"else {docker.pids})",
    }
    parsers = subparsers_of(build_parser()).items()
    for option, text in said.items():
        helps = [a.help or "" for _, p in parsers for a in p._actions if option in a.option_strings]
        assert helps and all(text in h for h in helps), (option, helps)


def test_the_run_the_options_make_by_default_is_the_configuration_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUMANEVALFIX_SANDBOX", raising=False)
    made = config_from_args(build_parser().parse_args(["eval"]))
    default = RunConfig(preset=made.preset)
    for name in (
        "max_iters",
        "samples",
        "workers",
        "runtime_values",
        "sandbox",
        "timeout_s",
        "retry_attempts",
        "request_timeout_s",
        "prompt_lookup",
        "max_field_chars",
        "max_reply_chars",
    ):
        assert getattr(made, name) == getattr(default, name), name


def test_the_configuration_the_spec_and_the_library_share_their_defaults() -> None:
    config = RunConfig(preset=resolve("local", seed=0))
    spec = run_spec(
        config, dataset_source="s", dataset_sha256="abc", task_ids=[], executor_name="process", isolation="none"
    )
    empty, settings, retry = RunSpec(), AgentSettings(), RetryPolicy()
    assert config.timeout_s == spec.sandbox.timeout_s == empty.sandbox.timeout_s == Limits().timeout_s
    assert config.max_iters == spec.agent.max_iters == empty.agent.max_iters == settings.max_iters
    assert config.samples == spec.agent.samples == empty.agent.samples
    assert config.workers == spec.agent.workers == empty.agent.workers
    assert config.runtime_values == spec.agent.runtime_values == empty.agent.runtime_values == settings.runtime_values
    assert spec.model.embedded_server is not None
    assert config.prompt_lookup == spec.model.embedded_server.prompt_lookup == ServerOptions().prompt_lookup
    assert spec.protocol.name == empty.protocol.name and spec.protocol == empty.protocol
    assert (config.retry_attempts, config.retry_initial_s, config.request_timeout_s, config.max_reply_chars) == (
        retry.attempts,
        retry.initial_s,
        retry.timeout_s,
        retry.max_reply_chars,
    )
    assert config.prompt_lookup == DEFAULT_PROMPT_LOOKUP and config.max_field_chars == DEFAULT_MAX_FIELD


def test_the_pass_at_1_plus_budget_and_the_reserve_fill_the_default_timeout() -> None:
    assert robustness.BUDGET_S > 0 and robustness.BUDGET_S + robustness.RESERVE_S == DEFAULT_TIMEOUT_S


@pytest.mark.parametrize(
    "size", [DEFAULT_MAX_FIELD, DEFAULT_MAX_REPLY_CHARS, DockerSettings().memory, 100, 1536, 3 << 30]
)
def test_a_size_is_shown_as_it_is_read(size: int) -> None:
    assert parse_size(size_text(size), "size") == size


def test_a_size_is_shown_in_the_largest_whole_unit() -> None:
    assert [size_text(n) for n in (1 << 20, 256 * 1024, 1 << 30, 1536, 100, 0)] == [
        "1m",
        "256k",
        "1g",
        "1536",
        "100",
        "0",
    ]


@pytest.mark.parametrize(
    ("argv", "workers", "timeout"),
    [
        (["eval"], 1, DEFAULT_REQUEST_TIMEOUT_S),  # no key here: the embedded model, one request at a time
        (["eval", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], SERVED_WORKERS, DEFAULT_REQUEST_TIMEOUT_S),
        (["eval", "--model", "gpt-4o-mini"], HOSTED_WORKERS, DEFAULT_REQUEST_TIMEOUT_S),
        (["eval", "--model", "o3-mini"], HOSTED_WORKERS, REASONING_REQUEST_TIMEOUT_S),
        (["eval", "--model", "gpt-5-mini", "--workers", "2", "--request-timeout", "30"], 2, 30.0),
    ],
)
def test_the_defaults_that_depend_on_the_endpoint(
    argv: list[str], workers: int, timeout: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HUMANEVALFIX_SANDBOX", "OPENAI_API_KEY", "OPENAI_BASE_URL", "TOGETHER_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    made = config_from_args(build_parser().parse_args(argv))
    assert (made.workers, made.request_timeout_s) == (workers, timeout)
    explicit = "--workers" in argv
    assert (made.workers_reason is None) == explicit
    if not explicit:
        assert made.workers_reason == f"the default for provider {made.preset.provider}; --workers sets it"
