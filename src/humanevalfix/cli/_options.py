"""Option types and the model options shared by `eval` and `fix`."""

from __future__ import annotations

import argparse
import math
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from humanevalfix.agent import DEFAULT_MAX_ITERS, FEEDBACK_MODES
from humanevalfix.agent.engines import DEFAULT_ENGINE, ENGINES
from humanevalfix.config import DOCKER_ENV, SANDBOX_ENV, docker_settings, sandbox_choice, size_text
from humanevalfix.envfiles import EnvFiles, key_line
from humanevalfix.errors import ConfigError
from humanevalfix.models.catalog import COMPATIBLE, LOCAL, OPENAI, ORACLE, selectable_providers
from humanevalfix.models.client import (
    DEFAULT_REQUEST_TIMEOUT_S,
    DEFAULT_RETRY_ATTEMPTS,
    DEFAULT_STALLS_IN_A_ROW,
    REASONING_REQUEST_TIMEOUT_S,
)
from humanevalfix.models.parameters import EFFORTS, THINKING
from humanevalfix.models.presets import Preset, load_presets, parse_seed, parse_temperatures, resolve
from humanevalfix.models.served import ServedChoice, choose, first_key
from humanevalfix.sandbox.docker import DockerSettings
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, SANDBOXES


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {value}")
    return value


def output_file(text: str) -> Path:
    """A file to write, as typed (`--out` of every command): not a folder, not a device. Checked
    when parsing, before anything runs; whether its folder takes files is probed later."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path; give a file path, e.g. results/run.json")
    path = Path(text)
    # `runs/` names a folder (Path would drop the slash and write a file called `runs`).
    if text.endswith("/") or not path.name or path.name in (".", ".."):
        raise argparse.ArgumentTypeError(
            f"{text} names a folder, not a file; give a file path, e.g. {text.rstrip('/')}/run.json"
        )
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory; give a file path, e.g. {path / 'run.json'}")
    if path.exists() and not path.is_file():
        # Files are written beside and renamed over: a device such as /dev/null would be replaced.
        raise argparse.ArgumentTypeError(
            f"{text} is not a regular file (a device, pipe or socket); give a file path, e.g. run.json"
        )
    return path


def base_urls(text: str) -> str:
    """One or more http(s) URLs, comma-separated (checked here: a typo would only fail at the first call)."""
    urls = [u.strip() for u in text.split(",") if u.strip()]
    if not urls:
        raise argparse.ArgumentTypeError("expected a URL such as http://localhost:8000/v1")
    for url in urls:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise argparse.ArgumentTypeError(f"not an http(s) URL: {url!r} (e.g. http://localhost:8000/v1)")
    return ",".join(urls)


def add_model_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument(
        "--model",
        help="a preset from models.yaml (see --list-models), a raw model id, or oracle:canonical / oracle:buggy; "
        "default: the first provider with a key in the environment, else the embedded local model",
    )
    g.add_argument("--provider", choices=selectable_providers(), help="override the preset's provider")
    g.add_argument(
        "--base-url",
        type=base_urls,
        help="any OpenAI-compatible server, e.g. http://localhost:8000/v1 (vLLM, TGI, llama.cpp, Ollama); several, "
        "comma-separated, share the run like keys",
    )
    g.add_argument(
        "--api-key-env", metavar="VAR", help="environment variable holding the key(s), comma-separated for several"
    )
    g.add_argument("--temperatures", help="temperature by attempt, e.g. 0,0.3,0.5,0.7 (the last repeats)")
    g.add_argument("--max-tokens", type=positive_int, help="completion tokens per call")
    g.add_argument(
        "--seed",
        metavar="N|none",
        help="base of the seed sent with each request (mixed with the task, sample and turn) so that sampled turns "
        "repeat; none sends no seed (default: the preset's: 0 for the embedded model, none for others)",
    )
    g.add_argument(
        "--reasoning-effort",
        choices=EFFORTS,
        help="reasoning models: sent as reasoning_effort (OpenAI's o1, o3, o4-mini, gpt-5, and any server given "
        "it; one that refuses it is sent none, said once); default: not sent, the model's own. The embedded "
        "model's llama.cpp server and the oracle take none: ignored there",
    )
    g.add_argument(
        "--thinking",
        choices=THINKING,
        help="hybrid thinking models (Qwen3 and alike): sent as chat_template_kwargs enable_thinking (vLLM, SGLang) "
        "and as the /think or /no_think switch at the end of the last user message (read on any server, Ollama "
        "and the embedded model's too); default: not set, the model's own",
    )
    g.add_argument(
        "--text-tools",
        action="store_true",
        help="describe the tool in the prompt and parse calls from text (for servers without tool calling)",
    )
    g.add_argument("--models-file", type=Path, help="another models.yaml")
    g.add_argument(
        "--gguf",
        type=Path,
        help="weights for the embedded model (default: LOCAL_MODEL_PATH, then download or the offline packages)",
    )
    g.add_argument(
        "--max-iters",
        type=non_negative_int,
        default=DEFAULT_MAX_ITERS,
        help=f"repair turns after the first attempt (0: one attempt, no feedback; default {DEFAULT_MAX_ITERS})",
    )
    # fix: what run_code tests against (default: the tests). eval refuses it: --protocol decides there.
    g.add_argument(
        "--feedback",
        choices=FEEDBACK_MODES,
        default=None,
        help="fix: what run_code tests against: your tests (default), only the examples, or nothing; eval uses "
        "--protocol instead",
    )
    g.add_argument(
        "--engine",
        choices=tuple(ENGINES),
        default=DEFAULT_ENGINE,
        help="who runs the repair loop: "
        + "; ".join(f"{name}: {text}" for name, text in ENGINES.items())
        + f" (default {DEFAULT_ENGINE}; the same results either way)",
    )
    add_sandbox_options(g)
    add_timeout_option(g)
    g.add_argument(
        "--retries",
        type=positive_int,
        default=DEFAULT_RETRY_ATTEMPTS,
        help=f"attempts per API call on 429/5xx/timeouts (default {DEFAULT_RETRY_ATTEMPTS})",
    )
    g.add_argument(
        "--request-timeout",
        type=positive_float,
        help=f"seconds for the whole reply of each request (default {DEFAULT_REQUEST_TIMEOUT_S:g}; "
        f"{REASONING_REQUEST_TIMEOUT_S:g} for a reasoning model: o1, o3, o4-mini, gpt-5); a server out of time on "
        f"{DEFAULT_STALLS_IN_A_ROW} requests in a row stops the run",
    )


def add_timeout_option(g: argparse._ActionsContainer) -> None:
    """--timeout: seconds per execution (eval, fix, score, validate-dataset)."""
    g.add_argument(
        "--timeout",
        type=positive_float,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds per execution (default {DEFAULT_TIMEOUT_S:g})",
    )


DOCKER_OPTIONS = ("docker_image", "docker_cpus", "docker_memory", "docker_pids")
_DOCKER = DockerSettings()  # the Docker executor's defaults, which the help names


def add_sandbox_options(g: argparse._ActionsContainer, what: str = "candidates run") -> None:
    """--sandbox and the Docker executor's options (eval, fix, score, validate-dataset)."""
    g.add_argument(
        "--sandbox",
        choices=SANDBOXES,
        default=DEFAULT_SANDBOX,
        help=f"where {what} (default {DEFAULT_SANDBOX}: the strongest of bwrap, unshare, process that works here; "
        f"{SANDBOX_ENV}=docker makes auto mean docker)",
    )
    g.add_argument(
        "--docker-image",
        metavar="IMAGE",
        help=f"--sandbox docker: the image, with python3 >= 3.10 and numpy (default {DOCKER_ENV['image']}, else "
        "humanevalfix-sandbox:<this Python>, built on first use)",
    )
    g.add_argument(
        "--docker-cpus",
        type=positive_float,
        metavar="N",
        help=f"--sandbox docker: CPUs per container (default {DOCKER_ENV['cpus']}, else {_DOCKER.cpus:g})",
    )
    g.add_argument(
        "--docker-memory",
        metavar="SIZE",
        help="--sandbox docker: memory per container, swap included, e.g. 512m or 2g (default "
        f"{DOCKER_ENV['memory']}, else {size_text(_DOCKER.memory)})",
    )
    g.add_argument(
        "--docker-pids",
        type=positive_int,
        metavar="N",
        help=f"--sandbox docker: processes and threads per container (default {DOCKER_ENV['pids']}, else "
        f"{_DOCKER.pids})",
    )


def sandbox_from_args(args: argparse.Namespace) -> tuple[str, DockerSettings]:
    """The sandbox kind (`auto` resolved through HUMANEVALFIX_SANDBOX) and the Docker settings."""
    kind = sandbox_choice(args.sandbox)
    given = [f"--{name.replace('_', '-')}" for name in DOCKER_OPTIONS if getattr(args, name, None) is not None]
    if given and kind != "docker":
        raise ConfigError(f"{given[0]}: only with --sandbox docker (the sandbox here is {kind})")
    if kind != "docker":  # SANDBOX_DOCKER_* of another harness's syntax must not stop other sandboxes
        return kind, DockerSettings()
    return kind, docker_settings(args.docker_image, args.docker_cpus, args.docker_memory, args.docker_pids)


def preset_from_args(args: argparse.Namespace) -> Preset:
    return served_from_args(args).preset


def explicit_sampling(args: argparse.Namespace) -> frozenset[str]:
    """The preset fields given as options: a served model's preset does not override them."""
    given = {
        "temperatures": args.temperatures,
        "max_tokens": args.max_tokens,
        "seed": args.seed,
        "native_tools": args.text_tools or None,
    }
    return frozenset(name for name, value in given.items() if value is not None)


def served_from_args(args: argparse.Namespace) -> ServedChoice:
    """The preset, and for --base-url without a named preset what the server serves and how to talk
    to it (models.served: the embedded preset's sampling for the embedded model; without --model,
    a tool-call probe otherwise, which the run makes after its input checks), said in one line."""
    presets = load_presets(args.models_file) if args.models_file else load_presets()
    sdk_url = sdk_base_url(args, presets)
    if sdk_url is not None:
        args.base_url = sdk_url
        args.api_key_env = args.api_key_env or SDK_KEY_ENV
        Console(stderr=True).print(
            f"{SDK_URL_ENV}={sdk_url}: used as --base-url (key: {args.api_key_env})",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )
    preset = _resolved(args, presets)
    if not args.base_url or preset.provider != COMPATIBLE or args.model in presets:
        return ServedChoice(preset, "", None)
    choice = choose(preset, presets, explicit_sampling(args), first_key(preset))
    if choice.preset_reason and not choice.probe:
        Console(stderr=True).print(choice.line(), highlight=False, soft_wrap=True, markup=False)
    return choice


# The OpenAI SDK's own variables: a user who points the SDK at a server this way expects the run to
# go there as with --base-url (its model list probed, its URL recorded), not by accident through the
# SDK's default with the gpt-4o-mini preset. OpenAI's own URL is the SDK's default: nothing to do.
SDK_URL_ENV, SDK_KEY_ENV = "OPENAI_BASE_URL", "OPENAI_API_KEY"
_OPENAI_URL = "https://api.openai.com/v1"


def sdk_base_url(
    args: argparse.Namespace, presets: dict[str, Preset], environ: Mapping[str, str] | None = None
) -> str | None:
    """OPENAI_BASE_URL, checked, where it decides the server: no --base-url, and a run that would go
    through the openai SDK (no --provider or an OpenAI-compatible one; no preset of another provider)."""
    text = (os.environ if environ is None else environ).get(SDK_URL_ENV, "").strip()
    if not text or args.base_url or args.provider not in (None, OPENAI, COMPATIBLE):
        return None
    model = args.model or ""
    if model.startswith(f"{ORACLE}:") or (model in presets and presets[model].provider not in (OPENAI, COMPATIBLE)):
        return None
    try:
        url = base_urls(text)
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(f"{SDK_URL_ENV}: {exc}") from None
    return None if url.rstrip("/") == _OPENAI_URL else url


def _resolved(args: argparse.Namespace, presets: dict[str, Preset]) -> Preset:
    preset = resolve(
        args.model,
        provider=args.provider,
        base_url=args.base_url,
        key_env=args.api_key_env,
        temperatures=parse_temperatures(args.temperatures) if args.temperatures else None,
        max_tokens=args.max_tokens,
        native_tools=False if args.text_tools else None,
        seed=parse_seed(args.seed) if args.seed is not None else ...,
        reasoning_effort=getattr(args, "reasoning_effort", None),
        thinking=getattr(args, "thinking", None),
        presets=presets,
    )
    return _without_ignored(preset)


def _without_ignored(preset: Preset) -> Preset:
    """A reasoning setting that nothing receives (--reasoning-effort with the embedded model, whose
    llama.cpp server takes none, or either with the oracle, which sends no request): said in one
    line and left out, so that the results never record a setting the model did not get."""
    effort = preset.reasoning_effort is not None and preset.provider in (LOCAL, ORACLE)
    thinking = preset.thinking is not None and preset.provider == ORACLE
    if not (effort or thinking):
        return preset
    names = " and ".join(
        name for name, dropped in (("--reasoning-effort", effort), ("--thinking", thinking)) if dropped
    )
    why = (
        "the embedded model's llama.cpp server takes none"
        if preset.provider == LOCAL
        else "the oracle sends no request"
    )
    Console(stderr=True).print(f"note: {names} ignored: {why}", highlight=False, soft_wrap=True, markup=False)
    return replace(
        preset,
        reasoning_effort=None if effort else preset.reasoning_effort,
        thinking=None if thinking else preset.thinking,
    )


def size_option(text: str) -> int:
    """A size such as 256k, 1m or a plain number (characters of text), at least 1."""
    from humanevalfix.config import parse_size
    from humanevalfix.errors import ConfigError

    try:
        value = parse_size(text, "size")
    except ConfigError:
        raise argparse.ArgumentTypeError(f"expected a size such as 256k or 1m, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def say_key(console: Console, preset: Preset, args: argparse.Namespace) -> None:
    """The run's first lines say which key it uses and which file it came from (masked)."""
    line = key_line(preset.key_env, preset.provider, getattr(args, "env_files", EnvFiles()))
    if line:
        console.print(line, highlight=False, soft_wrap=True, markup=False)
