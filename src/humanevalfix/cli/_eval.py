"""`eval` (the default command): run the repair agent on HumanEvalFix and score it."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from rich.console import Console

from humanevalfix.agent import DEFAULT_RUNTIME_VALUES, DEFAULT_SAMPLES, RUNTIME_VALUES
from humanevalfix.agent.engines import require_engine
from humanevalfix.agent.policies import DEFAULT_POLICY, POLICIES, RepairPolicy
from humanevalfix.agent.protocols import DEFAULT_PROTOCOL, PROTOCOLS, describe
from humanevalfix.agent.strategies import REWRITE_AGAIN, STRATEGIES, usable_names
from humanevalfix.cli._options import (
    add_model_options,
    non_negative_int,
    output_file,
    positive_int,
    sandbox_from_args,
    say_key,
    served_from_args,
    size_option,
)
from humanevalfix.config import RunConfig, size_text
from humanevalfix.errors import ConfigError
from humanevalfix.evaluation.dataset import DEFAULT_MAX_FIELD, resolve_path
from humanevalfix.models.catalog import LOCAL, PROVIDERS
from humanevalfix.models.client import DEFAULT_MAX_REPLY_CHARS, request_timeout_for
from humanevalfix.models.embedded import DEFAULT_PROMPT_LOOKUP, EXACT_MAX_DRAFT, ServerOptions, with_lookup
from humanevalfix.models.presets import load_presets
from humanevalfix.safetext import shown

HELP = "run the benchmark (the default command)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("tasks")
    g.add_argument(
        "--dataset-path",
        help="a .jsonl/.json/.parquet file (default: HUMANEVALFIX_DATASET, else bigcode/humanevalpack from the Hub "
        "when it answers, else the copy bundled with the package)",
    )
    g.add_argument("--limit", type=positive_int, help="the first N tasks")
    g.add_argument("--tasks", type=task_list, help="comma-separated task ids, e.g. Python/0,Python/10")
    g.add_argument(
        "--max-field-size",
        type=size_option,
        default=DEFAULT_MAX_FIELD,
        metavar="SIZE",
        help="refuse dataset rows with a code or test field above SIZE characters (default "
        f"{size_text(DEFAULT_MAX_FIELD)})",
    )
    g.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="leave out (and list) dataset rows whose test cannot score, instead of refusing the dataset",
    )
    g.add_argument(
        "--samples",
        type=positive_int,
        default=DEFAULT_SAMPLES,
        help="independent repair runs per task (for pass@k; use temperatures above 0)",
    )
    g.add_argument(
        "--protocol",
        choices=tuple(PROTOCOLS),
        default=DEFAULT_PROTOCOL,
        help="what the model sees and run_code tests against: "
        + "; ".join(describe(name) for name in PROTOCOLS)
        + f" (default {DEFAULT_PROTOCOL})",
    )
    # Replaced by --protocol; kept only to say so (a silently ignored option would mislabel a run).
    g.add_argument("--no-docstring", dest="legacy_no_docstring", action="store_true", help=argparse.SUPPRESS)
    add_model_options(p)
    g = p.add_argument_group("repair policy")
    g.add_argument(
        "--policy",
        choices=list(POLICIES),
        default=DEFAULT_POLICY,
        help="the options below taken together, as each default was: plain: a repeat or a reply without code spends "
        "its turn, fix then explain then rewrite; redraw: a first such reply is drawn again, fix then "
        "rewrite; rewrite-now: and a reply still without new code asks rewrite in the same turn, whose "
        f"second turn is a fresh draw (default {DEFAULT_POLICY}; an option below overrides its part)",
    )
    g.add_argument(
        "--redraws",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="a reply that repeats a tried candidate or has no code is drawn again in the same turn, sampled, up to "
        "N times; 0: the turn is spent on it (default: the policy's; alone, in every turn)",
    )
    g.add_argument(
        "--redraw-turns",
        type=positive_int,
        default=None,
        metavar="K",
        help="the redraws only in the first K turns (default: the policy's; with --redraws N alone: every turn)",
    )
    g.add_argument(
        "--strategies",
        type=name_list,
        default=None,
        metavar="NAMES",
        help=f"text protocol: the ways a stuck model is asked, a comma-separated subset of {','.join(STRATEGIES)} "
        "taken in that order (default: the policy's)",
    )
    g.add_argument(
        "--rewrite-turns",
        type=positive_int,
        default=None,
        metavar="N",
        help="text protocol: turns of rewrite, the last resort, before the task ends as stuck (default: the policy's)",
    )
    g.add_argument(
        "--rewrite-again",
        choices=REWRITE_AGAIN,
        default=None,
        help="text protocol: rewrite's later turns continue its conversation (the candidate and how it failed) or "
        "start it afresh, sampled (default: the policy's)",
    )
    g.add_argument(
        "--rewrite-now",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="text protocol: a reply that still brings no new candidate after its redraws is set aside and the same "
        "turn asks rewrite, the last resort, instead of spending the turn (default: the policy's)",
    )
    g.add_argument(
        "--runtime-values",
        choices=RUNTIME_VALUES,
        default=DEFAULT_RUNTIME_VALUES,
        help="after a failed run, what the failing call did: none; trace: its variables line by line (an unscored "
        f"sandbox run); locate: the trace, and the model names the wrong line first (default {DEFAULT_RUNTIME_VALUES})",
    )
    g = p.add_argument_group("run")
    g.add_argument(
        "--workers",
        type=positive_int,
        help="tasks in parallel (default: by endpoint, "
        + ", ".join(f"{name} {spec.workers}" for name, spec in PROVIDERS.items() if spec.selectable)
        + ")",
    )
    g.add_argument(
        "--out",
        type=output_file,
        help="results file (default results/<timestamp>_<model>.json; the stream is beside it as .jsonl)",
    )
    g.add_argument("--resume", type=Path, help="continue an interrupted run from its .jsonl stream (or its .json path)")
    g.add_argument("--traces", type=Path, metavar="DIR", help="write each task's full conversation as JSON")
    g.add_argument(
        "--prompt-lookup",
        type=non_negative_int,
        metavar="N",
        help="embedded model: up to N draft tokens copied from the prompt per step, 0 for plain decoding (default "
        f"{DEFAULT_PROMPT_LOOKUP}; faster, and greedy replies the same but for rare near ties: docs/local-model.md)",
    )
    g.add_argument(
        "--exact-lookup",
        action="store_true",
        help="embedded model: check drafts so that greedy replies are exactly those of plain decoding (at most "
        f"{EXACT_MAX_DRAFT} drafts, slower; needs llama-cpp-python built without llamafile: docs/local-model.md)",
    )
    g.add_argument(
        "--stop-after-code",
        action="store_true",
        help="embedded model: each reply ends at the close of its first code block, what comes after it not "
        "generated (faster where a model explains after its code; the code read can change where a later block "
        "held the function too: docs/local-model.md)",
    )
    g.add_argument(
        "--max-reply-size",
        type=size_option,
        default=DEFAULT_MAX_REPLY_CHARS,
        metavar="SIZE",
        help="a model reply or run_code argument above SIZE characters is the outcome too_large, not kept (default "
        f"{size_text(DEFAULT_MAX_REPLY_CHARS)})",
    )
    g.add_argument("--visualize", action="store_true", help="also write the PNG and HTML report next to the results")
    g.add_argument("--verbose", "-v", action="store_true", help="a line per task")
    g.add_argument("--debug", action="store_true", help="print each conversation")
    g.add_argument("--list-models", action="store_true", help="list the presets and exit")


# Exit codes beyond argparse's and UserError's 2 (README, "Exit codes").
EXIT_CODES = {"complete": 0, "complete_with_errors": 3, "aborted": 4, "interrupted": 130}
# What a resumed run must not be given again: it continues the stored task list and files.
_NOT_RESUMED = ("--limit", "--tasks", "--out", "--resume")


def _comma_separated(text: str, nothing: str) -> tuple[str, ...]:
    items = tuple(t.strip() for t in text.split(",") if t.strip())
    if not items:
        raise argparse.ArgumentTypeError(nothing)
    return items


def task_list(text: str) -> tuple[str, ...]:
    return _comma_separated(text, "no task ids given (e.g. --tasks Python/0,Python/10)")


def name_list(text: str) -> tuple[str, ...]:
    return _comma_separated(text, "no names given (e.g. --strategies fix,rewrite)")


def resume_command(prog: str, argv: list[str], stream: Path) -> str:
    """The command that continues this run: the same options, its stream instead of the task selection."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _NOT_RESUMED:
            skip = "=" not in arg
            continue
        kept.append(arg)
    command = ["python", prog] if prog.endswith(".py") else prog.split()
    return shlex.join([*command, *kept, "--resume", str(stream)])


def _protocol(args: argparse.Namespace) -> str:
    if getattr(args, "legacy_no_docstring", False):
        raise ConfigError(
            "--no-docstring: replaced by --protocol; use --protocol tests (buggy code + tests, no docstring)"
        )
    if getattr(args, "feedback", None) is not None:
        raise ConfigError(
            "--feedback: on eval the protocol decides what run_code tests against; use --protocol "
            "(tests or agent: the tests, hidden: the example test, docs: none)"
        )
    return str(args.protocol)


def _strategies(names: tuple[str, ...] | None, default: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The chosen strategies; None for all of them (as runs recorded before the option)."""
    if names is None:
        return default
    try:
        chosen = usable_names(names)
    except ValueError as exc:
        raise ConfigError(f"--strategies: {exc}") from None
    return None if chosen == tuple(STRATEGIES) else chosen


def _policy(args: argparse.Namespace) -> RepairPolicy:
    """--policy with the options given beside it; `--redraws N` alone redraws in every turn."""
    base = POLICIES[args.policy]
    redraws = base.redraws if args.redraws is None else args.redraws
    redraw_turns = (
        args.redraw_turns if args.redraw_turns is not None else base.redraw_turns if args.redraws is None else None
    )
    if args.redraw_turns is not None and not redraws:
        raise ConfigError("--redraw-turns: only with --redraws N (it says in which turns a reply is drawn again)")
    return RepairPolicy(
        redraws=redraws,
        redraw_turns=redraw_turns,
        strategies=_strategies(args.strategies, base.strategies),
        rewrite_again=base.rewrite_again if args.rewrite_again is None else args.rewrite_again,
        rewrite_now=base.rewrite_now if args.rewrite_now is None else args.rewrite_now,
        rewrite_turns=base.rewrite_turns if args.rewrite_turns is None else args.rewrite_turns,
    )


def _workers_reason(provider: str, served_workers: int | None) -> str:
    """Why the run has the workers it has when --workers did not say."""
    if served_workers is not None:
        return "a server of the embedded model answers one request at a time; --workers sets it"
    return f"the default for provider {provider}; --workers sets it"


def config_from_args(args: argparse.Namespace) -> RunConfig:
    sandbox, docker = sandbox_from_args(args)
    require_engine(args.engine)  # refused before the model is resolved or started
    served = served_from_args(args)
    preset = served.preset
    for option, given in (("--exact-lookup", args.exact_lookup), ("--stop-after-code", args.stop_after_code)):
        if given and preset.provider != LOCAL:
            raise ConfigError(f"{option}: only for the embedded model (this run's provider is {preset.provider})")
    lookup = with_lookup(
        ServerOptions(), args.prompt_lookup, args.exact_lookup
    )  # refused here, before the dataset loads
    policy = _policy(args)
    return RunConfig(
        preset=preset,
        dataset_path=resolve_path(args.dataset_path),
        task_ids=args.tasks,
        limit=args.limit,
        max_iters=args.max_iters,
        redraws=policy.redraws,
        redraw_turns=policy.redraw_turns,
        strategies=policy.strategies,
        rewrite_turns=policy.rewrite_turns,
        rewrite_again=policy.rewrite_again,
        rewrite_now=policy.rewrite_now,
        runtime_values=args.runtime_values,
        protocol=_protocol(args),
        engine=args.engine,
        workers=args.workers or served.workers or PROVIDERS.require(preset.provider).workers,
        workers_reason=None if args.workers else _workers_reason(preset.provider, served.workers),
        samples=args.samples,
        sandbox=sandbox,
        docker=docker,
        timeout_s=args.timeout,
        out=args.out,
        resume=args.resume,
        traces=args.traces,
        verbose=args.verbose,
        debug=args.debug,
        retry_attempts=args.retries,
        request_timeout_s=request_timeout_for(preset.model, args.request_timeout),
        gguf=args.gguf,
        visualize=args.visualize,
        prompt_lookup=lookup.prompt_lookup,
        exact_lookup=lookup.exact,
        stop_after_code=args.stop_after_code,
        skip_bad_rows=args.skip_bad_rows,
        max_field_chars=args.max_field_size,
        max_reply_chars=args.max_reply_size,
        preset_reason=served.preset_reason or None,
        tools_reason=served.tools_reason,
        probe_tools=served.probe,
    )


def run(args: argparse.Namespace) -> int:
    from humanevalfix.evaluation.runloop import WORKER_PREFIX
    from humanevalfix.evaluation.runner import run_eval
    from humanevalfix.evaluation.stopping import workers_still_running
    from humanevalfix.reports.summary import print_summary

    console = Console(stderr=True)
    if args.list_models:
        for name, p in (load_presets(args.models_file) if args.models_file else load_presets()).items():
            print(f"{name:28} {p.provider:10} {p.model}")
        return 0
    config = config_from_args(args)
    # Which key, once the inputs are known good: a bad input stays one line.
    outcome = run_eval(config, console, started=lambda: say_key(console, config.preset, args))
    print_summary(console, outcome.summary, outcome.spec, outcome.records)
    if config.visualize and outcome.status != "aborted":
        from humanevalfix.reports.visualize import write_reports

        for path in write_reports(outcome.results_path):
            console.print(f"report: {path}")
    if outcome.problem:
        stopped = "run stopped: " if outcome.status == "aborted" else ""
        console.print(f"[red]error:[/] {stopped}{shown(outcome.problem)}", highlight=False, soft_wrap=True)
    if outcome.status != "complete":
        again = resume_command(getattr(args, "prog", "humanevalfix"), getattr(args, "argv", []), outcome.stream_path)
        console.print(
            f"[yellow]Run {outcome.status}.[/] Continue with: {shown(again)}", highlight=False, soft_wrap=True
        )
    if outcome.results_path.is_file():
        console.print(f"results: {outcome.results_path}", markup=False, highlight=False, soft_wrap=True)
        if not sys.stdout.isatty():  # the bare path for a script's pipe; on a terminal it is said once, above
            print(outcome.results_path)
    code = EXIT_CODES[outcome.status]
    if workers_still_running(WORKER_PREFIX):
        # A call to a hung endpoint outlived the grace period: the interpreter would join it at
        # exit, so leave without it (everything is written and flushed).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
