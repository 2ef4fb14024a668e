"""`validate-dataset FILE`: check every row of a dataset of your own before a run spends model calls on it."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from humanevalfix.cli._options import (
    add_sandbox_options,
    add_timeout_option,
    positive_int,
    sandbox_from_args,
    size_option,
)
from humanevalfix.config import size_text
from humanevalfix.evaluation import validate
from humanevalfix.evaluation.dataset import DEFAULT_MAX_FIELD
from humanevalfix.safetext import shown
from humanevalfix.sandbox.pool import DEFAULT_WORKERS

HELP = "check every row of a dataset file (fields, entry point, tests; canonical passes, buggy fails)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="a .jsonl/.json/.parquet dataset (the schema is below)")
    add_sandbox_options(p, "the code runs")
    add_timeout_option(p)
    p.add_argument("--workers", type=positive_int, default=DEFAULT_WORKERS, help="rows checked in parallel")
    p.add_argument(
        "--max-field-size",
        type=size_option,
        default=DEFAULT_MAX_FIELD,
        metavar="SIZE",
        help=f"the largest code or test field a row may hold, in characters (default {size_text(DEFAULT_MAX_FIELD)})",
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = validate.__doc__.split("\n\n", 1)[1] if validate.__doc__ else None


def run(args: argparse.Namespace) -> int:
    from humanevalfix.evaluation.validate import validate_file
    from humanevalfix.sandbox.executor import Limits

    kind, docker = sandbox_from_args(args)
    reports = validate_file(
        args.file, kind, Limits(timeout_s=args.timeout), args.workers, docker=docker, max_field=args.max_field_size
    )
    console = Console(soft_wrap=True)  # one line per row and problem, however narrow the terminal
    bad = [r for r in reports if not r.ok]
    for r in bad:
        console.print(f"[red]✗[/] {shown(r.where)} (task_id {shown(repr(r.task_id))})", highlight=False)
        for problem in r.problems:
            console.print(f"    - {shown(problem)}", highlight=False)
    if bad:
        console.print(f"{len(bad)} of {len(reports)} row(s) do not hold.")
        return 1
    console.print(f"[green]all {len(reports)} row(s) hold.[/]")
    return 0
