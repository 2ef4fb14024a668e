"""Every command README.md and docs/*.md give parses with the real parser (no exit 2, argparse's
usage error): the CLI's own check of options and its parser, the bench scripts' `main` stopped
right after their parser. Nothing runs: no model, no sandbox, no file is read (the commands that can
run offline are run by test_documented_commands_run.py)."""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from humanevalfix.cli._argv import check_options, known_action, subparsers_of
from humanevalfix.cli._main import build_parser

from .conftest import REPO_ROOT
from .doc_commands import documented


class _Parsed(Exception):
    """Raised right after a bench script's parser accepted its arguments: nothing else runs."""


def _bench(path: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    name = f"bench_{Path(path).stem}"
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # its dataclasses look their module up
    monkeypatch.syspath_prepend(str(REPO_ROOT / "bench"))  # as `python bench/x.py` runs it
    spec.loader.exec_module(module)
    return module


def _retired(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """An option kept only to say what replaced it (hidden from --help, e.g. --no-docstring): it
    parses, then the command exits 2."""
    command = next((a for a in argv if not a.startswith("-")), None)
    subs = subparsers_of(parser)
    own = subs[command] if command in subs else parser
    for token in argv:
        action = known_action(own, token.split("=", 1)[0]) if token.startswith("--") else None
        if action is not None and action.help == argparse.SUPPRESS:
            return token
    return None


def exit_status(program: str, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    if program == "humanevalfix":
        parser = build_parser()
        try:
            check_options(parser, argv)
            parser.parse_args(argv)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 2
        return 2 if _retired(parser, argv) else 0
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> argparse.Namespace:
        original(self, args, namespace)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    try:
        _bench(program, monkeypatch).main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    except _Parsed:
        return 0
    raise AssertionError(f"{program} returned before parsing its arguments")


COMMANDS = documented()


def test_the_docs_give_commands_of_every_kind() -> None:
    programs = {program for _, program, _ in COMMANDS}
    assert len(COMMANDS) >= 40 and "humanevalfix" in programs and "bench/baseline.py" in programs
    subcommands = {
        argv[0] for _, program, argv in COMMANDS if program == "humanevalfix" and argv and not argv[0].startswith("-")
    }
    assert {"fix", "report", "score", "export", "validate-dataset"} <= subcommands


@pytest.mark.parametrize(
    ("doc", "program", "argv"), COMMANDS, ids=[f"{d}: {p} {' '.join(a)}"[:120] for d, p, a in COMMANDS]
)
def test_documented_command_parses(
    doc: str, program: str, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status = exit_status(program, argv, monkeypatch)
    assert status != 2, (
        f"{doc}: `{program} {shlex.join(argv)}` is a usage error: {capsys.readouterr().err.strip()[-300:]}"
    )


def test_a_stale_option_is_caught() -> None:
    """The check itself: the option docs/results.md once gave, and a bench script's misspelling."""
    assert exit_status("humanevalfix", ["--limit", "40", "--no-docstring"], pytest.MonkeyPatch()) == 2
    with pytest.MonkeyPatch.context() as mp:
        assert exit_status("bench/baseline.py", ["--limt", "3"], mp) == 2
        assert exit_status("bench/baseline.py", ["--limit", "3"], mp) == 0
