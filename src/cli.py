"""Command line: `eval` (the default), plus the other subcommands. Each lives in its own module;
this file only parses options into a RunConfig and dispatches."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Callable, Sequence

from rich.console import Console
from rich.logging import RichHandler

from . import __version__
from .agent import FEEDBACK_MODES
from .config import RunConfig, load_dotenv_file
from .dataset import resolve_path
from .errors import UserError
from .presets import load_presets, parse_temperatures, resolve
from .sandbox import SANDBOXES

SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def subcommand(name: str, help_text: str):
    """Register `name`: a function adding its options, and one running it (returns the exit code)."""

    def register(add: Callable[[argparse.ArgumentParser], None]):
        def with_run(run: Callable[[argparse.Namespace], int]):
            SUBCOMMANDS[name] = (help_text, add, run)
            return run

        return with_run

    return register


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
    g.add_argument("--provider", choices=["openai", "together", "hf", "compatible", "local"], help="override the preset's provider")
    g.add_argument("--base-url", help="any OpenAI-compatible server, e.g. http://localhost:8000/v1 (vLLM, TGI, llama.cpp, Ollama)")
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the key(s), comma-separated for several")
    g.add_argument("--temperatures", help="temperature by attempt, e.g. 0,0.3,0.5,0.7 (the last repeats)")
    g.add_argument("--max-tokens", type=positive_int, help="completion tokens per call")
    g.add_argument("--text-tools", action="store_true", help="describe the tool in the prompt and parse calls from text (for servers without tool calling)")
    g.add_argument("--models-file", type=Path, help="another models.yaml")
    g.add_argument("--gguf", type=Path, help="weights for the embedded model (default: LOCAL_MODEL_PATH, then download or the offline packages)")
    g.add_argument("--max-iters", type=non_negative_int, default=5, help="repair turns after the first attempt (0: one attempt, no feedback; default 5)")
    g.add_argument("--feedback", choices=FEEDBACK_MODES, default="tests", help="what run_code tests against: the task's tests (default), only the docstring examples, or nothing")
    g.add_argument("--sandbox", choices=SANDBOXES, default="auto", help="where candidates run (default: the strongest that works here)")
    g.add_argument("--timeout", type=positive_float, default=6.0, help="seconds per execution (default 6)")
    g.add_argument("--retries", type=positive_int, default=6, help="attempts per API call on 429/5xx/timeouts (default 6)")
    g.add_argument("--request-timeout", type=positive_float, default=120.0, help="seconds per HTTP request (default 120)")


def preset_from_args(args: argparse.Namespace):
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


def add_eval_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("tasks")
    g.add_argument("--dataset-path", help="a .jsonl/.json/.parquet file (default: HUMANEVALFIX_DATASET, else bigcode/humanevalpack from the Hub)")
    g.add_argument("--limit", type=positive_int, help="the first N tasks")
    g.add_argument("--tasks", help="comma-separated task ids, e.g. Python/0,Python/10")
    g.add_argument("--samples", type=positive_int, default=1, help="independent repair runs per task (for pass@k; use temperatures above 0)")
    g.add_argument(
        "--no-docstring",
        dest="docstring",
        action="store_false",
        help="leave the task's docstring out of the prompt: only the buggy code and the tests, as in the reference HumanEvalFixTests prompt (default: the docstring is included)",
    )
    add_model_options(p)
    g = p.add_argument_group("run")
    g.add_argument("--workers", type=positive_int, default=1, help="tasks in parallel (default 1)")
    g.add_argument("--out", type=Path, help="results file (default results/<timestamp>_<model>.json; the stream is beside it as .jsonl)")
    g.add_argument("--resume", type=Path, help="continue an interrupted run from its .jsonl stream (or its .json path)")
    g.add_argument("--traces", type=Path, metavar="DIR", help="write each task's full conversation as JSON")
    g.add_argument("--visualize", action="store_true", help="also write the PNG and HTML report next to the results")
    g.add_argument("--verbose", "-v", action="store_true", help="a line per task")
    g.add_argument("--debug", action="store_true", help="print each conversation")
    g.add_argument("--list-models", action="store_true", help="list the presets and exit")


def config_from_args(args: argparse.Namespace) -> RunConfig:
    return RunConfig(
        preset=preset_from_args(args),
        dataset_path=resolve_path(args.dataset_path),
        task_ids=tuple(t.strip() for t in args.tasks.split(",") if t.strip()) if args.tasks else None,
        limit=args.limit,
        max_iters=args.max_iters,
        feedback=args.feedback,
        workers=args.workers,
        samples=args.samples,
        sandbox=args.sandbox,
        timeout_s=args.timeout,
        out=args.out,
        resume=args.resume,
        traces=args.traces,
        verbose=args.verbose,
        debug=args.debug,
        retry_attempts=args.retries,
        request_timeout_s=args.request_timeout,
        gguf=args.gguf,
        visualize=args.visualize,
        docstring=args.docstring,
    )


def run_eval_command(args: argparse.Namespace) -> int:
    from .report import print_summary
    from .runner import run_eval

    console = Console(stderr=True)
    if args.list_models:
        for name, p in (load_presets(args.models_file) if args.models_file else load_presets()).items():
            print(f"{name:28} {p.provider:10} {p.model}")
        return 0
    config = config_from_args(args)
    outcome = run_eval(config, console)
    print_summary(console, outcome.summary, outcome.config)
    if config.visualize:
        from .visualize import write_reports

        for path in write_reports(outcome.results_path):
            console.print(f"report: {path}")
    if outcome.status != "complete":
        console.print(f"[yellow]Run {outcome.status}.[/] Continue with: --resume {outcome.stream_path}")
    console.print(f"results: {outcome.results_path}")
    print(outcome.results_path)
    return 130 if outcome.status == "interrupted" else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eval_humanevalfix.py",
        description="Repair buggy Python functions with an LLM agent and measure it on HumanEvalFix. "
        "Without a subcommand, runs the benchmark (`eval`).",
        epilog="The benchmark's options: `eval_humanevalfix.py eval --help`; each command has its own --help. "
        "Keys go in .env (see .env.example). Example: python eval_humanevalfix.py --limit 10",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")
    ev = subs.add_parser("eval", help="run the benchmark (the default)", description="Run the repair agent on HumanEvalFix and score it.")
    add_eval_options(ev)
    ev.set_defaults(run=run_eval_command)
    _load_subcommands()
    for name, (help_text, add, run) in SUBCOMMANDS.items():
        sp = subs.add_parser(name, help=help_text, description=help_text)
        add(sp)
        sp.set_defaults(run=run)
    return parser


def _load_subcommands() -> None:
    """Importing a module registers its subcommand."""
    import importlib

    for module in ("local_model", "visualize", "score_generations", "validate", "fix"):
        try:
            importlib.import_module(f"{__package__}.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{module}":
                raise


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    known = set(SUBCOMMANDS) | {"eval"}
    if not argv or (argv[0] not in known and argv[0] not in ("-h", "--help", "--version")):
        argv = ["eval", *argv]
    args = parser.parse_args(argv)
    level = logging.DEBUG if getattr(args, "debug", False) else logging.INFO if getattr(args, "verbose", False) else logging.WARNING
    logging.basicConfig(level=level, format="%(message)s", handlers=[RichHandler(console=Console(stderr=True), show_path=False)])
    load_dotenv_file()
    try:
        return args.run(args)
    except UserError as exc:
        # soft_wrap: one line whatever the terminal width, so the message stays greppable.
        Console(stderr=True).print(f"[red]error:[/] {exc}", highlight=False, soft_wrap=True)
        return 2
