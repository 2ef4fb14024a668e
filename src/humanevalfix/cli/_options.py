"""Option types and the model options shared by `eval` and `fix`."""

from __future__ import annotations

import argparse
from pathlib import Path

from humanevalfix.agent import FEEDBACK_MODES
from humanevalfix.agent.engines import DEFAULT_ENGINE, ENGINES
from humanevalfix.models.presets import SELECTABLE_PROVIDERS, Preset, load_presets, parse_temperatures, resolve
from humanevalfix.sandbox.factory import SANDBOXES


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
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {value}")
    return value


def add_model_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", help="a preset from models.yaml (see --list-models), a raw model id, or oracle:canonical / oracle:buggy; default: the first provider with a key in the environment, else the embedded local model")
    g.add_argument("--provider", choices=SELECTABLE_PROVIDERS, help="override the preset's provider")
    g.add_argument("--base-url", help="any OpenAI-compatible server, e.g. http://localhost:8000/v1 (vLLM, TGI, llama.cpp, Ollama)")
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the key(s), comma-separated for several")
    g.add_argument("--temperatures", help="temperature by attempt, e.g. 0,0.3,0.5,0.7 (the last repeats)")
    g.add_argument("--max-tokens", type=positive_int, help="completion tokens per call")
    g.add_argument("--text-tools", action="store_true", help="describe the tool in the prompt and parse calls from text (for servers without tool calling)")
    g.add_argument("--models-file", type=Path, help="another models.yaml")
    g.add_argument("--gguf", type=Path, help="weights for the embedded model (default: LOCAL_MODEL_PATH, then download or the offline packages)")
    g.add_argument("--max-iters", type=non_negative_int, default=5, help="repair turns after the first attempt (0: one attempt, no feedback; default 5)")
    # fix: what run_code tests against (default: the tests). eval refuses it: --protocol decides there.
    g.add_argument("--feedback", choices=FEEDBACK_MODES, default=None, help="fix: what run_code tests against: your tests (default), only the examples, or nothing; eval uses --protocol instead")
    g.add_argument(
        "--engine",
        choices=tuple(ENGINES),
        default=DEFAULT_ENGINE,
        help="who runs the repair loop: " + "; ".join(f"{name}: {text}" for name, text in ENGINES.items()) + f" (default {DEFAULT_ENGINE}; the same results either way)",
    )
    g.add_argument("--sandbox", choices=SANDBOXES, default="auto", help="where candidates run (default: the strongest that works here)")
    g.add_argument("--timeout", type=positive_float, default=6.0, help="seconds per execution (default 6)")
    g.add_argument("--retries", type=positive_int, default=6, help="attempts per API call on 429/5xx/timeouts (default 6)")
    g.add_argument("--request-timeout", type=positive_float, default=120.0, help="seconds per HTTP request (default 120)")


def preset_from_args(args: argparse.Namespace) -> Preset:
    presets = load_presets(args.models_file) if args.models_file else load_presets()
    return resolve(
        args.model,
        provider=args.provider,
        base_url=args.base_url,
        key_env=args.api_key_env,
        temperatures=parse_temperatures(args.temperatures) if args.temperatures else None,
        max_tokens=args.max_tokens,
        native_tools=False if args.text_tools else None,
        presets=presets,
    )
