"""The command table and dispatch: `humanevalfix [COMMAND] [options]`, `eval` when no command is named.

Every command is one module here with `HELP`, `add_arguments(parser)` and `run(args) -> int`. The
table below is the only registry: a command is added by writing its module and one line here. The
command modules import the library's heavy parts inside `run`, so `--help` stays quick.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

from rich.console import Console
from rich.logging import RichHandler

from humanevalfix import FIRST_USE_LOGGER, __version__
from humanevalfix.cli._argv import check_options
from humanevalfix.envfiles import load_env_files
from humanevalfix.errors import UserError
from humanevalfix.safetext import SafeLogFilter, shown

DEFAULT_COMMAND = "eval"
COMMANDS: dict[str, str] = {
    "eval": "humanevalfix.cli._eval",
    "fix": "humanevalfix.cli._fix",
    "report": "humanevalfix.cli._report",
    "export": "humanevalfix.cli._export",
    "score": "humanevalfix.cli._score",
    "validate-dataset": "humanevalfix.cli._validate",
    "serve": "humanevalfix.cli._serve",
    "sandbox": "humanevalfix.cli._sandbox",
    "graph": "humanevalfix.cli._graph",
    "view": "humanevalfix.cli._view",
}


def _command(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


def build_parser(prog: str = "humanevalfix") -> argparse.ArgumentParser:
    """The top-level parser takes the eval options itself (eval is the default command), so its
    --help shows what people look for first (--limit, --model) and lists the other commands."""
    default = _command(DEFAULT_COMMAND)
    listing = "\n".join(f"  {name:17} {_command(name).HELP}" for name in COMMANDS)
    parser = argparse.ArgumentParser(
        prog=prog,
        usage=f"{prog} [COMMAND] [options]",
        description="Repair buggy Python code with an LLM agent, and measure it on HumanEvalFix (164 tasks).\n"
        f"With no COMMAND, runs the benchmark (`{DEFAULT_COMMAND}`); its options are below.",
        epilog=f"commands:\n{listing}\n\n"
        f"Each command has its own --help, e.g. `{prog} fix --help`. Keys go in .env (see .env.example);\n"
        f"with no key the embedded local model runs. Example: {prog} --limit 10",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    default.add_arguments(parser)
    parser.set_defaults(run=default.run)
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", help=argparse.SUPPRESS)
    for name in COMMANDS:
        module = _command(name)
        sub = subs.add_parser(name, help=module.HELP, description=module.HELP, prog=f"{prog} {name}")
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "humanevalfix") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(prog)  # reads the registries, and so loads the plugins: a broken one is one line
    except UserError as exc:
        Console(stderr=True).print(f"[red]error:[/] {shown(exc)}", highlight=False, soft_wrap=True)
        return 2
    try:
        check_options(parser, argv)  # an unknown option named, by its own command, before argparse misreads it
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's error (2) or --help/--version (0): an exit status, as UserError's
        return exc.code if isinstance(exc.code, int) else 2
    args.prog, args.argv = prog, argv  # for the commands that print how to run them again (--resume)
    level = (
        logging.DEBUG
        if getattr(args, "debug", False)
        else logging.INFO
        if getattr(args, "verbose", False)
        else logging.WARNING
    )
    # -v is a line per task from this package, not a line per HTTP request from the clients below
    # it (httpx, the SDKs, the Hub): other libraries speak at warning level unless --debug.
    handler = RichHandler(console=Console(stderr=True), show_path=False)
    # On the handler, not a logger: the records of openai, httpx and the Hub pass here too (--debug).
    handler.addFilter(SafeLogFilter())
    logging.basicConfig(
        level=level if level == logging.DEBUG else logging.WARNING, format="%(message)s", handlers=[handler]
    )
    logging.getLogger("humanevalfix").setLevel(level)
    logging.getLogger(FIRST_USE_LOGGER).setLevel(min(level, logging.INFO))  # one-time steps, always shown
    # Keys live in .env files (never in options: shell history, results): the nearest, then the user's.
    args.env_files = load_env_files()
    # SIGTERM (a scheduler, a `kill`) unwinds like Ctrl-C, so every command's `finally` stops what
    # it started: fork servers, the embedded model, Docker containers.
    old = signal.signal(signal.SIGTERM, _interrupt) if threading.current_thread() is threading.main_thread() else None
    try:
        return args.run(args)
    except UserError as exc:
        # soft_wrap: one line whatever the terminal width, so the message stays greppable.
        Console(stderr=True).print(f"[red]error:[/] {shown(exc)}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        Console(stderr=True).print("[yellow]interrupted[/]", highlight=False)
        return 130
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
