"""`fix FILE --tests TESTS`: the repair agent on your own Python file; prints a unified diff, or
applies it with --write."""

from __future__ import annotations

import argparse
from pathlib import Path

from humanevalfix.agent.policies import FIX_REDRAWS
from humanevalfix.cli._options import (
    add_model_options,
    non_negative_int,
    preset_from_args,
    sandbox_from_args,
    say_key,
)

HELP = "repair your own Python file (or project) against your tests with the agent; prints a unified diff"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        help="the Python file to repair (default: whichever module of the tests' project the failing tests reach)",
    )
    p.add_argument(
        "--tests",
        required=True,
        metavar="TESTS",
        help='a pytest file, a plain assert script, or inline test code such as "assert f(1) == 2"',
    )
    p.add_argument(
        "--function",
        metavar="NAME",
        help="only this top-level function (or Class.method) may change (default: the one the failing tests point "
        "to, then the next, then the whole file)",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="replace FILE with the fix once the tests pass (atomically, keeping FILE.orig)",
    )
    p.add_argument(
        "--trace",
        type=Path,
        metavar="PATH",
        help="write the session (conversation and attempts) as JSON, in the eval's trace format",
    )
    p.add_argument(
        "--redraws",
        type=non_negative_int,
        default=FIX_REDRAWS,
        metavar="N",
        help="a scope's first reply that repeats a tried candidate (the original included) or has no code is drawn "
        f"again up to N times, sampled, in the same turn (default {FIX_REDRAWS}; 0: such a reply spends its turn)",
    )
    p.add_argument("--verbose", "-v", action="store_true", help="print each test report as it comes")
    add_model_options(p)
    p.set_defaults(feedback="tests")  # eval leaves it unset (its --protocol decides), fix tests by default


def run(args: argparse.Namespace) -> int:
    from humanevalfix.agent.engines import require_engine
    from humanevalfix.fixer.command import run_fix

    require_engine(args.engine)
    preset = preset_from_args(args)  # a bad --model fails here, before anything runs
    sandbox, docker = sandbox_from_args(args)
    from rich.console import Console

    say_key(Console(stderr=True), preset, args)
    return run_fix(args, preset, sandbox, docker)
